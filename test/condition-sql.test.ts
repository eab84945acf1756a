// Row-level filters in SQL must agree with checkCondition row by row: random rows and actors,
// conditions of every supported form (fixed ones and random expressions), both ways compared.

import { expect } from 'chai';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { checkCondition, parseCondition, type Condition } from '../runtime-lib/rules/conditions.ts';
import pg from 'pg';
import { conditionToSql, type ColumnType } from '../runtime-lib/rules/condition-sql.ts';
import { sqlText } from '../runtime-lib/data/database.ts';
import { freshPostgresDatabase } from './support/postgres.ts';

const COLUMNS = new Map<string, ColumnType>([
  ['id', 'ULID'],
  ['ownerId', 'Text'],
  ['status', 'Enum'],
  ['priority', 'Integer'],
  ['score', 'Float'],
  ['active', 'Boolean'],
  ['title', 'Text'],
  ['customerId', 'Ref'],
  ['dueAt', 'DateTime'],
]);

const USERS = ['u1', 'u2', 'u3'];
const STATUSES = ['open', 'in_progress', 'resolved'];
const ROLES = ['agent', 'admin', 'viewer'];
const TIMES = ['2026-01-01T00:00:00.000Z', '2026-06-01T12:30:00.000Z'];

const rowArb = fc.record({
  ownerId: fc.option(fc.constantFrom(...USERS), { nil: null }),
  status: fc.option(fc.constantFrom(...STATUSES), { nil: null }),
  priority: fc.option(fc.integer({ min: -2, max: 3 }), { nil: null }),
  score: fc.option(fc.constantFrom(0, 0.5, 1.5), { nil: null }),
  active: fc.option(fc.boolean(), { nil: null }),
  title: fc.option(fc.constantFrom('printer', 'urgent printer', 'mail', ''), { nil: null }),
  customerId: fc.option(fc.constantFrom(...USERS), { nil: null }),
  dueAt: fc.option(fc.constantFrom(...TIMES), { nil: null }),
});
type Row = {
  ownerId: string | null;
  status: string | null;
  priority: number | null;
  score: number | null;
  active: boolean | null;
  title: string | null;
  customerId: string | null;
  dueAt: string | null;
};

const actorArb = fc.option(
  fc.record({ id: fc.constantFrom(...USERS), roles: fc.subarray(ROLES), email: fc.constantFrom('a@x.io', 'b@x.io') }),
  { nil: null },
);

const FIXED: unknown[] = [
  true,
  false,
  'public',
  'authenticated',
  'owner',
  { status: 'open' },
  { ownerId: '$currentUser.id' },
  { '$currentUser.role': 'admin' },
  { customerId: '$currentUser.id', status: 'open' },
  { or: [{ '$currentUser.role': 'admin' }, { ownerId: '$currentUser.id' }] },
  { and: ['authenticated', { active: true }] },
  { priority: 2 },
  { active: false },
  { title: '$currentUser.email' },
  "record.status == 'open'",
  "record.status != 'open'",
  'record.status == null',
  "record.status in ['open', 'resolved']",
  "record.status in ['open', null]",
  "['open'] contains record.status",
  "record.title contains 'printer'",
  'record.priority > 1',
  'record.priority <= 0 || record.active',
  '!record.active',
  '!(record.priority >= 1) && record.score < 1',
  "actor.roles contains 'agent' && record.ownerId == actor.id",
  "record.ownerId == actor.id || actor.roles contains 'admin'",
  'record.ownerId == record.customerId',
  'record.ownerId != record.customerId',
  'record.priority == record.score',
  'record.active == true',
  'record.active == false',
  'record.active == 1',
  "record.dueAt == '2026-01-01T00:00:00.000Z'",
  "record.dueAt != '2026-06-01T12:30:00.000Z'",
  "record.title == ''",
  "record.missing == 'x'",
  '1 + 1 == 2 && record.priority == 1 + 1',
];

/** Random conditions over the columns of ROWS, with constants of every kind and the actor. */
const EXPRESSIONS: fc.Arbitrary<string> = (() => {
  const column = fc.constantFrom(
    'record.status',
    'record.priority',
    'record.active',
    'record.title',
    'record.ownerId',
    'record.score',
  );
  const constant = fc.constantFrom(
    "'open'",
    "'resolved'",
    '1',
    '2',
    '0.5',
    'true',
    'false',
    'null',
    "'printer'",
    'actor.id',
    "'u1'",
  );
  const leaf = fc.oneof(
    fc
      .tuple(column, fc.constantFrom('==', '!=', '>', '<=', '>=', '<'), constant)
      .map(([a, op, b]) => `${a} ${op} ${b}`),
    fc.tuple(constant, fc.constantFrom('==', '!='), column).map(([a, op, b]) => `${a} ${op} ${b}`),
    fc
      .tuple(column, fc.constantFrom("['open', 'resolved']", '[1, 2]', "['u1', null]"))
      .map(([a, list]) => `${a} in ${list}`),
    fc.tuple(column, fc.constantFrom("'print'", "'mail'", '1')).map(([a, b]) => `${a} contains ${b}`),
    column,
    fc.constantFrom("actor.roles contains 'admin'", 'true', 'false'),
  );
  return fc.letrec<{ e: string }>((tie) => ({
    e: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      fc.tuple(tie('e'), fc.constantFrom('&&', '||'), tie('e')).map(([a, op, b]) => `(${a}) ${op} (${b})`),
      tie('e').map((a) => `!(${a})`),
    ),
  })).e;
})();

function sqlMatches(db: Database.Database, filter: ReturnType<typeof conditionToSql>): Set<number> {
  if (filter === undefined) throw new Error('unsupported');
  if (filter === true)
    return new Set((db.prepare('SELECT rowid AS r FROM t').all() as Array<{ r: number }>).map((x) => x.r));
  if (filter === false) return new Set();
  return new Set(
    (db.prepare(`SELECT rowid AS r FROM t WHERE ${filter.sql}`).all(...filter.params) as Array<{ r: number }>).map(
      (x) => x.r,
    ),
  );
}

function load(rows: Row[]): Database.Database {
  const db = new Database(':memory:');
  db.exec(
    'CREATE TABLE t (id TEXT, ownerId TEXT, status TEXT, priority INTEGER, score REAL, active BOOLEAN, ' +
      'title TEXT, customerId TEXT, dueAt DATETIME)',
  );
  const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
  rows.forEach((r, i) =>
    insert.run(
      String(i),
      r.ownerId,
      r.status,
      r.priority,
      r.score,
      r.active === null ? null : r.active ? 1 : 0,
      r.title,
      r.customerId,
      r.dueAt?.replace('Z', '+00:00') ?? null,
    ),
  );
  return db;
}

function jsMatches(rows: Row[], condition: Condition, actor: { id: string; roles: string[] } | null): Set<number> {
  return new Set(
    rows.flatMap((r, i) => (checkCondition(condition, { actor, record: { id: String(i), ...r } }) ? [i + 1] : [])),
  );
}

describe('conditionToSql', () => {
  for (const source of FIXED) {
    it(`agrees with checkCondition: ${JSON.stringify(source)}`, () => {
      const parsed = parseCondition(source, { allowedRoots: ['actor', 'record', 'now'] });
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
      fc.assert(
        fc.property(fc.array(rowArb, { maxLength: 12 }), actorArb, (rows, actor) => {
          const db = load(rows);
          const sql = sqlMatches(db, conditionToSql(parsed.condition, actor, COLUMNS));
          expect([...sql].sort()).to.deep.equal([...jsMatches(rows, parsed.condition, actor)].sort());
        }),
        { numRuns: 60 },
      );
    });
  }

  it('agrees with checkCondition on random expressions', () => {
    fc.assert(
      fc.property(EXPRESSIONS, fc.array(rowArb, { maxLength: 10 }), actorArb, (source, rows, actor) => {
        const parsed = parseCondition(source, { allowedRoots: ['actor', 'record', 'now'] });
        if (!parsed.ok) throw new Error(`${source}: ${JSON.stringify(parsed.issues)}`);
        const filter = conditionToSql(parsed.condition, actor, COLUMNS);
        if (filter === undefined) return;
        const db = load(rows);
        expect([...sqlMatches(db, filter)].sort(), source).to.deep.equal(
          [...jsMatches(rows, parsed.condition, actor)].sort(),
        );
      }),
      { numRuns: 400 },
    );
  });

  // A command's policy and availableWhen go into its UPDATE's WHERE on PostgreSQL (one statement):
  // they read the command's input and its time, which the SQL must take as the check does.
  it("agrees with checkCondition on a command's conditions, which read its input and its time", () => {
    const sources = [
      'record.status == input.status',
      'record.priority > input.level && record.ownerId == actor.id',
      "input.force == true || record.status != 'resolved'",
      "now == '2026-01-01T00:00:00.000Z' || record.status == 'open'",
      'record.dueAt == now && input.level <= 1',
      "record.title contains input.word || input.word == ''",
    ];
    const inputArb = fc.record({
      status: fc.option(fc.constantFrom(...STATUSES), { nil: null }),
      level: fc.option(fc.integer({ min: -1, max: 3 }), { nil: null }),
      force: fc.boolean(),
      word: fc.constantFrom('printer', 'mail', ''),
    });
    for (const source of sources) {
      const parsed = parseCondition(source, { allowedRoots: ['actor', 'record', 'input', 'now'] });
      if (!parsed.ok) throw new Error(`${source}: ${JSON.stringify(parsed.issues)}`);
      let compiled = 0;
      fc.assert(
        fc.property(
          fc.array(rowArb, { maxLength: 10 }),
          actorArb,
          inputArb,
          fc.constantFrom(...TIMES),
          (rows, actor, input, now) => {
            const filter = conditionToSql(parsed.condition, actor, COLUMNS, 'sqlite', { input, now });
            // What it cannot write as SQL (a comparison with a missing input) the plain path checks.
            if (filter === undefined) return;
            compiled++;
            const expected = rows.flatMap((r, i) =>
              checkCondition(parsed.condition, { actor, record: { id: String(i), ...r }, input, now }) ? [i + 1] : [],
            );
            expect([...sqlMatches(load(rows), filter)].sort(), source).to.deep.equal(expected.sort());
          },
        ),
        { numRuns: 80 },
      );
      expect(compiled, `${source}: compiled for some inputs`).to.be.greaterThan(20);
    }
  });

  it('declines what it cannot express: relation paths, JSON columns, arithmetic on columns', () => {
    const columns = new Map<string, ColumnType>([...COLUMNS, ['meta', 'JSON']]);
    for (const source of [
      'record.customer.name == actor.id',
      "record.meta == 'x'",
      'record.priority + 1 > 2',
      '-record.priority == 1',
      { 'customer.id': '$currentUser.id' },
    ]) {
      const parsed = parseCondition(source);
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
      expect(conditionToSql(parsed.condition, { id: 'u1', roles: [] }, columns), JSON.stringify(source)).to.equal(
        undefined,
      );
    }
  });

  it("owner filters on userId (Zebric's owner field) where the table has one, else on ownerId", () => {
    const parsed = parseCondition('owner');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (id TEXT, userId TEXT, ownerId TEXT)');
    db.prepare('INSERT INTO t VALUES (?, ?, ?), (?, ?, ?), (?, ?, ?)').run(
      'a',
      'u1',
      'u2',
      'b',
      'u2',
      'u1',
      'c',
      null,
      'u1',
    );
    const both = new Map<string, ColumnType>([
      ['id', 'ULID'],
      ['userId', 'Text'],
      ['ownerId', 'Text'],
    ]);
    const rowsFor = (columns: Map<string, ColumnType>) => {
      const filter = conditionToSql(parsed.condition, { id: 'u1', roles: [] }, columns);
      if (filter === undefined || typeof filter === 'boolean') throw new Error(`expected SQL, got ${String(filter)}`);
      return (
        db.prepare(`SELECT id FROM t WHERE ${filter.sql} ORDER BY id`).all(...filter.params) as Array<{ id: string }>
      ).map((r) => r.id);
    };
    expect(rowsFor(both)).to.deep.equal(['a']);
    expect(
      rowsFor(
        new Map<string, ColumnType>([
          ['id', 'ULID'],
          ['ownerId', 'Text'],
        ]),
      ),
    ).to.deep.equal(['b', 'c']);
    // The same rows as the check in memory reads, row by row.
    const rows = db.prepare('SELECT * FROM t ORDER BY id').all() as Array<Record<string, unknown>>;
    expect(
      rows
        .filter((r) => checkCondition(parsed.condition, { actor: { id: 'u1', roles: [] }, record: r }))
        .map((r) => r.id),
    ).to.deep.equal(['a']);
  });

  // A database created with a language's collation (en_US.UTF-8 on many managed services) orders
  // `a` before `B`; the list's row filter must still decide as the record's check does.
  it('orders text as checkCondition does on PostgreSQL, whatever the collation of the column', async () => {
    const client = new pg.Client({ connectionString: await freshPostgresDatabase('text_order') });
    await client.connect();
    try {
      await client.query('CREATE TABLE t (id TEXT, title TEXT COLLATE "en-US-x-icu")');
      const titles = ['a', 'B', 'Z', 'é', '-b', 'ab', 'AB', 'b', 'Ω'];
      for (const [i, title] of titles.entries())
        await client.query('INSERT INTO t VALUES ($1, $2)', [String(i), title]);
      const columns = new Map<string, ColumnType>([
        ['id', 'ULID'],
        ['title', 'Text'],
      ]);
      for (const source of [
        "record.title > 'B'",
        "record.title <= 'a'",
        "'b' < record.title",
        "record.title >= 'Z' && record.title < 'é'",
      ]) {
        const parsed = parseCondition(source);
        if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
        const filter = conditionToSql(parsed.condition, null, columns, 'postgres');
        if (filter === undefined || typeof filter === 'boolean') throw new Error(`expected SQL, got ${String(filter)}`);
        const { rows } = await client.query<{ title: string }>(
          `SELECT title FROM t WHERE ${sqlText('postgres', filter.sql)}`,
          filter.params,
        );
        const inMemory = titles.filter((title) => checkCondition(parsed.condition, { actor: null, record: { title } }));
        expect(rows.map((r) => r.title).sort(), source).to.deep.equal(inMemory.sort());
      }
    } finally {
      await client.end();
    }
  });

  // PostgreSQL binds a parameter as its column's type: 1.5 or 3e9 is no int4, and it refuses them
  // where SQLite compares; a rule may still compare an Integer with any number.
  it('compares an Integer column with any number as checkCondition does, on both databases', async () => {
    const values = [-2147483648, -2, -1, 0, 1, 2, 2147483647, null];
    const sources = [
      'record.priority > 1.5',
      'record.priority >= 1.5',
      'record.priority < -1.5',
      'record.priority <= 1.5',
      'record.priority > -0.5',
      'record.priority == 1.5',
      'record.priority != 1.5',
      'record.priority in [1.5, 2]',
      'record.priority > 3000000000',
      'record.priority < 3000000000',
      'record.priority >= -3000000000',
      'record.priority <= -3000000000',
      'record.priority == 3000000000',
      'record.priority > 2147483646.5',
    ];
    const columns = new Map<string, ColumnType>([
      ['id', 'ULID'],
      ['priority', 'Integer'],
    ]);
    const sqlite = new Database(':memory:');
    sqlite.exec('CREATE TABLE t (id TEXT, priority INTEGER)');
    const client = new pg.Client({ connectionString: await freshPostgresDatabase('integer_bounds') });
    await client.connect();
    try {
      await client.query('CREATE TABLE t (id TEXT, priority INTEGER)');
      for (const [i, priority] of values.entries()) {
        sqlite.prepare('INSERT INTO t VALUES (?, ?)').run(String(i), priority);
        await client.query('INSERT INTO t VALUES ($1, $2)', [String(i), priority]);
      }
      for (const source of sources) {
        const parsed = parseCondition(source);
        if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
        const inMemory = values.flatMap((priority, i) =>
          checkCondition(parsed.condition, { actor: null, record: { priority } }) ? [String(i)] : [],
        );
        const filter = (dialect: 'sqlite' | 'postgres') => {
          const f = conditionToSql(parsed.condition, null, columns, dialect);
          if (f === undefined) throw new Error(`${source}: not expressed in SQL`);
          return typeof f === 'boolean' ? { sql: f ? 'TRUE' : 'FALSE', params: [] } : f;
        };
        const lite = filter('sqlite');
        const onSqlite = (
          sqlite.prepare(`SELECT id FROM t WHERE ${lite.sql}`).all(...lite.params) as Array<{ id: string }>
        ).map((r) => r.id);
        const post = filter('postgres');
        const { rows } = await client.query<{ id: string }>(
          `SELECT id FROM t WHERE ${sqlText('postgres', post.sql)}`,
          post.params,
        );
        expect(onSqlite.sort(), `${source} on SQLite`).to.deep.equal([...inMemory].sort());
        expect(rows.map((r) => r.id).sort(), `${source} on PostgreSQL`).to.deep.equal([...inMemory].sort());
      }
    } finally {
      await client.end();
      sqlite.close();
    }
  });
});

// The same agreement on PostgreSQL, whose SQL differs (strpos, COLLATE "C", whole-number bounds)
// and which binds each parameter as its column's type: one table of sampled rows, in the column
// types the migrations give (BOOLEAN, DOUBLE PRECISION, TIMESTAMP(3)), every fixed condition and
// sampled expressions, each for sampled actors.
describe('conditionToSql on PostgreSQL', () => {
  const rows: Row[] = fc.sample(rowArb, { numRuns: 80, seed: 20261127 });
  const actors = [null, ...fc.sample(actorArb, { numRuns: 6, seed: 7 })];
  let client: pg.Client;

  before(async () => {
    client = new pg.Client({ connectionString: await freshPostgresDatabase('row_filters') });
    await client.connect();
    await client.query(
      'CREATE TABLE t ("id" TEXT, "ownerId" TEXT, "status" TEXT, "priority" INTEGER, "score" DOUBLE PRECISION, ' +
        '"active" BOOLEAN, "title" TEXT, "customerId" TEXT, "dueAt" TIMESTAMP(3))',
    );
    for (const [i, r] of rows.entries()) {
      await client.query('INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
        String(i),
        r.ownerId,
        r.status,
        r.priority,
        r.score,
        r.active,
        r.title,
        r.customerId,
        r.dueAt?.replace('Z', '') ?? null,
      ]);
    }
  });
  after(async () => client?.end());

  /** Row numbers as jsMatches counts them (1-based). */
  async function postgresMatches(condition: Condition, actor: (typeof actors)[number]): Promise<number[] | undefined> {
    const filter = conditionToSql(condition, actor, COLUMNS, 'postgres');
    if (filter === undefined) return undefined;
    if (filter === false) return [];
    const where = filter === true ? '' : ` WHERE ${sqlText('postgres', filter.sql)}`;
    const { rows: found } = await client.query<{ id: string }>(
      `SELECT "id" FROM t${where}`,
      filter === true ? [] : filter.params,
    );
    return found.map((r) => Number(r.id) + 1).sort((a, b) => a - b);
  }

  it('agrees with checkCondition on every fixed condition, for every actor', async () => {
    for (const source of FIXED) {
      const parsed = parseCondition(source, { allowedRoots: ['actor', 'record', 'now'] });
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
      for (const actor of actors) {
        const expected = [...jsMatches(rows, parsed.condition, actor)].sort((a, b) => a - b);
        expect(
          await postgresMatches(parsed.condition, actor),
          `${JSON.stringify(source)} for ${JSON.stringify(actor)}`,
        ).to.deep.equal(expected);
      }
    }
  });

  it('agrees with checkCondition on sampled expressions', async () => {
    const sources = fc.sample(EXPRESSIONS, { numRuns: 300, seed: 2026 });
    let compared = 0;
    for (const [i, source] of sources.entries()) {
      const parsed = parseCondition(source, { allowedRoots: ['actor', 'record', 'now'] });
      if (!parsed.ok) throw new Error(`${source}: ${JSON.stringify(parsed.issues)}`);
      const actor = actors[i % actors.length];
      const found = await postgresMatches(parsed.condition, actor);
      if (found === undefined) continue;
      compared++;
      expect(found, `${source} for ${JSON.stringify(actor)}`).to.deep.equal(
        [...jsMatches(rows, parsed.condition, actor)].sort((a, b) => a - b),
      );
    }
    expect(compared, 'expressions expressed in SQL').to.be.greaterThan(200);
  });
});
