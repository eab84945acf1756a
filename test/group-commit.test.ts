// The SQLite driver (runtime-lib/data/sqlite.ts) on a real SQLite file: units of work
// (data/database.ts) run synchronously; the writes of one event-loop turn share a transaction,
// fail alone, and are answered only once committed.

import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { AppError } from '../runtime-lib/core/errors.ts';
import { all, get, later, run, savepoint, together, type Statement, type Work } from '../runtime-lib/data/database.ts';
import { openSqlite, type SqliteDatabase } from '../runtime-lib/data/sqlite.ts';
import { ActiveTrace } from '../runtime-lib/observe/tracing.ts';
import { freshDir } from './support/apps.ts';

describe('SQLite database: units of work and group commit', () => {
  let file: string;
  let db: SqliteDatabase;
  /** A second connection: it sees only what has committed. */
  let observer: Database.Database;

  const INSERT = 'INSERT INTO "item" ("name") VALUES (?) RETURNING rowid AS "id"';
  /** Inserts one item: its rowid. */
  function* insertWork(name: string): Work<number> {
    return (yield* get(INSERT, [name]))?.id as number;
  }
  const insert = (name: string) => () => insertWork(name);
  function* count(): Work<number> {
    return (yield* get('SELECT count(*) AS "n" FROM "item"'))?.n as number;
  }
  const committed = () => observer.prepare('SELECT "name" FROM "item" ORDER BY "name"').pluck().all();
  const settle = <T>(p: Promise<T>) =>
    p.then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
  const errorOf = (r: { ok: boolean }) => (r as unknown as { error: AppError }).error;
  const pageCount = () => db.connection.pragma('page_count', { simple: true }) as number;
  const NO_PAGE_LIMIT = 1073741823;
  /**
   * Fills the disk: an insert of a large row with no room left. A single-row insert keeps no
   * statement journal, so SQLite answers SQLITE_FULL by rolling the whole transaction back (with
   * RETURNING, it would undo the statement alone).
   */
  function* overfill(): Work<void> {
    db.connection.pragma(`max_page_count = ${pageCount()}`);
    yield* run('INSERT INTO "item" ("name") VALUES (?)', ['x'.repeat(200_000)]);
  }

  beforeEach(() => {
    file = path.join(freshDir('group-commit'), 'app.db');
    db = openSqlite(`file:${file}`, '/');
    db.connection.exec('CREATE TABLE "item" ("name" TEXT NOT NULL UNIQUE)');
    db.connection.exec('CREATE TABLE "parent" ("id" INTEGER PRIMARY KEY)');
    db.connection.exec(
      'CREATE TABLE "child" ("parentId" INTEGER REFERENCES "parent" ("id") DEFERRABLE INITIALLY DEFERRED)',
    );
    observer = new Database(file, { readonly: true });
  });

  afterEach(async () => {
    observer.close();
    await db.close();
  });

  /** Nothing left open, and the next write commits. */
  async function usable() {
    expect(db.connection.inTransaction).to.equal(false);
    expect(await db.write(insert('after'))).to.be.a('number');
    expect(committed()).to.include('after');
  }

  it('commits the writes of one turn in one transaction and answers only after the commit', async () => {
    const traces = [new ActiveTrace(), new ActiveTrace(), new ActiveTrace()];
    const seenAtAnswer: unknown[][] = [];
    const answers = ['a', 'b', 'c'].map((name, i) =>
      db.write(insert(name), traces[i]).then((rowid) => (seenAtAnswer.push(committed()), rowid)),
    );
    // Nothing runs, let alone commits, before the turn ends.
    expect(committed()).to.deep.equal([]);
    expect(await Promise.all(answers)).to.deep.equal([1, 2, 3]);
    for (const seen of seenAtAnswer) expect(seen).to.deep.equal(['a', 'b', 'c']);
    for (const trace of traces) {
      const commit = trace.spans.find((s) => s.name === 'database.commit');
      expect(commit?.attributes).to.deep.equal({ writes: 3 });
      expect(commit?.endTime).to.be.greaterThan(0);
      // Each statement of the write is a database.query span of its own trace.
      expect(trace.spans.filter((s) => s.name === 'database.query').map((s) => s.attributes?.sql)).to.deep.equal([
        INSERT,
      ]);
    }
    expect(db.connection.inTransaction).to.equal(false);
  });

  it('lets each write see the writes queued before it', async () => {
    const seen = await Promise.all([db.write(insert('a')), db.write(count), db.write(insert('b')), db.write(count)]);
    expect([seen[1], seen[3]]).to.deep.equal([1, 2]);
  });

  it('rolls a failing write back alone: the others of its group commit', async () => {
    const results = await Promise.all([
      settle(db.write(insert('a'))),
      settle(
        db.write(function* () {
          yield* insertWork('half-done');
          throw new AppError('VALIDATION_FAILED', 'refused after writing');
        }),
      ),
      // A constraint failure reaches its caller as the app's error.
      settle(db.write(insert('a'))),
      settle(db.write(insert('b'))),
    ]);
    expect(results.map((r) => r.ok)).to.deep.equal([true, false, false, true]);
    expect(errorOf(results[1]).code).to.equal('VALIDATION_FAILED');
    expect(errorOf(results[2]).code).to.equal('UNIQUE_CONFLICT');
    expect(committed()).to.deep.equal(['a', 'b']);
  });

  it('throws a failed statement into the unit where it was yielded: a unit that catches it carries on', async () => {
    const result = await db.write(function* () {
      yield* insertWork('a');
      let caught: unknown;
      try {
        yield* insertWork('a');
      } catch (err) {
        caught = err;
      }
      yield* insertWork('b');
      return (caught as AppError).code;
    });
    expect(result).to.equal('UNIQUE_CONFLICT');
    expect(committed()).to.deep.equal(['a', 'b']);
  });

  it('runs a later statement at once, and fails the whole write when it fails, as PostgreSQL does', async () => {
    const taken = () => new AppError('STATE_CONFLICT', 'the name is taken');
    let resumed = false;
    const [counted, failed, conflict, kept] = await Promise.all([
      settle(
        db.write(function* () {
          yield* later('INSERT INTO "item" ("name") VALUES (?)', ['one']);
          return yield* count();
        }),
      ),
      settle(
        db.write(function* () {
          yield* insertWork('lost');
          try {
            yield* later('INSERT INTO "item" ("name") VALUES (?)', [null]);
          } catch {
            // not thrown here: the write fails as a whole
          }
          resumed = true;
        }),
      ),
      settle(
        db.write(function* () {
          yield* insertWork('lost too');
          yield* later('INSERT INTO "item" ("name") VALUES (?)', ['one'], taken);
        }),
      ),
      settle(db.write(insert('two'))),
    ]);
    expect(counted).to.deep.equal({ ok: true, value: 1 });
    expect(failed.ok).to.equal(false);
    expect(resumed).to.equal(false);
    expect(errorOf(conflict).code).to.equal('STATE_CONFLICT');
    expect(kept.ok).to.equal(true);
    expect(committed()).to.deep.equal(['one', 'two']);
    await usable();
  });

  it('runs together() statements in order and answers each outcome, a failure answered, not thrown', async () => {
    const outcomes = await db.write(function* () {
      yield* insertWork('a');
      return yield* together(
        { mode: 'run', sql: 'INSERT INTO "item" ("name") VALUES (?)', params: ['a'] },
        { mode: 'get', sql: 'INSERT INTO "item" ("name") VALUES (?) RETURNING "name"', params: ['b'] },
      );
    });
    expect(outcomes[0].ok).to.equal(false);
    expect((outcomes[0] as { failure: AppError }).failure.code).to.equal('UNIQUE_CONFLICT');
    expect(outcomes[1]).to.deep.equal({ ok: true, value: { name: 'b' } });
    expect(committed()).to.deep.equal(['a', 'b']);
  });

  it('fails every write of the group when the commit itself fails, and leaves nothing behind', async () => {
    // A deferred foreign key is checked at COMMIT: the group cannot commit.
    const results = await Promise.all([
      settle(db.write(insert('a'))),
      settle(
        db.write(function* () {
          return (yield* run('INSERT INTO "child" ("parentId") VALUES (42)')).changes;
        }),
      ),
    ]);
    expect(results.map((r) => r.ok)).to.deep.equal([false, false]);
    for (const r of results) expect(errorOf(r).code).to.equal('REFERENCE_CONFLICT');
    expect(committed()).to.deep.equal([]);
    expect(db.connection.inTransaction).to.equal(false);
    // The connection is usable again.
    expect(await db.write(insert('after'))).to.equal(1);
    expect(committed()).to.deep.equal(['after']);
  });

  it('splits a large turn into groups of at most 64 writes', async () => {
    const traces = Array.from({ length: 100 }, () => new ActiveTrace());
    await Promise.all(traces.map((trace, i) => db.write(insert(`item-${String(i).padStart(3, '0')}`), trace)));
    const sizes = traces.map((t) => t.spans.find((s) => s.name === 'database.commit')?.attributes?.writes);
    expect(sizes.filter((n) => n === 64)).to.have.length(64);
    expect(sizes.filter((n) => n === 36)).to.have.length(36);
    expect(committed()).to.have.length(100);
  });

  it('refuses to run a group inside a transaction someone left open', async () => {
    db.connection.exec('BEGIN');
    const result = await settle(db.write(insert('a')));
    expect(result.ok).to.equal(false);
    expect(String(errorOf(result).message)).to.match(/left open/);
    db.connection.exec('ROLLBACK');
    expect(committed()).to.deep.equal([]);
  });

  describe('whatever a write throws, and wherever', () => {
    it('answers a write that throws null, undefined or a string with an Error; the others commit', async () => {
      const results = await Promise.all([
        settle(db.write(insert('a'))),
        ...[null, undefined, 'a string'].map((thrown) =>
          settle(
            db.write(function* () {
              yield* insertWork(`half-${String(thrown)}`);
              throw thrown;
            }),
          ),
        ),
        settle(db.write(insert('b'))),
      ]);
      expect(results.map((r) => r.ok)).to.deep.equal([true, false, false, false, true]);
      for (const r of results.slice(1, 4)) {
        expect(errorOf(r)).to.be.instanceOf(Error);
        expect(String(errorOf(r).message)).to.match(/not an Error/);
      }
      expect(committed()).to.deep.equal(['a', 'b']);
      await usable();
    });

    it('answers a write whose function throws before returning a unit, or throws null in a read', async () => {
      const results = await Promise.all([
        settle(db.write(insert('a'))),
        settle(
          db.write(() => {
            throw new AppError('VALIDATION_FAILED', 'refused before any statement');
          }),
        ),
      ]);
      expect(results.map((r) => r.ok)).to.deep.equal([true, false]);
      expect(errorOf(results[1]).code).to.equal('VALIDATION_FAILED');
      const read = await settle(
        db.read(
          // eslint-disable-next-line require-yield
          (function* (): Work<void> {
            throw null;
          })(),
        ),
      );
      expect(errorOf(read)).to.be.instanceOf(Error);
      expect(String(errorOf(read).message)).to.match(/threw null, not an Error/);
      expect(committed()).to.deep.equal(['a']);
    });

    it('fails the whole group, rolled back, when its RELEASE fails', async () => {
      const results = await Promise.all([
        settle(db.write(insert('a'))),
        // Releasing the group's savepoint itself makes the group's own RELEASE fail (no such savepoint).
        settle(
          db.write(function* () {
            yield* insertWork('released');
            yield* run('RELEASE bp_write');
            return 'done';
          }),
        ),
        settle(db.write(insert('b'))),
      ]);
      expect(results.map((r) => r.ok)).to.deep.equal([false, false, false]);
      expect(String(errorOf(results[1]).message)).to.match(/no such savepoint/);
      expect(committed()).to.deep.equal([]);
      await usable();
    });

    it('fails the whole group, rolled back, when its ROLLBACK TO fails', async () => {
      const results = await Promise.all([
        settle(db.write(insert('a'))),
        settle(
          db.write(function* () {
            yield* insertWork('released');
            yield* run('RELEASE bp_write');
            throw new AppError('VALIDATION_FAILED', 'refused after releasing');
          }),
        ),
      ]);
      expect(results.map((r) => r.ok)).to.deep.equal([false, false]);
      expect(String(errorOf(results[0]).message)).to.match(/no such savepoint/);
      expect(committed()).to.deep.equal([]);
      await usable();
    });

    it(
      'fails the group when even ROLLBACK fails, hides its writes from reads, ' +
        'and rolls it back before the next group',
      async () => {
        // A statement left unfinished keeps the connection busy: RELEASE, ROLLBACK TO and ROLLBACK
        // all fail until it is closed.
        let open: IterableIterator<unknown> | undefined;
        try {
          const results = await Promise.all([
            settle(db.write(insert('a'))),
            settle(
              db.write(function* () {
                yield* insertWork('b');
                open = db.connection.prepare('SELECT "name" FROM "item"').iterate();
                open.next();
                return 'left a statement open';
              }),
            ),
          ]);
          expect(results.map((r) => r.ok)).to.deep.equal([false, false]);
          expect(String(errorOf(results[0]).message)).to.match(/busy/);
          expect(committed()).to.deep.equal([]);
          // While the statement stays open, the dead transaction cannot be rolled back: reads are refused.
          const early = await settle(db.read(count()));
          expect(String(errorOf(early).message)).to.match(/could not be rolled back yet/);
        } finally {
          open?.return?.();
        }
        // The failed ROLLBACK left the transaction open, holding the writes of the failed group.
        expect(db.connection.inTransaction).to.equal(true);
        // A read never sees them: it rolls the dead transaction back first.
        expect(await db.read(count())).to.equal(0);
        expect(db.connection.inTransaction).to.equal(false);
        expect(await db.write(insert('after'))).to.be.a('number');
        expect(committed()).to.deep.equal(['after']);
      },
    );

    it('rolls a dead transaction back before the next group', async () => {
      let open: IterableIterator<unknown> | undefined;
      try {
        await settle(
          db.write(function* () {
            yield* insertWork('b');
            open = db.connection.prepare('SELECT "name" FROM "item"').iterate();
            open.next();
            throw new AppError('VALIDATION_FAILED', 'the real failure');
          }),
        );
      } finally {
        open?.return?.();
      }
      expect(db.connection.inTransaction).to.equal(true);
      expect(await db.write(insert('after'))).to.be.a('number');
      expect(db.connection.inTransaction).to.equal(false);
      expect(committed()).to.deep.equal(['after']);
    });

    it('fails the group with DATABASE_BUSY if another connection holds the write lock past the deadline', async () => {
      await db.close();
      db = openSqlite(`file:${file}`, '/', { busyTimeoutMs: 60 });
      const holder = new Database(file);
      holder.exec('BEGIN IMMEDIATE');
      try {
        const start = performance.now();
        const results = await Promise.all([settle(db.write(insert('a'))), settle(db.write(insert('b')))]);
        expect(performance.now() - start).to.be.within(55, 1000);
        expect(results.map((r) => r.ok)).to.deep.equal([false, false]);
        for (const r of results) expect(errorOf(r).code).to.equal('DATABASE_BUSY');
      } finally {
        holder.exec('ROLLBACK');
        holder.close();
      }
      await usable();
    });

    it("waits for another connection's lock on a timer, in order, and commits once it is free", async () => {
      const holder = new Database(file);
      holder.exec('BEGIN IMMEDIATE');
      let released = false;
      const answered: string[] = [];
      const write = (name: string) => db.write(insert(name)).then((id) => (answered.push(name), id));
      const first = [write('a'), write('b')];
      // Timers fire while the writes wait: the event loop is free (a busy timeout would hold it).
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 5);
      try {
        await new Promise((resolve) => setTimeout(resolve, 60));
        // Queued while the first two wait: it goes after them.
        const later = write('c');
        // A read goes on meanwhile (WAL: a reader does not wait for the writer).
        expect(await db.read(count())).to.equal(0);
        await new Promise((resolve) => setTimeout(resolve, 60));
        expect(answered).to.deep.equal([]);
        expect(committed()).to.deep.equal([]);
        holder.exec('ROLLBACK');
        released = true;
        expect(await Promise.all([...first, later])).to.deep.equal([1, 2, 3]);
      } finally {
        clearInterval(ticker);
        if (!released) holder.exec('ROLLBACK');
        holder.close();
      }
      expect(ticks).to.be.above(10);
      expect(answered).to.deep.equal(['a', 'b', 'c']);
      expect(committed()).to.deep.equal(['a', 'b', 'c']);
      await usable();
    });

    it('answers the writes still waiting for a lock when the database closes', async () => {
      const holder = new Database(file);
      holder.exec('BEGIN IMMEDIATE');
      try {
        const waiting = settle(db.write(insert('a')));
        await new Promise((resolve) => setTimeout(resolve, 20));
        await db.close();
        const result = await waiting;
        expect(result.ok).to.equal(false);
        expect(String(errorOf(result).message)).to.match(/closed/);
      } finally {
        holder.exec('ROLLBACK');
        holder.close();
        db = openSqlite(`file:${file}`, '/');
      }
    });

    it('lets nothing of a write reach the database after its transaction ended inside it (disk full)', async () => {
      const inside: { full?: unknown; inTransaction?: boolean; refused?: unknown } = {};
      const results = await Promise.all([
        settle(db.write(insert('a'))),
        settle(
          db.write(function* () {
            // SQLITE_FULL rolls the whole transaction back; a write that carries on regardless
            // would otherwise run its next statements outside any transaction, each committing.
            try {
              yield* overfill();
            } catch (err) {
              inside.full = err;
              inside.inTransaction = db.connection.inTransaction;
              db.connection.pragma(`max_page_count = ${NO_PAGE_LIMIT}`);
              try {
                yield* insertWork('carried on');
              } catch (refusal) {
                inside.refused = refusal;
              }
            }
            return 'carried on';
          }),
        ),
      ]);
      db.connection.pragma(`max_page_count = ${NO_PAGE_LIMIT}`);
      // SQLite did leave the transaction, so the refusal is what kept 'carried on' out.
      expect((inside.full as AppError).code).to.equal('STORAGE_UNAVAILABLE');
      expect(inside.inTransaction).to.equal(false);
      expect(String((inside.refused as Error).message)).to.match(
        /^the transaction ended inside a write; refused: INSERT/,
      );
      // Every caller of the group hears the storage fault, not what the write made of it.
      expect(results.map((r) => r.ok)).to.deep.equal([false, false]);
      for (const r of results) expect(errorOf(r).code).to.equal('STORAGE_UNAVAILABLE');
      expect(committed()).to.deep.equal([]);
      await usable();
    });

    it('answers the storage fault when the disk fills inside a savepoint the write recovers from', async () => {
      // As runIdempotent does: the step fails, the write records the failure and carries on. The
      // step's ROLLBACK TO and the record are refused (no transaction any more).
      const results = await Promise.all([
        settle(db.write(insert('a'))),
        settle(
          db.write(function* () {
            yield* insertWork('before the step');
            try {
              yield* savepoint(overfill());
            } catch {
              db.connection.pragma(`max_page_count = ${NO_PAGE_LIMIT}`);
              try {
                yield* insertWork('the failure, recorded');
              } catch {
                // refused
              }
            }
            return 'recovered';
          }),
        ),
      ]);
      db.connection.pragma(`max_page_count = ${NO_PAGE_LIMIT}`);
      expect(results.map((r) => r.ok)).to.deep.equal([false, false]);
      for (const r of results) expect(errorOf(r).code).to.equal('STORAGE_UNAVAILABLE');
      expect(committed()).to.deep.equal([]);
      await usable();
    });
  });

  describe('only units of work: generators yielding statements', () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    beforeEach(() => {
      unhandled.length = 0;
      process.on('unhandledRejection', onUnhandled);
    });
    afterEach(() => void process.off('unhandledRejection', onUnhandled));
    const later = () => new Promise((resolve) => setTimeout(resolve, 50));

    it('are the only writes that type-check: an async function, a promise or a value does not compile', () => {
      // tsc --noEmit -p . checks these lines: an unused @ts-expect-error is itself an error.
      const refused = [
        // @ts-expect-error an async write
        () => db.write(async () => 1),
        // @ts-expect-error a write returning a promise
        () => db.write(() => Promise.resolve(1)),
        () =>
          // @ts-expect-error an async generator: it could await between its statements
          db.write(async function* () {
            yield* run('SELECT 1');
          }),
        // @ts-expect-error a write returning a plain value
        () => db.write(() => 1),
        // @ts-expect-error a read of a promise
        () => db.read(Promise.resolve(1)),
      ];
      expect(refused).to.have.length(5);
    });

    it('refuses an async function or generator, or a value that slipped through, handling its rejection', async () => {
      type Unit = () => Work<unknown>;
      let asyncRanOn = false;
      const results = await Promise.all([
        settle(db.write(insert('a'))),
        settle(
          db.write((async () => {
            await Promise.resolve();
            asyncRanOn = true;
            throw new Error('late failure');
          }) as unknown as Unit),
        ),
        settle(
          db.write(async function* () {
            yield* run('INSERT INTO "item" ("name") VALUES (?)', ['from an async generator']);
          } as unknown as Unit),
        ),
        settle(db.write((() => 'a value') as unknown as Unit)),
        settle(db.write(insert('b'))),
      ]);
      expect(results.map((r) => r.ok)).to.deep.equal([true, false, false, false, true]);
      for (const r of results.slice(1, 4)) expect(String(errorOf(r).message)).to.match(/must be a generator/);
      // Let the async function's code after its await run, then look from another connection.
      await later();
      expect(asyncRanOn).to.equal(true);
      expect(unhandled).to.deep.equal([]);
      expect(committed()).to.deep.equal(['a', 'b']);
      await usable();
    });

    it('refuses the same in a read', async () => {
      const asyncGenerator = async function* () {
        yield* all('SELECT "name" FROM "item"');
      };
      // Made when read, so that only the driver can handle the rejection.
      for (const work of [() => asyncGenerator(), () => Promise.reject(new Error('never awaited')), () => 42]) {
        const result = await settle(db.read(work() as unknown as Work<unknown>));
        expect(String(errorOf(result).message)).to.match(/must be a generator/);
      }
      await later();
      expect(unhandled).to.deep.equal([]);
    });

    it('refuses anything a unit yields that is not a statement, running nothing of it', async () => {
      // Made when yielded, so that only the driver can handle the rejection.
      const notStatements: Array<[() => unknown, RegExp]> = [
        [() => Promise.reject(new Error('a unit cannot await')), /not a promise$/],
        [() => 'INSERT INTO "item" ("name") VALUES (\'bare\')', /not string$/],
        [() => null, /not null$/],
        [() => ({ sql: 'INSERT INTO "item" ("name") VALUES (?)', mode: 'exec', params: ['bad mode'] }), /not object$/],
        [() => ({ sql: 'INSERT INTO "item" ("name") VALUES (?)', mode: 'run' }), /not object$/],
        [() => ({ sql: 'INSERT INTO "item" ("name") VALUES (?)', mode: 'run', params: 'no list' }), /not object$/],
        [() => ({ sql: 42, mode: 'run', params: [] }), /not object$/],
      ];
      const seen: unknown[] = [];
      const results = await Promise.all([
        // Uncaught, the refusal fails the write: nothing of it commits.
        settle(
          db.write(function* () {
            yield* insertWork('before a bad yield');
            yield 'SELECT 1' as unknown as Statement;
          }),
        ),
        // Caught, it was thrown in where the value was yielded, and ran nothing.
        settle(
          db.write(function* () {
            for (const [value] of notStatements) {
              try {
                yield value() as Statement;
              } catch (err) {
                seen.push(err);
              }
            }
            return yield* insertWork('carried on');
          }),
        ),
      ]);
      expect(results.map((r) => r.ok)).to.deep.equal([false, true]);
      expect(String(errorOf(results[0]).message)).to.match(/may only yield statements/);
      expect(seen).to.have.length(notStatements.length);
      notStatements.forEach(([, message], i) => expect(String((seen[i] as Error).message)).to.match(message));
      await later();
      expect(unhandled).to.deep.equal([]);
      expect(committed()).to.deep.equal(['carried on']);
    });

    it('refuses, in a read, a statement that writes, and a transaction the read would leave open', async () => {
      const writing = [
        () => run('INSERT INTO "item" ("name") VALUES (?)', ['by a read']),
        // A reader (it returns rows), yet not read-only.
        () => get(INSERT, ['by a read returning']),
      ];
      for (const statement of writing) {
        const result = await settle(
          db.read(
            (function* () {
              return yield* statement();
            })(),
          ),
        );
        expect(String(errorOf(result).message)).to.match(/^a read may not change the database/);
      }
      // BEGIN is read-only to SQLite; left open, it would hold back every write.
      for (const begin of ['BEGIN', 'BEGIN IMMEDIATE', 'SAVEPOINT a_read']) {
        const result = await settle(
          db.read(
            (function* () {
              yield* run(begin);
              return yield* count();
            })(),
          ),
        );
        expect(result.ok, begin).to.equal(false);
        expect(db.connection.inTransaction, begin).to.equal(false);
      }
      // A read that ends what it began is none of that.
      expect(
        await db.read(
          (function* () {
            yield* run('BEGIN');
            const n = yield* count();
            yield* run('COMMIT');
            return n;
          })(),
        ),
      ).to.equal(0);
      expect(committed()).to.deep.equal([]);
      await usable();
    });

    it('runs a read outside any transaction: it sees only what committed', async () => {
      await db.write(insert('a'));
      const answers = [db.write(insert('b')), db.read(count())];
      expect(await Promise.all(answers)).to.deep.equal([2, 1]);
      expect(await db.read(count())).to.equal(2);
    });
  });

  describe('savepoints (data/database.ts)', () => {
    it('rolls back only the step that failed: the write carries on and commits the rest', async () => {
      const result = await db.write(function* () {
        yield* insertWork('a');
        const kept = yield* savepoint(insertWork('kept'));
        let failure: unknown;
        try {
          yield* savepoint(
            (function* () {
              yield* insertWork('undone');
              // A nested step, kept by its own savepoint, undone with the outer one.
              yield* savepoint(insertWork('undone too'));
              throw new AppError('VALIDATION_FAILED', 'the step fails');
            })(),
          );
        } catch (err) {
          failure = err;
        }
        yield* insertWork('recorded');
        return { kept, failure: (failure as AppError).code };
      });
      expect(result).to.deep.equal({ kept: 2, failure: 'VALIDATION_FAILED' });
      expect(committed()).to.deep.equal(['a', 'kept', 'recorded']);
      expect(db.connection.inTransaction).to.equal(false);
    });

    for (const [name, step] of [
      [
        // The step's savepoint released under it: ROLLBACK TO fails (no such savepoint).
        'ROLLBACK TO',
        function* () {
          yield* insertWork('half-done');
          yield* run('RELEASE bp_step');
          throw new AppError('VALIDATION_FAILED', 'refused after writing');
        },
      ],
      [
        'RELEASE',
        function* () {
          yield* insertWork('half-done');
          yield* run('RELEASE bp_step');
        },
      ],
    ] as const) {
      it(`fails the whole write when its ${name} fails, whatever the write does with that: none commits`, async () => {
        const seen: unknown[] = [];
        const results = await Promise.all([
          settle(db.write(insert('a'))),
          settle(
            db.write(function* () {
              yield* insertWork('before the step');
              try {
                yield* savepoint(step());
              } catch (err) {
                seen.push(err);
              }
              // A caller that records the failure and carries on, as runIdempotent does.
              yield* insertWork('carried on');
              return 'done';
            }),
          ),
          settle(db.write(insert('b'))),
        ]);
        expect(String((seen[0] as Error).message)).to.match(/no such savepoint/);
        expect(results.map((r) => r.ok)).to.deep.equal([true, false, true]);
        expect(String(errorOf(results[1]).message)).to.match(/no such savepoint/);
        expect(committed()).to.deep.equal(['a', 'b']);
        await usable();
      });
    }
  });

  it('keeps a bounded number of prepared statements', async () => {
    const prepared = () => (db as unknown as { prepared: Map<string, unknown> }).prepared.size;
    for (let i = 0; i < 1100; i++) {
      expect(await db.read(get(`SELECT ${i} AS "n"`)), String(i)).to.deep.equal({ n: i });
    }
    expect(prepared()).to.equal(1024);
    // Statements dropped from the cache are prepared again.
    expect(await db.read(get('SELECT 0 AS "n"'))).to.deep.equal({ n: 0 });
    await usable();
  });

  it('reads the synchronous setting back as DATABASE_SYNC names it', async () => {
    expect(db.synchronous).to.equal('normal');
    expect(db.dialect).to.equal('sqlite');
  });
});
