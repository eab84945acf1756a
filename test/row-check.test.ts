// Access.checkWrite (runtime-lib/rules/access.ts): the row rules hold for the record as a write
// leaves it, as PostgreSQL's WITH CHECK. Which fields count as ownership fields, in every
// condition form, and who hears what (401 / 403 with ROW_CHECK details). The HTTP side is in
// test/integrity.test.ts.

import { expect } from 'chai';
import type { Actor } from '../runtime-lib/core/actor.ts';
import { ANONYMOUS } from '../runtime-lib/core/actor.ts';
import { AppError } from '../runtime-lib/core/errors.ts';
import { Access, type AccessPolicy, type Permissions } from '../runtime-lib/rules/access.ts';
import type { ColumnType } from '../runtime-lib/rules/condition-sql.ts';
import { type Condition, parseCondition } from '../runtime-lib/rules/conditions.ts';

const condition = (value: unknown): Condition => {
  const parsed = parseCondition(value);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return parsed.condition;
};

const COLUMNS = new Map<string, ColumnType>([
  ['id', 'ULID'],
  ['authorId', 'Text'],
  ['ownerId', 'Text'],
  ['teamId', 'Text'],
  ['status', 'Text'],
  ['title', 'Text'],
] as const);

function access(rules: Partial<Record<'read' | 'create' | 'update', unknown>>, permissions?: Permissions): Access {
  const policy: AccessPolicy = {
    entity: 'Note',
    rules: Object.fromEntries(Object.entries(rules).map(([k, v]) => [k, condition(v)])),
    fields: {},
    scopes: { read: [], write: [] },
    permissions,
  };
  return new Access(policy, COLUMNS);
}

const person = (id: string, roles: string[] = [], extra: Partial<Actor> = {}): Actor => ({
  kind: 'user',
  id,
  roles,
  ...extra,
});
const ann = person('ann');

function refusal(run: () => void): AppError {
  try {
    run();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('Access.ownershipFields', () => {
  const cases: Array<[string, unknown, string[]]> = [
    ['an expression comparing a record path with actor.*', 'record.authorId == actor.id', ['authorId']],
    [
      'each side of || and &&, alone',
      "record.authorId == actor.id || (record.teamId == actor.teamId && record.status == 'open')",
      ['authorId', 'teamId'],
    ],
    ['a comparison under !', '!(record.authorId != actor.id)', ['authorId']],
    ['the actor on the left', 'actor.id == record.ownerId', ['ownerId']],
    ['a table pair with $currentUser.*', { authorId: '$currentUser.id' }, ['authorId']],
    ['$currentUser.* as the key', { '$currentUser.id': 'ownerId' }, []],
    [
      'table or/and forms',
      { or: [{ authorId: '$currentUser.id' }, { and: [{ teamId: '$currentUser.teamId' }, { status: 'open' }] }] },
      ['authorId', 'teamId'],
    ],
    ['the owner shorthand', 'owner', ['ownerId']],
    ['no comparison with the actor', "record.status != 'archived' && actor.roles contains 'admin'", []],
    ['a literal comparison in a table', { status: 'open' }, []],
    ['public', 'public', []],
  ];
  for (const [label, read, fields] of cases) {
    it(`reads ${label}`, () => {
      expect(access({ read }).ownershipFields).to.deep.equal(fields);
    });
  }

  it("reads the owner shorthand as userId on an entity that has one (Zebric's owner field)", () => {
    const policy: AccessPolicy = {
      entity: 'Note',
      rules: { read: condition('owner') },
      fields: {},
      scopes: { read: [], write: [] },
    };
    const columns = new Map<string, ColumnType>([...COLUMNS, ['userId', 'Text']]);
    expect(new Access(policy, columns).ownershipFields).to.deep.equal(['userId']);
  });

  it("reads the read permissions of every role too, and no other action's", () => {
    const permissions: Permissions = {
      editor: {
        allow: [
          { entity: 'Note', actions: ['read'], condition: condition({ teamId: '$currentUser.teamId' }) },
          { entity: 'Note', actions: ['update'], condition: condition('record.ownerId == actor.id') },
          { entity: 'Other', actions: ['read'], condition: condition('record.title == actor.id') },
        ],
        deny: [{ entity: '*', actions: ['*'], condition: condition('record.authorId == actor.id') }],
      },
    };
    expect(access({ read: 'authenticated' }, permissions).ownershipFields).to.deep.equal(['authorId', 'teamId']);
  });
});

describe('Access.checkWrite', () => {
  const notes = access({
    read: "(record.authorId == actor.id && record.status != 'archived') || actor.roles contains 'admin'",
    update: { or: [{ authorId: '$currentUser.id' }, { '$currentUser.role': 'admin' }] },
  });
  const mine = { id: '1', authorId: 'ann', status: 'open', title: 't' };

  it('refuses an update the update rule does not allow on the record as it will be', () => {
    const err = refusal(() => notes.checkWrite(ann, mine, { ...mine, authorId: 'bob' }, ['authorId']));
    expect(err.code).to.equal('FORBIDDEN');
    expect(err.details?.map((d) => `${d.field ?? ''}:${d.code}`)).to.deep.equal([':ROW_CHECK', 'authorId:ROW_CHECK']);
  });

  it('allows other changes, including one that hides the record from its author (not an ownership field)', () => {
    notes.checkWrite(ann, mine, { ...mine, title: 'new' }, ['title']);
    notes.checkWrite(ann, mine, { ...mine, status: 'archived' }, ['status']);
    // Sent back unchanged: not a change.
    notes.checkWrite(ann, mine, { ...mine, title: 'x' }, ['title', 'authorId']);
  });

  it('holds the read rule only for ownership fields the actor wrote', () => {
    const tasks = access({ read: 'record.ownerId == actor.id', update: 'authenticated' });
    const task = { id: '1', ownerId: 'ann', title: 't' };
    const err = refusal(() => tasks.checkWrite(ann, task, { ...task, ownerId: null }, ['ownerId']));
    expect(err.details).to.deep.equal([
      {
        field: 'ownerId',
        code: 'ROW_CHECK',
        message: 'with this ownerId you could not read the Note: the read rule must still hold',
      },
    ]);
    tasks.checkWrite(ann, task, { ...task, title: 'u' }, ['title']);
  });

  it('lets another branch of the read rule keep the record readable (an admin reassigning)', () => {
    notes.checkWrite(person('root', ['admin']), mine, { ...mine, authorId: 'bob' }, ['authorId']);
  });

  it('on create: refuses an ownership value the creator could not read, not an empty one nor a generated id', () => {
    const err = refusal(() => notes.checkWrite(ann, null, { ...mine, authorId: 'bob' }, ['title', 'authorId']));
    expect(err.details?.map((d) => d.field)).to.deep.equal(['authorId']);
    notes.checkWrite(ann, null, { ...mine, authorId: 'ann' }, ['title', 'authorId']);
    const profiles = access({ read: 'record.id == actor.id' });
    profiles.checkWrite(ann, null, { id: '01J', title: 't' }, ['title']);
    const owned = access({ read: 'owner' });
    owned.checkWrite(ann, null, { id: '1', ownerId: null }, ['ownerId']);
    expect(refusal(() => owned.checkWrite(ann, null, { id: '1', ownerId: 'bob' }, ['ownerId'])).code).to.equal(
      'FORBIDDEN',
    );
  });

  it('answers an anonymous caller 401, with the same details', () => {
    const open = access({ read: 'record.authorId == actor.id', create: 'public' });
    const err = refusal(() => open.checkWrite(ANONYMOUS, null, { id: '1', authorId: 'ann' }, ['authorId']));
    expect(err.code).to.equal('UNAUTHENTICATED');
    expect(err.details?.map((d) => `${d.field}:${d.code}`)).to.deep.equal(['authorId:ROW_CHECK']);
  });

  it('holds update and read permissions as well: a deny that the new state meets refuses', () => {
    const permissions: Permissions = {
      member: {
        allow: [{ entity: 'Note', actions: ['*'] }],
        deny: [{ entity: 'Note', actions: ['update'], condition: condition({ status: 'locked' }) }],
      },
    };
    const locked = access({ read: 'authenticated', update: 'authenticated' }, permissions);
    const member = person('m', ['member']);
    const err = refusal(() => locked.checkWrite(member, mine, { ...mine, status: 'locked' }, ['status']));
    expect(err.details?.map((d) => d.code)).to.deep.equal(['ROW_CHECK']);
    locked.checkWrite(member, mine, { ...mine, status: 'done' }, ['status']);
  });
});
