// Where Idempotency-Keys are kept (spec 4.2, 7): a mutation sent twice with the same key runs once.
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
import { type Db, query, type Statement, withSavepoint } from './db.ts';
import { AppError, envelope } from '../core/errors.ts';
import { type GroupCommit, groupCommit } from './group-commit.ts';
import type { ActiveTrace } from '../observe/tracing.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a claim holds its key unrenewed: after that its request is taken to have died. */
export const LEASE_MS = 30 * 1000;
/** How often a running request renews its claim: a lease survives two failed renewals. */
export const RENEW_EVERY_MS = 10 * 1000;
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

export interface StoredResponse {
  status: number;
  body: unknown;
  location?: string | null;
}

export class IdempotencyStore {
  private readonly select: Statement;
  private readonly claim: Statement;
  private readonly renewal: Statement;
  private readonly held: Statement;
  private readonly complete: Statement;
  private readonly remove: Statement;
  private readonly insertDone: Statement;
  private readonly purge: Statement;
  private lastPurge = 0;
  private readonly now: () => number;
  private readonly leaseMs: number;
  private readonly renewEveryMs: number;
  /** Where every write of the app commits (data/group-commit.ts). */
  readonly commits: GroupCommit;

  constructor(
    private readonly db: Db,
    options: IdempotencyOptions = {},
  ) {
    this.commits = groupCommit(db);
    this.now = options.now ?? Date.now;
    this.leaseMs = options.leaseMs ?? LEASE_MS;
    this.renewEveryMs = options.renewEveryMs ?? RENEW_EVERY_MS;
    this.select = db.prepare(
      `SELECT "requestHash", "state", "status", "body", "location", "createdAt", "expiresAt", "leaseExpiresAt"
       FROM "_bp_idempotency" WHERE ${BY_KEY}`,
    );
    this.claim = db.prepare(
      `INSERT OR REPLACE INTO "_bp_idempotency" (${ALL_COLUMNS}, "claimId", "leaseExpiresAt")
       VALUES (?, ?, ?, ?, 'running', NULL, NULL, NULL, ?, ?, ?, ?)`,
    );
    const fenced = `${BY_KEY} AND "claimId" = ?`;
    this.renewal = db.prepare(
      `UPDATE "_bp_idempotency" SET "leaseExpiresAt" = ? WHERE ${fenced} AND "state" = 'running'`,
    );
    this.held = db.prepare(`SELECT 1 FROM "_bp_idempotency" WHERE ${fenced} AND "state" = 'running'`);
    this.complete = db.prepare(
      `UPDATE "_bp_idempotency" SET "state" = 'done', "status" = ?, "body" = ?, "location" = ?, "claimId" = NULL,
       "leaseExpiresAt" = NULL WHERE ${fenced} AND "state" = 'running'`,
    );
    this.remove = db.prepare(`DELETE FROM "_bp_idempotency" WHERE ${fenced} AND "state" = 'running'`);
    this.insertDone = db.prepare(
      `INSERT OR REPLACE INTO "_bp_idempotency" (${ALL_COLUMNS})
       VALUES (?, ?, ?, ?, 'done', ?, ?, ?, ?, ?)`,
    );
    this.purge = db.prepare('DELETE FROM "_bp_idempotency" WHERE "expiresAt" < ?');
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
    const outcome = await this.commits.run((): IdempotencyOutcome => {
      const found = this.lookup(trace, scope, operation, key, requestHash);
      if (found.kind === 'new') {
        const now = this.now();
        query(trace, this.claim, 'run', [
          scope,
          operation,
          key,
          requestHash,
          now,
          now + IDEMPOTENCY_TTL_MS,
          id,
          now + this.leaseMs,
        ]);
      }
      return found;
    }, trace);
    if (outcome.kind === 'replay') return outcome;
    const timer = setInterval(() => this.renew(claim), this.renewEveryMs);
    // A lease must never keep the process alive, nor outlive its request (end()).
    timer.unref();
    const claim: Claim = { scope, operation, key, id, end: () => clearInterval(timer) };
    return { kind: 'claimed', claim };
  }

  /**
   * Inside a transaction that also makes the change: how to answer if the key is known, or
   * undefined when the request should run. Nothing is written, so nobody can see a half-used key.
   */
  lookup(
    trace: ActiveTrace | undefined,
    scope: string,
    operation: string,
    key: string,
    requestHash: string,
  ): IdempotencyOutcome {
    const now = this.now();
    this.purgeExpired(trace, now);
    const row = query(trace, this.select, 'get', [scope, operation, key]);
    if (!row || (row.expiresAt as number) < now) return { kind: 'new' };
    // A claim whose lease lapsed was left by a process that died: a retry takes the key over. A
    // row written before leases existed counts as leased from its creation.
    const leaseEnd = (row.leaseExpiresAt ?? (row.createdAt as number) + this.leaseMs) as number;
    if (row.state === 'running' && leaseEnd < now) return { kind: 'new' };
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

  /** Records a finished response in one statement, in the transaction of the change. */
  remember(
    trace: ActiveTrace | undefined,
    scope: string,
    operation: string,
    key: string,
    requestHash: string,
    response: { status: number; body: unknown; location: string | null },
  ): void {
    const now = this.now();
    query(trace, this.insertDone, 'run', [
      scope,
      operation,
      key,
      requestHash,
      response.status,
      response.body === undefined ? null : JSON.stringify(response.body),
      response.location,
      now,
      now + IDEMPOTENCY_TTL_MS,
    ]);
  }

  /**
   * Refuses (409 IDEMPOTENCY_KEY_IN_PROGRESS) unless `claim` still holds its key. Call first in
   * the transaction that commits the claimed request's work, so that a request whose key was
   * taken over hears that, and commits nothing.
   */
  confirm(trace: ActiveTrace | undefined, claim: Claim): void {
    if (!query(trace, this.held, 'get', [claim.scope, claim.operation, claim.key, claim.id])) throw takenOver();
  }

  /** Stores the response to replay under a claimed key, in the transaction of the change. */
  finish(trace: ActiveTrace | undefined, claim: Claim, response: StoredResponse): void {
    const { changes } = query(trace, this.complete, 'run', [
      response.status,
      response.body === undefined ? null : JSON.stringify(response.body),
      response.location ?? null,
      claim.scope,
      claim.operation,
      claim.key,
      claim.id,
    ]);
    if (changes === 0) throw takenOver();
  }

  /**
   * Records how a claimed request failed, if its claim still holds the key: the failure is stored
   * and replayed, or the key freed, as `failureToStore` decides. When even that cannot be written
   * (the database failing), the key stays claimed until its lease lapses; the caller reports `err`.
   */
  async fail(trace: ActiveTrace | undefined, claim: Claim, err: unknown): Promise<void> {
    const stored = failureToStore(err);
    const where = [claim.scope, claim.operation, claim.key, claim.id];
    await this.commits
      .run(() => {
        if (!stored) return query(trace, this.remove, 'run', where).changes;
        const body = JSON.stringify(envelope(stored, trace?.traceId ?? ''));
        return query(trace, this.complete, 'run', [stored.status, body, null, ...where]).changes;
      }, trace)
      .catch(ignore);
  }

  /** Runs `fn` so that a throw undoes its changes only, not the rest of the transaction. */
  undoable<T>(fn: () => T): T {
    return withSavepoint(this.db, fn);
  }

  /** Extends a running claim's lease; a claim no longer held stops renewing. */
  private renew(claim: Claim): void {
    const params = [this.now() + this.leaseMs, claim.scope, claim.operation, claim.key, claim.id];
    this.commits
      .run(() => query(undefined, this.renewal, 'run', params).changes)
      .then((changes) => {
        if (changes === 0) claim.end();
        // A failed renewal (the database busy) is tried again at the next tick.
      }, ignore);
  }

  private purgeExpired(trace: ActiveTrace | undefined, now: number): void {
    if (now - this.lastPurge < 60_000) return;
    this.lastPurge = now;
    query(trace, this.purge, 'run', [now]);
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
