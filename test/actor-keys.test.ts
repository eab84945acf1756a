// The actor's Zebric 0.6 keys in the rules, at the level of the runtime's own modules: an agent
// acting for a person (withDelegation, the trusted hook) has that person as `actor.effectiveId`,
// which `$currentUser.id` and "owner" compare; `actor.type` is the kind; `$currentUser.<key>`
// falls back to the actor's metadata. The same answers in memory (checkCondition) and in the SQL
// row filter (conditionToSql, run on a real SQLite table), where actor values are parameters.

import Database from 'better-sqlite3';
import { expect } from 'chai';
import { type Actor, withDelegation } from '../runtime-lib/core/actor.ts';
import { Access, type AccessPolicy } from '../runtime-lib/rules/access.ts';
import { type ColumnType, conditionToSql } from '../runtime-lib/rules/condition-sql.ts';
import { checkCondition, type Condition, parseCondition } from '../runtime-lib/rules/conditions.ts';

const rule = (source: unknown): Condition => {
  const parsed = parseCondition(source);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return parsed.condition;
};

/** An API-key agent, delegated by Sarah through the trusted hook. */
const agent: Actor = { kind: 'agent', id: 'agent-1', credentialId: 'cred-1', roles: [] };
const delegated = withDelegation(agent, 'sarah');
/** A person whose metadata holds their User record (team). */
const person = {
  kind: 'user',
  type: 'user',
  id: 'u1',
  effectiveId: 'u1',
  email: 'ann@example.com',
  roles: ['user'],
  role: 'user',
  metadata: { email: 'ann@example.com', name: 'Ann', role: 'user', team: 'blue' },
} as Actor;

const COLUMNS = new Map<string, ColumnType>([
  ['id', 'Integer'],
  ['ownerId', 'Text'],
  ['team', 'Text'],
]);
const ROWS = [
  { id: 1, ownerId: 'sarah', team: 'blue' },
  { id: 2, ownerId: 'agent-1', team: 'red' },
  { id: 3, ownerId: 'u1', team: 'blue' },
];

describe("the actor's Zebric keys in rules", () => {
  let db: Database.Database;
  before(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE t ("id" INTEGER PRIMARY KEY, "ownerId" TEXT, "team" TEXT)');
    const insert = db.prepare('INSERT INTO t VALUES (@id, @ownerId, @team)');
    for (const row of ROWS) insert.run(row);
  });
  after(() => db.close());

  /** The ids of the rows a rule lets the actor see: in memory, and through its SQL filter (which must agree). */
  function visible(source: unknown, actor: Actor): number[] {
    const condition = rule(source);
    const inMemory = ROWS.filter((record) => checkCondition(condition, { actor, record })).map((r) => r.id);
    const filter = conditionToSql(condition, actor, COLUMNS);
    if (filter === undefined) throw new Error('not translatable');
    const sql =
      typeof filter === 'boolean'
        ? filter
          ? ROWS.map((r) => r.id)
          : []
        : (db
            .prepare(`SELECT "id" FROM t WHERE ${filter.sql} ORDER BY "id"`)
            .pluck()
            .all(...filter.params) as number[]);
    expect(sql, `SQL of ${JSON.stringify(source)}`).to.deep.equal(inMemory);
    if (typeof filter !== 'boolean')
      expect(filter.sql, 'actor values are parameters').not.to.match(/sarah|blue|agent-1/);
    return inMemory;
  }

  it('actor.effectiveId is delegatedBy, else id; actor.id stays the agent', () => {
    expect(delegated.effectiveId).to.equal('sarah');
    expect(delegated.type).to.equal('agent');
    expect(visible('record.ownerId == actor.effectiveId', delegated)).to.deep.equal([1]);
    expect(visible('record.ownerId == actor.id', delegated)).to.deep.equal([2]);
    expect(
      visible("actor.effectiveId == 'sarah' && actor.id == 'agent-1' && actor.type == 'agent'", delegated),
    ).to.deep.equal([1, 2, 3]);
    expect(visible('record.ownerId == actor.effectiveId', person)).to.deep.equal([3]);
  });

  it('$currentUser.id and "owner" compare the effective id, as in Zebric', () => {
    expect(visible({ ownerId: '$currentUser.id' }, delegated)).to.deep.equal([1]);
    expect(visible('owner', delegated)).to.deep.equal([1]);
    expect(visible({ ownerId: '$currentUser.id' }, agent)).to.deep.equal([2]);
  });

  it('$currentUser.<key> reads the actor, else its metadata; actor.metadata.<key> reads the metadata', () => {
    expect(visible({ team: '$currentUser.team' }, person)).to.deep.equal([1, 3]);
    expect(visible('record.team == actor.metadata.team', person)).to.deep.equal([1, 3]);
    expect(visible({ '$currentUser.name': 'Ann' }, person)).to.deep.equal([1, 2, 3]);
    // An actor without that metadata matches nothing: a missing value never matches.
    expect(visible({ team: '$currentUser.team' }, delegated)).to.deep.equal([]);
    expect(visible("actor.type == 'user'", person)).to.deep.equal([1, 2, 3]);
    expect(visible("actor.type == 'user'", delegated)).to.deep.equal([]);
  });

  it('[auth.permissions]: an actor without roles, and an anonymous caller, are held to the `anonymous` entry', () => {
    const policy = (permissions: AccessPolicy['permissions']): Access =>
      new Access(
        {
          entity: 'T',
          rules: { read: rule('public'), create: rule('public') },
          fields: {},
          scopes: { read: [], write: [] },
          permissions,
        },
        COLUMNS,
      );
    const granted = policy({ anonymous: { allow: [{ entity: 'T', actions: ['read'] }], deny: [] } });
    const anonymous: Actor = { kind: 'anonymous', id: 'anonymous', roles: [] };
    for (const actor of [anonymous, agent]) {
      expect(granted.filter(actor, 'read')).to.equal(true);
      expect(() => granted.filter(actor, 'create'))
        .to.throw()
        .with.property('code', actor === anonymous ? 'UNAUTHENTICATED' : 'FORBIDDEN');
    }
    // Roles of its own replace the anonymous entry.
    const staff: Actor = { ...agent, roles: ['staff'] };
    expect(() => granted.filter(staff, 'read'))
      .to.throw()
      .with.property('code', 'FORBIDDEN');
    // No anonymous entry (nor a public one): the roleless are refused once permissions are declared.
    const none = policy({ staff: { allow: [{ entity: '*', actions: ['*'] }], deny: [] } });
    expect(() => none.filter(anonymous, 'read'))
      .to.throw()
      .with.property('code', 'UNAUTHENTICATED');
    expect(none.filter(staff, 'read')).to.equal(true);
  });
});
