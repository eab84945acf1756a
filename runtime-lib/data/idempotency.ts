// Idempotency-Key handling (spec 4.2, 7): a mutation sent twice with the same key runs once.
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

import { createHash, randomUUID } from 'node:crypto';
import type { Actor } from '../core/actor.ts';
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
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

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
    this.commits.run(() => query(undefined, this.renewal, 'run', params).changes).then((changes) => {
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
 * Whose keys these are: the credential for API keys and signed-in people alike. Callers without a
 * credential have no scope of their own (every one of them is the same anonymous actor), unless
 * they prove a browser of their own (the anonymous CSRF nonce, http/request.ts sessionId): see
 * runIdempotent.
 */
export function idempotencyScope(actor: Actor): string {
  return actor.credentialId ?? `${actor.kind}:${actor.id}`;
}

/** SHA-256 of the canonical JSON (sorted keys) of what makes two requests "the same input". */
export function requestHash(parts: unknown): string {
  return createHash('sha256').update(canonicalJson(parts)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    const entries = keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Reads and checks the Idempotency-Key header; API-key actors must send one on mutations. A
 * caller without a credential gets the header back unchecked: whether it may write at all is
 * the first thing it needs to hear (401), so runIdempotent checks its key after the route's
 * access pre-check.
 */
export function idempotencyKeyOf(header: string | undefined, actor: Actor): string | undefined {
  if (header === undefined) {
    if (actor.kind === 'agent')
      throw new AppError(
        'IDEMPOTENCY_KEY_REQUIRED',
        'API-key requests that change data need an Idempotency-Key header',
      );
    return undefined;
  }
  if (actor.kind === 'anonymous') return header;
  const problem = keyProblem(header);
  if (problem) throw problem;
  return header;
}

function keyProblem(key: string): AppError | undefined {
  if (KEY_PATTERN.test(key)) return undefined;
  return new AppError('VALIDATION_FAILED', 'Idempotency-Key must be 1 to 255 visible ASCII characters', {
    details: [
      { field: 'Idempotency-Key', code: 'INVALID_HEADER', message: 'must be 1 to 255 visible ASCII characters' },
    ],
  });
}

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
function failureToStore(err: unknown): AppError | undefined {
  // An unexpected error is answered as http/respond.ts answers it.
  if (!(err instanceof AppError)) return new AppError('INTERNAL_ERROR', 'internal error');
  return err.retryable || NOT_REMEMBERED.has(err.code) ? undefined : err;
}

/**
 * Runs a synchronous write (an entity create, update or delete) in the next group commit, under
 * its Idempotency-Key when it has one: the lookup, the write and the stored response commit
 * together, so no other request can ever see the key half-used and a crash cannot separate the
 * write from its record. A failure is stored too (the write itself is undone) unless
 * `failureToStore` frees the key, so the same request gets the same answer.
 *
 * `mayWrite` is the route's access pre-check from the actor alone (the entity's rule for the
 * action, `Access.filter`): it throws 401 when this caller could write no record at all. It
 * runs, and writes nothing, before an anonymous caller's key is refused, so that such a caller
 * first hears that it may not write. When the rule depends on the record, it cannot answer
 * without running the write: the caller hears the key problem first.
 */
export async function runIdempotent(
  store: IdempotencyStore,
  ctx: { actor: Actor; trace?: ActiveTrace; idempotencyKey?: string; sessionId?: string },
  operation: string,
  input: unknown,
  mayWrite: () => unknown,
  write: () => StoredResponse,
): Promise<StoredResponse & { replayed: boolean }> {
  const key = ctx.idempotencyKey;
  if (key === undefined) return store.commits.run(() => ({ ...write(), replayed: false }), ctx.trace);
  let scope: string;
  if (ctx.actor.kind !== 'anonymous') scope = idempotencyScope(ctx.actor);
  else {
    // Every caller without a credential is the same anonymous actor: their keys are scoped to the
    // anonymous CSRF nonce their browser proves, and refused without one, lest one replay or block
    // another's.
    const problem = keyProblem(key);
    if (problem) return refuseAfterAccess(mayWrite, problem);
    if (ctx.sessionId === undefined) {
      return refuseAfterAccess(
        mayWrite,
        new AppError(
          'VALIDATION_FAILED',
          'an Idempotency-Key needs a caller to belong to: send it with an API key, a session, ' +
            'or the CSRF token of GET /api/auth/session, or leave it out',
          {
            details: [
              {
                field: 'Idempotency-Key',
                code: 'NO_CALLER_SCOPE',
                message: 'anonymous requests without a CSRF token of their own cannot use an Idempotency-Key',
              },
            ],
          },
        ),
      );
    }
    // A digest: the nonce is a credential, and this scope is stored.
    scope = `anonymous-session:${createHash('sha256').update(ctx.sessionId).digest('hex').slice(0, 32)}`;
  }
  const hash = requestHash(input);
  const done = await store.commits.run(
    (): { response: StoredResponse & { replayed: boolean } } | { failure: unknown } => {
      const outcome = store.lookup(ctx.trace, scope, operation, key, hash);
      if (outcome.kind === 'replay')
        return { response: { status: outcome.status, body: outcome.body, location: outcome.location, replayed: true } };
      let result: StoredResponse;
      try {
        result = store.undoable(write);
      } catch (err) {
        const stored = failureToStore(err);
        if (!stored) throw err;
        store.remember(ctx.trace, scope, operation, key, hash, {
          status: stored.status,
          body: envelope(stored, ctx.trace?.traceId ?? ''),
          location: null,
        });
        // Committed with the group; the caller gets the error once it is.
        return { failure: err };
      }
      store.remember(ctx.trace, scope, operation, key, hash, {
        status: result.status,
        body: result.body,
        location: result.location ?? null,
      });
      return { response: { ...result, replayed: false } };
    },
    ctx.trace,
  );
  if ('failure' in done) throw done.failure;
  return done.response;
}

/**
 * Refuses an anonymous caller's key with `problem`, after the access pre-check had its say: a
 * caller the rules refuse whatever the record hears that (401) instead. The pre-check decides
 * from the actor alone and writes nothing. Only its refusal is passed on: anything else it throws
 * (a rule it cannot decide without a record) leaves the key problem as the answer.
 */
function refuseAfterAccess(mayWrite: () => unknown, problem: AppError): Promise<never> {
  try {
    mayWrite();
  } catch (err) {
    if (err instanceof AppError && (err.status === 401 || err.status === 403)) return Promise.reject(err);
  }
  return Promise.reject(problem);
}
