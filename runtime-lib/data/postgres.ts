// The PostgreSQL driver: a bounded pool of connections (`pg`, in its pipeline mode), running units
// of work (data/database.ts) asynchronously on one pooled connection each
// (data/postgres-connection.ts). Statements pipeline: each is sent as the unit yields it, without
// waiting for the answers of those before, so BEGIN travels with a unit's first statement, `later`
// statements (an audit record, a key's record) with the next one, and COMMIT with the last;
// `together` statements go at once. A write that used to take a round trip per statement takes
// one or two (docs/operations.md, "SQLite or PostgreSQL"), and one that waits for nothing (a
// create) is one statement, without BEGIN or COMMIT of its own: such statements, from the units of
// one turn of the event loop, commit together (data/postgres-group.ts).
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
// nor a transaction stuck between two statements holds its locks for long (each statement ends
// with a Sync, which arms the idle timeout). Rows come back in the one stored form of
// data/database.ts (data/postgres-types.ts). The pool's settings: data/postgres-options.ts; its
// failures as the app's errors: data/postgres-errors.ts.

import pg from 'pg';
import {
  type Database,
  get,
  laterFailure,
  type Outcome as Answer,
  type Query,
  type RunResult,
  type Statement,
  type Work,
} from './database.ts';
import type { ActiveTrace, SpanHandle } from '../observe/tracing.ts';
import { Connection, type Outcome, type Result, SkippedStatement } from './postgres-connection.ts';
import { asError, mapPostgresError, statementError } from './postgres-errors.ts';
import { GroupCommit } from './postgres-group.ts';
import { poolConfig, type PostgresOptions } from './postgres-options.ts';
import {
  type Held as HeldStatement,
  oneStatement,
  type Prepared,
  Statements,
  type WireValue,
  wireValues,
} from './postgres-statements.ts';

/**
 * Opens a pool on the database a `postgres://` or `postgresql://` URL names. No connection is
 * made yet: the first unit of work that runs a statement opens one.
 */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<PostgresDatabase> {
  return new PostgresDatabase(new pg.Pool(poolConfig(url, options)));
}

/** The first version whose UPDATE returns the row as it was (`RETURNING OLD`): PostgreSQL 18. */
const RETURNING_OLD_SINCE = 180000;

export class PostgresDatabase implements Database {
  readonly dialect = 'postgres' as const;
  /** False until `identifyServer` finds PostgreSQL 18 or later: set by it alone. */
  private serverReturnsOld = false;
  private readonly statements = new Statements();
  /** Writes of one statement each, committed together per turn of the event loop. */
  private readonly groups = new GroupCommit({
    connect: async () => {
      const connection = await this.checkOut();
      return { pooled: connection, done: (broken) => this.letGo(connection, broken) };
    },
    sent: (answer, mode) => this.sent(answer, mode),
    failed: (err) => ({ ok: false, failure: mapPostgresError(err), broken: undefined }),
  });
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
   * Runs a unit of work to its end, from its first statement: each statement it yields is sent
   * at once and, but for `later` ones, awaited, its result sent back in, its failure (mapped to
   * the app's errors) thrown in where it was yielded. Statements sent before a wait leave
   * together (data/postgres-connection.ts). In a transaction, BEGIN goes ahead of the first
   * statement and COMMIT after the unit returns, each without a round trip of its own; on any
   * failure the transaction is rolled back. A write that waits for nothing is one statement without them
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
        const connection = await this.checkOut();
        link = { pooled: connection, flight: new Flight() };
      }
      return link;
    };
    // In a transaction, `later` statements the unit yields before anything it waits for are held
    // here, unsent. A unit that yields nothing else (a create: its row, its audit row, its key's
    // row) then goes as one statement through the group commit (`writeAlone`).
    const held: Held[] = [];
    let begun = !transaction;
    const begin = ({ pooled: connection, flight }: Linked) => {
      if (begun) return;
      begun = true;
      flight.add(this.sent(connection.control('BEGIN'), 'run'));
      for (const h of held)
        flight.add(this.queue(connection, h.prepared, 'later', h.values, true, h.span), h.statement);
    };
    let statement = first;
    let value: T;
    try {
      for (;;) {
        let step: IteratorResult<Statement, T>;
        if (statement.mode === 'later') {
          if (begun) {
            const { pooled: connection, flight } = await connect();
            flight.add(this.send(connection, statement, transaction, this.span(statement, trace)), statement);
          } else held.push(this.hold(statement, trace));
          step = work.next(undefined);
        } else if (statement.mode === 'together') {
          const batch = statement.batch ?? [];
          if (!begun && held.length === 0 && batch.length === 1 && batch[0].commitsAlone === true) {
            step = work.next([answered(await this.grouped(batch[0], trace))]);
          } else {
            const linked = await connect();
            begin(linked);
            const sent = batch.map((query) => this.send(linked.pooled, query, transaction, this.span(query, trace)));
            step = work.next((await linked.flight.afterAll(sent)).map(answered));
          }
        } else {
          const linked = await connect();
          begin(linked);
          const sent = this.send(linked.pooled, statement, transaction, this.span(statement, trace));
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
    const { pooled: connection, flight } = linked;
    try {
      if (transaction) {
        const span = trace?.startSpan('database.commit', 'database', {});
        const outcome = await flight.after(this.sent(connection.control('COMMIT'), 'run'));
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
    await this.letGo(connection, flight.broken);
    return value;
  }

  /** A pooled connection: for a unit of work, or for a group (GroupCommit). */
  private async checkOut(): Promise<Connection> {
    return new Connection(await this.pool.connect());
  }

  /** A statement committed on its own, through the group commit; its span ended when answered. */
  private async grouped(query: Query, trace: ActiveTrace | undefined): Promise<Outcome> {
    const span = this.span(query, trace);
    const outcome = await this.groups.add(this.statements.of(query.sql), query.mode, wireValues(query.params));
    span?.end(outcome.ok ? undefined : { error: true });
    return outcome;
  }

  /**
   * Ends a unit of work that failed with `err`: every statement sent is answered before the
   * connection is rolled back or released; the first failure among them wins over `err`.
   */
  private async fail({ pooled: connection, flight }: Linked, transaction: boolean, err: unknown): Promise<never> {
    const failure = (await flight.drain()) ?? err;
    let broken = flight.broken ?? connection.broken;
    if (transaction) broken ??= await connection.rollBack();
    await this.letGo(connection, broken);
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
    const outcome = await this.groups.add(this.statements.of(alone.sql), 'run', alone.values);
    for (const h of held) h.span?.end(outcome.ok ? undefined : { error: true });
    span?.end(outcome.ok ? undefined : { error: true });
    if (outcome.ok) return value;
    const failed = held.length === 1 ? held[0] : held.find((h) => h.prepared.table === outcome.table);
    throw failed ? laterFailure(failed.statement, outcome.failure) : outcome.failure;
  }

  /** Gives the connection back to the pool once every answer owed has come; destroys it when broken. */
  private async letGo(connection: Connection, broken: unknown): Promise<void> {
    await connection.settled();
    connection.client.release(asReleaseError(broken ?? connection.broken));
  }

  /**
   * Sends a statement on the connection and resolves with its outcome, never rejecting: the
   * driver decides when a failure counts. Outside a transaction each statement commits on its own.
   */
  private send(
    connection: Connection,
    statement: Statement | Query,
    transaction: boolean,
    span: SpanHandle | undefined,
  ): Promise<Outcome> {
    const prepared = this.statements.of(statement.sql);
    return this.queue(connection, prepared, statement.mode, wireValues(statement.params), transaction, span);
  }

  /** `send` with the statement's text worked out and its parameters in the form sent. */
  private queue(
    connection: Connection,
    { text, name }: Prepared,
    mode: Statement['mode'],
    values: WireValue[],
    transaction: boolean,
    span: SpanHandle | undefined,
  ): Promise<Outcome> {
    return this.sent(connection.send(text, name, values, transaction), mode, span);
  }

  /** A `later` statement held, its parameters in the form sent (a bad one throws here). */
  private hold(statement: Statement, trace: ActiveTrace | undefined): Held {
    const prepared = this.statements.of(statement.sql);
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
        const broken = statementError(err) || err instanceof SkippedStatement ? undefined : err;
        return { ok: false, failure: mapPostgresError(err), broken, table };
      },
    );
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

/** A unit of work's own connection, and what is in flight on it. */
interface Linked {
  pooled: Connection;
  flight: Flight;
}

/** A `later` statement held until the unit shows whether it waits for anything (driveOn), with its span. */
interface Held extends HeldStatement {
  span: SpanHandle | undefined;
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
