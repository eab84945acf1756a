import { expect } from 'chai';
import {
  checkCondition,
  conditionReadsActor,
  conditionReadsRecord,
  currentUserRoleMatches,
  parseCondition,
} from '../runtime-lib/rules/conditions.ts';
import type { Condition, ConditionContext, ConditionIssue } from '../runtime-lib/rules/conditions.ts';
import { parseExpression } from '../runtime-lib/rules/expression-parse.ts';

function condition(value: unknown, options?: { allowedRoots?: readonly string[] }): Condition {
  const result = parseCondition(value, options);
  if (!result.ok) throw new Error(`expected a valid condition: ${JSON.stringify(result.issues)}`);
  return result.condition;
}

function issues(value: unknown, options?: { allowedRoots?: readonly string[] }): ConditionIssue[] {
  const result = parseCondition(value, options);
  if (result.ok) throw new Error('expected issues');
  return result.issues;
}

type Actor = Record<string, unknown> & { id: string; roles: readonly string[] };

const alice: Actor = {
  id: 'u1',
  email: 'alice@example.com',
  roles: ['agent', 'admin'],
  credentialId: 'c1',
  department: 'support',
};
const bob: Actor = { id: 'u2', email: 'bob@example.com', roles: ['customer'] };

function check(value: unknown, ctx: Partial<ConditionContext> = {}): boolean {
  return checkCondition(condition(value), { actor: null, ...ctx });
}

const FORMS = 'true/false, "public", "authenticated", "owner", an expression string, or a table';

describe('conditions', () => {
  describe('parseCondition', () => {
    it('parses booleans and shorthands', () => {
      expect(condition(true)).to.deep.equal({ kind: 'const', value: true });
      expect(condition(false)).to.deep.equal({ kind: 'const', value: false });
      expect(condition('public')).to.deep.equal({ kind: 'public' });
      expect(condition('authenticated')).to.deep.equal({ kind: 'authenticated' });
      expect(condition('owner')).to.deep.equal({ kind: 'owner' });
    });

    it('parses match tables with record paths, actor references and literals', () => {
      expect(
        condition({
          status: 'open',
          'customer.id': '$currentUser.id',
          priority: 3,
          archived: false,
          '$currentUser.role': 'admin',
        }),
      ).to.deep.equal({
        kind: 'match',
        pairs: [
          { left: { kind: 'record', keys: ['status'] }, right: { kind: 'literal', value: 'open' } },
          { left: { kind: 'record', keys: ['customer', 'id'] }, right: { kind: 'actor', key: 'id' } },
          { left: { kind: 'record', keys: ['priority'] }, right: { kind: 'literal', value: 3 } },
          { left: { kind: 'record', keys: ['archived'] }, right: { kind: 'literal', value: false } },
          { left: { kind: 'actor', key: 'role' }, right: { kind: 'literal', value: 'admin' } },
        ],
      });
    });

    it('parses or/and lists recursively', () => {
      expect(condition({ or: ['owner', { and: [{ status: 'open' }, 'authenticated'] }] })).to.deep.equal({
        kind: 'or',
        items: [
          { kind: 'owner' },
          {
            kind: 'and',
            items: [
              {
                kind: 'match',
                pairs: [{ left: { kind: 'record', keys: ['status'] }, right: { kind: 'literal', value: 'open' } }],
              },
              { kind: 'authenticated' },
            ],
          },
        ],
      });
    });

    it('parses any other string as an expression', () => {
      const source = "record.status == 'open' && actor.roles contains 'admin'";
      const parsed = parseExpression(source);
      if (!parsed.ok) throw new Error('fixture does not parse');
      expect(condition(source)).to.deep.equal({ kind: 'expr', expr: parsed.expr, source });
      expect(condition('true')).to.deep.equal({ kind: 'expr', expr: { kind: 'literal', value: true }, source: 'true' });
    });

    it('passes allowedRoots to the expression parser', () => {
      expect(condition('input.amount < 100', { allowedRoots: ['input'] })).to.have.property('kind', 'expr');
      expect(issues('record.x == 1', { allowedRoots: ['actor', 'input'] })).to.deep.equal([
        {
          keys: [],
          message: 'expression does not parse: unknown root "record" (expected one of actor, input) at column 1',
        },
      ]);
    });

    describe('issues', () => {
      const cases: Array<[string, unknown, ConditionIssue[]]> = [
        ['an array', ['public'], [{ keys: [], message: `expected a condition (${FORMS}), got an array` }]],
        ['a number', 3, [{ keys: [], message: `expected a condition (${FORMS}), got a number` }]],
        ['null', null, [{ keys: [], message: `expected a condition (${FORMS}), got null` }]],
        ['undefined', undefined, [{ keys: [], message: `expected a condition (${FORMS}), got nothing` }]],
        ['a date', new Date(0), [{ keys: [], message: `expected a condition (${FORMS}), got a date` }]],
        [
          'an empty table',
          {},
          [
            {
              keys: [],
              message:
                'empty table is not a condition (expected path = value pairs, { or = [...] } or { and = [...] })',
            },
          ],
        ],
        [
          'an empty or',
          { or: [] },
          [{ keys: ['or'], message: '"or" must be a non-empty array of conditions, got an empty array' }],
        ],
        [
          'a non-array and',
          { and: 'owner' },
          [{ keys: ['and'], message: '"and" must be a non-empty array of conditions, got a string' }],
        ],
        [
          'or mixed with other keys',
          { or: [true], status: 'open' },
          [{ keys: [], message: '"or" must be the only key in its table (also found: status)' }],
        ],
        [
          'or mixed with and',
          { and: [true], or: [false] },
          [{ keys: [], message: '"and" must be the only key in its table (also found: or)' }],
        ],
        [
          'a table value',
          { status: { a: 1 } },
          [
            {
              keys: ['status'],
              message:
                'value of "status" must be a string, number or boolean, ' +
                'got a table (quote dotted paths: "status.<field>" = ...)',
            },
          ],
        ],
        [
          'an array value',
          { status: ['open'] },
          [{ keys: ['status'], message: 'value of "status" must be a string, number or boolean, got an array' }],
        ],
        [
          'a null value',
          { status: null },
          [{ keys: ['status'], message: 'value of "status" must be a string, number or boolean, got null' }],
        ],
        [
          'an unknown $ value',
          { ownerId: '$user.id' },
          [{ keys: ['ownerId'], message: 'unknown reference "$user.id" (expected $currentUser.<key>)' }],
        ],
        [
          'an unknown $ key',
          { '$user.id': 'x' },
          [{ keys: ['$user.id'], message: 'unknown reference "$user.id" (expected $currentUser.<key>)' }],
        ],
        [
          'a bare $currentUser',
          { ownerId: '$currentUser' },
          [{ keys: ['ownerId'], message: 'unknown reference "$currentUser" (expected $currentUser.<key>)' }],
        ],
        [
          'a nested $currentUser key',
          { ownerId: '$currentUser.team.id' },
          [{ keys: ['ownerId'], message: 'unknown reference "$currentUser.team.id" (expected $currentUser.<key>)' }],
        ],
        [
          '$currentUser.constructor',
          { ownerId: '$currentUser.constructor' },
          [{ keys: ['ownerId'], message: '"constructor" is not allowed in a path' }],
        ],
        [
          'an invalid field path',
          { 'customer..id': 1 },
          [
            {
              keys: ['customer..id'],
              message:
                'invalid field path "customer..id" (expected a field name, dotted through relations like customer.id)',
            },
          ],
        ],
        [
          'a prototype path',
          { 'customer.constructor': 1 },
          [{ keys: ['customer.constructor'], message: '"constructor" is not allowed in a path' }],
        ],
        [
          'an own __proto__ key',
          JSON.parse('{"__proto__": "x"}'),
          [{ keys: ['__proto__'], message: '"__proto__" is not allowed in a path' }],
        ],
        [
          'an unparsable expression',
          "record.status == 'open')",
          [{ keys: [], message: 'expression does not parse: unexpected token ")" at column 24' }],
        ],
        [
          'an unknown expression root',
          'usr.id == 1',
          [
            {
              keys: [],
              message:
                'expression does not parse: unknown root "usr" ' +
                '(expected one of actor, record, input, workflow, now) at column 1',
            },
          ],
        ],
        ['an empty string', '', [{ keys: [], message: 'expression does not parse: empty expression at column 1' }]],
      ];
      for (const [name, value, expected] of cases) {
        it(`reports ${name}`, () => {
          expect(issues(value)).to.deep.equal(expected);
        });
      }

      it('reports every issue, with keys leading to each', () => {
        const value = {
          or: [
            true,
            5,
            'record.x == )',
            { '$user.id': 'x', status: ['a'] },
            { and: [] },
            { and: ['public', 'record.__proto__ == 1'] },
          ],
        };
        expect(issues(value)).to.deep.equal([
          { keys: ['or', 1], message: `expected a condition (${FORMS}), got a number` },
          {
            keys: ['or', 2],
            message: 'expression does not parse: expected expression after "==" but found ")" at column 13',
          },
          { keys: ['or', 3, '$user.id'], message: 'unknown reference "$user.id" (expected $currentUser.<key>)' },
          { keys: ['or', 3, 'status'], message: 'value of "status" must be a string, number or boolean, got an array' },
          { keys: ['or', 4, 'and'], message: '"and" must be a non-empty array of conditions, got an empty array' },
          {
            keys: ['or', 5, 'and', 1],
            message: 'expression does not parse: "__proto__" is not allowed in a path at column 8',
          },
        ]);
      });

      it('reports issues inside an or that is mixed with other keys', () => {
        expect(issues({ or: [3], status: { a: 1 } })).to.deep.equal([
          { keys: [], message: '"or" must be the only key in its table (also found: status)' },
          { keys: ['or', 0], message: `expected a condition (${FORMS}), got a number` },
          {
            keys: ['status'],
            message:
              'value of "status" must be a string, number or boolean, ' +
              'got a table (quote dotted paths: "status.<field>" = ...)',
          },
        ]);
      });

      it('stops at self-referencing values', () => {
        const value: { or: unknown[] } = { or: [] };
        value.or.push(value);
        const found = issues(value);
        expect(found).to.have.length(1);
        expect(found[0].message).to.equal('condition is nested too deeply (maximum depth 64)');
      });
    });
  });

  describe('checkCondition', () => {
    it('const conditions ignore the actor', () => {
      expect(check(true)).to.equal(true);
      expect(check(false, { actor: alice })).to.equal(false);
    });

    it('public admits anyone, including anonymous requests', () => {
      expect(check('public')).to.equal(true);
      expect(check('public', { actor: alice })).to.equal(true);
    });

    it('authenticated requires an actor', () => {
      expect(check('authenticated', { actor: alice })).to.equal(true);
      expect(check('authenticated')).to.equal(false);
    });

    it('treats an actor of kind "anonymous" like no actor', () => {
      const anonymous = { kind: 'anonymous', id: 'anonymous', roles: [] };
      expect(check('authenticated', { actor: anonymous })).to.equal(false);
      expect(check('owner', { actor: anonymous, record: { ownerId: 'anonymous' } })).to.equal(false);
      expect(check({ ownerId: '$currentUser.id' }, { actor: anonymous, record: { ownerId: 'anonymous' } })).to.equal(
        false,
      );
      expect(check("actor.id == 'anonymous'", { actor: anonymous })).to.equal(false);
      expect(check('public', { actor: anonymous })).to.equal(true);
    });

    it('owner compares the record ownerId with the actor id', () => {
      expect(check('owner', { actor: alice, record: { ownerId: 'u1' } })).to.equal(true);
      expect(check('owner', { actor: bob, record: { ownerId: 'u1' } })).to.equal(false);
      expect(check('owner', { actor: alice, record: {} })).to.equal(false);
      expect(check('owner', { actor: alice, record: null })).to.equal(false);
      expect(check('owner', { actor: alice })).to.equal(false);
      expect(check('owner', { record: { ownerId: 'u1' } })).to.equal(false);
      expect(check('owner', { actor: alice, record: Object.create({ ownerId: 'u1' }) })).to.equal(false);
    });

    it("owner reads the record's userId (Zebric's owner field) when it has one, else its ownerId", () => {
      expect(check('owner', { actor: alice, record: { userId: 'u1' } })).to.equal(true);
      expect(check('owner', { actor: bob, record: { userId: 'u1' } })).to.equal(false);
      // A record with a userId is owned through it alone: its ownerId does not count.
      expect(check('owner', { actor: alice, record: { userId: 'u2', ownerId: 'u1' } })).to.equal(false);
      expect(check('owner', { actor: alice, record: { userId: null, ownerId: 'u1' } })).to.equal(false);
      expect(check('owner', { actor: alice, record: Object.create({ userId: 'u1' }) })).to.equal(false);
    });

    describe('match tables', () => {
      const record = {
        status: 'open',
        priority: 3,
        archived: false,
        customer: { id: 'u2' },
        members: [{ userId: 'u1' }, { userId: 'u3' }],
      };

      it('requires every pair to match', () => {
        expect(check({ status: 'open', priority: 3, archived: false }, { record })).to.equal(true);
        expect(check({ status: 'open', priority: 4 }, { record })).to.equal(false);
        expect(check({ priority: '3' }, { record })).to.equal(false);
        expect(check({ status: 'open' }, { record: null })).to.equal(false);
      });

      it('reads the actor through $currentUser', () => {
        expect(check({ 'customer.id': '$currentUser.id' }, { actor: bob, record })).to.equal(true);
        expect(check({ 'customer.id': '$currentUser.id' }, { actor: alice, record })).to.equal(false);
        expect(check({ '$currentUser.email': 'alice@example.com' }, { actor: alice })).to.equal(true);
        expect(check({ '$currentUser.credentialId': 'c1' }, { actor: alice })).to.equal(true);
        expect(check({ '$currentUser.department': 'support' }, { actor: alice })).to.equal(true);
        expect(check({ '$currentUser.department': 'support' }, { actor: bob })).to.equal(false);
      });

      it('fails closed for anonymous requests whenever $currentUser is read', () => {
        expect(check({ 'customer.id': '$currentUser.id' }, { record })).to.equal(false);
        expect(check({ '$currentUser.department': 'support' })).to.equal(false);
        expect(check({ status: 'open' }, { record })).to.equal(true);
      });

      it('never matches missing values, even against each other', () => {
        expect(check({ teamId: '$currentUser.teamId' }, { actor: alice, record })).to.equal(false);
        expect(check({ teamId: '$currentUser.teamId' }, { actor: alice, record: { teamId: null } })).to.equal(false);
      });

      it('matches a list value when it contains the other side', () => {
        expect(check({ 'members.userId': '$currentUser.id' }, { actor: alice, record })).to.equal(true);
        expect(check({ 'members.userId': '$currentUser.id' }, { actor: bob, record })).to.equal(false);
        expect(check({ '$currentUser.roles': 'admin' }, { actor: alice })).to.equal(true);
        expect(check({ '$currentUser.roles': 'customer' }, { actor: alice })).to.equal(false);
      });

      it('compares $currentUser.role against every role the actor holds', () => {
        expect(check({ '$currentUser.role': 'agent' }, { actor: alice })).to.equal(true);
        expect(check({ '$currentUser.role': 'admin' }, { actor: alice })).to.equal(true);
        expect(check({ '$currentUser.role': 'customer' }, { actor: alice })).to.equal(false);
        expect(
          check({ requiredRole: '$currentUser.role' }, { actor: alice, record: { requiredRole: 'admin' } }),
        ).to.equal(true);
        expect(
          check({ requiredRole: '$currentUser.role' }, { actor: bob, record: { requiredRole: 'admin' } }),
        ).to.equal(false);
        expect(check({ '$currentUser.role': 'admin' })).to.equal(false);
      });

      it('also honours an explicit role property on the actor', () => {
        const actor: Actor = { id: 'u9', role: 'admin', roles: [] };
        expect(check({ '$currentUser.role': 'admin' }, { actor })).to.equal(true);
        expect(currentUserRoleMatches(actor, 'admin')).to.equal(true);
        expect(currentUserRoleMatches(actor, undefined)).to.equal(false);
        expect(currentUserRoleMatches({ id: 'u0', roles: [] }, undefined)).to.equal(false);
      });
    });

    it('and requires all items, or requires one', () => {
      const either = { or: ['owner', { '$currentUser.role': 'admin' }] };
      expect(check(either, { actor: alice, record: { ownerId: 'someone' } })).to.equal(true);
      expect(check(either, { actor: bob, record: { ownerId: 'u2' } })).to.equal(true);
      expect(check(either, { actor: bob, record: { ownerId: 'u1' } })).to.equal(false);
      const both = { and: ['authenticated', { status: 'open' }] };
      expect(check(both, { actor: bob, record: { status: 'open' } })).to.equal(true);
      expect(check(both, { actor: bob, record: { status: 'closed' } })).to.equal(false);
      expect(check(both, { record: { status: 'open' } })).to.equal(false);
    });

    describe('expressions', () => {
      it('evaluates with actor, record, input, workflow and now', () => {
        const ctx = {
          actor: alice,
          record: { status: 'open', createdAt: '2024-01-01T00:00:00.000Z' },
          input: { amount: 50 },
          workflow: { state: 'draft' },
          now: new Date('2024-02-01T00:00:00Z'),
        };
        expect(check("record.status == 'open' && actor.roles contains 'admin'", ctx)).to.equal(true);
        expect(check("actor.roles contains 'owner'", ctx)).to.equal(false);
        expect(check('input.amount < 100', ctx)).to.equal(true);
        expect(check("workflow.state == 'draft'", ctx)).to.equal(true);
        expect(check('now > record.createdAt', ctx)).to.equal(true);
      });

      it('only accepts the boolean true as a result', () => {
        expect(check('record.flag', { record: { flag: 'yes' } })).to.equal(false);
        expect(check('record.flag', { record: { flag: true } })).to.equal(true);
      });

      it('fails closed for anonymous requests whenever actor is read, even under negation', () => {
        const notTheOwner = '!(actor.id == record.ownerId)';
        expect(check(notTheOwner, { actor: bob, record: { ownerId: 'u1' } })).to.equal(true);
        expect(check(notTheOwner, { record: { ownerId: 'u1' } })).to.equal(false);
        expect(check("record.status == 'open'", { record: { status: 'open' } })).to.equal(true);
      });
    });

    it('never throws, treating unreadable data as missing', () => {
      const record = {};
      Object.defineProperty(record, 'ownerId', {
        enumerable: true,
        get() {
          throw new Error('boom');
        },
      });
      expect(check('owner', { actor: alice, record })).to.equal(false);
      expect(check({ ownerId: '$currentUser.id' }, { actor: alice, record })).to.equal(false);
      expect(check('record.ownerId == actor.id', { actor: alice, record })).to.equal(false);
      const garbage = { actor: 5, record: 'x' } as unknown as ConditionContext;
      expect(checkCondition(condition('authenticated'), garbage)).to.equal(false);
      expect(checkCondition(condition({ status: 'open' }), garbage)).to.equal(false);
      expect(checkCondition({ kind: 'unknown' } as unknown as Condition, { actor: alice })).to.equal(false);
    });
  });

  describe('conditionReadsActor / conditionReadsRecord', () => {
    const cases: Array<[string, unknown, boolean, boolean]> = [
      ['true', true, false, false],
      ['public', 'public', false, false],
      ['authenticated', 'authenticated', true, false],
      ['owner', 'owner', true, true],
      ['a record-only match', { status: 'open' }, false, true],
      ['an actor-only match', { '$currentUser.role': 'admin' }, true, false],
      ['a mixed match', { 'customer.id': '$currentUser.id' }, true, true],
      ['an or over both', { or: ['public', { status: 'open' }, 'authenticated'] }, true, true],
      ['an and over constants', { and: [true, 'public'] }, false, false],
      ['an actor expression', "actor.roles contains 'admin'", true, false],
      ['a record expression', "record.status == 'open'", false, true],
      ['an input expression', 'input.amount > 0', false, false],
    ];
    for (const [name, value, readsActor, readsRecord] of cases) {
      it(`${name}: actor ${readsActor}, record ${readsRecord}`, () => {
        expect(conditionReadsActor(condition(value))).to.equal(readsActor);
        expect(conditionReadsRecord(condition(value))).to.equal(readsRecord);
      });
    }
  });
});
