// The PostgreSQL driver (runtime-lib/data/postgres.ts) on a real PostgreSQL (the embedded server
// of test/support/postgres.ts): units of work read and written, transactions that roll back
// whole, PostgreSQL's failures as the app's error codes, rows in the stored form, a bounded pool,
// and concurrent writers at READ COMMITTED.

import * as net from 'node:net';
import { expect } from 'chai';
import pg from 'pg';
import { AppError } from '../runtime-lib/core/errors.ts';
import { all, done, get, later, run, savepoint, together, type Work } from '../runtime-lib/data/database.ts';
import { openPostgres, type PostgresDatabase } from '../runtime-lib/data/postgres.ts';
import { postgresOptionsFromEnv, type PostgresOptions } from '../runtime-lib/data/postgres-options.ts';
import { ActiveTrace } from '../runtime-lib/observe/tracing.ts';
import { capturingConsoleError } from './support/commands/harness.ts';
import { enableTls, freshPostgresDatabase, withCountedPool } from './support/postgres.ts';

const SCHEMA = [
  `CREATE TABLE "Ticket" (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    n INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT 'open',
    open BOOLEAN NOT NULL DEFAULT true,
    "createdAt" TIMESTAMP(3),
    "expiresAt" BIGINT,
    price NUMERIC(10, 2),
    meta JSONB,
    doc JSON,
    "tenantId" TEXT,
    code TEXT,
    "a?b" TEXT
  )`,
  `CREATE UNIQUE INDEX "Ticket_tenantId_code_key" ON "Ticket" ("tenantId", code)`,
  `CREATE TABLE "T" (id TEXT PRIMARY KEY, email TEXT NOT NULL)`,
  `CREATE UNIQUE INDEX "T_email_lower_key" ON "T" (lower(email))`,
  `CREATE TABLE "Comment" (
    id TEXT PRIMARY KEY,
    "ticketId" TEXT NOT NULL REFERENCES "Ticket" (id) ON DELETE RESTRICT
  )`,
];

/** What a promise rejected with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

async function appError(promise: Promise<unknown>): Promise<AppError> {
  const err = await rejection(promise);
  expect(err, String(err)).to.be.instanceOf(AppError);
  return err as AppError;
}

/** A loopback port nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const port = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('PostgreSQL driver (data/postgres.ts)', function () {
  this.timeout(20_000);
  let url: string;
  let db: PostgresDatabase;
  const others: PostgresDatabase[] = [];

  /** Another pool on the same database, closed after the tests. */
  async function open(options: PostgresOptions = {}, on = url): Promise<PostgresDatabase> {
    const other = await openPostgres(on, options);
    others.push(other);
    return other;
  }

  before(async () => {
    url = await freshPostgresDatabase('pgdriver');
    db = await openPostgres(url);
    await db.write(function* () {
      for (const statement of SCHEMA) yield* run(statement);
    });
  });

  after(async () => {
    await Promise.all([db, ...others].map((d) => d.close()));
  });

  beforeEach(async () => {
    await db.write(function* () {
      yield* run('DELETE FROM "Comment"');
      yield* run('DELETE FROM "Ticket"');
      yield* run('DELETE FROM "T"');
    });
  });

  function* insertTicket(id: string, title = `ticket ${id}`): Work<void> {
    yield* run('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', [id, title]);
  }

  const ids = () => db.read(all('SELECT id FROM "Ticket" ORDER BY id')).then((rows) => rows.map((r) => r.id));

  describe('opening and closing', () => {
    it('accepts postgres:// and postgresql:// URLs and refuses any other, without echoing the URL', async () => {
      const alias = await open({}, url.replace(/^postgres:/, 'postgresql:'));
      expect(await alias.read(get('SELECT 1 AS one'))).to.deep.equal({ one: 1 });
      for (const bad of ['file:./app.db', 'mysql://user:s3cret@host/db', 'postgres:/host/db', '']) {
        const err = (await rejection(openPostgres(bad))) as Error;
        expect(err.message).to.match(/starts with postgres:\/\/ or postgresql:\/\//);
        expect(err.message).not.to.include('s3cret');
      }
    });

    it('refuses a URL that sets the timeouts the options set', async () => {
      const err = (await rejection(openPostgres(`${url}?statement_timeout=0`))) as Error;
      expect(err.message).to.equal('DATABASE_URL may not set statement_timeout: use DATABASE_STATEMENT_TIMEOUT_MS');
    });

    it('refuses options out of range', async () => {
      expect(((await rejection(openPostgres(url, { poolMax: 0 }))) as Error).message).to.equal(
        'the pool size must be a whole number from 1 to 1000 (got 0)',
      );
      expect(((await rejection(openPostgres(url, { statementTimeoutMs: 1.5 }))) as Error).message).to.match(
        /^the statement timeout must be a whole number/,
      );
    });

    it('reads the pool options from the environment, refusing what is not a whole number in range', () => {
      expect(postgresOptionsFromEnv({})).to.deep.equal({});
      expect(
        postgresOptionsFromEnv({
          DATABASE_POOL_MAX: '4',
          DATABASE_STATEMENT_TIMEOUT_MS: '2500',
          DATABASE_CONNECT_TIMEOUT_MS: '750',
          DATABASE_URL: 'postgres://ignored',
        }),
      ).to.deep.equal({ poolMax: 4, statementTimeoutMs: 2500, connectionTimeoutMs: 750 });
      const cases: Array<[string, string]> = [
        ['DATABASE_POOL_MAX', '0'],
        ['DATABASE_POOL_MAX', '1001'],
        ['DATABASE_POOL_MAX', 'ten'],
        ['DATABASE_STATEMENT_TIMEOUT_MS', '-1'],
        ['DATABASE_STATEMENT_TIMEOUT_MS', '1.5'],
        ['DATABASE_STATEMENT_TIMEOUT_MS', '1e4'],
        ['DATABASE_CONNECT_TIMEOUT_MS', ''],
        ['DATABASE_CONNECT_TIMEOUT_MS', ' 500'],
        ['DATABASE_CONNECT_TIMEOUT_MS', '2147483648'],
      ];
      for (const [name, value] of cases) {
        expect(() => postgresOptionsFromEnv({ [name]: value }), `${name}=${value}`).to.throw(
          `${name} must be a whole number from 1 to `,
        );
      }
    });

    it('sets the timeouts, the name and UTC on every connection', async () => {
      const settings =
        "SELECT current_setting('statement_timeout') AS st, " +
        "current_setting('idle_in_transaction_session_timeout') AS it, " +
        "current_setting('application_name') AS app, current_setting('TimeZone') AS tz";
      expect(await db.read(get(settings))).to.deep.equal({ st: '10s', it: '30s', app: 'bp-app', tz: 'UTC' });
      const tuned = await open({
        statementTimeoutMs: 2500,
        idleInTransactionTimeoutMs: 4000,
        applicationName: 'helpdesk',
      });
      expect(await tuned.read(get(settings))).to.deep.equal({ st: '2500ms', it: '4s', app: 'helpdesk', tz: 'UTC' });
    });

    it('closes every connection before close() resolves, waiting for the work running', async () => {
      const name = `bp-close-${process.pid}`;
      const closing = await openPostgres(url, { poolMax: 3, applicationName: name });
      await Promise.all([1, 2, 3].map(() => closing.read(get('SELECT pg_sleep(0.02)'))));
      const running = closing.write(function* () {
        yield* insertTicket('last');
        yield* get('SELECT pg_sleep(0.1)');
      });
      await closing.close();
      await running;
      expect(await ids()).to.deep.equal(['last']);
      const count = 'SELECT COUNT(*) AS n FROM pg_stat_activity WHERE application_name = ?';
      expect(await db.read(get(count, [name]))).to.deep.equal({ n: 0 });
      await closing.close();
      const closed = (await rejection(closing.read(get('SELECT 1')))) as Error;
      expect(closed.message).to.equal('the database has been closed');
    });
  });

  describe('units of work', () => {
    it('writes in one transaction and reads back: first row, all rows, changed rows', async () => {
      const created = await db.write(function* () {
        yield* insertTicket('t1');
        yield* insertTicket('t2');
        const changed = yield* run('UPDATE "Ticket" SET n = n + 1');
        const row = yield* get('SELECT id, n FROM "Ticket" WHERE id = ?', ['t2']);
        return { changed: changed.changes, row };
      });
      expect(created).to.deep.equal({ changed: 2, row: { id: 't2', n: 1 } });
      expect(await db.read(get('SELECT title FROM "Ticket" WHERE id = ?', ['t1']))).to.deep.equal({
        title: 'ticket t1',
      });
      expect(await db.read(get('SELECT title FROM "Ticket" WHERE id = ?', ['none']))).to.equal(undefined);
      expect(await db.read(all('SELECT id FROM "Ticket" WHERE id > ? ORDER BY id', ['t0']))).to.deep.equal([
        { id: 't1' },
        { id: 't2' },
      ]);
      const deleted = await db.write(() => run('DELETE FROM "Ticket" WHERE id = ?', ['t1']));
      expect(deleted).to.deep.equal({ changes: 1 });
    });

    it('rolls back everything a write did when it throws, an Error or not', async () => {
      await db.write(() => insertTicket('kept'));
      const err = await rejection(
        db.write(function* () {
          yield* insertTicket('a');
          yield* run('UPDATE "Ticket" SET title = ? WHERE id = ?', ['changed', 'kept']);
          throw new Error('the rule failed');
        }),
      );
      expect((err as Error).message).to.equal('the rule failed');
      const thrown = await rejection(
        db.write(function* () {
          yield* insertTicket('b');
          throw 'a string';
        }),
      );
      expect((thrown as Error).message).to.equal('a unit of work threw string, not an Error');
      expect(await ids()).to.deep.equal(['kept']);
      expect(await db.read(get('SELECT title FROM "Ticket" WHERE id = ?', ['kept']))).to.deep.equal({
        title: 'ticket kept',
      });
    });

    it('throws a failed statement into the unit at its yield: caught in a savepoint, the rest commits', async () => {
      await db.write(() => insertTicket('dup'));
      const caught = await db.write(function* () {
        yield* insertTicket('before');
        let failure: unknown;
        try {
          yield* savepoint(insertTicket('dup'));
        } catch (err) {
          failure = err;
        }
        yield* insertTicket('after');
        return failure;
      });
      expect(caught).to.be.instanceOf(AppError);
      expect((caught as AppError).code).to.equal('UNIQUE_CONFLICT');
      expect(await ids()).to.deep.equal(['after', 'before', 'dup']);
    });

    it('refuses to call committed a transaction whose failed statement was caught without a savepoint', async () => {
      await db.write(() => insertTicket('dup'));
      const err = await rejection(
        db.write(function* () {
          yield* insertTicket('lost');
          try {
            yield* insertTicket('dup');
          } catch {
            // PostgreSQL has aborted the transaction: COMMIT will roll it back
          }
          return 'done';
        }),
      );
      expect((err as Error).message).to.match(/^the transaction was rolled back: a statement failed/);
      expect(await ids()).to.deep.equal(['dup']);
    });

    it('lets a read fail at the statement and the pool serve on', async () => {
      const err = await rejection(db.read(get('SELECT nope FROM "Ticket"')));
      expect(err).to.be.instanceOf(pg.DatabaseError);
      expect((err as pg.DatabaseError).code).to.equal('42703');
      expect(await db.read(get('SELECT 2 AS two'))).to.deep.equal({ two: 2 });
    });

    it('touches no connection for a unit that yields no statement', async () => {
      const fresh = await open();
      expect(await fresh.write(() => done(5))).to.equal(5);
      expect(await fresh.read(done('x'))).to.equal('x');
      const err = await rejection(
        // eslint-disable-next-line require-yield
        fresh.write(function* () {
          throw new AppError('VALIDATION_FAILED', 'invalid');
        }),
      );
      expect((err as AppError).code).to.equal('VALIDATION_FAILED');
      expect(fresh.pool.totalCount).to.equal(0);
      await fresh.write(() => get('SELECT 1'));
      expect(fresh.pool.totalCount).to.equal(1);
    });

    it('refuses a write that is a promise, not a unit of work, and handles its rejection', async () => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        const late = async () => {
          throw new Error('after the commit');
        };
        const err = await rejection(db.write(late as unknown as () => Work<void>));
        expect((err as Error).message).to.equal(
          'a write must be a unit of work (a generator function), not a promise or a value',
        );
        const value = await rejection(db.write((() => 42) as unknown as () => Work<void>));
        expect((value as Error).message).to.match(/^a write must be a unit of work/);
        await sleep(20);
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
      expect(unhandled).to.deep.equal([]);
    });

    it('records a span per statement and one around COMMIT', async () => {
      const trace = new ActiveTrace();
      await db.write(function* () {
        yield* insertTicket('s1');
        yield* get('SELECT id FROM "Ticket" WHERE id = ?', ['s1']);
      }, trace);
      await db.read(get('SELECT 1 AS one'), trace);
      expect(trace.spans.map((s) => [s.name, s.attributes?.sql])).to.deep.equal([
        ['database.query', 'INSERT INTO "Ticket" (id, title) VALUES (?, ?)'],
        ['database.query', 'SELECT id FROM "Ticket" WHERE id = ?'],
        ['database.commit', undefined],
        ['database.query', 'SELECT 1 AS one'],
      ]);
      expect(trace.spans.every((s) => s.endTime >= s.startTime && s.endTime > 0)).to.equal(true);
    });

    it('numbers ? placeholders, leaving them inside string literals and quoted identifiers', async () => {
      await db.write(() => run('INSERT INTO "Ticket" (id, title, "a?b") VALUES (?, \'?\', ?)', ['q1', 'x?']));
      const row = await db.read(
        get('SELECT id, title, "a?b", \'it\'\'s ?\' AS lit, ? AS p FROM "Ticket" WHERE id = ?', ['P', 'q1']),
      );
      expect(row).to.deep.equal({ id: 'q1', title: '?', 'a?b': 'x?', lit: "it's ?", p: 'P' });
    });
  });

  describe('pipelining: BEGIN, later statements and COMMIT travel with other statements', () => {
    it('writes in two trips: BEGIN with the first statement, later ones and COMMIT with the next', async () => {
      await withCountedPool(url, async (counted, counter) => {
        const seen = await counted.write(function* () {
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['p1', 'one']);
          const row = yield* get('SELECT count(*) AS n FROM "Ticket"');
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['p2', 'two']);
          yield* later('UPDATE "Ticket" SET n = n + 1 WHERE id = ?', ['p1']);
          return row;
        });
        // Statement 1: BEGIN, the first insert and the count; statement 2: the rest and COMMIT.
        expect(counter.trips()).to.equal(2);
        expect(seen).to.deep.equal({ n: 1 });
        expect(await db.read(all('SELECT id, n FROM "Ticket" ORDER BY id'))).to.deep.equal([
          { id: 'p1', n: 1 },
          { id: 'p2', n: 0 },
        ]);
      });
    });

    it('writeEach: a statement commits on its own in one trip, no BEGIN or COMMIT; its failure is mapped', async () => {
      await withCountedPool(url, async (counted, counter) => {
        const { changes } = await counted.writeEach(
          run('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['w1', 'alone']),
        );
        expect(changes).to.equal(1);
        expect(counter.trips()).to.equal(1);
        // Committed: another connection sees it at once.
        expect(await db.read(get('SELECT title FROM "Ticket" WHERE id = ?', ['w1']))).to.deep.equal({ title: 'alone' });
        const failure = await appError(
          counted.writeEach(run('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['w1', 'again'])),
        );
        expect(failure.code).to.equal('UNIQUE_CONFLICT');
        // The connection is still good: nothing was left open on it.
        expect(await counted.read(get('SELECT count(*) AS n FROM "Ticket"'))).to.deep.equal({ n: 1 });
      });
    });

    it('sends together() statements in one trip and answers each outcome, failures included, unthrown', async () => {
      await db.write(() => insertTicket('t1'));
      await withCountedPool(url, async (counted, counter) => {
        const read = await counted.read(
          together(
            { mode: 'get', sql: 'SELECT title FROM "Ticket" WHERE id = ?', params: ['t1'] },
            { mode: 'all', sql: 'SELECT nope FROM "Ticket"', params: [] },
            { mode: 'get', sql: 'SELECT 2 AS two', params: [] },
          ),
        );
        expect(counter.trips()).to.equal(1);
        expect(read[0]).to.deep.equal({ ok: true, value: { title: 'ticket t1' } });
        expect(read[1].ok).to.equal(false);
        expect((read[1] as { failure: pg.DatabaseError }).failure.code).to.equal('42703');
        expect(read[2]).to.deep.equal({ ok: true, value: { two: 2 } });
        // In a transaction, a unit that goes on after a failure it was answered cannot commit.
        const err = await rejection(
          counted.write(function* () {
            yield* together(
              { mode: 'run', sql: 'INSERT INTO "Ticket" (id, title) VALUES (?, ?)', params: ['t1', 'dup'] },
              { mode: 'run', sql: 'INSERT INTO "Ticket" (id, title) VALUES (?, ?)', params: ['t2', 'two'] },
            );
          }),
        );
        expect((err as Error).message).to.match(/^the transaction was rolled back/);
        expect(await ids()).to.deep.equal(['t1']);
      });
    });

    it('fails the whole unit when a later statement fails, wherever the unit is by then: nothing commits', async () => {
      await db.write(() => insertTicket('dup'));
      let resumed = false;
      const atNext = await appError(
        db.write(function* () {
          yield* insertTicket('lost-1');
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['dup', 'again']);
          try {
            yield* get('SELECT 1');
          } catch {
            // not thrown here: the unit is not resumed
          }
          resumed = true;
        }),
      );
      expect(atNext.code).to.equal('UNIQUE_CONFLICT');
      expect(resumed).to.equal(false);
      // Sent with COMMIT, as the last statement: the transaction rolls back.
      const atCommit = await appError(
        db.write(function* () {
          yield* insertTicket('lost-2');
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['dup', 'again']);
        }),
      );
      expect(atCommit.code).to.equal('UNIQUE_CONFLICT');
      // What the unit threw after sending it loses to it.
      const overThrow = await appError(
        db.write(function* () {
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['dup', 'again']);
          throw new Error('thrown after');
        }),
      );
      expect(overThrow.code).to.equal('UNIQUE_CONFLICT');
      expect(await ids()).to.deep.equal(['dup']);
      expect(await db.read(get('SELECT 2 AS two'))).to.deep.equal({ two: 2 });
    });

    it('fails the unit with onConflict() when a later statement violates a unique key, even with COMMIT', async () => {
      await db.write(() => insertTicket('t'));
      const taken = () => new AppError('STATE_CONFLICT', 'the id is taken');
      const last = await appError(
        db.write(function* () {
          yield* insertTicket('lost');
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['t', 'again'], taken);
        }),
      );
      expect(last.code).to.equal('STATE_CONFLICT');
      // Any other failure is its own.
      const other = await rejection(
        db.write(function* () {
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['n', null], taken);
        }),
      );
      expect((other as pg.DatabaseError).code).to.equal('23502');
      expect(await ids()).to.deep.equal(['t']);
    });

    it('records the spans of later statements and of COMMIT', async () => {
      const trace = new ActiveTrace();
      await db.write(function* () {
        yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['s1', 'one']);
        yield* get('SELECT id FROM "Ticket" WHERE id = ?', ['s1']);
      }, trace);
      expect(trace.spans.map((s) => s.name)).to.deep.equal(['database.query', 'database.query', 'database.commit']);
      expect(trace.spans.every((s) => s.endTime >= s.startTime && s.endTime > 0)).to.equal(true);
    });
  });

  describe('what a unit of work sends (data/postgres-connection.ts, pg in pipeline mode)', () => {
    it('prepares a statement once per connection; BEGIN goes with the first statement, COMMIT the last', async () => {
      await withCountedPool(url, async (pool, counter) => {
        const unit = (id: string) =>
          function* (): Work<unknown> {
            const before = yield* get('SELECT count(*) AS n FROM "Ticket" WHERE id <> ?', [id]);
            yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', [id, `ticket ${id}`]);
            return before;
          };
        expect(await pool.write(unit('m1'))).to.deep.equal({ n: 0 });
        // Two trips: BEGIN (a simple query, Q) with the read (Parse, Bind, Describe, Execute,
        // Sync: pg ends every query with its own Sync); the insert, parsed, with COMMIT.
        expect(counter.messages()).to.deep.equal(['QPBDES', 'PBDESQ']);
        counter.reset();
        // On the same connection the statements are not parsed again.
        expect(await pool.write(unit('m2'))).to.deep.equal({ n: 1 });
        expect(counter.messages()).to.deep.equal(['QBDES', 'BDESQ']);
        counter.reset();
        // Outside a transaction each statement commits on its own.
        const read = (id: string) => get('SELECT title FROM "Ticket" WHERE id = ?', [id]);
        expect(await pool.read(read('m1'))).to.deep.equal({ title: 'ticket m1' });
        expect(await pool.read(read('m2'))).to.deep.equal({ title: 'ticket m2' });
        expect(counter.messages()).to.deep.equal(['PBDES', 'BDES']);
        expect(await ids()).to.deep.equal(['m1', 'm2']);
      });
    });

    it('prepares again a statement whose Parse the server refused, once it can run', async () => {
      const missing = 'SELECT count(*) AS n FROM "Later"';
      try {
        await withCountedPool(url, async (pool, counter) => {
          const err = await rejection(pool.read(get(missing)));
          expect((err as pg.DatabaseError).code).to.equal('42P01');
          await db.write(() => run('CREATE TABLE "Later" (id TEXT PRIMARY KEY)'));
          expect(await pool.read(get(missing))).to.deep.equal({ n: 0 });
          expect(counter.messages()).to.deep.equal(['PBDES', 'PBDES']);
        });
      } finally {
        await db.write(() => run('DROP TABLE IF EXISTS "Later"'));
      }
    });

    it('serves the next write on a connection whose first write failed before its COMMIT', async () => {
      await db.write(() => insertTicket('dup'));
      // A new connection's first write: BEGIN, the insert, the update and COMMIT in one trip (an
      // UPDATE keeps them a transaction); the insert fails, the update is refused (25P02) and the
      // COMMIT rolls back. The statements refused were never parsed: they are parsed next time.
      const one = await open({ poolMax: 1 });
      const failure = await appError(
        one.write(function* () {
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['dup', 'again']);
          yield* later('UPDATE "Ticket" SET n = n + 1 WHERE id = ?', ['dup']);
        }),
      );
      expect(failure.code).to.equal('UNIQUE_CONFLICT');
      await one.write(() => insertTicket('after'));
      expect(await ids()).to.deep.equal(['after', 'dup']);
    });

    it('sends a write of plain INSERTs into different tables as one statement, without BEGIN or COMMIT', async () => {
      await withCountedPool(url, async (pool, counter) => {
        // A ticket, a comment referring to it (its foreign key is checked when all rows are in)
        // and a row of another table: what a create writes (its row, its audit row, its key's row).
        const unit = (id: string, email = `${id}@example.com`, onConflict?: () => Error) =>
          function* (): Work<string> {
            yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', [id, `ticket ${id}`]);
            yield* later('INSERT INTO "Comment" (id, "ticketId") VALUES (?, ?)', [`c-${id}`, id]);
            yield* later('INSERT INTO "T" (id, email) VALUES (?, ?)', [`t-${id}`, email], onConflict);
            return id;
          };
        const trace = new ActiveTrace();
        expect(await pool.write(unit('o1'), trace)).to.equal('o1');
        // One statement, parsed, bound and executed: no BEGIN, no COMMIT.
        expect(counter.messages()).to.deep.equal(['PBDES']);
        expect(trace.spans.map((s) => s.name)).to.deep.equal([
          'database.query',
          'database.query',
          'database.query',
          'database.commit',
        ]);
        expect(trace.spans.every((s) => s.endTime >= s.startTime && s.endTime > 0)).to.equal(true);
        counter.reset();
        expect(await pool.write(unit('o2'))).to.equal('o2');
        expect(counter.messages()).to.deep.equal(['BDES']);
        expect(await db.read(all('SELECT id, "ticketId" FROM "Comment" ORDER BY id'))).to.deep.equal([
          { id: 'c-o1', ticketId: 'o1' },
          { id: 'c-o2', ticketId: 'o2' },
        ]);
        // All of it or nothing: the third row's e-mail is taken (case aside), and the unit fails
        // with that statement's onConflict(); neither the ticket nor the comment is stored.
        const taken = () => new AppError('STATE_CONFLICT', 'the e-mail is taken');
        expect((await appError(pool.write(unit('o3', 'O1@example.com', taken)))).code).to.equal('STATE_CONFLICT');
        // A failure is the statement's whose table it names, and of several the first, as in a
        // transaction: the ticket's taken id is its own UNIQUE_CONFLICT, though the third row's
        // e-mail is taken too; alone, that one fails with its onConflict().
        const own = await appError(pool.write(unit('o1', 'o2@example.com', taken)));
        expect(own.code).to.equal('UNIQUE_CONFLICT');
        expect(own.details?.[0]).to.include({ field: 'id' });
        const third = await appError(
          pool.write(function* () {
            yield* later('INSERT INTO "Comment" (id, "ticketId") VALUES (?, ?)', ['c-o5', 'o1']);
            yield* later('INSERT INTO "T" (id, email) VALUES (?, ?)', ['t-o5', 'o2@example.com'], taken);
          }),
        );
        expect(third.code).to.equal('STATE_CONFLICT');
        // A reference to a row that is not there.
        const dangling = await appError(
          pool.write(() => later('INSERT INTO "Comment" (id, "ticketId") VALUES (?, ?)', ['c-x', 'none'])),
        );
        expect(dangling.code).to.equal('REFERENCE_CONFLICT');
        expect(await ids()).to.deep.equal(['o1', 'o2']);
        expect(await db.read(get('SELECT count(*) AS n FROM "T"'))).to.deep.equal({ n: 2 });
        // The connection serves on.
        expect(await pool.write(unit('o4'))).to.equal('o4');
      });
    });

    it('keeps a write of later statements a transaction where one statement would change what they do', async () => {
      await withCountedPool(url, async (pool, counter) => {
        // The update must see the row the insert wrote: in one statement it would not.
        await pool.write(function* () {
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['k1', 'one']);
          yield* later('UPDATE "Ticket" SET n = n + 1 WHERE id = ?', ['k1']);
        });
        // BEGIN, the insert, the update and COMMIT in one trip.
        expect(counter.messages()).to.deep.equal(['QPBDESPBDESQ']);
        // Two rows of one table stay two statements as well.
        await pool.write(function* () {
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['k2', 'two']);
          yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', ['k3', 'three']);
        });
        expect(await db.read(all('SELECT id, n FROM "Ticket" ORDER BY id'))).to.deep.equal([
          { id: 'k1', n: 1 },
          { id: 'k2', n: 0 },
          { id: 'k3', n: 0 },
        ]);
        expect(counter.messages()[1]).to.match(/^Q(P?BDES){2}Q$/);
      });
    });

    it('answers a statement the server skipped after a failure in its trip as not run', async () => {
      await db.write(() => insertTicket('t1'));
      const outcomes: Array<{ ok: boolean; failure?: unknown }> = [];
      await rejection(
        db.write(function* () {
          outcomes.push(
            ...(yield* together(
              { mode: 'run', sql: 'INSERT INTO "Ticket" (id, title) VALUES (?, ?)', params: ['t1', 'dup'] },
              { mode: 'run', sql: 'INSERT INTO "Ticket" (id, title) VALUES (?, ?)', params: ['t2', 'two'] },
            )),
          );
        }),
      );
      expect(outcomes.map((o) => o.ok)).to.deep.equal([false, false]);
      expect((outcomes[0].failure as AppError).code).to.equal('UNIQUE_CONFLICT');
      expect(String(outcomes[1].failure)).to.match(/not run: a statement before it in the same transaction failed/);
      expect(await ids()).to.deep.equal(['t1']);
    });

    it("leaves a pooled connection fit for pg's own queries after a unit", async () => {
      const one = await open({ poolMax: 1 });
      await one.write(() => insertTicket('h1'));
      const client = await one.pool.connect();
      try {
        expect((await client.query('SELECT title FROM "Ticket" WHERE id = $1', ['h1'])).rows).to.deep.equal([
          { title: 'ticket h1' },
        ]);
      } finally {
        client.release();
      }
      expect(await one.read(get('SELECT count(*) AS n FROM "Ticket"'))).to.deep.equal({ n: 1 });
    });

    it('runs units over TLS, and the connection serves pg between units', async () => {
      const disableTls = await enableTls();
      try {
        const secure = await open({ poolMax: 1 }, `${url}?sslmode=no-verify`);
        expect(await secure.read(get('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()'))).to.deep.equal({
          ssl: 1,
        });
        await secure.write(() => insertTicket('s1'));
        const failure = await appError(secure.write(() => insertTicket('s1')));
        expect(failure.code).to.equal('UNIQUE_CONFLICT');
        expect(await secure.read(all('SELECT id FROM "Ticket"'))).to.deep.equal([{ id: 's1' }]);
        const client = await secure.pool.connect();
        try {
          expect((await client.query('SELECT 2 AS two')).rows).to.deep.equal([{ two: 2 }]);
        } finally {
          client.release();
        }
        expect(await secure.read(get('SELECT count(*) AS n FROM "Ticket"'))).to.deep.equal({ n: 1 });
      } finally {
        await disableTls();
      }
    });

    it('binds a Buffer as bytes and refuses a parameter it has no stored form for, changing nothing', async () => {
      const one = await open({ poolMax: 1 });
      expect(await one.read(get('SELECT octet_length(?::bytea) AS n', [Buffer.from([0, 1, 2])]))).to.deep.equal({
        n: 3,
      });
      const retitle = (title: unknown) =>
        one.write(function* () {
          yield* insertTicket('p1');
          yield* run('UPDATE "Ticket" SET title = ? WHERE id = ?', [title, 'p1']);
        });
      const err = await rejection(retitle(new Date()));
      expect(err).to.be.instanceOf(TypeError);
      expect((err as Error).message).to.match(
        /a statement parameter must be a string, number, Buffer or null \(got object\)/,
      );
      expect(await ids()).to.deep.equal([]);
      // The refused statement was never prepared: on the same connection it runs once its values can.
      await retitle('renamed');
      expect(await db.read(get('SELECT title FROM "Ticket" WHERE id = ?', ['p1']))).to.deep.equal({ title: 'renamed' });
    });
  });

  describe('errors', () => {
    it('maps a unique violation to UNIQUE_CONFLICT naming its fields: key, composite index, lower(email)', async () => {
      await db.write(function* () {
        yield* run('INSERT INTO "Ticket" (id, title, "tenantId", code) VALUES (?, ?, ?, ?)', ['u1', 'x', 'acme', 'A']);
        yield* run('INSERT INTO "T" (id, email) VALUES (?, ?)', ['p1', 'Ann@Example.com']);
      });
      const key = await appError(db.write(() => insertTicket('u1')));
      expect([key.code, key.status, key.details?.map((d) => d.field)]).to.deep.equal(['UNIQUE_CONFLICT', 409, ['id']]);

      const pair = await appError(
        db.write(() =>
          run('INSERT INTO "Ticket" (id, title, "tenantId", code) VALUES (?, ?, ?, ?)', ['u2', 'x', 'acme', 'A']),
        ),
      );
      expect(pair.code).to.equal('UNIQUE_CONFLICT');
      expect(pair.message).to.equal('another record already has this tenantId and code');
      expect(pair.details).to.deep.equal([
        { field: 'tenantId', code: 'UNIQUE', message: 'already taken together with code' },
        { field: 'code', code: 'UNIQUE', message: 'already taken together with tenantId' },
      ]);

      const email = await appError(
        db.write(() => run('INSERT INTO "T" (id, email) VALUES (?, ?)', ['p2', 'ann@EXAMPLE.com'])),
      );
      expect(email.code).to.equal('UNIQUE_CONFLICT');
      expect(email.details).to.deep.equal([{ field: 'email', code: 'UNIQUE', message: 'already taken' }]);
      expect(await db.read(all('SELECT id FROM "T"'))).to.deep.equal([{ id: 'p1' }]);
    });

    it('maps a broken reference to REFERENCE_CONFLICT, inserting or deleting', async () => {
      const missing = await appError(
        db.write(() => run('INSERT INTO "Comment" (id, "ticketId") VALUES (?, ?)', ['c', 'none'])),
      );
      expect([missing.code, missing.status]).to.deep.equal(['REFERENCE_CONFLICT', 409]);
      await db.write(function* () {
        yield* insertTicket('r1');
        yield* run('INSERT INTO "Comment" (id, "ticketId") VALUES (?, ?)', ['c1', 'r1']);
      });
      const restricted = await appError(db.write(() => run('DELETE FROM "Ticket" WHERE id = ?', ['r1'])));
      expect(restricted.code).to.equal('REFERENCE_CONFLICT');
      expect(await ids()).to.deep.equal(['r1']);
    });

    it('leaves NOT NULL violations and bad values as they are (an internal error)', async () => {
      const nulled = await rejection(db.write(() => run('INSERT INTO "Ticket" (id) VALUES (?)', ['n1'])));
      expect(nulled).to.be.instanceOf(pg.DatabaseError);
      expect((nulled as pg.DatabaseError).code).to.equal('23502');
      const bad = await rejection(db.write(() => run('UPDATE "Ticket" SET n = ? WHERE id = ?', ['many', 'x'])));
      expect((bad as pg.DatabaseError).code).to.equal('22P02');
    });

    it('maps a statement timeout to DATABASE_BUSY, and the connection serves on', async () => {
      const quick = await open({ statementTimeoutMs: 100, poolMax: 1 });
      const started = performance.now();
      const err = await appError(quick.read(get('SELECT pg_sleep(2)')));
      expect([err.code, err.status, err.retryable]).to.deep.equal(['DATABASE_BUSY', 503, true]);
      expect((err.cause as pg.DatabaseError).code).to.equal('57014');
      expect(performance.now() - started).to.be.below(1500);
      expect(await quick.read(get('SHOW statement_timeout'))).to.deep.equal({ statement_timeout: '100ms' });
    });

    it('maps a wait for a row lock past the statement timeout to DATABASE_BUSY; the holder commits', async () => {
      await db.write(() => insertTicket('locked'));
      const impatient = await open({ statementTimeoutMs: 150 });
      const holder = db.write(function* () {
        yield* run('UPDATE "Ticket" SET n = 1 WHERE id = ?', ['locked']);
        yield* get('SELECT pg_sleep(0.6)');
      });
      await sleep(100);
      const err = await appError(impatient.write(() => run('UPDATE "Ticket" SET n = 2 WHERE id = ?', ['locked'])));
      expect(err.code).to.equal('DATABASE_BUSY');
      await holder;
      expect(await db.read(get('SELECT n FROM "Ticket" WHERE id = ?', ['locked']))).to.deep.equal({ n: 1 });
    });

    it('maps a lock not available (NOWAIT) and a serialization failure to DATABASE_BUSY', async () => {
      await db.write(() => insertTicket('busy'));
      const holder = db.write(function* () {
        yield* get('SELECT id FROM "Ticket" WHERE id = ? FOR UPDATE', ['busy']);
        yield* get('SELECT pg_sleep(0.3)');
      });
      await sleep(100);
      const nowait = await appError(
        db.write(() => get('SELECT id FROM "Ticket" WHERE id = ? FOR UPDATE NOWAIT', ['busy'])),
      );
      expect([nowait.code, (nowait.cause as pg.DatabaseError).code]).to.deep.equal(['DATABASE_BUSY', '55P03']);
      await holder;

      const serializable = (id: string) =>
        db.write(function* () {
          yield* run('SET TRANSACTION ISOLATION LEVEL SERIALIZABLE');
          const row = yield* get('SELECT COUNT(*) AS n FROM "Ticket"');
          yield* get('SELECT pg_sleep(0.1)');
          yield* run('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', [id, `after ${String(row?.n)}`]);
        });
      const outcomes = await Promise.allSettled([serializable('s1'), serializable('s2')]);
      const failed = outcomes.filter((o) => o.status === 'rejected').map((o) => o.reason as AppError);
      expect(failed.map((e) => [e.code, (e.cause as pg.DatabaseError).code])).to.deep.equal([
        ['DATABASE_BUSY', '40001'],
      ]);
      expect(await ids()).to.have.length(2);
    });

    it('maps a server out of connections to STORAGE_UNAVAILABLE', async () => {
      const role = `bp_limited_${process.pid}`;
      await db.write(() => run(`CREATE ROLE ${role} LOGIN PASSWORD 'limited' CONNECTION LIMIT 1`));
      try {
        const limited = await open({}, url.replace(/\/\/[^@]+@/, `//${role}:limited@`));
        const first = limited.read(get('SELECT pg_sleep(0.3)'));
        await sleep(100);
        const err = await appError(limited.read(get('SELECT 1')));
        expect([err.code, (err.cause as pg.DatabaseError).code]).to.deep.equal(['STORAGE_UNAVAILABLE', '53300']);
        await first;
        await limited.close();
      } finally {
        await db.write(() => run(`DROP ROLE ${role}`));
      }
    });

    it('maps a deadlock to DATABASE_BUSY for one writer and commits the other', async () => {
      await db.write(function* () {
        yield* insertTicket('d1');
        yield* insertTicket('d2');
      });
      const crossing = (first: string, second: string) =>
        db.write(function* () {
          yield* run('UPDATE "Ticket" SET n = n + 1 WHERE id = ?', [first]);
          yield* get('SELECT pg_sleep(0.2)');
          yield* run('UPDATE "Ticket" SET n = n + 10 WHERE id = ?', [second]);
        });
      const outcomes = await Promise.allSettled([crossing('d1', 'd2'), crossing('d2', 'd1')]);
      const failed = outcomes.filter((o) => o.status === 'rejected').map((o) => (o.reason as AppError).code);
      expect(failed).to.deep.equal(['DATABASE_BUSY']);
      const rows = await db.read(all('SELECT n FROM "Ticket" ORDER BY id'));
      expect(rows.map((r) => r.n).sort()).to.deep.equal([1, 10]);
    });

    it('answers STORAGE_UNAVAILABLE quickly when the server cannot be reached', async () => {
      const port = await closedPort();
      for (const host of ['127.0.0.1', 'localhost', 'bp-test.invalid']) {
        const nowhere = await open({ connectionTimeoutMs: 1000 }, `postgres://app:secret@${host}:${port}/app`);
        const started = performance.now();
        const err = await appError(nowhere.write(() => insertTicket('x')));
        expect([err.code, err.status, err.retryable], host).to.deep.equal(['STORAGE_UNAVAILABLE', 503, true]);
        // Refused at once; a name that does not resolve may wait for DNS, up to the connect timeout.
        expect(performance.now() - started).to.be.below(host.endsWith('.invalid') ? 2500 : 1000);
        expect((await appError(nowhere.read(get('SELECT 1')))).code).to.equal('STORAGE_UNAVAILABLE');
      }
    });

    it('answers STORAGE_UNAVAILABLE after the connect timeout when the pool is exhausted', async () => {
      const small = await open({ poolMax: 1, connectionTimeoutMs: 200 });
      const holder = small.write(function* () {
        yield* insertTicket('held');
        yield* get('SELECT pg_sleep(1)');
      });
      await sleep(50);
      const started = performance.now();
      const err = await appError(small.write(() => insertTicket('waiting')));
      const waited = performance.now() - started;
      expect(err.code).to.equal('STORAGE_UNAVAILABLE');
      expect(waited).to.be.within(150, 900);
      await holder;
      expect(await ids()).to.deep.equal(['held']);
      expect(small.pool.totalCount).to.equal(1);
    });

    it('survives its connection ending under a write: STORAGE_UNAVAILABLE, and the pool serves on', async () => {
      const victim = await open({ poolMax: 2 });
      await victim.write(() => insertTicket('before'));
      const err = await appError(
        victim.write(function* () {
          yield* insertTicket('lost');
          yield* get('SELECT pg_terminate_backend(pg_backend_pid())');
        }),
      );
      expect(err.code).to.equal('STORAGE_UNAVAILABLE');
      expect((err.cause as pg.DatabaseError).code).to.equal('57P01');
      await sleep(50);
      expect(await victim.read(all('SELECT id FROM "Ticket" ORDER BY id'))).to.deep.equal([{ id: 'before' }]);
    });

    it('survives the network resetting its connection mid-statement: STORAGE_UNAVAILABLE, nothing stored', async () => {
      // A TCP proxy in front of the server, whose client side the test resets (an RST, as a
      // crashed host or a dropped NAT entry would): `pg` reports the reset as an 'error' event of
      // the checked-out connection, which ends the process unless the driver listens to it.
      const target = Number(new URL(url).port);
      const sockets: net.Socket[] = [];
      const proxy = net.createServer((socket) => {
        const upstream = net.connect(target, '127.0.0.1');
        sockets.push(socket);
        socket.pipe(upstream).pipe(socket);
        socket.on('error', () => upstream.destroy());
        upstream.on('error', () => socket.destroy());
        socket.on('close', () => upstream.destroy());
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      try {
        const port = (proxy.address() as net.AddressInfo).port;
        const proxied = await open({}, url.replace(`:${target}/`, `:${port}/`));
        const write = proxied.write(function* () {
          yield* insertTicket('reset');
          yield* get('SELECT pg_sleep(0.3)');
        });
        await sleep(150);
        for (const socket of sockets) socket.resetAndDestroy();
        const err = await appError(write);
        expect(err.code).to.equal('STORAGE_UNAVAILABLE');
        expect((err.cause as NodeJS.ErrnoException).code).to.equal('ECONNRESET');
        expect(await ids()).to.deep.equal([]);
        expect(await proxied.read(get('SELECT 1 AS one'))).to.deep.equal({ one: 1 });
        await proxied.close();
      } finally {
        await new Promise((resolve) => proxy.close(resolve));
      }
    });

    it('logs idle connections ended by the server once per outage, and reconnects', async () => {
      const name = `bp-idle-${process.pid}`;
      const idle = await open({ poolMax: 3, applicationName: name });
      const fill = () => Promise.all([1, 2, 3].map(() => idle.read(get('SELECT pg_sleep(0.05)'))));
      const terminate = async () => {
        await db.read(
          get('SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = ?', [name]),
        );
        for (let i = 0; i < 100 && idle.pool.totalCount > 0; i++) await sleep(10);
        expect(idle.pool.totalCount).to.equal(0);
      };
      const { lines } = await capturingConsoleError(async () => {
        await fill();
        expect(idle.pool.idleCount).to.equal(3);
        await terminate();
        await fill();
        await terminate();
      });
      expect(lines).to.have.length(2);
      expect(lines[0]).to.match(/^PostgreSQL: an idle pooled connection failed \(57P01: terminating connection/);
      expect(await idle.read(get('SELECT 3 AS three'))).to.deep.equal({ three: 3 });
    });
  });

  describe('rows in the stored form', () => {
    it('returns booleans as 1/0 and accepts 1/0 for boolean columns', async () => {
      await db.write(function* () {
        yield* run('INSERT INTO "Ticket" (id, title, open) VALUES (?, ?, ?)', ['b1', 'x', 1]);
        yield* run('INSERT INTO "Ticket" (id, title, open) VALUES (?, ?, ?)', ['b0', 'x', 0]);
      });
      expect(await db.read(all('SELECT id, open FROM "Ticket" ORDER BY id'))).to.deep.equal([
        { id: 'b0', open: 0 },
        { id: 'b1', open: 1 },
      ]);
      expect(await db.read(all('SELECT id FROM "Ticket" WHERE open = ?', [0]))).to.deep.equal([{ id: 'b0' }]);
      expect(await db.read(get('SELECT EXISTS (SELECT 1 FROM "Ticket") AS e, false AS f'))).to.deep.equal({
        e: 1,
        f: 0,
      });
    });

    it('returns COUNT(*), BIGINT and NUMERIC as numbers', async () => {
      await db.write(function* () {
        yield* run('INSERT INTO "Ticket" (id, title, "expiresAt", price) VALUES (?, ?, ?, ?)', [
          'i1',
          'x',
          1767323045678,
          12.5,
        ]);
        yield* insertTicket('i2');
      });
      expect(await db.read(get('SELECT COUNT(*) AS n FROM "Ticket"'))).to.deep.equal({ n: 2 });
      expect(await db.read(get('SELECT "expiresAt", price FROM "Ticket" WHERE id = ?', ['i1']))).to.deep.equal({
        expiresAt: 1767323045678,
        price: 12.5,
      });
    });

    it('stores, compares and returns DateTimes in the stored text form', async () => {
      const at = '2026-01-02T03:04:05.678+00:00';
      await db.write(function* () {
        yield* run('INSERT INTO "Ticket" (id, title, "createdAt") VALUES (?, ?, ?)', ['d1', 'x', at]);
        yield* run('INSERT INTO "Ticket" (id, title, "createdAt") VALUES (?, ?, ?)', [
          'd0',
          'x',
          '2026-01-02T03:04:05.000+00:00',
        ]);
      });
      expect(await db.read(all('SELECT id, "createdAt" FROM "Ticket" ORDER BY "createdAt"'))).to.deep.equal([
        { id: 'd0', createdAt: '2026-01-02T03:04:05.000+00:00' },
        { id: 'd1', createdAt: at },
      ]);
      const after = (t: string) => db.read(all('SELECT id FROM "Ticket" WHERE "createdAt" > ? ORDER BY id', [t]));
      expect(await after('2026-01-02T03:04:05.677+00:00')).to.deep.equal([{ id: 'd1' }]);
      expect(await after(at)).to.deep.equal([]);
      expect(await db.read(all('SELECT id FROM "Ticket" WHERE "createdAt" = ?', [at]))).to.deep.equal([{ id: 'd1' }]);
      expect(
        await db.read(
          get("SELECT '2026-01-02 03:04:05.123456'::timestamp AS micro, '2026-01-02 03:04:05.5'::timestamp AS tenth"),
        ),
      ).to.deep.equal({ micro: '2026-01-02T03:04:05.123+00:00', tenth: '2026-01-02T03:04:05.500+00:00' });
    });

    it('returns timestamptz in UTC, whatever the session time zone', async () => {
      expect(await db.read(get('SHOW TimeZone'))).to.deep.equal({ TimeZone: 'UTC' });
      const sql =
        "SELECT '2026-01-02 03:04:05.678+00'::timestamptz AS t, '2026-01-01 23:30:00-05:30'::timestamptz AS u";
      const expected = { t: '2026-01-02T03:04:05.678+00:00', u: '2026-01-02T05:00:00.000+00:00' };
      expect(await db.read(get(sql))).to.deep.equal(expected);
      const zoned = await db.write(function* () {
        yield* run("SET LOCAL TIME ZONE 'Asia/Kolkata'");
        return yield* get(sql);
      });
      expect(zoned).to.deep.equal(expected);
    });

    it('returns JSON and JSONB as their text', async () => {
      await db.write(() =>
        run('INSERT INTO "Ticket" (id, title, meta, doc) VALUES (?, ?, ?, ?)', [
          'j1',
          'x',
          '{"a": [1, true]}',
          '{"b":null}',
        ]),
      );
      const row = await db.read(get('SELECT meta, doc FROM "Ticket" WHERE id = ?', ['j1']));
      expect(row).to.deep.equal({ meta: '{"a": [1, true]}', doc: '{"b":null}' });
    });

    it('leaves the process-wide pg type parsers alone', async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query('SELECT true AS b, COUNT(*) AS n, \'{"a":1}\'::jsonb AS j');
        expect(rows[0]).to.deep.equal({ b: true, n: '1', j: { a: 1 } });
      } finally {
        await client.end();
      }
    });
  });

  describe('concurrent writers', () => {
    it('counts 20 parallel increments as 20', async () => {
      await db.write(() => insertTicket('c'));
      await Promise.all(
        Array.from({ length: 20 }, () => db.write(() => run('UPDATE "Ticket" SET n = n + 1 WHERE id = ?', ['c']))),
      );
      expect(await db.read(get('SELECT n FROM "Ticket" WHERE id = ?', ['c']))).to.deep.equal({ n: 20 });
    });

    it('lets exactly one of two writers see the state it re-checks with SELECT ... FOR UPDATE', async () => {
      await db.write(() => insertTicket('race'));
      const close = () =>
        db.write(function* () {
          const row = yield* get('SELECT state FROM "Ticket" WHERE id = ? FOR UPDATE', ['race']);
          yield* get('SELECT pg_sleep(0.1)');
          if (row?.state === 'open')
            yield* run('UPDATE "Ticket" SET state = ?, n = n + 1 WHERE id = ?', ['closed', 'race']);
          return row?.state;
        });
      const seen = await Promise.all([close(), close()]);
      expect(seen.sort()).to.deep.equal(['closed', 'open']);
      expect(await db.read(get('SELECT state, n FROM "Ticket" WHERE id = ?', ['race']))).to.deep.equal({
        state: 'closed',
        n: 1,
      });
    });

    it('fences with a conditional UPDATE: one writer changes the row, the other changes nothing', async () => {
      await db.write(() => insertTicket('fence'));
      const claim = () =>
        db.write(function* () {
          const { changes } = yield* run('UPDATE "Ticket" SET state = ? WHERE id = ? AND state = ?', [
            'claimed',
            'fence',
            'open',
          ]);
          yield* get('SELECT pg_sleep(0.05)');
          return changes;
        });
      const changes = await Promise.all([claim(), claim()]);
      expect(changes.sort()).to.deep.equal([0, 1]);
    });
  });
});
