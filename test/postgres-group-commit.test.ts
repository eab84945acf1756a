// The group commit of the PostgreSQL driver (runtime-lib/data/postgres-group.ts) on a real
// PostgreSQL: writes of one statement each, sent in one turn of the event loop, commit as one
// transaction in one round trip; a write that fails leaves the group, which commits without it,
// and runs alone; a write that waits for a lock held elsewhere steps out and runs alone; a group
// whose connection is lost stores nothing.

import { expect } from 'chai';
import pg from 'pg';
import { AppError } from '../runtime-lib/core/errors.ts';
import { all, get, later, run, together, type Work } from '../runtime-lib/data/database.ts';
import { openPostgres, type PostgresDatabase } from '../runtime-lib/data/postgres.ts';
import { MAX_GROUP } from '../runtime-lib/data/postgres-group.ts';
import { freshPostgresDatabase, withCountedPool } from './support/postgres.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A create as the entity store writes one: plain INSERTs held until the unit ends (`later`). */
function* create(id: string, title = `ticket ${id}`): Work<string> {
  yield* later('INSERT INTO "Ticket" (id, title) VALUES (?, ?)', [id, title]);
  yield* later('INSERT INTO "Audit" (id, "ticketId") VALUES (?, ?)', [`a-${id}`, id]);
  return id;
}

/** A change as one statement committed on its own (EntityStore.lockAndChange on PostgreSQL 18). */
function* bump(id: string, sql = 'UPDATE "Ticket" SET n = n + 1 WHERE id = ? RETURNING n'): Work<unknown> {
  const [outcome] = yield* together({ mode: 'get', sql, params: [id], commitsAlone: true });
  if (!outcome.ok) throw outcome.failure;
  return outcome.value;
}

/** The outcome of each promise, in order: its value, or what it rejected with. */
function settled<T>(promises: Array<Promise<T>>): Promise<Array<{ value: T } | { error: unknown }>> {
  return Promise.all(
    promises.map((p) =>
      p.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
    ),
  );
}

describe('PostgreSQL group commit (data/postgres-group.ts)', function () {
  this.timeout(20_000);
  let url: string;
  let db: PostgresDatabase;
  /** Connections of the tests' own, ended after the tests. */
  const others: pg.Client[] = [];

  before(async () => {
    url = await freshPostgresDatabase('pggroup');
    db = await openPostgres(url);
    await db.write(function* () {
      yield* run('CREATE TABLE "Ticket" (id TEXT PRIMARY KEY, title TEXT NOT NULL, n INTEGER NOT NULL DEFAULT 0)');
      yield* run('CREATE TABLE "Audit" (id TEXT PRIMARY KEY, "ticketId" TEXT NOT NULL)');
      // Checked at COMMIT: a group's COMMIT can be refused.
      yield* run(
        'CREATE TABLE "Ref" (id TEXT PRIMARY KEY, ' +
          '"ticketId" TEXT NOT NULL REFERENCES "Ticket" (id) DEFERRABLE INITIALLY DEFERRED)',
      );
    });
  });

  after(async () => {
    await Promise.all([db.close(), ...others.map((client) => client.end())]);
  });

  beforeEach(async () => {
    await db.write(function* () {
      yield* run('DELETE FROM "Audit"');
      yield* run('DELETE FROM "Ref"');
      yield* run('DELETE FROM "Ticket"');
    });
  });

  const ids = (table = 'Ticket') =>
    db.read(all(`SELECT id FROM "${table}" ORDER BY id`)).then((rows) => rows.map((r) => r.id));

  it('commits the writes of one turn as one transaction in one round trip', async () => {
    await withCountedPool(url, async (counted, counter) => {
      const written = await Promise.all(['g1', 'g2', 'g3', 'g4'].map((id) => counted.write(() => create(id))));
      expect(written).to.deep.equal(['g1', 'g2', 'g3', 'g4']);
      expect(counter.trips()).to.equal(1);
      // BEGIN with the lock bound (one simple query, Q), each write (parsed the first time on the
      // connection, then bound and executed, with its own Sync in pg's pipeline mode), COMMIT.
      expect(counter.messages()[0]).to.match(/^Q(P?BDES){4}Q$/);
      expect(await ids()).to.deep.equal(['g1', 'g2', 'g3', 'g4']);
      expect(await ids('Audit')).to.deep.equal(['a-g1', 'a-g2', 'a-g3', 'a-g4']);
      // Changes to one row in one group run one after the other, as they would alone.
      counter.reset();
      const counts = await Promise.all([1, 2, 3].map(() => counted.write(() => bump('g1'))));
      expect(counter.trips()).to.equal(1);
      expect(counts).to.deep.equal([{ n: 1 }, { n: 2 }, { n: 3 }]);
    });
  });

  it('sends a write alone when it is the only one of its turn: no BEGIN, no COMMIT', async () => {
    await withCountedPool(url, async (counted, counter) => {
      expect(await counted.write(() => create('solo'))).to.equal('solo');
      // One trip: the one statement (Parse, Bind, Describe, Execute, Sync), no simple query (Q)
      // for a BEGIN or a COMMIT.
      expect(counter.messages()).to.deep.equal(['PBDES']);
    });
  });

  it('commits the others of a group without the write that fails, which fails as it does alone', async () => {
    await db.write(() => create('taken'));
    await withCountedPool(url, async (counted, counter) => {
      const outcomes = await settled(['f1', 'taken', 'f2', 'taken', 'f3'].map((id) => counted.write(() => create(id))));
      expect(outcomes[0]).to.deep.equal({ value: 'f1' });
      expect(outcomes[2]).to.deep.equal({ value: 'f2' });
      expect(outcomes[4]).to.deep.equal({ value: 'f3' });
      for (const failed of [outcomes[1], outcomes[3]]) {
        const error = (failed as { error: unknown }).error;
        expect(error).to.be.instanceOf(AppError);
        expect((error as AppError).code).to.equal('UNIQUE_CONFLICT');
      }
      // A trip for the group, one more after each failure for the others (a failure ends the
      // group's transaction: the statements after it fail with 25P02 and count as not run, the
      // COMMIT rolls back), then each failed write alone.
      expect(counter.trips()).to.equal(5);
      expect(await ids()).to.deep.equal(['f1', 'f2', 'f3', 'taken']);
      expect(await ids('Audit')).to.deep.equal(['a-f1', 'a-f2', 'a-f3', 'a-taken']);
      // The connection is clean: the next group commits.
      await Promise.all(['f4', 'f5'].map((id) => counted.write(() => create(id))));
      expect(await ids()).to.deep.equal(['f1', 'f2', 'f3', 'f4', 'f5', 'taken']);
    });
  });

  it('lets a write waiting for a lock held elsewhere step out, run alone and wait; the others commit', async () => {
    await Promise.all(['l1', 'l2', 'l3'].map((id) => db.write(() => create(id))));
    const holder = new pg.Client({ connectionString: url });
    others.push(holder);
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(`UPDATE "Ticket" SET n = 10 WHERE id = 'l2'`);
    const writes = ['l1', 'l2', 'l3'].map((id) => db.write(() => bump(id)));
    const answered: string[] = [];
    writes.forEach((w, i) => void w.then(() => answered.push(['l1', 'l2', 'l3'][i])));
    await Promise.all([writes[0], writes[2]]);
    await sleep(200);
    // The group committed without the write to the locked row, which still waits.
    expect(answered).to.deep.equal(['l1', 'l3']);
    expect(await db.read(all('SELECT id, n FROM "Ticket" ORDER BY id'))).to.deep.equal([
      { id: 'l1', n: 1 },
      { id: 'l2', n: 0 },
      { id: 'l3', n: 1 },
    ]);
    await holder.query('COMMIT');
    // Alone, it waited for the holder and then changed the row as the holder left it.
    expect(await writes[1]).to.deep.equal({ n: 11 });
    expect(await db.read(get(`SELECT n FROM "Ticket" WHERE id = 'l2'`))).to.deep.equal({ n: 11 });
  });

  it("runs each write again alone when the group's COMMIT is refused: each has the outcome it has alone", async () => {
    await withCountedPool(url, async (counted, counter) => {
      const refer = (id: string, ticketId: string) =>
        counted.write(function* () {
          yield* later('INSERT INTO "Ref" (id, "ticketId") VALUES (?, ?)', [id, ticketId]);
        });
      const outcomes = await settled<unknown>([
        counted.write(() => create('c1')),
        refer('r1', 'nowhere'),
        refer('r2', 'c1'),
      ]);
      expect(outcomes[0]).to.deep.equal({ value: 'c1' });
      expect(((outcomes[1] as { error: unknown }).error as AppError).code).to.equal('REFERENCE_CONFLICT');
      expect(outcomes[2]).to.deep.equal({ value: undefined });
      // The group's trip (its refused COMMIT ends the transaction), then each write alone.
      expect(counter.trips()).to.equal(4);
      expect(await ids()).to.deep.equal(['c1']);
      expect(await ids('Ref')).to.deep.equal(['r2']);
    });
  });

  it('fails every write of a group whose connection is lost, and stores none of them', async () => {
    await db.write(() => create('k0'));
    const slow = 'UPDATE "Ticket" SET n = n + 1 FROM pg_sleep(0.5) WHERE id = ? RETURNING n';
    const writes = settled([
      db.write(() => create('k1')),
      db.write(() => bump('k0', slow)),
      db.write(() => create('k2')),
    ]);
    await sleep(150);
    const killer = new pg.Client({ connectionString: url });
    others.push(killer);
    await killer.connect();
    const { rows } = await killer.query(
      'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity ' +
        "WHERE query LIKE '%pg_sleep(0.5)%' AND pid <> pg_backend_pid()",
    );
    expect(rows).to.deep.equal([{ ended: true }]);
    for (const outcome of await writes) {
      const error = (outcome as { error: unknown }).error;
      expect(error, JSON.stringify(outcome)).to.be.instanceOf(AppError);
      expect((error as AppError).code).to.equal('STORAGE_UNAVAILABLE');
    }
    expect(await ids()).to.deep.equal(['k0']);
    expect(await db.read(get(`SELECT n FROM "Ticket" WHERE id = 'k0'`))).to.deep.equal({ n: 0 });
    // The pool serves on.
    expect(await db.write(() => create('k3'))).to.equal('k3');
  });

  it('answers each write of a group STORAGE_UNAVAILABLE when the pool has no connection for it', async () => {
    const busy = await openPostgres(url, { poolMax: 1, connectionTimeoutMs: 200 });
    try {
      // The pool's one connection is taken for a second: the group waits for it past the timeout.
      const holding = busy.read(get('SELECT pg_sleep(1) AS slept'));
      await sleep(50);
      const outcomes = await settled(['p1', 'p2'].map((id) => busy.write(() => create(id))));
      for (const outcome of outcomes) {
        const error = (outcome as { error: unknown }).error;
        expect(error, JSON.stringify(outcome)).to.be.instanceOf(AppError);
        expect((error as AppError).code).to.equal('STORAGE_UNAVAILABLE');
      }
      await holding;
      expect(await ids()).to.deep.equal([]);
      // Once the connection is free, the next group commits.
      expect(await Promise.all(['p3', 'p4'].map((id) => busy.write(() => create(id))))).to.deep.equal(['p3', 'p4']);
    } finally {
      await busy.close();
    }
  });

  it(`splits a turn's writes into groups of at most ${MAX_GROUP}`, async () => {
    await withCountedPool(url, async (counted, counter) => {
      const many = Array.from({ length: MAX_GROUP + 8 }, (_, i) => `m${String(i).padStart(2, '0')}`);
      await Promise.all(many.map((id) => counted.write(() => create(id))));
      expect(counter.trips()).to.equal(2);
      // Each trip is one group: BEGIN and COMMIT (two simple queries, Q), and an Execute per write.
      const writesIn = (trip: string) => [(trip.match(/E/g) ?? []).length, (trip.match(/Q/g) ?? []).length];
      expect(counter.messages().map(writesIn)).to.deep.equal([
        [MAX_GROUP, 2],
        [8, 2],
      ]);
      expect(await ids()).to.deep.equal(many);
    });
  });
});
