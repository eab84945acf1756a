// The embedded SQLite database: one connection, opened once, tuned for a web server (WAL, so
// readers never wait for the writer), running units of work (data/database.ts) synchronously.
//
// Writes share commits. The writes that arrive in one turn of the event loop commit together, in
// one transaction with a savepoint per write, and each caller is answered once that transaction
// has committed. Why: a commit appends every page it changed to the WAL, and the writes of one
// turn mostly change the same pages (the last leaf of each table and index they append to), so
// committing them together writes those pages once instead of once per write: measured on the
// reference app, a create with its audit and idempotency rows costs the database about 370 µs
// alone and under 190 µs in groups of four.
//
// What stays the same: a write sees the writes queued before it and nothing else; no other
// request can see a write before it commits, because the group runs from BEGIN to COMMIT in one
// synchronous callback and nothing else runs in between; a write that throws (anything, an Error
// or not) is rolled back to its savepoint and fails alone; nobody is answered before the commit.
// When the transaction itself fails (BEGIN, a savepoint statement, the COMMIT, or an error after
// which SQLite rolled everything back), the whole group is rolled back and every caller of the
// group hears that failure: each is answered exactly once, and the connection is left out of any
// transaction.
//
// Waiting for another connection's write lock (another process, the users command, an operator's
// sqlite3 shell) never blocks the event loop. SQLite's busy timeout waits by sleeping inside the
// call, and better-sqlite3's calls are synchronous, so a lock held for seconds would stop every
// request, reads and /healthz included, for as long. The connection's busy timeout is therefore 0
// once the app serves: a BEGIN IMMEDIATE that finds the lock taken fails at once, the writes stay
// queued in their order (later ones join the queue behind them), and BEGIN is tried again on a
// timer, until each write's own deadline (`busyTimeoutMs` after it was queued) answers it
// DATABASE_BUSY. Reads go on meanwhile: in WAL mode a reader does not wait for a writer. (A read
// that SQLite still refuses for a lock, as while another process recovers or truncates the WAL,
// answers DATABASE_BUSY at once rather than stop the app.)
//
// A unit of work is checked as it runs, since plain JavaScript or a cast can hand over anything: it
// must be a generator (an async function could go on after the commit, and an async generator's
// steps are promises), and everything it yields a statement of data/database.ts.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import BetterSqlite3 from 'better-sqlite3';
import { AppError } from '../core/errors.ts';
import {
  type Database,
  databaseBusy,
  laterFailure,
  type Outcome,
  referenceConflict,
  type Row,
  type RunResult,
  type Statement,
  storageUnavailable,
  uniqueConflict,
  type Work,
} from './database.ts';
import { fieldOfColumn } from './fields.ts';
import type { ActiveTrace } from '../observe/tracing.ts';

export type Connection = BetterSqlite3.Database;
type Prepared = BetterSqlite3.Statement;

export interface SqliteOptions {
  /**
   * How hard a commit waits for the disk (DATABASE_SYNC): `normal`, the default, or `full`.
   * Anything else throws, so a typo refuses to start rather than silently meaning `normal`.
   */
  synchronous?: string;
  /**
   * How long a write waits for another connection's lock before DATABASE_BUSY (default 5,000 ms),
   * without blocking the event loop; migrations at start-up wait as long, blocking (`blocking`).
   */
  busyTimeoutMs?: number;
}

/** The path of the SQLite file a `file:` URL names (relative paths are relative to `baseDir`). */
export function sqliteFile(url: string, baseDir: string): string {
  return path.resolve(baseDir, url.slice('file:'.length).replace(/^\/\/(?=\/)/, ''));
}

/**
 * Opens the SQLite file named by a `file:` URL.
 *
 * In WAL mode `synchronous = NORMAL` syncs the WAL at checkpoints, not at every commit: a power
 * loss or OS crash can lose the last commits, never corrupt the file (a process crash loses
 * nothing). `FULL` syncs the WAL at every commit, so an answered write survives a power loss too,
 * at the price of one fsync per group commit.
 */
export function openSqlite(url: string, baseDir: string, options: SqliteOptions = {}): SqliteDatabase {
  if (!url.startsWith('file:'))
    throw new Error(`a SQLite DATABASE_URL starts with file: (got "${url.split(':')[0]}:")`);
  const synchronous = synchronousMode(options.synchronous);
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0)
    throw new Error(`the busy timeout must be a whole number of milliseconds (got ${busyTimeoutMs})`);
  const file = sqliteFile(url, baseDir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const connection = new BetterSqlite3(file);
  connection.pragma('journal_mode = WAL');
  connection.pragma(`synchronous = ${synchronous}`);
  connection.pragma('foreign_keys = ON');
  // 0: a lock is waited for on a timer, never inside a call (see the top of this file).
  connection.pragma('busy_timeout = 0');
  return new SqliteDatabase(connection, busyTimeoutMs);
}

const SYNCHRONOUS_MODES = ['normal', 'full'];

function synchronousMode(value: string | undefined): string {
  if (value === undefined) return 'NORMAL';
  if (SYNCHRONOUS_MODES.includes(value.toLowerCase())) return value.toUpperCase();
  throw new Error(`DATABASE_SYNC must be "normal" (the default) or "full" (got "${value}")`);
}

/** Bounds how long the first write of a busy turn waits for the others. */
const MAX_GROUP = 64;
/**
 * Prepared statements kept, by text. The texts the generator wrote are a few per entity; row
 * filters add one per distinct rule shape. The bound only guards against a shape that varies
 * per request.
 */
const MAX_PREPARED = 1024;

/**
 * The pauses between attempts to begin a transaction while another connection holds the write
 * lock, in ms, the last repeated: short at first (most locks are held for a moment), then a
 * retry every 25 ms costs a BEGIN each, microseconds, and starts a write at most 25 ms after the
 * lock is free.
 */
const LOCK_RETRY_MS = [1, 2, 5, 10, 15, 20, 25];

interface QueuedWrite {
  unit: () => Work<unknown>;
  /** When the write stops waiting for another connection's lock (performance.now(), ms). */
  deadline: number;
  trace: ActiveTrace | undefined;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  outcome: { ok: true; value: unknown } | { ok: false; error: unknown } | undefined;
}

export class SqliteDatabase implements Database {
  readonly dialect = 'sqlite' as const;
  readonly returningOld = false;
  private readonly prepared = new Map<string, Prepared>();
  private queue: QueuedWrite[] = [];
  /** A flush is due: on the next turn (setImmediate), or on the lock-retry timer. */
  private scheduled = false;
  /** The lock-retry timer, while another connection holds the write lock. */
  private lockWait: NodeJS.Timeout | undefined;
  /** Attempts at BEGIN that found the lock taken, since the last one that did not. */
  private lockRetries = 0;
  /** Set when a ROLLBACK failed: the transaction still open is a dead one, rolled back first. */
  private deadTransaction = false;
  /**
   * The failure that decided the running write's fate, whatever the write does after catching it
   * (see `noteFailure`): the write fails with it.
   */
  private fatal: { error: unknown } | undefined;

  /**
   * @param busyTimeoutMs how long a write waits for another connection's write lock before it
   *   fails with DATABASE_BUSY.
   */
  constructor(
    readonly connection: Connection,
    readonly busyTimeoutMs = 5000,
  ) {}

  /**
   * Runs `work` with the connection waiting inside SQLite for other connections' locks, up to
   * `busyTimeoutMs`, blocking the event loop: for start-up work before the app serves anything
   * (migrations, which another instance starting at the same time may be applying).
   */
  blocking<T>(work: (connection: Connection) => T): T {
    this.connection.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    try {
      return work(this.connection);
    } finally {
      this.connection.pragma('busy_timeout = 0');
    }
  }

  /** The connection's `synchronous` setting as DATABASE_SYNC names it, read back from SQLite. */
  get synchronous(): string {
    const level = this.connection.pragma('synchronous', { simple: true }) as number;
    return ['off', 'normal', 'full', 'extra'][level] ?? String(level);
  }

  read<T>(work: Work<T>, trace?: ActiveTrace): Promise<T> {
    // A dead transaction holds the writes of a group that failed: no read may see them.
    if (this.deadTransaction && !this.readyForTransaction())
      return Promise.reject(new Error('a failed transaction could not be rolled back yet: the connection is busy'));
    const outside = !this.connection.inTransaction;
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: this.drive(workOf(work) as Work<T>, trace, false) };
    } catch (err) {
      outcome = { ok: false, error: asError(err) };
    }
    // BEGIN and SAVEPOINT count as read-only, yet a transaction a read left open would hold back
    // every later write (and hand them a transaction they did not begin).
    if (outside && this.connection.inTransaction) {
      this.rollBack();
      return Promise.reject(new Error('a read may not begin a transaction'));
    }
    return outcome.ok ? Promise.resolve(outcome.value) : Promise.reject(outcome.error);
  }

  /** A `write`: the statements commit together, at least as strongly as each on its own. */
  writeEach<T>(work: Work<T>, trace?: ActiveTrace): Promise<T> {
    return this.write(() => work, trace);
  }

  /**
   * Runs the unit in the next group and resolves with its result once the group has committed,
   * or rejects with what it threw (an Error; a thrown non-Error is wrapped in one).
   */
  write<T>(unit: () => Work<T>, trace?: ActiveTrace): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const deadline = performance.now() + this.busyTimeoutMs;
      const settle = resolve as (value: unknown) => void;
      this.queue.push({ unit, deadline, trace, resolve: settle, reject, outcome: undefined });
      // While the lock is waited for, the retry timer flushes this write too, in its turn.
      if (this.scheduled) return;
      this.scheduled = true;
      // setImmediate runs after the I/O callbacks of this turn: every request that arrived in it
      // has had the chance to queue its write.
      setImmediate(this.flush);
    });
  }

  async close(): Promise<void> {
    clearTimeout(this.lockWait);
    this.lockWait = undefined;
    // A write after this is flushed (and refused by the closed connection), not left waiting.
    this.scheduled = false;
    // Writes still waiting for a lock are answered rather than left pending forever.
    const waiting = this.queue;
    this.queue = [];
    failAll(waiting, new Error('the database was closed before this write could begin'));
    this.connection.close();
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    this.lockWait = undefined;
    if (!this.queue.length) return;
    const group = this.queue.length <= MAX_GROUP ? this.queue : this.queue.slice(0, MAX_GROUP);
    const rest = group === this.queue ? [] : this.queue.slice(MAX_GROUP);
    this.queue = rest;
    const busy = this.commit(group);
    if (busy) {
      // The group goes back to the head of the queue, before anything queued meanwhile: the
      // writes keep their order.
      this.queue = group.concat(this.queue);
      this.waitForLock(busy);
    } else {
      this.lockRetries = 0;
    }
    if (this.queue.length && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  };

  /**
   * Another connection holds the write lock: answers the writes whose deadline has passed with
   * DATABASE_BUSY (the oldest are at the head of the queue) and tries again on a timer, no later
   * than the next deadline.
   */
  private waitForLock(busy: unknown): void {
    const now = performance.now();
    let expired = 0;
    while (expired < this.queue.length && this.queue[expired].deadline <= now) expired++;
    if (expired) failAll(this.queue.splice(0, expired), mapSqliteError(busy));
    if (!this.queue.length) {
      this.lockRetries = 0;
      return;
    }
    const pause = LOCK_RETRY_MS[Math.min(this.lockRetries++, LOCK_RETRY_MS.length - 1)];
    // Deadlines grow along the queue (a monotonic clock), so the head's comes first.
    this.scheduled = true;
    this.lockWait = setTimeout(this.flush, Math.max(0, Math.min(pause, this.queue[0].deadline - now)));
  }

  /**
   * Runs the group as one transaction and answers its writes; or, when BEGIN finds another
   * connection holding the write lock, returns that failure and answers nobody (the group waits).
   */
  private commit(group: QueuedWrite[]): unknown {
    if (!this.readyForTransaction())
      return failAll(group, new Error('a transaction was left open on the connection and could not be rolled back'));
    try {
      this.statement('BEGIN IMMEDIATE').run();
    } catch (err) {
      if (lockTaken(err) && !this.connection.inTransaction) return err;
      this.rollBack();
      return failAll(group, asError(err));
    }
    let spans: Array<ReturnType<ActiveTrace['startSpan']> | undefined> = [];
    try {
      for (const write of group) this.apply(write);
      spans = group.map((w) => w.trace?.startSpan('database.commit', 'database', { writes: group.length }));
      this.statement('COMMIT').run();
    } catch (err) {
      this.rollBack();
      for (const span of spans) span?.end({ error: true });
      return failAll(group, asError(err));
    }
    for (const span of spans) span?.end();
    for (const write of group) {
      const outcome = write.outcome as NonNullable<QueuedWrite['outcome']>;
      if (outcome.ok) write.resolve(outcome.value);
      else write.reject(outcome.error);
    }
  }

  /**
   * Runs one write in its savepoint and records its outcome. Throws only when the group's
   * transaction cannot go on: a savepoint statement failed, or the transaction ended inside the
   * write (SQLite rolls it back on some errors, such as a full disk).
   */
  private apply(write: QueuedWrite): void {
    this.statement('SAVEPOINT bp_write').run();
    this.fatal = undefined;
    try {
      write.outcome = { ok: true, value: this.drive(workOf(write.unit()), write.trace, true) };
    } catch (err) {
      write.outcome = { ok: false, error: asError(err) };
    }
    const fatal = this.takeFatal();
    if (!this.connection.inTransaction) {
      if (fatal) throw fatal.error;
      throw write.outcome.ok ? new Error('the transaction ended inside a write') : write.outcome.error;
    }
    if (fatal) write.outcome = { ok: false, error: fatal.error };
    if (!write.outcome.ok) this.statement('ROLLBACK TO bp_write').run();
    this.statement('RELEASE bp_write').run();
  }

  /**
   * Runs a unit of work to its end, synchronously: each statement it yields is run and its result
   * sent back in, each failure (mapped to the app's errors) thrown in where it was yielded.
   */
  private drive<T>(work: Work<T>, trace: ActiveTrace | undefined, writable: boolean): T {
    let input: unknown;
    let failure: unknown;
    let failed = false;
    for (;;) {
      const step = failed ? work.throw(failure) : work.next(input);
      if (step.done) return step.value;
      failed = false;
      const statement: unknown = step.value;
      if (isStatement(statement) && statement.mode === 'together') {
        input = (statement.batch ?? []).map((query) => this.outcome(query, trace, writable));
        continue;
      }
      try {
        input = this.execute(statement, trace, writable);
      } catch (err) {
        failure = mapSqliteError(err);
        failed = true;
        if (writable) this.noteFailure(statement, failure);
      }
      if (isStatement(statement) && statement.mode === 'later') {
        // Run at once here; its failure fails the whole unit, as on PostgreSQL (database.ts, later).
        if (failed) throw laterFailure(statement, failure);
        input = undefined;
      }
    }
  }

  /** A statement of `together`'s batch, run: its result or its failure, never thrown. */
  private outcome(query: unknown, trace: ActiveTrace | undefined, writable: boolean): Outcome {
    try {
      return { ok: true, value: this.execute(query, trace, writable) };
    } catch (err) {
      const failure = mapSqliteError(err);
      if (writable) this.noteFailure(query, failure);
      return { ok: false, failure };
    }
  }

  private takeFatal(): { error: unknown } | undefined {
    const fatal = this.fatal;
    this.fatal = undefined;
    return fatal;
  }

  /**
   * Remembers the failure of a write's statement when the write cannot recover from it, whatever
   * it does after catching it: SQLite ended the transaction (some failures roll it back, a full
   * disk among them), so what the write runs next is refused and nothing of it may commit; or
   * undoing or releasing one of its savepoints failed (data/database.ts, `savepoint`), so what the
   * failed step changed can no longer be told from what the write keeps. The write fails with
   * that failure, rolled back.
   */
  private noteFailure(statement: unknown, failure: unknown): void {
    if (this.fatal) return;
    if (!this.connection.inTransaction || (isStatement(statement) && SAVEPOINT_END.test(statement.sql)))
      this.fatal = { error: failure };
  }

  private execute(statement: unknown, trace: ActiveTrace | undefined, writable: boolean): unknown {
    if (!isStatement(statement) || statement.mode === 'together') throw notAStatement(statement);
    // After an error that made SQLite roll the transaction back (a full disk), what the write
    // runs next would commit on its own: half of an operation whose other half is gone.
    if (writable && !this.connection.inTransaction)
      throw new Error(`the transaction ended inside a write; refused: ${statement.sql.slice(0, 80)}`);
    const stmt = this.statement(statement.sql);
    // An INSERT ... RETURNING is a reader (it returns rows), yet not read-only.
    if (!writable && !stmt.readonly)
      throw new Error(`a read may not change the database: ${statement.sql.slice(0, 80)}`);
    const span = trace?.startSpan('database.query', 'database', { sql: statement.sql });
    try {
      const params = statement.params as unknown[];
      if (statement.mode === 'get') return stmt.get(...params) as Row | undefined;
      if (statement.mode === 'all') return stmt.all(...params) as Row[];
      return { changes: stmt.run(...params).changes } satisfies RunResult;
    } finally {
      span?.end();
    }
  }

  private statement(sql: string): Prepared {
    let stmt = this.prepared.get(sql);
    if (!stmt) {
      stmt = this.connection.prepare(sql);
      if (this.prepared.size >= MAX_PREPARED) this.prepared.delete(this.prepared.keys().next().value as string);
      this.prepared.set(sql, stmt);
    }
    return stmt;
  }

  /**
   * Rolls back the open transaction after a failure, and never throws: the caller is already
   * reporting why the transaction failed. A ROLLBACK that fails itself (the connection busy with
   * a statement left unfinished) marks the transaction dead; the next group rolls it back first.
   */
  private rollBack(): void {
    if (!this.connection.inTransaction) return;
    try {
      this.statement('ROLLBACK').run();
      this.deadTransaction = false;
    } catch {
      this.deadTransaction = true;
    }
  }

  /** Whether a transaction may begin: none is open, or the one open is dead and rolls back now. */
  private readyForTransaction(): boolean {
    if (this.connection.inTransaction && this.deadTransaction) this.rollBack();
    return !this.connection.inTransaction;
  }
}

/**
 * A unit of work, checked: a generator. Anything else that slipped past the types is refused: a
 * promise (an async function's), whose code could run after the commit, and its rejection is
 * handled here; an async generator, whose steps are promises (driving one would never end); a value.
 */
function workOf(work: unknown): Work<unknown> {
  type Candidate = { next?: unknown; throw?: unknown; [Symbol.iterator]?: unknown };
  const candidate = (typeof work === 'object' && work !== null ? work : {}) as Candidate;
  if (
    typeof candidate.next === 'function' &&
    typeof candidate.throw === 'function' &&
    typeof candidate[Symbol.iterator] === 'function'
  )
    return work as Work<unknown>;
  handleIfThenable(work);
  throw new Error('a unit of work must be a generator (a function*), not a promise, an async generator or a value');
}

const MODES: ReadonlySet<unknown> = new Set(['get', 'all', 'run', 'later', 'together']);

function isStatement(value: unknown): value is Statement {
  const s = value as Partial<Statement> | null;
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.sql === 'string' &&
    MODES.has(s.mode) &&
    Array.isArray(s.params) &&
    (s.mode !== 'together' || Array.isArray(s.batch))
  );
}

/** The refusal of something a unit yielded that is not a statement (a promise, when it tried to wait). */
function notAStatement(value: unknown): Error {
  const thenable = handleIfThenable(value);
  const what = value === null ? 'null' : thenable ? 'a promise' : typeof value;
  return new Error(`a unit of work may only yield statements (get, all, run, later, together), not ${what}`);
}

/** Handles the rejection of a refused promise (its caller hears the refusal instead); false for a non-promise. */
function handleIfThenable(value: unknown): boolean {
  if (typeof (value as { then?: unknown } | null)?.then !== 'function') return false;
  Promise.resolve(value as PromiseLike<unknown>).then(undefined, ignore);
  return true;
}

function ignore(): void {}

/** Statements that end a savepoint: when one fails, the write's changes cannot be sorted out. */
const SAVEPOINT_END = /^\s*(ROLLBACK\s+TO|RELEASE)\b/i;

/** What a caller is rejected with: the app's error for SQLite failures, an Error for anything thrown. */
function asError(err: unknown): unknown {
  if (err instanceof Error) return mapSqliteError(err);
  const what = err === null ? 'null' : typeof err;
  return new Error(`a unit of work threw ${what}, not an Error`, { cause: err });
}

/** Whether SQLite refused for a lock another connection holds (SQLITE_BUSY and its extended codes). */
function lockTaken(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** When the transaction is gone, so is every write of the group, the successful ones included. */
function failAll(group: QueuedWrite[], err: unknown): void {
  for (const write of group) write.reject(err);
}

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

/**
 * Turns SQLite's constraint, lock and storage errors into errors a client can act on; anything
 * else (corruption, a bad statement) stays as it is and becomes an INTERNAL_ERROR.
 */
export function mapSqliteError(err: unknown): unknown {
  const code = (err as { code?: string } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_') || err instanceof AppError) return err;
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    // An index on columns reports "Table.a" or, for a composite one (an entity's `indexes`),
    // "Table.a, Table.b" (a unique e-mail field's key column, "Table._bp_key_a", stands for a);
    // the index on lower() of a unique e-mail field reports "index 'Table.column_lower_key'".
    const message = (err as Error).message;
    const columns = /^UNIQUE constraint failed: (\w+\.\w+(?:, \w+\.\w+)*)$/.exec(message)?.[1];
    return uniqueConflict(
      columns
        ? columns.split(', ').map((c) => fieldOfColumn(c.slice(c.indexOf('.') + 1)))
        : /^UNIQUE constraint failed: index '\w+\.(\w+)_lower_key'$/.exec(message)?.slice(1),
    );
  }
  // RESTRICT actions report as a trigger constraint; the message is what names the foreign key.
  if (
    code === 'SQLITE_CONSTRAINT_FOREIGNKEY' ||
    (code.startsWith('SQLITE_CONSTRAINT') && /FOREIGN KEY/.test((err as Error).message))
  ) {
    return referenceConflict();
  }
  const second = code.indexOf('_', 'SQLITE_'.length);
  const primary = second === -1 ? code : code.slice(0, second);
  if (primary === 'SQLITE_BUSY' || primary === 'SQLITE_LOCKED') return databaseBusy(err);
  if (STORAGE_FAULTS.has(primary)) return storageUnavailable(err);
  return err;
}
