// Idempotency-Key handling for requests: which keys are whose, what makes two
// requests "the same input", the header's rules, and running an entity write under its key
// (runIdempotent). The keys themselves are kept by idempotency-store.ts.

import { createHash } from 'node:crypto';
import type { Actor } from '../core/actor.ts';
import { AppError, envelope } from '../core/errors.ts';
import type { ActiveTrace } from '../observe/tracing.ts';
import type { Work } from './database.ts';
import {
  AnsweredElsewhere,
  failureToStore,
  type IdempotencyOutcome,
  KeyTaken,
  type IdempotencyStore,
  type StoredResponse,
  type WriteTail,
} from './idempotency-store.ts';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

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

/**
 * The `idempotencyKey` argument of an MCP tool that changes data: its callers are API keys, so it
 * is required, with the header's rules.
 */
export function idempotencyKeyArgument(value: unknown): string {
  if (value === undefined)
    throw new AppError('IDEMPOTENCY_KEY_REQUIRED', 'tools that change data need an idempotencyKey argument');
  if (typeof value === 'string' && KEY_PATTERN.test(value)) return value;
  const message = 'must be a string of 1 to 255 visible ASCII characters';
  throw new AppError('VALIDATION_FAILED', `idempotencyKey ${message}`, {
    details: [{ field: 'idempotencyKey', code: 'INVALID_ARGUMENT', message }],
  });
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
 * Runs a write (an entity create, update or delete, a declarative command) as one unit of work,
 * under its Idempotency-Key when it has one: the write and the key's record of its response
 * commit together, so no other request can ever see the key half-used and a crash cannot
 * separate the write from its record. A key already used answers instead of the write (rolled
 * back). A failure is stored too (the write itself is undone) unless `failureToStore` frees the
 * key, so the same request gets the same answer.
 *
 * `write` gets the unit's tail (WriteTail): a write that makes its whole change in one statement
 * may record the key in that statement too, so that the unit is that statement alone.
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
  write: (tail: WriteTail | undefined) => Work<StoredResponse>,
): Promise<StoredResponse & { replayed: boolean }> {
  const key = ctx.idempotencyKey;
  if (key === undefined) {
    return store.db.write(function* () {
      return { ...(yield* write({ done: false })), replayed: false };
    }, ctx.trace);
  }
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
  /** Whether a failure came from the write itself, not from the key's record. */
  let writing = false;
  // No lookup first: the write runs, and its key is recorded with COMMIT. A key already used
  // fails the unit (KeyTaken) and answers instead. A retry costs a rolled-back write; a first
  // request, which is nearly every one, costs no statement and no round trip more. `replace`:
  // the key's row is stale (expired, or a claim whose lease lapsed), and the record replaces it.
  const attempt = (replace: boolean) =>
    store.db.write(function* () {
      // The write may record the key in its own statement: not a stale row's replacement.
      const record = replace ? undefined : store.keyRecord(scope, operation, key, hash);
      const tail = record && { key: record, done: false };
      writing = true;
      const result = yield* write(tail);
      writing = false;
      if (tail?.done) return { ...result, replayed: false };
      const response = { status: result.status, body: result.body, location: result.location ?? null };
      if (replace) yield* store.remember(scope, operation, key, hash, response);
      else yield* store.recordLater(scope, operation, key, hash, response);
      return { ...result, replayed: false };
    }, ctx.trace);
  for (let replace = false; ; replace = true) {
    let failure: unknown;
    try {
      return await attempt(replace);
    } catch (err) {
      if (err instanceof AnsweredElsewhere && err.outcome.kind === 'replay') return replay(err.outcome);
      if (!(err instanceof KeyTaken) && !writing) throw err;
      failure = err;
    }
    // The key answers first: a retry hears the first answer, another input or a request still
    // running hears the key's refusal, whatever this attempt ran into. When the key is free, a
    // failure to remember is recorded, in a transaction of its own (the write's rolled back), so
    // that the same request gets the same answer.
    const taken = failure instanceof KeyTaken;
    const stored = taken ? undefined : failureToStore(failure);
    const body = stored && envelope(stored, ctx.trace?.traceId ?? '');
    let answer: (StoredResponse & { replayed: boolean }) | 'stale' | undefined;
    try {
      answer = await store.db.write(function* () {
        const outcome = yield* store.lookup(scope, operation, key, hash);
        if (outcome.kind === 'replay') return replay(outcome);
        if (taken) return 'stale';
        if (stored) yield* store.remember(scope, operation, key, hash, { status: stored.status, body, location: null });
        return undefined;
      }, ctx.trace);
    } catch (keyErr) {
      if (keyErr instanceof AppError && KEY_REFUSALS.has(keyErr.code)) throw keyErr;
      if (keyErr instanceof AnsweredElsewhere && keyErr.outcome.kind === 'replay') return replay(keyErr.outcome);
      // The key could not be read or written (the database failing): that failure, or the write's.
      throw taken ? keyErr : failure;
    }
    if (answer === 'stale' && !replace) continue;
    if (answer !== undefined && answer !== 'stale') return answer;
    throw failure;
  }
}

/** What the key answers instead of a request: another input under it, or its request still running. */
const KEY_REFUSALS = new Set(['IDEMPOTENCY_KEY_REUSE', 'IDEMPOTENCY_KEY_IN_PROGRESS']);

function replay(outcome: Extract<IdempotencyOutcome, { kind: 'replay' }>): StoredResponse & { replayed: boolean } {
  return { status: outcome.status, body: outcome.body, location: outcome.location, replayed: true };
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
