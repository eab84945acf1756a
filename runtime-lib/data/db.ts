// The embedded SQLite database: opened once, tuned for a web server (WAL, so readers never wait
// for the writer), and every statement run through `query` so it appears as a database.query span.

import { AsyncLocalStorage } from 'node:async_hooks';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { AppError } from '../core/errors.ts';
import type { ActiveTrace } from '../observe/tracing.ts';

export type Db = Database.Database;
export type Statement = Database.Statement;

export interface OpenOptions {
  /**
   * How hard a commit waits for the disk (DATABASE_SYNC): `normal`, the default, or `full`.
   * Anything else throws, so a typo refuses to start rather than silently meaning `normal`.
   */
  synchronous?: string;
  /** How long a write waits for another connection's lock before DATABASE_BUSY (default 5,000 ms). */
  busyTimeoutMs?: number;
}

/**
 * Opens the SQLite file named by a `file:` URL (relative paths are relative to `baseDir`).
 *
 * In WAL mode `synchronous = NORMAL` syncs the WAL at checkpoints, not at every commit: a power
 * loss or OS crash can lose the last commits, never corrupt the file (a process crash loses
 * nothing). `FULL` syncs the WAL at every commit, so an answered write survives a power loss too,
 * at the price of one fsync per group commit.
 */
export function openDatabase(url: string, baseDir: string, options: OpenOptions = {}): Db {
  if (!url.startsWith('file:')) {
    throw new Error(
      `DATABASE_URL must be a SQLite file: URL (got "${url.split(':')[0]}:"); ` +
        'this app was generated for the embedded SQLite default',
    );
  }
  const synchronous = synchronousMode(options.synchronous);
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0)
    throw new Error(`the busy timeout must be a whole number of milliseconds (got ${busyTimeoutMs})`);
  const file = path.resolve(baseDir, url.slice('file:'.length).replace(/^\/\/(?=\/)/, ''));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  return db;
}

const SYNCHRONOUS_MODES = ['normal', 'full'];

function synchronousMode(value: string | undefined): string {
  if (value === undefined) return 'NORMAL';
  if (SYNCHRONOUS_MODES.includes(value.toLowerCase())) return value.toUpperCase();
  throw new Error(`DATABASE_SYNC must be "normal" (the default) or "full" (got "${value}")`);
}

/** The connection's `synchronous` setting as DATABASE_SYNC names it, read back from SQLite. */
export function synchronousOf(db: Db): string {
  const level = db.pragma('synchronous', { simple: true }) as number;
  return ['off', 'normal', 'full', 'extra'][level] ?? String(level);
}

const transactionStatements = new WeakMap<Db, { begin: Statement; commit: Statement; rollback: Statement }>();

function transactionStatementsOf(db: Db): { begin: Statement; commit: Statement; rollback: Statement } {
  let stmts = transactionStatements.get(db);
  if (!stmts) {
    stmts = { begin: db.prepare('BEGIN IMMEDIATE'), commit: db.prepare('COMMIT'), rollback: db.prepare('ROLLBACK') };
    transactionStatements.set(db, stmts);
  }
  return stmts;
}

/** Connections whose ROLLBACK failed: the transaction still open on them is a dead one. */
const deadTransactions = new WeakSet<Db>();

/**
 * Rolls back the connection's transaction, if any, after a failure, and never throws: the caller
 * is already reporting why the transaction failed. A ROLLBACK that fails itself (the connection
 * busy with a statement someone left unfinished) marks the transaction dead, and the next
 * transaction on the connection rolls it back first (`readyForTransaction`).
 */
export function rollBack(db: Db): void {
  if (!db.inTransaction) return;
  try {
    transactionStatementsOf(db).rollback.run();
    deadTransactions.delete(db);
  } catch {
    deadTransactions.add(db);
  }
}

/** Whether a transaction may begin: none is open, or the one open is dead and rolls back now. */
export function readyForTransaction(db: Db): boolean {
  if (db.inTransaction && deadTransactions.has(db)) rollBack(db);
  return !db.inTransaction;
}

/**
 * Runs `fn` in one IMMEDIATE transaction, or simply runs it when the connection is already in
 * one: the outer transaction commits or rolls back everything, and nested savepoints would only
 * add work (nothing here catches an inner failure and carries on).
 */
export function atomically<T>(db: Db, fn: () => T): T {
  if (db.inTransaction && !deadTransactions.has(db)) return fn();
  const stray = strayWrite('a transaction');
  if (stray) throw stray;
  if (!readyForTransaction(db))
    throw new Error('a failed transaction could not be rolled back yet: the connection is busy');
  const stmts = transactionStatementsOf(db);
  stmts.begin.run();
  let result: T;
  // As a write of its own: once the transaction has ended inside fn (a failure that SQLite answers
  // by rolling everything back), what fn writes next is refused instead of committing alone.
  const window = { open: true };
  try {
    result = runAsWrite(window, call, fn);
    stmts.commit.run();
  } catch (err) {
    rollBack(db);
    throw err;
  } finally {
    window.open = false;
  }
  return result;
}

function call<T>(fn: () => T): T {
  return fn();
}

const savepointStatements = new WeakMap<Db, { open: Statement; release: Statement; rollbackTo: Statement }>();

/**
 * Runs `fn` inside the current transaction so that, when it throws, only its own changes are
 * undone and the transaction carries on (for recording the failure alongside). When its changes
 * cannot be undone alone (ROLLBACK TO or RELEASE fails), the whole transaction is rolled back and
 * that failure is thrown instead: a caller that carries on after an ordinary failure must not
 * commit half of this step.
 */
export function withSavepoint<T>(db: Db, fn: () => T): T {
  // Outside a transaction a savepoint would be one, its RELEASE a COMMIT: that is atomically's job.
  if (!db.inTransaction) return atomically(db, fn);
  let stmts = savepointStatements.get(db);
  if (!stmts) {
    stmts = {
      open: db.prepare('SAVEPOINT bp_step'),
      release: db.prepare('RELEASE bp_step'),
      rollbackTo: db.prepare('ROLLBACK TO bp_step'),
    };
    savepointStatements.set(db, stmts);
  }
  stmts.open.run();
  let result: T;
  try {
    result = fn();
  } catch (err) {
    // SQLite rolls the whole transaction back on some errors (a full disk): nothing left to undo.
    if (db.inTransaction) {
      try {
        stmts.rollbackTo.run();
        stmts.release.run();
      } catch (undoFailure) {
        rollBack(db);
        throw undoFailure;
      }
    }
    throw err;
  }
  try {
    stmts.release.run();
  } catch (releaseFailure) {
    rollBack(db);
    throw releaseFailure;
  }
  return result;
}

/** A write (of a group commit, or `atomically`) while it runs; `open` turns false once it returns. */
export interface WriteWindow {
  open: boolean;
}

/**
 * The write the running code belongs to, carried into every continuation it schedules (code
 * after an `await`, a timer it set). Once the write has returned, its transaction has moved on:
 * whatever such code writes would commit on its own, half of an operation whose other half was
 * rolled back, so it may not write at all (query, atomically, GroupCommit.run).
 */
const writeWindows = new AsyncLocalStorage<WriteWindow>();

/** Runs `fn(arg)` as the write `window`. */
export function runAsWrite<A, R>(window: WriteWindow, fn: (arg: A) => R, arg: A): R {
  return writeWindows.run(window, fn, arg);
}

/** The refusal for code trying to write after the write it belongs to has ended, if it is such code. */
export function strayWrite(what: string): Error | undefined {
  const window = writeWindows.getStore();
  if (window === undefined || window.open) return undefined;
  return strayError(what);
}

function strayError(what: string): Error {
  return new Error(`a write went on after its transaction ended (code after an await?) and was refused: ${what}`);
}

/** A statement that changes the database is refused when its write has ended or lost its transaction. */
function refuseStrayStatement(stmt: Statement): void {
  const window = writeWindows.getStore();
  if (window !== undefined && (!window.open || !stmt.database.inTransaction))
    throw strayError(stmt.source.slice(0, 80));
}

type Mode = 'get' | 'all' | 'run';

/**
 * Runs a prepared statement inside a database.query span and maps SQLite failures to app errors.
 * A statement that writes (`readonly` is false; an INSERT ... RETURNING is a reader, yet writes)
 * is refused when it comes from a group-commit write whose transaction has ended.
 */
export function query<M extends Mode>(
  trace: ActiveTrace | undefined,
  stmt: Statement,
  mode: M,
  params: unknown[] | Record<string, unknown>,
): M extends 'run'
  ? Database.RunResult
  : M extends 'get'
    ? Record<string, unknown> | undefined
    : Record<string, unknown>[] {
  if (!stmt.readonly) refuseStrayStatement(stmt);
  const span = trace?.startSpan('database.query', 'database', { sql: stmt.source });
  try {
    const run = stmt[mode] as (this: Statement, ...a: unknown[]) => never;
    return Array.isArray(params) ? run.apply(stmt, params) : run.call(stmt, params);
  } catch (err) {
    throw mapSqliteError(err);
  } finally {
    span?.end();
  }
}

/** Seconds a client is told to wait after a storage fault: a full disk or a read-only file outlasts a lock. */
const STORAGE_RETRY_AFTER_S = 5;

/**
 * Primary result codes (the part before any extended suffix, SQLITE_IOERR of SQLITE_IOERR_WRITE)
 * of faults of the storage rather than of the request: the disk is full, the file or its folder
 * became read-only, the OS failed a read or write, a file could not be opened, memory ran out, a
 * WAL lock protocol race. The same request can succeed once the fault clears, so they are 503
 * and retryable. Corruption (SQLITE_CORRUPT, SQLITE_NOTADB) is not here: a retry cannot fix it,
 * only an operator restoring the file, so it stays INTERNAL_ERROR (500, logged, not retryable).
 */
const STORAGE_FAULTS = new Set([
  'SQLITE_FULL',
  'SQLITE_IOERR',
  'SQLITE_READONLY',
  'SQLITE_CANTOPEN',
  'SQLITE_PROTOCOL',
  'SQLITE_NOMEM',
  'SQLITE_NOLFS',
]);

/** The storage fault as a client sees it; `cause` (the SQLite error) is for the logs. */
export function storageUnavailable(cause: unknown): AppError {
  return new AppError('STORAGE_UNAVAILABLE', 'the database cannot store data right now; nothing was stored', {
    retryAfter: STORAGE_RETRY_AFTER_S,
    cause,
  });
}

/**
 * Turns SQLite's constraint, lock and storage errors into errors a client can act on; anything
 * else (corruption, a bad statement) stays as it is and becomes an INTERNAL_ERROR.
 */
export function mapSqliteError(err: unknown): unknown {
  const code = (err as { code?: string } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_') || err instanceof AppError) return err;
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    // An index on columns reports "Table.a" or, for a composite one (an entity's `indexes`),
    // "Table.a, Table.b"; the index on lower() of a unique e-mail field (addresses are unique in
    // any letter case) reports "index 'Table.column_lower_key'".
    const message = (err as Error).message;
    const columns = /^UNIQUE constraint failed: (\w+\.\w+(?:, \w+\.\w+)*)$/.exec(message)?.[1];
    const fields = columns
      ? columns.split(', ').map((c) => c.slice(c.indexOf('.') + 1))
      : /^UNIQUE constraint failed: index '\w+\.(\w+)_lower_key'$/.exec(message)?.slice(1);
    if (!fields) return new AppError('UNIQUE_CONFLICT', 'a unique value is already taken');
    const others = (field: string) => fields.filter((f) => f !== field);
    return new AppError('UNIQUE_CONFLICT', `another record already has this ${fields.join(' and ')}`, {
      details: fields.map((field) => ({
        field,
        code: 'UNIQUE',
        message: others(field).length ? `already taken together with ${others(field).join(' and ')}` : 'already taken',
      })),
    });
  }
  // RESTRICT actions report as a trigger constraint; the message is what names the foreign key.
  if (
    code === 'SQLITE_CONSTRAINT_FOREIGNKEY' ||
    (code.startsWith('SQLITE_CONSTRAINT') && /FOREIGN KEY/.test((err as Error).message))
  ) {
    return new AppError('REFERENCE_CONFLICT', 'the change would break a reference between records');
  }
  const second = code.indexOf('_', 'SQLITE_'.length);
  const primary = second === -1 ? code : code.slice(0, second);
  if (primary === 'SQLITE_BUSY' || primary === 'SQLITE_LOCKED') {
    return new AppError('DATABASE_BUSY', 'the database is busy', { retryAfter: 1, cause: err });
  }
  if (STORAGE_FAULTS.has(primary)) return storageUnavailable(err);
  return err;
}
