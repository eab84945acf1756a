// Idempotency-Key handling (spec 4.2, 7): a mutation sent twice with the same key runs once.
// Keys are scoped to the credential and the operation and kept 24 hours in the database, so a
// restart does not forget them. Same key and input: the stored response is replayed. Same key,
// different input: 409 IDEMPOTENCY_KEY_REUSE. Same key while the first is still running: 409
// IDEMPOTENCY_KEY_IN_PROGRESS, retryable, with Retry-After.

import { createHash } from 'node:crypto';
import type { Actor } from '../core/actor.ts';
import { type Db, query, type Statement, withSavepoint } from './db.ts';
import { AppError, envelope } from '../core/errors.ts';
import { type GroupCommit, groupCommit } from './group-commit.ts';
import type { ActiveTrace } from '../observe/tracing.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** A "running" entry older than this was left by a crashed process; a retry may take it over. */
export const ABANDONED_AFTER_MS = 2 * 60 * 1000;
const BY_KEY = '"scope" = ? AND "operation" = ? AND "key" = ?';
const ALL_COLUMNS =
  '"scope", "operation", "key", "requestHash", "state", "status", "body", "location", "createdAt", "expiresAt"';
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export type IdempotencyOutcome =
  { kind: 'new' } | { kind: 'replay'; status: number; body: unknown; location: string | null };

export class IdempotencyStore {
  private readonly select: Statement;
  private readonly upsert: Statement;
  private readonly complete: Statement;
  private readonly remove: Statement;
  private readonly insertDone: Statement;
  private readonly purge: Statement;
  private lastPurge = 0;
  /** Where every write of the app commits (data/group-commit.ts). */
  readonly commits: GroupCommit;

  constructor(private readonly db: Db) {
    this.commits = groupCommit(db);
    this.select = db.prepare(
      `SELECT "requestHash", "state", "status", "body", "location", "createdAt", "expiresAt" FROM "_bp_idempotency"
       WHERE ${BY_KEY}`,
    );
    this.upsert = db.prepare(
      `INSERT OR REPLACE INTO "_bp_idempotency" (${ALL_COLUMNS})
       VALUES (?, ?, ?, ?, 'running', NULL, NULL, NULL, ?, ?)`,
    );
    this.complete = db.prepare(
      `UPDATE "_bp_idempotency" SET "state" = 'done', "status" = ?, "body" = ?, "location" = ? WHERE ${BY_KEY}`,
    );
    this.insertDone = db.prepare(
      `INSERT OR REPLACE INTO "_bp_idempotency" (${ALL_COLUMNS})
       VALUES (?, ?, ?, ?, 'done', ?, ?, ?, ?, ?)`,
    );
    this.remove = db.prepare('DELETE FROM "_bp_idempotency" WHERE "scope" = ? AND "operation" = ? AND "key" = ?');
    this.purge = db.prepare('DELETE FROM "_bp_idempotency" WHERE "expiresAt" < ?');
  }

  /**
   * Claims the key (committed) for a request that runs outside one transaction (commands), or
   * says how to answer instead.
   */
  begin(
    trace: ActiveTrace | undefined,
    scope: string,
    operation: string,
    key: string,
    requestHash: string,
  ): Promise<IdempotencyOutcome> {
    return this.commits.run((): IdempotencyOutcome => {
      const outcome = this.lookup(trace, scope, operation, key, requestHash);
      if (outcome.kind === 'new') {
        const now = Date.now();
        query(trace, this.upsert, 'run', [scope, operation, key, requestHash, now, now + IDEMPOTENCY_TTL_MS]);
      }
      return outcome;
    }, trace);
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
    const now = Date.now();
    this.purgeExpired(trace, now);
    const row = query(trace, this.select, 'get', [scope, operation, key]);
    if (
      !row ||
      (row.expiresAt as number) < now ||
      (row.state === 'running' && now - (row.createdAt as number) > ABANDONED_AFTER_MS)
    )
      return { kind: 'new' };
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
    const now = Date.now();
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

  /** Stores the response to replay of a key claimed with begin(). Call in the transaction of the change. */
  finish(
    trace: ActiveTrace | undefined,
    scope: string,
    operation: string,
    key: string,
    status: number,
    body: unknown,
    location: string | null,
  ): void {
    query(trace, this.complete, 'run', [
      status,
      body === undefined ? null : JSON.stringify(body),
      location,
      scope,
      operation,
      key,
    ]);
  }

  /** Runs `fn` so that a throw undoes its changes only, not the rest of the transaction. */
  undoable<T>(fn: () => T): T {
    return withSavepoint(this.db, fn);
  }

  /** Releases the key after a failure that a retry with the same key may fix. */
  release(trace: ActiveTrace | undefined, scope: string, operation: string, key: string): void {
    query(trace, this.remove, 'run', [scope, operation, key]);
  }

  private purgeExpired(trace: ActiveTrace | undefined, now: number): void {
    if (now - this.lastPurge < 60_000) return;
    this.lastPurge = now;
    query(trace, this.purge, 'run', [now]);
  }
}

/**
 * Whose keys these are: the credential for API keys and signed-in people alike. Callers without a
 * credential have no scope of their own (every one of them is the same anonymous actor), unless
 * they hold an established session: see runIdempotent.
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
 * the first thing it needs to hear (401), so runIdempotent checks its key after the access rules.
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
 * Failures not stored under the key: conflicts about the key itself, and invalid input, which
 * the caller corrects and sends again with the same key (as commands, which validate first).
 */
const NOT_REMEMBERED = new Set(['IDEMPOTENCY_KEY_REUSE', 'IDEMPOTENCY_KEY_IN_PROGRESS', 'VALIDATION_FAILED']);

export interface StoredResponse {
  status: number;
  body: unknown;
  location?: string | null;
}

/**
 * Runs a synchronous write (an entity create, update or delete) in the next group commit, under
 * its Idempotency-Key when it has one: the claim, the write and the stored response commit
 * together, so no other request can ever see the key half-used and a crash cannot separate the
 * write from its record. A failure a retry cannot fix is remembered too (the write itself is
 * undone), so the same request gets the same answer.
 */
export async function runIdempotent(
  store: IdempotencyStore,
  ctx: { actor: Actor; trace?: ActiveTrace; idempotencyKey?: string; sessionId?: string },
  operation: string,
  input: unknown,
  write: () => StoredResponse,
): Promise<StoredResponse & { replayed: boolean }> {
  const key = ctx.idempotencyKey;
  if (key === undefined) return store.commits.run(() => ({ ...write(), replayed: false }), ctx.trace);
  let scope: string;
  if (ctx.actor.kind !== 'anonymous') scope = idempotencyScope(ctx.actor);
  else {
    // Every caller without a credential is the same anonymous actor: their keys are scoped to
    // their established session, and refused without one, lest one replay or block another's.
    const problem = keyProblem(key);
    if (problem) return refuseAfterAccess(store, ctx, write, problem);
    if (ctx.sessionId === undefined) {
      return refuseAfterAccess(
        store,
        ctx,
        write,
        new AppError(
          'VALIDATION_FAILED',
          'an Idempotency-Key needs a caller to belong to: send it with an API key or a session, or leave it out',
          {
            details: [
              {
                field: 'Idempotency-Key',
                code: 'NO_CALLER_SCOPE',
                message: 'anonymous requests without a session cannot use an Idempotency-Key',
              },
            ],
          },
        ),
      );
    }
    // A digest: the session id is a credential, and this scope is stored.
    scope = `anonymous-session:${createHash('sha256').update(ctx.sessionId).digest('hex').slice(0, 32)}`;
  }
  const hash = requestHash(input);
  const done = await store.commits.run(
    (): { response: StoredResponse & { replayed: boolean } } | { failure: AppError } => {
      const outcome = store.lookup(ctx.trace, scope, operation, key, hash);
      if (outcome.kind === 'replay')
        return { response: { status: outcome.status, body: outcome.body, location: outcome.location, replayed: true } };
      try {
        const result = store.undoable(write);
        store.remember(ctx.trace, scope, operation, key, hash, {
          status: result.status,
          body: result.body,
          location: result.location ?? null,
        });
        return { response: { ...result, replayed: false } };
      } catch (err) {
        if (!(err instanceof AppError && !err.retryable && !NOT_REMEMBERED.has(err.code))) throw err;
        store.remember(ctx.trace, scope, operation, key, hash, {
          status: err.status,
          body: envelope(err, ctx.trace?.traceId ?? ''),
          location: null,
        });
        // Committed with the group; the caller gets the error once it is.
        return { failure: err };
      }
    },
    ctx.trace,
  );
  if ('failure' in done) throw done.failure;
  return done.response;
}

/**
 * Runs the write only to let the access rules answer first (a refused caller hears 401, not a
 * complaint about its header), then refuses with `problem`: the write is rolled back with its job.
 */
function refuseAfterAccess(
  store: IdempotencyStore,
  ctx: { trace?: ActiveTrace },
  write: () => StoredResponse,
  problem: AppError,
): Promise<never> {
  return store.commits.run(() => {
    write();
    throw problem;
  }, ctx.trace);
}
