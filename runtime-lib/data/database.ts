// The one way the runtime talks to its database, whichever it is: SQLite (data/sqlite.ts) or
// PostgreSQL (data/postgres.ts), chosen by DATABASE_URL when the app starts (data/open.ts).
//
// Data logic is written once, as generator functions that yield the statements they need and
// receive their results: `const row = yield* get(sql, [id])`. A driver runs such a unit of work.
// SQLite runs it synchronously from start to finish, inside its group commit: nothing else may
// run between BEGIN and COMMIT on its one connection. PostgreSQL sends them on one pooled
// connection and awaits their answers. A generator is both at once, and because it cannot
// `await`, a write can never go on after its transaction has ended: every statement of a unit of
// work runs inside it.
//
// A statement whose result the unit does not need at once (an audit record, a key's record) is
// sent with `later`: the unit goes on without waiting, and PostgreSQL's driver pipelines it with
// the statements that follow, so one round trip carries several (and COMMIT goes with the last).
// Statements a unit needs the answers of, but not one before the other, go `together`.
//
// Statements are written with `?` placeholders in both dialects; `Database.prepare` turns a text
// into the dialect's form once (PostgreSQL numbers them `$1`, `$2`, ...), and `sqlText` composes
// generated statements with the row filters built at run time.

import type { Dialect } from '../core/dialect.ts';
import { AppError } from '../core/errors.ts';
import type { ActiveTrace } from '../observe/tracing.ts';

export type Row = Record<string, unknown>;

/**
 * What a statement is run for: its first row, all rows, or how many rows it changed; `later`: for
 * its effect, without waiting for it; `together`: the statements of `batch`, at once.
 */
export type Mode = 'get' | 'all' | 'run' | 'later' | 'together';

/** One statement of a unit of work, as a driver receives it. */
export interface Statement {
  sql: string;
  mode: Mode;
  params: readonly unknown[];
  /** For `later`: the failure of the whole unit when the statement violates a unique constraint. */
  onConflict?: () => Error;
  /** For `together`: the statements sent at once. */
  batch?: readonly Query[];
}

/** A statement run for its result, as `together` takes it. */
export interface Query {
  sql: string;
  mode: 'get' | 'all' | 'run';
  params: readonly unknown[];
  /**
   * Sent alone as the unit's first statement, it commits on its own: PostgreSQL runs it without a
   * BEGIN of the unit's, alone or with other units' such statements in one transaction, each with
   * the outcome it has alone (data/postgres-group.ts), and whatever the unit runs after it goes in
   * a transaction of its own. Only a statement that is all of the unit's writes when it changes anything may ask
   * (EntityStore.lockAndChange). SQLite runs it in the unit's transaction, as any other.
   */
  commitsAlone?: true;
}

/** A statement's result, or its failure (mapped to the app's errors), as `together` answers. */
export type Outcome = { ok: true; value: unknown } | { ok: false; failure: unknown };

export interface RunResult {
  changes: number;
}

/** A unit of work: yields statements, receives their results, returns T. */
export type Work<T> = Generator<Statement, T, unknown>;

/** The first row the statement returns, if any. */
export function* get(sql: string, params: readonly unknown[] = []): Work<Row | undefined> {
  return (yield { sql, mode: 'get', params }) as Row | undefined;
}

/** Every row the statement returns. */
export function* all(sql: string, params: readonly unknown[] = []): Work<Row[]> {
  return (yield { sql, mode: 'all', params }) as Row[];
}

/** Runs a statement for its effect: how many rows it changed. */
export function* run(sql: string, params: readonly unknown[] = []): Work<RunResult> {
  return (yield { sql, mode: 'run', params }) as RunResult;
}

/**
 * Runs a statement for its effect without waiting for it: the unit goes on at once, and the
 * driver sends the statement ahead of the next one, or of COMMIT. When it fails, the whole unit
 * fails with that failure, rolled back, whatever the unit did since: the failure cannot be caught
 * inside the unit, and wins over anything the unit threw after sending the statement. A unique
 * constraint it violates fails the unit with `onConflict()` instead, when given.
 */
export function* later(sql: string, params: readonly unknown[] = [], onConflict?: () => Error): Work<void> {
  yield { sql, mode: 'later', params, ...(onConflict ? { onConflict } : {}) };
}

/** The failure a later statement fails its unit with: `onConflict()` for a unique violation, if given. */
export function laterFailure(statement: Statement, failure: unknown): unknown {
  const conflict = failure instanceof AppError && failure.code === 'UNIQUE_CONFLICT';
  return conflict && statement.onConflict ? statement.onConflict() : failure;
}

/**
 * Sends statements at once and answers with each one's outcome, in order: PostgreSQL pipelines
 * them, one round trip for all. A failure is answered, not thrown: the unit decides which one
 * counts (inside a PostgreSQL transaction, the statements after a failed one fail as well).
 */
export function* together(...batch: Query[]): Work<Outcome[]> {
  return (yield { sql: '', mode: 'together', params: [], batch }) as Outcome[];
}

/** A unit of work that runs no statement: for code paths that need no database. */
// eslint-disable-next-line require-yield
export function* done<T>(value: T): Work<T> {
  return value;
}

/**
 * Runs `work` inside the current transaction so that, when it throws, only its own changes are
 * undone and the transaction carries on (to record the failure alongside). When the undo itself
 * fails, or the release after success, that failure is thrown and the driver fails the whole
 * write, rolled back, whatever its caller does with the failure: nothing of it commits.
 */
export function* savepoint<T>(work: Work<T>): Work<T> {
  yield* run('SAVEPOINT bp_step');
  let result: T;
  try {
    result = yield* work;
  } catch (err) {
    yield* run('ROLLBACK TO SAVEPOINT bp_step');
    yield* run('RELEASE SAVEPOINT bp_step');
    throw err;
  }
  yield* run('RELEASE SAVEPOINT bp_step');
  return result;
}

export interface Database {
  readonly dialect: Dialect;
  /**
   * An UPDATE can return the row as it was before it, locked (PostgreSQL 18's `RETURNING OLD`):
   * a change then reads and writes its row in one statement (EntityStore.lockAndChange).
   */
  readonly returningOld: boolean;
  /**
   * Runs `work` outside any transaction: each statement sees what was committed when it ran.
   * For reads only; SQLite refuses a statement that would write.
   */
  read<T>(work: Work<T>, trace?: ActiveTrace): Promise<T>;
  /**
   * Runs the work `unit` returns as one transaction, and resolves once it has committed: all of
   * it commits, or none of it. On SQLite several writes of one event-loop turn share a commit
   * (data/sqlite.ts); each still succeeds or fails alone.
   */
  write<T>(unit: () => Work<T>, trace?: ActiveTrace): Promise<T>;
  /**
   * Runs `work` whose statements each commit on their own, for a write that needs no transaction
   * around it (one atomic upsert): PostgreSQL sends it without BEGIN and COMMIT, one round trip
   * for the statement and its commit; SQLite runs it as a `write`.
   */
  writeEach<T>(work: Work<T>, trace?: ActiveTrace): Promise<T>;
  close(): Promise<void>;
}

/**
 * A statement text as `dialect` writes it: `?` placeholders numbered `$first`, `$first + 1`, ...
 * for PostgreSQL, untouched for SQLite. Quoted identifiers and string literals are left alone.
 */
export function sqlText(dialect: Dialect, sql: string, first = 1): string {
  if (dialect === 'sqlite' || !sql.includes('?')) return sql;
  let out = '';
  let n = first;
  let quote: string | undefined;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = undefined;
      out += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      out += ch;
    } else if (ch === '?') {
      out += `$${n++}`;
    } else {
      out += ch;
    }
  }
  return out;
}

// The errors every driver maps its database's failures to, so clients see one set of codes.

/** Seconds a client is told to wait after a storage fault: a full disk or a read-only file outlasts a lock. */
const STORAGE_RETRY_AFTER_S = 5;

/** The storage fault as a client sees it; `cause` (the database's error) is for the logs. */
export function storageUnavailable(cause: unknown): AppError {
  return new AppError('STORAGE_UNAVAILABLE', 'the database cannot store data right now; nothing was stored', {
    retryAfter: STORAGE_RETRY_AFTER_S,
    cause,
  });
}

/** The 409 of a unique constraint, naming the fields it covers when they are known. */
export function uniqueConflict(fields: readonly string[] | undefined): AppError {
  if (!fields?.length) return new AppError('UNIQUE_CONFLICT', 'a unique value is already taken');
  const others = (field: string) => fields.filter((f) => f !== field);
  return new AppError('UNIQUE_CONFLICT', `another record already has this ${fields.join(' and ')}`, {
    details: fields.map((field) => ({
      field,
      code: 'UNIQUE',
      message: others(field).length ? `already taken together with ${others(field).join(' and ')}` : 'already taken',
    })),
  });
}

export function referenceConflict(): AppError {
  return new AppError('REFERENCE_CONFLICT', 'the change would break a reference between records');
}

export function databaseBusy(cause: unknown): AppError {
  return new AppError('DATABASE_BUSY', 'the database is busy', { retryAfter: 1, cause });
}
