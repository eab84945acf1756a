// The embedded SQLite database: opened once, tuned for a web server (WAL, so readers never wait
// for the writer), and every statement run through `query` so it appears as a database.query span.

import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { AppError } from '../core/errors.ts';
import type { ActiveTrace } from '../observe/tracing.ts';

export type Db = Database.Database;
export type Statement = Database.Statement;

/** Opens the SQLite file named by a `file:` URL (relative paths are relative to `baseDir`). */
export function openDatabase(url: string, baseDir: string): Db {
  if (!url.startsWith('file:')) {
    throw new Error(
      `DATABASE_URL must be a SQLite file: URL (got "${url.split(':')[0]}:"); ` +
        'this app was generated for the embedded SQLite default',
    );
  }
  const file = path.resolve(baseDir, url.slice('file:'.length).replace(/^\/\/(?=\/)/, ''));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  return db;
}

const transactionStatements = new WeakMap<Db, { begin: Statement; commit: Statement; rollback: Statement }>();

/**
 * Runs `fn` in one IMMEDIATE transaction, or simply runs it when the connection is already in
 * one: the outer transaction commits or rolls back everything, and nested savepoints would only
 * add work (nothing here catches an inner failure and carries on).
 */
export function atomically<T>(db: Db, fn: () => T): T {
  if (db.inTransaction) return fn();
  let stmts = transactionStatements.get(db);
  if (!stmts) {
    stmts = { begin: db.prepare('BEGIN IMMEDIATE'), commit: db.prepare('COMMIT'), rollback: db.prepare('ROLLBACK') };
    transactionStatements.set(db, stmts);
  }
  stmts.begin.run();
  try {
    const result = fn();
    stmts.commit.run();
    return result;
  } catch (err) {
    if (db.inTransaction) stmts.rollback.run();
    throw err;
  }
}

const savepointStatements = new WeakMap<Db, { open: Statement; release: Statement; rollbackTo: Statement }>();

/**
 * Runs `fn` inside the current transaction so that, when it throws, only its own changes are
 * undone and the transaction carries on (for recording the failure alongside).
 */
export function withSavepoint<T>(db: Db, fn: () => T): T {
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
  try {
    const result = fn();
    stmts.release.run();
    return result;
  } catch (err) {
    if (db.inTransaction) {
      stmts.rollbackTo.run();
      stmts.release.run();
    }
    throw err;
  }
}

type Mode = 'get' | 'all' | 'run';

/** Runs a prepared statement inside a database.query span and maps SQLite failures to app errors. */
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

/** Turns constraint and lock errors into errors a client can act on; anything else stays internal. */
export function mapSqliteError(err: unknown): unknown {
  const code = (err as { code?: string }).code;
  if (typeof code !== 'string' || err instanceof AppError) return err;
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    // A column's own index reports "Table.column"; the index on lower() of a unique e-mail field
    // (addresses are unique in any letter case) reports "index 'Table.column_lower_key'".
    const message = (err as Error).message;
    const column =
      /UNIQUE constraint failed: \w+\.(\w+)/.exec(message)?.[1] ??
      /UNIQUE constraint failed: index '\w+\.(\w+)_lower_key'$/.exec(message)?.[1];
    return new AppError(
      'UNIQUE_CONFLICT',
      column ? `another record already has this ${column}` : 'a unique value is already taken',
      {
        details: column ? [{ field: column, code: 'UNIQUE', message: 'already taken' }] : undefined,
      },
    );
  }
  // RESTRICT actions report as a trigger constraint; the message is what names the foreign key.
  if (
    code === 'SQLITE_CONSTRAINT_FOREIGNKEY' ||
    (code.startsWith('SQLITE_CONSTRAINT') && /FOREIGN KEY/.test((err as Error).message))
  ) {
    return new AppError('REFERENCE_CONFLICT', 'the change would break a reference between records');
  }
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return new AppError('DATABASE_BUSY', 'the database is busy', { retryAfter: 1 });
  }
  return err;
}
