// The PostgreSQL driver: a bounded pool of connections (`pg`), running units of work
// (data/database.ts) asynchronously on one pooled connection each, whose protocol messages the
// runtime writes itself (data/postgres-wire.ts). Statements pipeline: each is queued as the unit
// yields it and everything queued leaves in one write at the unit's next wait, so BEGIN travels
// with a unit's first statement, `later` statements (an audit record, a key's record) with the
// next one, and COMMIT with the last; `together` statements go at once. A write that used to take
// a round trip per statement takes one or two (docs/operations.md, "SQLite or PostgreSQL"), and one that waits
// for nothing (a create) is one statement, without BEGIN or COMMIT of its own: such statements,
// from the units of one turn of the event loop, commit together (data/postgres-group.ts).
//
// A write is one transaction at READ COMMITTED, PostgreSQL's default. That is enough because the
// runtime never decides on a row it read without a lock: it re-reads the state a write depends on
// inside the transaction with `SELECT ... FOR UPDATE`, which waits for a concurrent writer of the
// row and then returns its committed state, and it fences each change with a conditional UPDATE
// (`... WHERE id = ? AND state = ?`) whose count tells whether the row was still as expected.
// Stronger levels would only add serialization failures for clients to retry.
//
// A unit of work takes a connection from the pool at the first statement that needs one, not
// before: a unit that yields none (a validation failure, a cached answer), or only a statement that
// goes through the group commit, takes none of its own. Every connection sets a statement timeout
// and an idle-in-transaction timeout when it starts (no extra round trip), so neither a slow query
// nor a transaction stuck between two statements holds its locks for long (the wire ends each round
// trip of a transaction with a Sync, which arms the idle timeout). Rows come back in the one stored
// form of data/database.ts, by the type parsers below, which only this driver's rows use: nothing
// else in the process is affected.

import { createHash } from 'node:crypto';
import pg from 'pg';
import {
  type Database,
  databaseBusy,
  get,
  laterFailure,
  type Outcome as Answer,
  referenceConflict,
  type Query,
  type RunResult,
  sqlText,
  type Statement,
  storageUnavailable,
  uniqueConflict,
  type Work,
} from './database.ts';
import type { ActiveTrace, SpanHandle } from '../observe/tracing.ts';
import { fieldOfColumn } from './fields.ts';
import { GroupCommit } from './postgres-group.ts';
import { type Result, SkippedStatement, Wire, type WireValue, wireValues } from './postgres-wire.ts';

export interface PostgresOptions {
  /** Connections the pool opens at most (DATABASE_POOL_MAX, default 10). */
  poolMax?: number;
  /** How long a unit of work waits for a connection, pooled or new (DATABASE_CONNECT_TIMEOUT_MS, default 5,000). */
  connectionTimeoutMs?: number;
  /** How long one statement may run before PostgreSQL cancels it (DATABASE_STATEMENT_TIMEOUT_MS, default 10,000). */
  statementTimeoutMs?: number;
  /** How long a transaction may sit idle between statements before PostgreSQL ends it (default 30,000). */
  idleInTransactionTimeoutMs?: number;
  /** The name the connections show in pg_stat_activity (default "bp-app"); the URL's application_name wins. */
  applicationName?: string;
}

/** The largest timeout PostgreSQL (a 32-bit integer of milliseconds) and Node's timers accept. */
const MAX_TIMEOUT_MS = 2_147_483_647;
const MAX_POOL = 1000;

/** The environment variables of the pool, read by the caller once at start. */
const ENV_OPTIONS = [
  ['DATABASE_POOL_MAX', 'poolMax', MAX_POOL],
  ['DATABASE_CONNECT_TIMEOUT_MS', 'connectionTimeoutMs', MAX_TIMEOUT_MS],
  ['DATABASE_STATEMENT_TIMEOUT_MS', 'statementTimeoutMs', MAX_TIMEOUT_MS],
] as const;

/**
 * The pool options set in `env`. A value that is not a whole number in range throws, so a typo
 * refuses to start rather than silently meaning the default.
 */
export function postgresOptionsFromEnv(env: Readonly<Record<string, string | undefined>>): PostgresOptions {
  const options: PostgresOptions = {};
  for (const [name, key, max] of ENV_OPTIONS) {
    const text = env[name];
    if (text === undefined) continue;
    if (!/^\d{1,10}$/.test(text) || Number(text) < 1 || Number(text) > max)
      throw new Error(`${name} must be a whole number from 1 to ${max} (got "${text}")`);
    options[key] = Number(text);
  }
  return options;
}

function wholeNumber(name: string, value: number, max: number): number {
  if (!Number.isInteger(value) || value < 1 || value > max)
    throw new Error(`${name} must be a whole number from 1 to ${max} (got ${value})`);
  return value;
}

/**
 * Opens a pool on the database a `postgres://` or `postgresql://` URL names. No connection is
 * made yet: the first unit of work that runs a statement opens one.
 */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<PostgresDatabase> {
  if (!/^postgres(?:ql)?:\/\//.test(url)) {
    // Only the scheme is shown: the rest of a URL may hold a password.
    throw new Error(
      `a PostgreSQL DATABASE_URL starts with postgres:// or postgresql:// (got "${/^[^:/]*:?/.exec(url)?.[0]}")`,
    );
  }
  // Query parameters of the URL override the pool's settings in `pg`: a timeout set there would
  // silently win over the DATABASE_*_MS variables.
  const conflict = /[?&](statement_timeout|idle_in_transaction_session_timeout)=/.exec(url)?.[1];
  if (conflict) throw new Error(`DATABASE_URL may not set ${conflict}: use DATABASE_STATEMENT_TIMEOUT_MS`);
  const pool = new pg.Pool({
    connectionString: url,
    max: wholeNumber('the pool size', options.poolMax ?? 10, MAX_POOL),
    connectionTimeoutMillis: wholeNumber('the connect timeout', options.connectionTimeoutMs ?? 5000, MAX_TIMEOUT_MS),
    statement_timeout: wholeNumber('the statement timeout', options.statementTimeoutMs ?? 10_000, MAX_TIMEOUT_MS),
    idle_in_transaction_session_timeout: wholeNumber(
      'the idle-in-transaction timeout',
      options.idleInTransactionTimeoutMs ?? 30_000,
      MAX_TIMEOUT_MS,
    ),
    application_name: options.applicationName ?? 'bp-app',
    // Times with a time zone are converted in the session's zone (and now() is written in it to a
    // column without one): UTC, whatever the server's default, as the stored form is. The type
    // parsers read dates in ISO style, whatever the server's DateStyle. A Float reads back as the
    // number written (shortest exact), even where the server's default asks for fewer digits.
    options: '-c TimeZone=UTC -c DateStyle=ISO -c extra_float_digits=1',
    // Finds connections a vanished server or a NAT left dead while idle in the pool.
    keepAlive: true,
  });
  return new PostgresDatabase(pool);
}

/**
 * Statement texts kept converted (and named), by text. The texts the generator wrote are a few
 * per entity; row filters add one per distinct rule shape. Beyond the bound (a shape that varies
 * per request), texts are converted at each use and run unnamed, so neither this map nor the
 * statements prepared on each connection grow without end.
 */
const MAX_PREPARED = 1024;

export interface Prepared {
  text: string;
  /** The name the statement is prepared under on each connection, when it has one. */
  name: string | undefined;
  /** For a plain INSERT, the table it writes (`tableOf`). */
  table: string | undefined;
}

/** The first version whose UPDATE returns the row as it was (`RETURNING OLD`): PostgreSQL 18. */
const RETURNING_OLD_SINCE = 180000;

export class PostgresDatabase implements Database {
  readonly dialect = 'postgres' as const;
  /** False until `identifyServer` finds PostgreSQL 18 or later: set by it alone. */
  private serverReturnsOld = false;
  private readonly prepared = new Map<string, Prepared>();
  /** Writes of one statement each, committed together per turn of the event loop. */
  private readonly groups = new GroupCommit({
    connect: async () => {
      const { client, wire } = await this.connection();
      return { wire, done: (broken) => this.letGo(client, wire, broken) };
    },
    statement: (sql) => this.statement(sql),
    sent: (answer, mode) => this.sent(answer, mode),
    failed: (err) => ({ ok: false, failure: mapPostgresError(err), broken: undefined }),
  });
  /** The text each statement name stands for: a hash collision must never run the wrong statement. */
  private readonly named = new Map<string, string>();
  /** Set while an idle connection failed and no new one has connected since: one log line per outage. */
  private idleFailure = false;
  /** Connections open or closing: the pool forgets a connection before it has finished closing. */
  private connections = 0;
  private allClosed: (() => void) | undefined;
  /** Units of work holding or waiting for a connection. */
  private running = 0;
  private drained: (() => void) | undefined;
  private ending: Promise<void> | undefined;

  constructor(readonly pool: pg.Pool) {
    pool.on('error', this.idleClientFailed);
    pool.on('connect', (client) => {
      this.connections++;
      this.idleFailure = false;
      // A connection that fails while checked out emits 'error' too, and an 'error' nobody
      // listens to ends the process. The failure also reaches the statement running on it (or the
      // next one), and the pool drops the connection when it is released.
      client.on('error', ignore);
    });
    pool.on('remove', () => {
      if (--this.connections === 0) this.allClosed?.();
    });
  }

  /**
   * Asks the server its version and uses what that version offers (`returningOld`); returns the
   * version, as the server names it (`18.1`). The app calls it once, when it starts.
   */
  async identifyServer(): Promise<string> {
    const row = await this.read(
      get("SELECT current_setting('server_version') AS version, current_setting('server_version_num')::int AS num"),
    );
    this.serverReturnsOld = Number(row?.num) >= RETURNING_OLD_SINCE;
    return String(row?.version);
  }

  get returningOld(): boolean {
    return this.serverReturnsOld;
  }

  /**
   * Runs `work` on one connection, outside a transaction: each statement sees what was committed
   * when it ran. A statement that writes is not refused here, as SQLite's driver refuses it: that
   * would cost a round trip per read, and the same runtime code runs on SQLite in the tests.
   */
  async read<T>(work: Work<T>, trace?: ActiveTrace): Promise<T> {
    try {
      return await this.drive(work, trace, false);
    } catch (err) {
      throw asError(err);
    }
  }

  /**
   * Runs the work `unit` returns as one transaction and resolves once it has committed, or
   * rejects with what failed (an Error; a thrown non-Error is wrapped in one) once it has been
   * rolled back.
   */
  async write<T>(unit: () => Work<T>, trace?: ActiveTrace): Promise<T> {
    try {
      return await this.drive(unitOf(unit) as Work<T>, trace, true);
    } catch (err) {
      throw asError(err);
    }
  }

  /** Runs `work` outside a transaction, which is what `read` does: each statement commits on its own. */
  writeEach<T>(work: Work<T>, trace?: ActiveTrace): Promise<T> {
    return this.read(work, trace);
  }

  /**
   * Waits for the units of work that have started, refusing new ones, then closes every
   * connection, and resolves once they are closed (not merely once the pool has let go of them, as
   * `pool.end()` does). Without the wait, `pool.end()` would leave a unit still waiting for its
   * connection to time out.
   */
  async close(): Promise<void> {
    this.ending ??= this.end();
    await this.ending;
  }

  private async end(): Promise<void> {
    if (this.running > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    await this.pool.end();
    if (this.connections > 0) await new Promise<void>((resolve) => (this.allClosed = resolve));
  }

  /** Runs a unit of work: on a connection from the first statement that needs one, if any. */
  private async drive<T>(work: Work<T>, trace: ActiveTrace | undefined, transaction: boolean): Promise<T> {
    const step = work.next();
    if (step.done) return step.value;
    if (this.ending) throw new Error('the database has been closed');
    this.running++;
    try {
      return await this.driveOn(work, step.value, trace, transaction);
    } finally {
      if (--this.running === 0) this.drained?.();
    }
  }

  /**
   * Runs a unit of work to its end, from its first statement: each statement it yields is queued
   * at once and, but for `later` ones, awaited, its result sent back in, its failure (mapped to
   * the app's errors) thrown in where it was yielded. Statements queued before a wait leave
   * together (data/postgres-wire.ts). In a transaction, BEGIN goes ahead of the first statement
   * and COMMIT after the unit returns, each without a round trip of its own; on any failure the
   * transaction is rolled back. A write that waits for nothing is one statement without them
   * (`oneStatement`), and so is a first statement that `commitsAlone` (what follows it then begins
   * a transaction of its own): both go through the group commit (data/postgres-group.ts), which
   * commits them with those of other units, and take no connection of the unit's own. The unit's
   * connection is taken at the first statement that needs one; it goes back to the pool at the
   * end, or is destroyed when it cannot be trusted any more (it failed, or its ROLLBACK did).
   */
  private async driveOn<T>(
    work: Work<T>,
    first: Statement,
    trace: ActiveTrace | undefined,
    transaction: boolean,
  ): Promise<T> {
    let link: Linked | undefined;
    const connect = async (): Promise<Linked> => {
      if (!link) {
        const { client, wire } = await this.connection();
        link = { client, wire, flight: new Flight(wire, transaction) };
      }
      return link;
    };
    // In a transaction, `later` statements the unit yields before anything it waits for are held
    // here, unsent. A unit that yields nothing else (a create: its row, its audit row, its key's
    // row) then goes as one statement through the group commit (`writeAlone`).
    const held: Held[] = [];
    let begun = !transaction;
    const begin = ({ wire, flight }: Linked) => {
      if (begun) return;
      begun = true;
      flight.add(this.sent(wire.control('BEGIN', false), 'run'));
      for (const h of held) flight.add(this.queue(wire, h.prepared, 'later', h.values, false, h.span), h.statement);
    };
    let statement = first;
    let value: T;
    try {
      for (;;) {
        let step: IteratorResult<Statement, T>;
        if (statement.mode === 'later') {
          if (begun) {
            const { wire, flight } = await connect();
            flight.add(this.send(wire, statement, transaction, this.span(statement, trace)), statement);
          } else held.push(this.hold(statement, trace));
          step = work.next(undefined);
        } else if (statement.mode === 'together') {
          const batch = statement.batch ?? [];
          if (!begun && held.length === 0 && batch.length === 1 && batch[0].commitsAlone === true) {
            step = work.next([answered(await this.grouped(batch[0], trace))]);
          } else {
            const linked = await connect();
            begin(linked);
            const sent = batch.map((query) => this.send(linked.wire, query, transaction, this.span(query, trace)));
            step = work.next((await linked.flight.afterAll(sent)).map(answered));
          }
        } else {
          const linked = await connect();
          begin(linked);
          const sent = this.send(linked.wire, statement, transaction, this.span(statement, trace));
          const outcome = await linked.flight.after(sent);
          step = outcome.ok ? work.next(outcome.value) : work.throw(outcome.failure);
        }
        if (step.done) {
          value = step.value;
          break;
        }
        statement = step.value;
      }
    } catch (err) {
      // Statements held when the unit threw are run and rolled back: a failure among them wins.
      if (held.length > 0 && !begun) {
        try {
          begin(await connect());
        } catch {
          for (const h of held) h.span?.end({ error: true });
          throw err;
        }
      }
      if (!link) throw err;
      return this.fail(link, transaction && begun, err);
    }
    if (!begun) {
      // Each statement of the unit committed on its own (`commitsAlone`): nothing is left to commit.
      if (held.length === 0) return value;
      const alone = oneStatement(held);
      if (alone !== undefined) return this.writeAlone(alone, held, value, trace);
      begin(await connect());
    }
    // Set by `connect` (TypeScript does not follow the closure): every statement sent took it.
    const linked = link as Linked | undefined;
    if (!linked) return value;
    const { wire, flight } = linked;
    try {
      if (transaction) {
        const span = trace?.startSpan('database.commit', 'database', {});
        const outcome = await flight.after(this.sent(wire.control('COMMIT', false), 'run'));
        span?.end(outcome.ok ? undefined : { error: true });
        if (!outcome.ok) throw outcome.failure;
        // A transaction in which a statement failed cannot commit: PostgreSQL answers the COMMIT
        // with a ROLLBACK, not an error, and that answer must not count as a commit.
        if (outcome.command !== 'COMMIT')
          throw new Error(
            'the transaction was rolled back: a statement failed and the unit of work went on without a savepoint',
          );
      } else {
        await flight.settle();
      }
    } catch (err) {
      return this.fail(linked, transaction, err);
    }
    await this.letGo(linked.client, wire, flight.broken);
    return value;
  }

  /** A pooled connection, its wire started: for a unit of work, or for a group (GroupCommit). */
  private async connection(): Promise<{ client: pg.PoolClient; wire: Wire }> {
    const client = await this.pool.connect();
    let wire: Wire;
    try {
      wire = Wire.of(client, parserOf);
    } catch (err) {
      client.release(asReleaseError(err));
      throw err;
    }
    wire.begin();
    return { client, wire };
  }

  /** A statement committed on its own, through the group commit; its span ended when answered. */
  private async grouped(query: Query, trace: ActiveTrace | undefined): Promise<Outcome> {
    const span = this.span(query, trace);
    const outcome = await this.groups.add(this.statement(query.sql), query.mode, wireValues(query.params));
    span?.end(outcome.ok ? undefined : { error: true });
    return outcome;
  }

  /**
   * Ends a unit of work that failed with `err`: every statement sent is answered before the
   * connection is rolled back or released; the first failure among them wins over `err`.
   */
  private async fail({ client, wire, flight }: Linked, transaction: boolean, err: unknown): Promise<never> {
    const failure = (await flight.drain()) ?? err;
    let broken = flight.broken ?? wire.broken;
    if (transaction) broken ??= await wire.rollBack();
    await this.letGo(client, wire, broken);
    throw failure;
  }

  /**
   * Runs a write's held statements as the one statement `alone`, through the group commit:
   * outside any transaction block of the unit's, all of it or nothing, without BEGIN and COMMIT of
   * its own. A failure is that of the held statement whose table it names (data/database.ts,
   * `laterFailure`).
   */
  private async writeAlone<T>(
    alone: { sql: string; values: WireValue[] },
    held: Held[],
    value: T,
    trace: ActiveTrace | undefined,
  ): Promise<T> {
    const span = trace?.startSpan('database.commit', 'database', {});
    const outcome = await this.groups.add(this.statement(alone.sql), 'run', alone.values);
    for (const h of held) h.span?.end(outcome.ok ? undefined : { error: true });
    span?.end(outcome.ok ? undefined : { error: true });
    if (outcome.ok) return value;
    const failed = held.length === 1 ? held[0] : held.find((h) => h.prepared.table === outcome.table);
    throw failed ? laterFailure(failed.statement, outcome.failure) : outcome.failure;
  }

  /** Gives the connection back to `pg` and the pool once every answer owed has come. */
  private async letGo(client: pg.PoolClient, wire: Wire, broken: unknown): Promise<void> {
    await wire.settled();
    wire.release();
    client.release(asReleaseError(broken ?? wire.broken));
  }

  /**
   * Queues a statement on the connection and resolves with its outcome, never rejecting: the
   * driver decides when a failure counts. Outside a transaction each statement has its own Sync.
   */
  private send(
    wire: Wire,
    statement: Statement | Query,
    transaction: boolean,
    span: SpanHandle | undefined,
  ): Promise<Outcome> {
    const prepared = this.statement(statement.sql);
    return this.queue(wire, prepared, statement.mode, wireValues(statement.params), !transaction, span);
  }

  /** `send` with the statement's text worked out and its parameters in the wire's form. */
  private queue(
    wire: Wire,
    { text, name }: Prepared,
    mode: Statement['mode'],
    values: WireValue[],
    ownSync: boolean,
    span: SpanHandle | undefined,
  ): Promise<Outcome> {
    return this.sent(wire.send(text, name, values, ownSync), mode, span);
  }

  /** A `later` statement held, its parameters in the wire's form (a bad one throws here). */
  private hold(statement: Statement, trace: ActiveTrace | undefined): Held {
    const prepared = this.statement(statement.sql);
    return { statement, prepared, values: wireValues(statement.params), span: this.span(statement, trace) };
  }

  /** A statement's span, begun when the unit yields it. */
  private span(statement: Statement | Query, trace: ActiveTrace | undefined): SpanHandle | undefined {
    return trace?.startSpan('database.query', 'database', { sql: statement.sql });
  }

  /** A statement's answer as an outcome, in the form its mode asks for; its span ended. */
  private sent(answer: Promise<Result>, mode: Statement['mode'], span?: SpanHandle): Promise<Outcome> {
    return answer.then(
      (result): Outcome => {
        span?.end();
        const value =
          mode === 'get'
            ? result.rows[0]
            : mode === 'all'
              ? result.rows
              : ({ changes: result.rowCount } satisfies RunResult);
        return { ok: true, value, command: result.command };
      },
      (err: unknown): Outcome => {
        span?.end({ error: true });
        const table = err instanceof pg.DatabaseError ? err.table : undefined;
        return { ok: false, failure: mapPostgresError(err), broken: breaks(err) ? err : undefined, table };
      },
    );
  }

  /** A statement's text in PostgreSQL's form and its name, worked out once per text. */
  private statement(sql: string): Prepared {
    let prepared = this.prepared.get(sql);
    if (prepared) return prepared;
    const text = sqlText('postgres', sql);
    const table = tableOf(sql);
    if (this.prepared.size >= MAX_PREPARED) return { text, name: undefined, table };
    let name: string | undefined = `bp_${createHash('sha256').update(text).digest('base64url').slice(0, 22)}`;
    if (this.named.has(name)) name = undefined;
    else this.named.set(name, text);
    prepared = { text, name, table };
    this.prepared.set(sql, prepared);
    return prepared;
  }

  /**
   * An idle pooled connection failed (the server restarted, an administrator or a proxy ended it):
   * the pool has dropped it and opens a new one when needed. Logged once until a new connection
   * succeeds, not once per connection of the pool.
   */
  private readonly idleClientFailed = (err: Error): void => {
    if (this.idleFailure || this.ending) return;
    this.idleFailure = true;
    const code = (err as { code?: unknown }).code;
    console.error(
      `PostgreSQL: an idle pooled connection failed (${typeof code === 'string' ? `${code}: ` : ''}${err.message}); ` +
        'the pool opens new connections as needed (further failures are not logged until one does)',
    );
  };
}

/**
 * A statement's answer: its result (and PostgreSQL's command tag), or its failure, mapped (and
 * the table the server's error names, if any).
 */
export type Outcome =
  { ok: true; value: unknown; command: string } | { ok: false; failure: unknown; broken: unknown; table?: string };

/** A unit of work's own connection: its `pg` client, its wire, and what is in flight on it. */
interface Linked {
  client: pg.PoolClient;
  wire: Wire;
  flight: Flight;
}

/** A `later` statement held until the unit shows whether it waits for anything (driveOn). */
interface Held {
  statement: Statement;
  prepared: Prepared;
  values: WireValue[];
  span: SpanHandle | undefined;
}

/** `INSERT INTO "Table" (columns) VALUES (values)`, and nothing after: the table, quoted. */
const PLAIN_INSERT = /^INSERT INTO ("(?:[^"]|"")+") \([^()]*\) VALUES \(([^()]|\([^()]*\))*\)$/;

/** The table a plain INSERT writes, unquoted as the server's errors name it; undefined for any other statement. */
function tableOf(sql: string): string | undefined {
  const quoted = PLAIN_INSERT.exec(sql)?.[1];
  return quoted === undefined ? undefined : quoted.slice(1, -1).replaceAll('""', '"');
}

/**
 * The one statement that does what the held statements do in a transaction, or undefined. A
 * statement alone is itself. Plain INSERTs into different tables become one statement whose
 * data-modifying WITH clauses run them all on one snapshot: none reads what another writes, and a
 * foreign key between them is checked at the statement's end, when all rows are in. PostgreSQL
 * runs the main statement first and then the WITH clauses from the last to the first, so the first
 * held statement is the main one and the others follow in reverse: they run in the unit's order,
 * and of several failures the first is the one reported, as in a transaction (tested). Anything
 * else (an UPDATE, a DELETE, two rows of one table) stays a transaction of its own statements.
 */
function oneStatement(held: Held[]): { sql: string; values: WireValue[] } | undefined {
  if (held.length === 1) return { sql: held[0].statement.sql, values: held[0].values };
  const tables = new Set(held.map((h) => h.prepared.table));
  if (tables.has(undefined) || tables.size !== held.length) return undefined;
  // The WITH clauses hold the others from the last to the second (others[i] is held[n - 1 - i]);
  // the values go in the order of the text, whose placeholders they fill.
  const others = held.slice(1).reverse();
  const clauses = others.map((h, i) => `bp_${held.length - i} AS (${h.statement.sql})`);
  return {
    sql: `WITH ${clauses.join(', ')} ${held[0].statement.sql}`,
    values: [...others, held[0]].flatMap((h) => h.values),
  };
}

/** An answer as `together` hands it to the unit. */
function answered(outcome: Outcome): Answer {
  return outcome.ok ? { ok: true, value: outcome.value } : { ok: false, failure: outcome.failure };
}

/**
 * The statements of a unit of work sent but not yet awaited (`later` ones, and BEGIN), in the
 * order the connection answers them; and whether the connection broke on one of them.
 */
class Flight {
  private sent: Array<{ outcome: Promise<Outcome>; statement?: Statement }> = [];
  /** The first failure among them: it fails the unit. */
  private failure: { error: unknown } | undefined;
  broken: unknown;

  constructor(
    private readonly wire: Wire,
    private readonly transaction: boolean,
  ) {}

  /**
   * Writes what was queued since the last wait, in one write (a system call per statement costs
   * more CPU than the statement's own encoding): called before every wait for an answer.
   */
  private flush(): void {
    this.wire.flush(this.transaction);
  }

  /** A statement sent without waiting: BEGIN, or a `later` statement of the unit. */
  add(outcome: Promise<Outcome>, statement?: Statement): void {
    this.sent.push({ outcome, statement });
  }

  /** Records what an awaited statement's failure says about the connection. */
  note(outcome: Outcome): void {
    if (!outcome.ok) this.broken ??= outcome.broken;
  }

  /**
   * The outcome of `next`, a statement sent after those in flight: they are answered first, and
   * a failure among them is thrown instead (once `next` too is answered).
   */
  async after(next: Promise<Outcome>): Promise<Outcome> {
    return (await this.afterAll([next]))[0];
  }

  /** The outcomes of statements sent together after those in flight, as `after`. */
  async afterAll(next: Array<Promise<Outcome>>): Promise<Outcome[]> {
    this.flush();
    const failure = await this.drain();
    const outcomes = await Promise.all(next);
    for (const outcome of outcomes) this.note(outcome);
    if (failure !== undefined) throw failure;
    return outcomes;
  }

  /** Waits for every statement sent; throws the first failure among them. */
  async settle(): Promise<void> {
    const failure = await this.drain();
    if (failure !== undefined) throw failure;
  }

  /** Waits for every statement sent; resolves with the first failure among them, if any. */
  async drain(): Promise<unknown> {
    this.flush();
    const sent = this.sent;
    this.sent = [];
    for (const { outcome, statement } of sent) {
      const answer = await outcome;
      this.note(answer);
      if (this.failure || answer.ok) continue;
      this.failure = { error: statement ? laterFailure(statement, answer.failure) : answer.failure };
    }
    return this.failure?.error;
  }
}

/** Whether a statement's failure leaves its connection unfit for another: all but the server's own errors do. */
function breaks(err: unknown): boolean {
  if (err instanceof SkippedStatement) return false;
  return !(err instanceof pg.DatabaseError) || err.severity === 'FATAL' || err.severity === 'PANIC';
}

/** What a connection is released with: an Error destroys it (a thrown non-Error is wrapped). */
function asReleaseError(broken: unknown): Error | undefined {
  if (broken === undefined || broken instanceof Error) return broken;
  return new Error('the connection failed', { cause: broken });
}

/**
 * The unit of work a write's function returns. Anything else (a promise from an async function
 * that slipped past the types, say) is refused: its code could run after the commit.
 */
function unitOf(unit: () => Work<unknown>): Work<unknown> {
  const work: unknown = unit();
  const candidate = work as { next?: unknown; throw?: unknown; then?: unknown } | null;
  if (
    candidate !== null &&
    typeof candidate === 'object' &&
    typeof candidate.next === 'function' &&
    typeof candidate.throw === 'function'
  )
    return work as Work<unknown>;
  if (candidate !== null && typeof candidate === 'object' && typeof candidate.then === 'function')
    Promise.resolve(work as PromiseLike<unknown>).then(undefined, ignore);
  throw new Error('a write must be a unit of work (a generator function), not a promise or a value');
}

function ignore(): void {}

/** What a caller is rejected with: the app's error for PostgreSQL failures, an Error for anything thrown. */
function asError(err: unknown): unknown {
  if (err instanceof Error) return mapPostgresError(err);
  const what = err === null ? 'null' : typeof err;
  return new Error(`a unit of work threw ${what}, not an Error`, { cause: err });
}

// Rows in the stored form (data/database.ts): what SQLite returns for the same columns.

/** `2026-01-02 03:04:05.678`, as PostgreSQL writes a timestamp; the fraction has 0 to 6 digits. */
const TIMESTAMP = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?$/;
/** A timestamptz: the same, then the offset of the session's zone: `+00`, `+05:30`, `-03:30:45`. */
const TIMESTAMPTZ = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?$/;

/** Milliseconds: the fraction padded or cut to 3 digits (the DateTime columns are timestamp(3)). */
function millis(fraction: string | undefined): string {
  return fraction === undefined ? '000' : fraction.length >= 3 ? fraction.slice(0, 3) : fraction.padEnd(3, '0');
}

/** A timestamp (UTC by the schema's convention) as Prisma writes a DateTime in SQLite. */
function storedTimestamp(text: string): string {
  const m = TIMESTAMP.exec(text);
  // Years past 9999, BC dates and infinity have no stored form; the runtime never writes them.
  return m ? `${m[1]}T${m[2]}.${millis(m[3])}+00:00` : text;
}

/** A timestamptz converted to UTC, in the same form. */
function storedTimestamptz(text: string): string {
  const m = TIMESTAMPTZ.exec(text);
  if (!m) return text;
  const [, date, time, fraction, sign, hours, minutes = '00', seconds = '00'] = m;
  if (hours === '00' && minutes === '00' && seconds === '00') return `${date}T${time}.${millis(fraction)}+00:00`;
  const offsetMs = (Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds)) * 1000;
  const utc = Date.parse(`${date}T${time}.${millis(fraction)}Z`) - (sign === '-' ? -offsetMs : offsetMs);
  if (Number.isNaN(utc)) return text;
  return `${new Date(utc).toISOString().slice(0, 23)}+00:00`;
}

function asText(text: string): string {
  return text;
}

/** Parsers of text-format values by type OID; every other type keeps pg's own parser. */
const PARSERS: Record<number, (text: string) => unknown> = {
  16: (text) => (text === 't' ? 1 : 0), // bool: 1/0, as SQLite stores it
  20: Number, // int8: COUNT(*), and the epoch-millisecond BigInt columns
  1700: Number, // numeric
  1114: storedTimestamp, // timestamp
  1184: storedTimestamptz, // timestamptz
  114: asText, // json: the text, parsed (or not) by the runtime as with SQLite
  3802: asText, // jsonb
};

/** The parser of a column's text by its type: every type but those above keeps pg's own parser. */
function parserOf(oid: number): (text: string) => unknown {
  return PARSERS[oid] ?? pg.types.getTypeParser(oid, 'text');
}

// Failures, mapped to the errors every driver throws (data/database.ts).

/** SQLSTATEs of waiting on other transactions: the same request can succeed a moment later. */
const BUSY = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '57014', // query_canceled: the statement timeout
]);

/** SQLSTATEs of a server that cannot serve now: out of connections, shutting down, out of disk or memory. */
const UNAVAILABLE = new Set([
  '53300', // too_many_connections
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, or in recovery)
  '53100', // disk_full
  '53200', // out_of_memory
]);

/** Codes of Node's network errors reaching the server. */
const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/** Messages of `pg` and `pg-pool` for a connection they could not make or lost (they carry no code). */
const CONNECTION_LOST = new Set([
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
]);

/**
 * Turns PostgreSQL's constraint, lock and availability errors into errors a client can act on;
 * anything else (a NOT NULL or CHECK violation, a bad value or statement: the runtime validates
 * first, so these are its bugs) stays as it is and becomes an INTERNAL_ERROR.
 */
export function mapPostgresError(err: unknown): unknown {
  if (err instanceof pg.DatabaseError) {
    const code = err.code ?? '';
    if (code === '23505') return uniqueConflict(uniqueFields(err));
    // 23001: a RESTRICT foreign key (Prisma's default for a required relation), since PostgreSQL 18.
    if (code === '23503' || code === '23001') return referenceConflict();
    if (BUSY.has(code)) return databaseBusy(err);
    if (UNAVAILABLE.has(code) || code.startsWith('08')) return storageUnavailable(err);
    return err;
  }
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK.has(code)) return storageUnavailable(err);
  return CONNECTION_LOST.has(err.message) ? storageUnavailable(err) : err;
}

/** An identifier as PostgreSQL prints it in a key: bare (lower case), or double-quoted with `""` for `"`. */
const IDENTIFIER = String.raw`(?:"(?:[^"]|"")+"|[a-z_][a-z0-9_$]*)`;
const KEY_COLUMNS = new RegExp(String.raw`^Key \((${IDENTIFIER}(?:, ${IDENTIFIER})*)\)=`);
const KEY_LOWER = new RegExp(String.raw`^Key \(lower\((${IDENTIFIER})\)\)=`);

function unquote(identifier: string): string {
  return identifier.startsWith('"') ? identifier.slice(1, -1).replaceAll('""', '"') : identifier;
}

/**
 * The fields a unique violation names. The detail reads `Key ("a", b)=(...) already exists.`
 * for an index on columns (a composite one for an entity's `indexes`), or
 * `Key (lower(email))=(...)` for the index on lower() of a unique e-mail field (addresses are
 * unique in any letter case), named `<Table>_<column>_lower_key`: the name is the fallback when
 * the detail is withheld. A unique e-mail field's key column (`_bp_key_<field>`) names its field.
 */
function uniqueFields(err: pg.DatabaseError): string[] | undefined {
  const detail = err.detail ?? '';
  const columns = KEY_COLUMNS.exec(detail)?.[1];
  if (columns) return [...columns.matchAll(new RegExp(IDENTIFIER, 'g'))].map((m) => fieldOfColumn(unquote(m[0])));
  const lower = KEY_LOWER.exec(detail)?.[1];
  if (lower) return [unquote(lower)];
  const { table, constraint } = err;
  if (table && constraint?.startsWith(`${table}_`) && constraint.endsWith('_lower_key'))
    return [constraint.slice(table.length + 1, -'_lower_key'.length)];
  // Prisma names a unique index `<Table>_<column>_key`: a key column's names its field.
  if (table && constraint?.startsWith(`${table}__bp_key_`) && constraint.endsWith('_key'))
    return [fieldOfColumn(constraint.slice(table.length + 1, -'_key'.length))];
  return undefined;
}
