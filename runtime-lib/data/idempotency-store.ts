// Where Idempotency-Keys are kept: a mutation sent twice with the same key runs once.
// Keys are scoped to the credential and the operation and kept 24 hours in the database, so a
// restart does not forget them. Same key and input: the stored response is replayed. Same key,
// different input: 409 IDEMPOTENCY_KEY_REUSE. Same key while the first is still running: 409
// IDEMPOTENCY_KEY_IN_PROGRESS, retryable, with Retry-After.
//
// A command runs outside one transaction (its handler may await), so it claims its key first.
// The claim is a lease the running request renews while it runs: only when a lease lapses (its
// process died, or stalled for longer than the lease) may a retry take the key over. Each claim
// has a random id, and the transaction that commits the command's work, like the one that records
// its failure, goes ahead only if its claim still holds the key: a request whose key was taken
// over commits nothing, so a key never commits its work twice.

import { randomUUID } from 'node:crypto';
import { AppError, envelope } from '../core/errors.ts';
import { type Database, get, later, type Outcome, type Query, run, type RunResult, type Work } from './database.ts';
import type { ActiveTrace } from '../observe/tracing.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a claim holds its key unrenewed: after that its request is taken to have died. */
export const LEASE_MS = 30 * 1000;
/** How often a running request renews its claim: a lease survives two failed renewals. */
export const RENEW_EVERY_MS = 10 * 1000;
/** How often expired keys are deleted. */
const PURGE_EVERY_MS = 60_000;
const BY_KEY = '"scope" = ? AND "operation" = ? AND "key" = ?';
const ALL_COLUMNS =
  '"scope", "operation", "key", "requestHash", "state", "status", "body", "location", "createdAt", "expiresAt"';

export interface IdempotencyOptions {
  /** The clock, in epoch milliseconds (tests move it). */
  now?: () => number;
  leaseMs?: number;
  renewEveryMs?: number;
}

export type IdempotencyOutcome =
  { kind: 'new' } | { kind: 'replay'; status: number; body: unknown; location: string | null };

/** A running request's hold on its key (IdempotencyStore.begin). */
export interface Claim {
  readonly scope: string;
  readonly operation: string;
  readonly key: string;
  /** Random: tells this request's claim from the claim of a request that took the key over. */
  readonly id: string;
  /** Stops renewing the lease: call once the request is over, whatever its outcome. */
  end(): void;
}

export type ClaimOutcome = { kind: 'claimed'; claim: Claim } | Extract<IdempotencyOutcome, { kind: 'replay' }>;

/**
 * A new key's record, written by the change it answers in that change's own statement
 * (IdempotencyStore.keyRecord).
 */
export interface KeyRecord {
  /** The parameters of keyInsertSelecting's INSERT for this key, answered with `status`. */
  valuesOf(status: number): unknown[];
}

/**
 * How a write may end its unit of work itself (runIdempotent): nothing follows it in the unit but
 * its key's record, so a write that can make its change, its audit record and `key` one statement
 * committed on its own does so, and says so (`done`).
 */
export interface WriteTail {
  /** The key's record to write, when the request has a key. */
  key?: KeyRecord;
  /** Set by the write once its one statement has committed all of it, `key` included. */
  done: boolean;
}

export interface StoredResponse {
  status: number;
  body: unknown;
  location?: string | null;
}

const TABLE = '"_bp_idempotency"';

/**
 * A claimed key's row may be replaced when it expired, or when it is a claim whose lease lapsed
 * (a row written before leases existed counts as leased from its creation). Every statement that
 * takes a key over says so in its WHERE: two requests racing for one key on two app instances
 * cannot both win (the loser's upsert changes no row), on PostgreSQL as on SQLite.
 */
const REPLACEABLE =
  `${TABLE}."expiresAt" < ? OR (${TABLE}."state" = 'running' AND ` +
  `COALESCE(${TABLE}."leaseExpiresAt", ${TABLE}."createdAt" + ?) < ?)`;

const SQL = {
  select: `SELECT "requestHash", "state", "status", "body", "location", "createdAt", "expiresAt", "leaseExpiresAt"
       FROM ${TABLE} WHERE ${BY_KEY}`,
  claim: `INSERT INTO ${TABLE} (${ALL_COLUMNS}, "claimId", "leaseExpiresAt")
       VALUES (?, ?, ?, ?, 'running', NULL, NULL, NULL, ?, ?, ?, ?)
       ON CONFLICT ("scope", "operation", "key") DO UPDATE SET "requestHash" = excluded."requestHash",
       "state" = 'running', "status" = NULL, "body" = NULL, "location" = NULL, "createdAt" = excluded."createdAt",
       "expiresAt" = excluded."expiresAt", "claimId" = excluded."claimId", "leaseExpiresAt" = excluded."leaseExpiresAt"
       WHERE ${REPLACEABLE}`,
  renewal: `UPDATE ${TABLE} SET "leaseExpiresAt" = ? WHERE ${BY_KEY} AND "claimId" = ? AND "state" = 'running'`,
  // Changes nothing, and locks the claim's row until the transaction ends (PostgreSQL).
  hold: `UPDATE ${TABLE} SET "leaseExpiresAt" = "leaseExpiresAt"
       WHERE ${BY_KEY} AND "claimId" = ? AND "state" = 'running'`,
  complete: `UPDATE ${TABLE} SET "state" = 'done', "status" = ?, "body" = ?, "location" = ?, "claimId" = NULL,
       "leaseExpiresAt" = NULL WHERE ${BY_KEY} AND "claimId" = ? AND "state" = 'running'`,
  remove: `DELETE FROM ${TABLE} WHERE ${BY_KEY} AND "claimId" = ? AND "state" = 'running'`,
  insertNew: `INSERT INTO ${TABLE} (${ALL_COLUMNS}) VALUES (?, ?, ?, ?, 'done', ?, ?, ?, ?, ?)`,
  insertDone: `INSERT INTO ${TABLE} (${ALL_COLUMNS})
       VALUES (?, ?, ?, ?, 'done', ?, ?, ?, ?, ?)
       ON CONFLICT ("scope", "operation", "key") DO UPDATE SET "requestHash" = excluded."requestHash",
       "state" = 'done', "status" = excluded."status", "body" = excluded."body", "location" = excluded."location",
       "createdAt" = excluded."createdAt", "expiresAt" = excluded."expiresAt", "claimId" = NULL,
       "leaseExpiresAt" = NULL
       WHERE ${REPLACEABLE}`,
  purge: `DELETE FROM ${TABLE} WHERE "expiresAt" < ?`,
};

export class IdempotencyStore {
  private lastPurge = 0;
  private readonly now: () => number;
  private readonly leaseMs: number;
  private readonly renewEveryMs: number;

  constructor(
    /** Where every keyed write commits. */
    readonly db: Database,
    options: IdempotencyOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.leaseMs = options.leaseMs ?? LEASE_MS;
    this.renewEveryMs = options.renewEveryMs ?? RENEW_EVERY_MS;
  }

  /**
   * Claims the key (committed) for a request that runs outside one transaction (commands), or
   * says how to answer instead. The claim's lease is renewed until `claim.end()`.
   */
  async begin(
    trace: ActiveTrace | undefined,
    scope: string,
    operation: string,
    key: string,
    requestHash: string,
  ): Promise<ClaimOutcome> {
    const id = randomUUID();
    const now = this.now();
    // Expired keys go in a unit of their own, not waited for (nor traced: the request may be done
    // first); a purge that fails is tried again with a later claim.
    if (this.purgeDue(now)) void this.db.writeEach(run(SQL.purge, [now])).catch(() => (this.lastPurge = 0));
    // Claimed straight away, one statement committing alone (one round trip on PostgreSQL): the
    // claim takes a free or stale key, and only a key that is neither (it holds an answer, or a
    // request holding it still runs, on any instance) is looked up.
    const params = [scope, operation, key, requestHash, now, now + IDEMPOTENCY_TTL_MS, id, now + this.leaseMs];
    const { changes } = await this.db.writeEach(run(SQL.claim, [...params, ...this.replaceable(now)]), trace);
    if (changes === 0) {
      // Raced: a key found neither answered nor free is refused (IN_PROGRESS, REUSE, taken over).
      const found = await this.db.write(() => this.lookup(scope, operation, key, requestHash, { raced: true }), trace);
      if (found.kind === 'replay') return found;
    }
    const timer = setInterval(() => this.renew(claim), this.renewEveryMs);
    // A lease must never keep the process alive, nor outlive its request (end()).
    timer.unref();
    const claim: Claim = { scope, operation, key, id, end: () => clearInterval(timer) };
    return { kind: 'claimed', claim };
  }

  /**
   * Inside a transaction that also makes the change: how to answer if the key is known, or
   * { kind: 'new' } when the request should run. Nothing is written but expired keys, so nobody
   * can see a half-used key. `raced`: the caller just lost the key to a request that holds it,
   * so a row that would count as replaceable is still one to answer from.
   */
  *lookup(
    scope: string,
    operation: string,
    key: string,
    requestHash: string,
    options: { raced?: boolean } = {},
  ): Work<IdempotencyOutcome> {
    const now = this.now();
    yield* this.purgeExpired(now);
    const row = yield* get(SQL.select, [scope, operation, key]);
    if (!row) {
      if (options.raced) throw takenOver();
      return { kind: 'new' };
    }
    if (!options.raced) {
      if ((row.expiresAt as number) < now) return { kind: 'new' };
      // A claim whose lease lapsed was left by a process that died: a retry takes the key over.
      const leaseEnd = (row.leaseExpiresAt ?? (row.createdAt as number) + this.leaseMs) as number;
      if (row.state === 'running' && leaseEnd < now) return { kind: 'new' };
    }
    if (row.requestHash !== requestHash) {
      throw new AppError(
        'IDEMPOTENCY_KEY_REUSE',
        'this Idempotency-Key was already used with different input; derive keys from the intended operation',
      );
    }
    if (row.state === 'running')
      throw new AppError('IDEMPOTENCY_KEY_IN_PROGRESS', 'a request with this Idempotency-Key is still running', {
        retryAfter: 1,
      });
    return {
      kind: 'replay',
      status: row.status as number,
      body: row.body === null ? undefined : JSON.parse(row.body as string),
      location: row.location as string | null,
    };
  }

  /**
   * Records a finished response under a new key, in the transaction of the change, without
   * waiting: the record travels with COMMIT. When the key has a row already (an answer, a request
   * holding it, or one expired), the whole unit fails with KeyTaken, rolled back, and the caller
   * answers from the key (runIdempotent), or replaces a stale row with `remember`. A request
   * racing for the key, on any instance, waits for this transaction and then finds it taken.
   */
  *recordLater(
    scope: string,
    operation: string,
    key: string,
    requestHash: string,
    response: StoredResponse,
  ): Work<void> {
    const now = this.now();
    yield* this.purgeExpired(now, { wait: false });
    yield* later(
      SQL.insertNew,
      [scope, operation, key, requestHash, ...stored(response), now, now + IDEMPOTENCY_TTL_MS],
      () => new KeyTaken(),
    );
  }

  /**
   * A new key's record for a change to write in its own statement (EntityStore.lockAndChange), as
   * recordLater would write it; its conflict with a row already there is the change's to turn
   * into KeyTaken. Undefined when expired keys are due to be deleted: recordLater does that.
   */
  keyRecord(scope: string, operation: string, key: string, requestHash: string): KeyRecord | undefined {
    const now = this.now();
    if (now - this.lastPurge >= PURGE_EVERY_MS) return undefined;
    return { valuesOf: (status) => [scope, operation, key, requestHash, status, now, now + IDEMPOTENCY_TTL_MS] };
  }

  /**
   * Records a finished response in the transaction of the change. When another request recorded
   * the key since this one's lookup (on another instance), this one is refused with the answer
   * that request would give, and its change rolls back with it.
   */
  *remember(scope: string, operation: string, key: string, requestHash: string, response: StoredResponse): Work<void> {
    const now = this.now();
    const { changes } = yield* run(SQL.insertDone, [
      ...[scope, operation, key, requestHash, ...stored(response)],
      ...[now, now + IDEMPOTENCY_TTL_MS, ...this.replaceable(now)],
    ]);
    // The key holds another request's answer: this request's work must not commit, and its
    // caller gets that answer (or the refusal lookup throws: a different input, still running).
    if (changes === 0)
      throw new AnsweredElsewhere(yield* this.lookup(scope, operation, key, requestHash, { raced: true }));
  }

  /**
   * Refuses (409 IDEMPOTENCY_KEY_IN_PROGRESS) unless `claim` still holds its key, and keeps it
   * held: the key's row stays locked until the transaction ends, so no other request can take the
   * key over before `finish` records the response. Call first in the transaction that commits the
   * claimed request's work, so that a request whose key was taken over hears that, and commits
   * nothing.
   */
  *confirm(claim: Claim): Work<void> {
    stillHeld(yield* run(SQL.hold, holdParams(claim)));
  }

  /** `confirm` as a statement to send with others (`together`), and the check of its outcome. */
  hold(claim: Claim): { query: Query; check: (outcome: Outcome) => void } {
    return {
      query: { mode: 'run', sql: SQL.hold, params: holdParams(claim) },
      check: (outcome) => {
        if (!outcome.ok) throw outcome.failure;
        stillHeld(outcome.value as RunResult);
      },
    };
  }

  /**
   * Stores the response to replay under a key `confirm` holds, in the transaction of the change,
   * without waiting: it goes with COMMIT.
   */
  *finish(claim: Claim, response: StoredResponse): Work<void> {
    yield* later(SQL.complete, [...stored(response), claim.scope, claim.operation, claim.key, claim.id]);
  }

  /**
   * Records how a claimed request failed, if its claim still holds the key: the failure is stored
   * and replayed, or the key freed, as `failureToStore` decides. When even that cannot be written
   * (the database failing), the key stays claimed until its lease lapses; the caller reports `err`.
   */
  async fail(trace: ActiveTrace | undefined, claim: Claim, err: unknown): Promise<void> {
    const stored = failureToStore(err);
    const where = [claim.scope, claim.operation, claim.key, claim.id];
    await this.db
      .write(function* () {
        if (!stored) return (yield* run(SQL.remove, where)).changes;
        const body = JSON.stringify(envelope(stored, trace?.traceId ?? ''));
        return (yield* run(SQL.complete, [stored.status, body, null, ...where])).changes;
      }, trace)
      .catch(ignore);
  }

  /** The parameters of REPLACEABLE at `now`. */
  private replaceable(now: number): number[] {
    return [now, this.leaseMs, now];
  }

  /** Extends a running claim's lease; a claim no longer held stops renewing. */
  private renew(claim: Claim): void {
    const params = [this.now() + this.leaseMs, claim.scope, claim.operation, claim.key, claim.id];
    this.db
      .write(function* () {
        return (yield* run(SQL.renewal, params)).changes;
      })
      .then((changes: number) => {
        if (changes === 0) claim.end();
        // A failed renewal (the database busy) is tried again at the next tick.
      }, ignore);
  }

  private *purgeExpired(now: number, options: { wait?: boolean } = {}): Work<void> {
    if (!this.purgeDue(now)) return;
    if (options.wait === false) yield* later(SQL.purge, [now]);
    else yield* run(SQL.purge, [now]);
  }

  /** Whether expired keys are due to be deleted (once a minute): true once, for the caller to do it. */
  private purgeDue(now: number): boolean {
    if (now - this.lastPurge < PURGE_EVERY_MS) return false;
    this.lastPurge = now;
    return true;
  }
}

/**
 * Thrown out of a unit of work (rolling it back) when another request recorded the same key
 * first: its caller answers with `outcome` instead of what the rolled-back work produced.
 */
export class AnsweredElsewhere extends Error {
  constructor(readonly outcome: IdempotencyOutcome) {
    super('another request with this Idempotency-Key answered first');
  }
}

/** The parameters of SQL.hold: the claim's key and id. */
function holdParams(claim: Claim): unknown[] {
  return [claim.scope, claim.operation, claim.key, claim.id];
}

/** Refuses (IN_PROGRESS) when SQL.hold changed no row: the claim no longer holds its key. */
function stillHeld(result: RunResult): void {
  if (result.changes === 0) throw takenOver();
}

/**
 * A new key's record (KeyRecord) as a clause of the statement of the change it answers: its body
 * the text of column `body` of `source`, a row the change returned (none: no record); its other
 * columns are the parameters KeyRecord.valuesOf gives.
 */
export function keyInsertSelecting(source: string, body: string): string {
  return (
    `INSERT INTO ${TABLE} (${ALL_COLUMNS}) SELECT ?, ?, ?, ?, 'done', CAST(? AS INTEGER), ${source}."${body}", NULL, ` +
    `CAST(? AS BIGINT), CAST(? AS BIGINT) FROM ${source}`
  );
}

/** A response's `status`, `body` and `location` columns, in that order. */
function stored(response: StoredResponse): [number, string | null, string | null] {
  const body = response.body === undefined ? null : JSON.stringify(response.body);
  return [response.status, body, response.location ?? null];
}

/**
 * Thrown out of a unit of work (rolling it back) whose recordLater found the key not free: its
 * caller answers from the key instead.
 */
export class KeyTaken extends Error {
  constructor() {
    super('the Idempotency-Key is not free: another request holds it or has answered it');
  }
}

/** What a request whose claim was taken over hears: the key's one outcome is the other request's. */
function takenOver(): AppError {
  return new AppError(
    'IDEMPOTENCY_KEY_IN_PROGRESS',
    'this request held its Idempotency-Key past its lease and another request took the key over; ' +
      "nothing was committed: retry to get that request's answer",
    { retryAfter: 1 },
  );
}

function ignore(): void {}

/**
 * Refusals not stored under the key: conflicts about the key itself, and invalid input, which
 * the caller corrects and sends again with the same key.
 */
const NOT_REMEMBERED = new Set(['IDEMPOTENCY_KEY_REUSE', 'IDEMPOTENCY_KEY_IN_PROGRESS', 'VALIDATION_FAILED']);

/**
 * The error to store and replay under the key for a failed request, or undefined when the key is
 * freed instead; the envelope's `retryable` decides. A retryable failure (DATABASE_BUSY, a key
 * taken over) frees the key, so the same request with the same key can succeed later, as
 * `retryable: true` promises. A refusal of the key or the input frees it too: the same request
 * fails the same way, and the corrected one may use the key. Every other failure is stored and
 * replayed, as `retryable: false` says, an unexpected error (500 INTERNAL_ERROR) included: the
 * request may have had effects (a handler's calls to other services) that running it again under
 * the same key would repeat.
 */
export function failureToStore(err: unknown): AppError | undefined {
  // An unexpected error is answered as http/respond.ts answers it.
  if (!(err instanceof AppError)) return new AppError('INTERNAL_ERROR', 'internal error');
  return err.retryable || NOT_REMEMBERED.has(err.code) ? undefined : err;
}
