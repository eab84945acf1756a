import { expect } from 'chai';
import fc from 'fast-check';
import { evaluate, isTrue } from '../runtime-lib/rules/expression-eval.ts';
import { formatExpression } from '../runtime-lib/rules/expression-format.ts';
import {
  EXPRESSION_ROOTS,
  MAX_EXPRESSION_DEPTH,
  MAX_EXPRESSION_LENGTH,
  parseExpression,
  pathsOf,
} from '../runtime-lib/rules/expression-parse.ts';
import type { Expr } from '../runtime-lib/rules/expression-parse.ts';

function parse(source: string, allowedRoots?: readonly string[]): Expr {
  const result = parseExpression(source, allowedRoots);
  if (!result.ok) throw new Error(`expected ${JSON.stringify(source)} to parse: ${result.error.message}`);
  return result.expr;
}

function parseError(source: string, allowedRoots?: readonly string[]): { message: string; offset: number } {
  const result = parseExpression(source, allowedRoots);
  if (result.ok) throw new Error(`expected ${JSON.stringify(source)} not to parse`);
  return result.error;
}

function run(source: string, context: Record<string, unknown> = {}): unknown {
  return evaluate(parse(source), context);
}

/** Shows the tree's grouping explicitly, independent of formatExpression's minimal parentheses. */
function grouping(expr: Expr): string {
  switch (expr.kind) {
    case 'binary':
      return `(${grouping(expr.left)} ${expr.op} ${grouping(expr.right)})`;
    case 'unary':
      return `(${expr.op}${grouping(expr.operand)})`;
    case 'array':
      return `[${expr.items.map(grouping).join(', ')}]`;
    default:
      return formatExpression(expr);
  }
}

describe('expressions', () => {
  describe('parsing', () => {
    it('parses literals', () => {
      expect(parse('42')).to.deep.equal({ kind: 'literal', value: 42 });
      expect(parse('3.25')).to.deep.equal({ kind: 'literal', value: 3.25 });
      expect(parse('1e3')).to.deep.equal({ kind: 'literal', value: 1000 });
      expect(parse('2.5E-2')).to.deep.equal({ kind: 'literal', value: 0.025 });
      expect(parse("'single'")).to.deep.equal({ kind: 'literal', value: 'single' });
      expect(parse('"double"')).to.deep.equal({ kind: 'literal', value: 'double' });
      expect(parse(String.raw`'a\\b\'c\"d\ne\tf'`)).to.deep.equal({ kind: 'literal', value: 'a\\b\'c"d\ne\tf' });
      expect(parse('"it\'s"')).to.deep.equal({ kind: 'literal', value: "it's" });
      expect(parse('true')).to.deep.equal({ kind: 'literal', value: true });
      expect(parse('false')).to.deep.equal({ kind: 'literal', value: false });
      expect(parse('null')).to.deep.equal({ kind: 'literal', value: null });
    });

    it('parses array literals, including empty and nested ones', () => {
      expect(parse("['a', 'b']")).to.deep.equal({
        kind: 'array',
        items: [
          { kind: 'literal', value: 'a' },
          { kind: 'literal', value: 'b' },
        ],
      });
      expect(parse('[]')).to.deep.equal({ kind: 'array', items: [] });
      expect(parse('[[1], record.x]')).to.deep.equal({
        kind: 'array',
        items: [
          { kind: 'array', items: [{ kind: 'literal', value: 1 }] },
          { kind: 'path', root: 'record', keys: ['x'] },
        ],
      });
    });

    it('parses paths rooted at every allowed root', () => {
      expect(parse('record.assignee.id')).to.deep.equal({ kind: 'path', root: 'record', keys: ['assignee', 'id'] });
      expect(parse('now')).to.deep.equal({ kind: 'path', root: 'now', keys: [] });
      for (const root of EXPRESSION_ROOTS) {
        expect(parse(`${root}.x`)).to.deep.equal({ kind: 'path', root, keys: ['x'] });
      }
      expect(EXPRESSION_ROOTS).to.deep.equal(['actor', 'record', 'input', 'workflow', 'now']);
    });

    it('accepts keywords as property names', () => {
      expect(parse('record.in.contains.null')).to.deep.equal({
        kind: 'path',
        root: 'record',
        keys: ['in', 'contains', 'null'],
      });
    });

    it('ignores whitespace, including newlines', () => {
      expect(parse(' record.a\n==\t1 ')).to.deep.equal(parse('record.a == 1'));
    });

    it('restricts roots to allowedRoots', () => {
      expect(parse('input.x', ['input'])).to.deep.equal({ kind: 'path', root: 'input', keys: ['x'] });
      expect(parseError('record.x', ['actor', 'input'])).to.deep.equal({
        message: 'unknown root "record" (expected one of actor, input)',
        offset: 0,
      });
    });
  });

  describe('precedence and associativity', () => {
    const cases: Array<[string, string]> = [
      ['1 || 2 && 3', '(1 || (2 && 3))'],
      ['1 && 2 || 3', '((1 && 2) || 3)'],
      ['1 && 2 == 3', '(1 && (2 == 3))'],
      ['1 == 2 > 3', '(1 == (2 > 3))'],
      ['1 != 2 >= 3', '(1 != (2 >= 3))'],
      ['1 contains 2 < 3', '(1 contains (2 < 3))'],
      ['1 in 2 <= 3', '(1 in (2 <= 3))'],
      ['1 > 2 + 3', '(1 > (2 + 3))'],
      ['1 + 2 * 3', '(1 + (2 * 3))'],
      ['1 - 2 / 3', '(1 - (2 / 3))'],
      ['1 + 2 % 3', '(1 + (2 % 3))'],
      ['-1 * 2', '((-1) * 2)'],
      ['!1 == 2', '((!1) == 2)'],
      ['!!1', '(!(!1))'],
      ['- -1', '(-(-1))'],
      ['-(1 + 2)', '(-(1 + 2))'],
      ['1 - 2 - 3', '((1 - 2) - 3)'],
      ['1 / 2 % 3', '((1 / 2) % 3)'],
      ['1 == 2 != 3', '((1 == 2) != 3)'],
      ['1 contains 2 in 3', '((1 contains 2) in 3)'],
      ['1 || 2 || 3', '((1 || 2) || 3)'],
      ['(1 || 2) && 3', '((1 || 2) && 3)'],
      ['1 * (2 + 3)', '(1 * (2 + 3))'],
      ['[1 + 2, 3]', '[(1 + 2), 3]'],
    ];
    for (const [source, expected] of cases) {
      it(`groups ${source} as ${expected}`, () => {
        expect(grouping(parse(source))).to.equal(expected);
      });
    }

    it('evaluates according to precedence', () => {
      expect(run('1 + 2 * 3')).to.equal(7);
      expect(run('(1 + 2) * 3')).to.equal(9);
      expect(run('10 - 4 - 3')).to.equal(3);
      expect(run('2 * 3 % 4')).to.equal(2);
      expect(run('-2 * 3')).to.equal(-6);
      expect(run('true || false && false')).to.equal(true);
      expect(run('(true || false) && false')).to.equal(false);
      expect(run('1 + 1 == 2')).to.equal(true);
    });
  });

  describe('formatting', () => {
    const canonical: Array<[string, string]> = [
      ['((1 + 2)) + 3', '1 + 2 + 3'],
      ['1 - (2 - 3)', '1 - (2 - 3)'],
      ['(1 * 2) + 3', '1 * 2 + 3'],
      ['(1 + 2) * 3', '(1 + 2) * 3'],
      ['! (record.a == actor.id)', '!(record.a == actor.id)'],
      ['-(-1)', '--1'],
      ['1 - -1', '1 - -1'],
      ['"it\'s"', String.raw`'it\'s'`],
      ['"a\\\\b\\n\\t\\""', String.raw`'a\\b\n\t"'`],
      ["[ 'a','b' ]", "['a', 'b']"],
      [
        "record.status in ['open','pending'] && !record.archived",
        "record.status in ['open', 'pending'] && !record.archived",
      ],
      ['0.000001', '0.000001'],
      ['1e21', '1e+21'],
      ['1e-7', '1e-7'],
    ];
    for (const [source, expected] of canonical) {
      it(`formats ${source} as ${expected} and round-trips`, () => {
        const expr = parse(source);
        expect(formatExpression(expr)).to.equal(expected);
        expect(parse(formatExpression(expr))).to.deep.equal(expr);
      });
    }
  });

  describe('operators', () => {
    const table: Array<[string, unknown]> = [
      ['1 == 1', true],
      ['1 == 2', false],
      ["1 == '1'", false],
      ["'a' != 'b'", true],
      ['null == null', true],
      ['true == 1', false],
      ['[1] == [1]', false],
      ['(1 == 1) == true', true],
      ['true && true', true],
      ['true && false', false],
      ['1 && true', false],
      ["'yes' && true", false],
      ['false || true', true],
      ['true || 1', true],
      ["1 || 'x'", false],
      ['!true', false],
      ['!false', true],
      ["!'yes'", true],
      ['!1', true],
      ['!null', true],
      ['2 > 1', true],
      ['2 > 10', false],
      ["'2' > '10'", true],
      ["'b' >= 'b'", true],
      ["'a' < 'b'", true],
      ['1 <= 1', true],
      ["2 > '1'", false],
      ["'2' < 3", false],
      ['null < 1', false],
      ['true > false', false],
      ['[2] > [1]', false],
      ['1 + 2', 3],
      ["'a' + 'b'", 'ab'],
      ["'a' + 1", undefined],
      ['1 + true', undefined],
      ['[1] + [2]', undefined],
      ['7 - 2', 5],
      ['3 * 4', 12],
      ['7 / 2', 3.5],
      ['7 % 4', 3],
      ['1 / 0', undefined],
      ['5 % 0', undefined],
      ["'6' / 2", undefined],
      ["'6' * 2", undefined],
      ["'a' - 'b'", undefined],
      ['-(2)', -2],
      ['- -2', 2],
      ["-'a'", undefined],
      ['-true', undefined],
      ['[1, 2] contains 1', true],
      ["[1, 2] contains '1'", false],
      ["'hello' contains 'ell'", true],
      ["'hello' contains 'xyz'", false],
      ["'hello' contains 1", false],
      ['1 contains 1', false],
      ['null contains null', false],
      ["'a' in ['a', 'b']", true],
      ["'c' in ['a', 'b']", false],
      ["'ell' in 'hello'", true],
      ["'x' in null", false],
      ['[1] in [[1]]', false],
    ];
    for (const [source, expected] of table) {
      it(`${source} → ${String(expected)}`, () => {
        expect(run(source)).to.deep.equal(expected);
      });
    }

    it('follows JavaScript for NaN and infinities from arithmetic', () => {
      expect(run('input.a == input.a', { input: { a: Number.NaN } })).to.equal(false);
      expect(run('input.a - input.a', { input: { a: Number.POSITIVE_INFINITY } })).to.be.NaN;
      expect(run('[input.a] contains input.a', { input: { a: Number.NaN } })).to.equal(false);
    });

    it('distinguishes a missing property (undefined) from null, since there is no undefined literal', () => {
      const context = { record: { present: null } };
      expect(run('record.missing == null', context)).to.equal(false);
      expect(run('record.missing != null', context)).to.equal(true);
      expect(run('record.present == null', context)).to.equal(true);
      expect(run('record.missing == record.alsoMissing', context)).to.equal(true);
    });

    it('compares arrays and objects by identity', () => {
      const list = [1];
      expect(run('record.a == record.b', { record: { a: list, b: list } })).to.equal(true);
      expect(run('record.a == record.b', { record: { a: [1], b: [1] } })).to.equal(false);
    });

    it('compares dates with dates and with ISO strings', () => {
      const context = {
        now: new Date('2024-05-01T00:00:00.000Z'),
        record: {
          dueAt: '2024-06-01T00:00:00.000Z',
          createdAt: new Date('2024-01-01T00:00:00.000Z'),
          broken: new Date(Number.NaN),
        },
      };
      expect(run('record.dueAt > now', context)).to.equal(true);
      expect(run('now < record.dueAt', context)).to.equal(true);
      expect(run('now > record.createdAt', context)).to.equal(true);
      expect(run('now <= record.createdAt', context)).to.equal(false);
      expect(run('record.broken < now', context)).to.equal(false);
      expect(run("record.broken < '2025'", context)).to.equal(false);
      expect(run('now > 5', context)).to.equal(false);
      expect(run('now == now', context)).to.equal(true);
    });

    it('evaluates array literals element by element', () => {
      expect(run('[1 + 1, record.x, null]', { record: { x: 'v' } })).to.deep.equal([2, 'v', null]);
    });

    it('treats only the boolean true as true in isTrue', () => {
      expect(isTrue(parse('1'), {})).to.equal(false);
      expect(isTrue(parse("'true'"), {})).to.equal(false);
      expect(isTrue(parse('record.flag'), { record: { flag: true } })).to.equal(true);
      expect(isTrue(parse('record.flag'), { record: { flag: 1 } })).to.equal(false);
      expect(isTrue(parse('record.flag'), {})).to.equal(false);
    });
  });

  describe('paths', () => {
    const context = {
      actor: { id: 'u1', roles: ['admin'] },
      record: {
        assignee: { id: 'u1' },
        members: [{ userId: 'u1' }, { userId: 'u2' }, { name: 'no id' }, 'not an object'],
        teams: [{ members: [{ id: 'a' }] }, { members: [{ id: 'b' }] }],
        tags: ['x', 'yy'],
        title: 'hello',
      },
    };

    it('reads nested properties', () => {
      expect(run('record.assignee.id', context)).to.equal('u1');
      expect(run('record.assignee.id == actor.id', context)).to.equal(true);
      expect(run('actor.roles', context)).to.deep.equal(['admin']);
    });

    it('maps a path through an array over its elements', () => {
      expect(run('record.members.userId', context)).to.deep.equal(['u1', 'u2', undefined, undefined]);
      expect(run('actor.id in record.members.userId', context)).to.equal(true);
      expect(run("record.members.userId contains 'u3'", context)).to.equal(false);
    });

    it('maps one level only: arrays of arrays are not flattened', () => {
      expect(run('record.teams.members', context)).to.deep.equal([[{ id: 'a' }], [{ id: 'b' }]]);
      expect(run('record.teams.members.id', context)).to.deep.equal([undefined, undefined]);
    });

    it('gives undefined for properties of non-objects; .length is not special', () => {
      expect(run('record.title.length', context)).to.equal(undefined);
      expect(run('record.tags.length', context)).to.deep.equal([undefined, undefined]);
      expect(run('record.assignee.id.x', context)).to.equal(undefined);
      expect(run('input.x', { input: 5 })).to.equal(undefined);
      expect(run('input.x', { input: null })).to.equal(undefined);
      expect(run('record.missing.deeper', context)).to.equal(undefined);
    });

    it('gives undefined for roots missing from the context', () => {
      expect(run('workflow.state', context)).to.equal(undefined);
      expect(run('now', context)).to.equal(undefined);
    });

    it('supplies now as whatever value the context holds', () => {
      expect(run('now', { now: '2024-01-01T00:00:00Z' })).to.equal('2024-01-01T00:00:00Z');
      expect(run('now.year', { now: { year: 2024 } })).to.equal(2024);
    });

    it('reports every path in source order', () => {
      const expr = parse('record.a == actor.id && [input.x, 1] contains record.b.c || !workflow.state && now > 0');
      expect(pathsOf(expr)).to.deep.equal([
        { root: 'record', keys: ['a'] },
        { root: 'actor', keys: ['id'] },
        { root: 'input', keys: ['x'] },
        { root: 'record', keys: ['b', 'c'] },
        { root: 'workflow', keys: ['state'] },
        { root: 'now', keys: [] },
      ]);
      expect(pathsOf(parse('1 + -2'))).to.deep.equal([]);
    });
  });

  describe('prototype safety', () => {
    it('rejects prototype names in paths at parse time', () => {
      expect(parseError('record.__proto__')).to.deep.equal({
        message: '"__proto__" is not allowed in a path',
        offset: 7,
      });
      expect(parseError('record.constructor')).to.deep.equal({
        message: '"constructor" is not allowed in a path',
        offset: 7,
      });
      expect(parseError('record.a.prototype.b')).to.deep.equal({
        message: '"prototype" is not allowed in a path',
        offset: 9,
      });
      expect(parseError('constructor.x', ['constructor'])).to.deep.equal({
        message: '"constructor" is not allowed in a path',
        offset: 0,
      });
    });

    it('does not expose inherited properties', () => {
      const record = Object.create({ secret: 1 }) as Record<string, unknown>;
      record.own = 2;
      expect(run('record.secret', { record })).to.equal(undefined);
      expect(run('record.own', { record })).to.equal(2);
      for (const name of ['toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', '__defineGetter__']) {
        expect(run(`record.${name}`, { record: {} })).to.equal(undefined);
        expect(run(`record.items.${name}`, { record: { items: [{}] } })).to.deep.equal([undefined]);
      }
      expect(run('record.map', { record: [] })).to.deep.equal([]);
    });

    it('does not see through an own __proto__ key from JSON.parse', () => {
      const record = JSON.parse('{"__proto__": {"x": 1}}') as Record<string, unknown>;
      expect(run('record.x', { record })).to.equal(undefined);
      const handBuilt: Expr = { kind: 'path', root: 'record', keys: ['__proto__', 'x'] };
      expect(evaluate(handBuilt, { record })).to.equal(undefined);
    });

    it('reads own fields of class instances but not their accessors', () => {
      class Entity {
        constructor(readonly id: string) {}
        get secret(): string {
          return 'hidden';
        }
      }
      expect(run('record.id', { record: new Entity('e1') })).to.equal('e1');
      expect(run('record.secret', { record: new Entity('e1') })).to.equal(undefined);
    });

    it('never reads roots from the context prototype', () => {
      const context = Object.create({ record: { x: 1 } }) as Record<string, unknown>;
      expect(run('record.x', context)).to.equal(undefined);
    });
  });

  describe('robustness', () => {
    it('treats throwing getters as missing values', () => {
      const record = { ok: 1 };
      Object.defineProperty(record, 'boom', {
        enumerable: true,
        get() {
          throw new Error('boom');
        },
      });
      const items = [{}];
      Object.defineProperty(items, 0, {
        get() {
          throw new Error('boom');
        },
      });
      expect(run('record.boom', { record })).to.equal(undefined);
      expect(run('record.boom == null || record.ok == 1', { record })).to.equal(true);
      expect(run('record.items.x', { record: { items } })).to.equal(undefined);
      expect(run('record.items contains 1', { record: { items } })).to.equal(false);
    });

    it('handles cyclic objects', () => {
      const record: Record<string, unknown> = { id: 'r' };
      record.self = record;
      record.list = [record];
      expect(run('record.self.self.self.id', { record })).to.equal('r');
      expect(run('record.list.self.id', { record })).to.deep.equal(['r']);
      expect(run('record.self == record', { record })).to.equal(true);
    });

    it('returns undefined rather than overflowing the stack on a hand-built, very deep tree', () => {
      let expr: Expr = { kind: 'literal', value: true };
      for (let i = 0; i < 200_000; i++) expr = { kind: 'unary', op: '!', operand: expr };
      expect(evaluate(expr, {})).to.equal(undefined);
    });
  });

  describe('parse errors', () => {
    const errors: Array<[string, string, number]> = [
      ['', 'empty expression', 0],
      ['   ', 'empty expression', 0],
      ['usr.id == 1', 'unknown root "usr" (expected one of actor, record, input, workflow, now)', 0],
      ['record.a == 1)', 'unexpected token ")"', 13],
      [')', 'unexpected token ")"', 0],
      ['1 2', 'unexpected token "2"', 2],
      ["'abc", 'unterminated string', 0],
      ['record.a == "abc\\', 'unterminated string', 12],
      ["'a\\qb'", 'invalid escape "\\q" in string (allowed: \\\\ \\\' \\" \\n \\t)', 2],
      ['record.a &&', 'expected expression after "&&"', 11],
      ['record.a && )', 'expected expression after "&&" but found ")"', 12],
      ['!', 'expected expression after "!"', 1],
      ['1 +', 'expected expression after "+"', 3],
      ['record.a in', 'expected expression after "in"', 11],
      ['contains 1', 'unexpected token "contains"', 0],
      ['1 == contains', 'expected expression after "==" but found "contains"', 5],
      ['(1 + 2', 'expected ")" but found end of input', 6],
      ['(1 + 2 3)', 'expected ")" but found "3"', 7],
      ['[1, 2', 'expected "," or "]" but found end of input', 5],
      ['[1, ]', 'expected expression after "," but found "]"', 4],
      ['record.tags(1)', 'function calls are not supported', 11],
      ['record.tags[0]', 'indexing with [...] is not supported', 11],
      ["['a'][0]", 'indexing with [...] is not supported', 5],
      ['record.', 'expected a property name after "." but found end of input', 7],
      ['record.1', 'expected a property name after "." but found "1"', 7],
      ['1.x', 'unexpected token "."', 1],
      ['.5', 'unexpected token "."', 0],
      ['1a', 'invalid number "1a"', 0],
      ['1.2.3', 'invalid number "1.2.3"', 0],
      ['1e400', 'number out of range "1e400"', 0],
      ['record.a = 1', 'unexpected token "=" (assignment is not supported; use "==" to compare)', 9],
      ['record.a === 1', '"===" is not supported (use "==", which is already strict)', 9],
      ['record.a !== 1', '"!==" is not supported (use "!=", which is already strict)', 9],
      ['record.a & 1', 'unexpected character "&" (use "&&")', 9],
      ['record.a | 1', 'unexpected character "|" (use "||")', 9],
      ['$currentUser.id', 'unexpected character "$" (in expressions the current user is "actor", e.g. actor.id)', 0],
      ['record.a ? 1 : 2', 'unexpected character "?"', 9],
      ['record.a == 1 @', 'unexpected character "@"', 14],
      ['record.é', 'unexpected character "é"', 7],
    ];
    for (const [source, message, offset] of errors) {
      it(`${JSON.stringify(source)}: ${message} at ${offset}`, () => {
        expect(parseError(source)).to.deep.equal({ message, offset });
      });
    }

    it('reports the earliest problem even when a later one is lexical', () => {
      expect(parseError(") 'unterminated")).to.deep.equal({ message: 'unexpected token ")"', offset: 0 });
    });

    it('rejects non-string input', () => {
      expect(parseError(42 as unknown as string)).to.deep.equal({ message: 'expression must be a string', offset: 0 });
    });
  });

  describe('limits', () => {
    it(`accepts ${MAX_EXPRESSION_LENGTH} characters and rejects one more`, () => {
      const longest = `1${' + 1'.repeat(1023)}   `;
      expect(longest).to.have.length(MAX_EXPRESSION_LENGTH);
      expect(run(longest)).to.equal(1024);
      expect(parseError(`${longest} `)).to.deep.equal({
        message: `expression is too long (${MAX_EXPRESSION_LENGTH + 1} characters, maximum ${MAX_EXPRESSION_LENGTH})`,
        offset: MAX_EXPRESSION_LENGTH,
      });
    });

    it(`accepts nesting depth ${MAX_EXPRESSION_DEPTH} and rejects one more`, () => {
      const tooDeep = `expression is nested too deeply (maximum depth ${MAX_EXPRESSION_DEPTH})`;
      const depth = MAX_EXPRESSION_DEPTH;
      expect(run(`${'('.repeat(depth)}1${')'.repeat(depth)}`)).to.equal(1);
      expect(parseError(`${'('.repeat(depth + 1)}1${')'.repeat(depth + 1)}`)).to.deep.equal({
        message: tooDeep,
        offset: depth,
      });
      expect(run(`${'!'.repeat(depth)}true`)).to.equal(true);
      expect(parseError(`${'!'.repeat(depth + 1)}true`)).to.deep.equal({ message: tooDeep, offset: depth });
      expect(run(`${'['.repeat(depth)}${']'.repeat(depth)}`)).to.be.an('array');
      expect(parseError(`${'['.repeat(depth + 1)}${']'.repeat(depth + 1)}`)).to.deep.equal({
        message: tooDeep,
        offset: depth,
      });
      expect(parseError(`${'(-['.repeat(22)}1${'])'.repeat(22)}`)).to.deep.equal({ message: tooDeep, offset: 64 });
    });
  });

  describe('properties', () => {
    const identifier = fc
      .stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,6}$/)
      .filter((name) => !['__proto__', 'constructor', 'prototype'].includes(name));

    const parsableLiteral = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.nat(),
      fc.double({ min: 0, max: Number.MAX_VALUE, noNaN: true }),
      fc.boolean(),
      fc.constant(null),
    );

    const binaryOps = [
      '||',
      '&&',
      '==',
      '!=',
      'contains',
      'in',
      '>',
      '>=',
      '<',
      '<=',
      '+',
      '-',
      '*',
      '/',
      '%',
    ] as const;

    function exprArbitrary(
      leafKey: fc.Arbitrary<string>,
      literal: fc.Arbitrary<string | number | boolean | null>,
    ): fc.Arbitrary<Expr> {
      return fc.letrec<{ expr: Expr }>((tie) => ({
        expr: fc.oneof(
          { depthSize: 'small', maxDepth: 6 },
          literal.map((value): Expr => ({ kind: 'literal', value })),
          fc
            .record({ root: fc.constantFrom(...EXPRESSION_ROOTS), keys: fc.array(leafKey, { maxLength: 3 }) })
            .map(({ root, keys }): Expr => ({ kind: 'path', root, keys })),
          fc.array(tie('expr'), { maxLength: 3 }).map((items): Expr => ({ kind: 'array', items })),
          fc
            .record({ op: fc.constantFrom('!' as const, '-' as const), operand: tie('expr') })
            .map(({ op, operand }): Expr => ({ kind: 'unary', op, operand })),
          fc
            .record({ op: fc.constantFrom(...binaryOps), left: tie('expr'), right: tie('expr') })
            .map(({ op, left, right }): Expr => ({ kind: 'binary', op, left, right })),
        ),
      })).expr;
    }

    it('formatExpression output parses back to the same tree', () => {
      fc.assert(
        fc.property(exprArbitrary(identifier, parsableLiteral), (expr) => {
          const formatted = formatExpression(expr);
          const reparsed = parseExpression(formatted);
          expect(reparsed, formatted).to.deep.equal({ ok: true, expr });
        }),
        { numRuns: 500 },
      );
    });

    const trickyKey = fc.constantFrom(
      'a',
      'b',
      'x',
      '__proto__',
      'constructor',
      'prototype',
      'toString',
      'valueOf',
      'hasOwnProperty',
      'length',
      '0',
    );
    const contextValue = fc.oneof(
      fc.anything({
        key: trickyKey,
        maxDepth: 3,
        withBoxedValues: true,
        withMap: true,
        withSet: true,
        withNullPrototype: true,
        withObjectString: true,
        withDate: true,
        withTypedArray: true,
        withSparseArray: true,
        withBigInt: true,
      }),
      fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.parse(JSON.stringify(value)) as unknown),
      fc
        .dictionary(trickyKey, fc.jsonValue({ maxDepth: 2 }))
        .map((value) => JSON.parse(JSON.stringify(value)) as unknown),
    );
    const context = fc.record({
      actor: contextValue,
      record: contextValue,
      input: contextValue,
      workflow: contextValue,
      now: contextValue,
    });

    /** Independent statement of the read rules: own properties of non-array objects, arrays mapped once. */
    function ownRead(value: unknown, key: string): unknown {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
      if (['__proto__', 'constructor', 'prototype'].includes(key) || !Object.hasOwn(value, key)) return undefined;
      return (value as Record<string, unknown>)[key];
    }
    function referenceRead(value: unknown, keys: string[]): unknown {
      return keys.reduce<unknown>(
        (current, key) =>
          Array.isArray(current) ? current.map((element) => ownRead(element, key)) : ownRead(current, key),
        value,
      );
    }

    function collectReachable(value: unknown, seen: Set<unknown>): Set<unknown> {
      if (typeof value === 'object' && value !== null && !seen.has(value)) {
        seen.add(value);
        for (const key of Reflect.ownKeys(value)) {
          const descriptor = Object.getOwnPropertyDescriptor(value, key);
          if (descriptor !== undefined && 'value' in descriptor) collectReachable(descriptor.value, seen);
        }
      }
      return seen;
    }

    function isSafeResult(value: unknown, reachable: Set<unknown>): boolean {
      if (typeof value === 'function') return false;
      if (typeof value !== 'object' || value === null) return true;
      if (value === Object.prototype || value === Array.prototype) return false;
      if (reachable.has(value)) return true;
      return Array.isArray(value) && value.every((element) => isSafeResult(element, reachable));
    }

    it('evaluation never throws and only yields primitives, arrays or values taken from the context', () => {
      fc.assert(
        fc.property(exprArbitrary(trickyKey, fc.oneof(parsableLiteral, fc.double())), context, (expr, ctx) => {
          const result = evaluate(expr, ctx);
          expect(isSafeResult(result, collectReachable(ctx, new Set()))).to.equal(true);
          expect(typeof isTrue(expr, ctx)).to.equal('boolean');
        }),
        { numRuns: 1000 },
      );
    });

    it('paths read only own properties', () => {
      fc.assert(
        fc.property(
          fc.constantFrom(...EXPRESSION_ROOTS),
          fc.array(trickyKey, { maxLength: 4 }),
          context,
          (root, keys, ctx) => {
            const result = evaluate({ kind: 'path', root, keys }, ctx);
            expect(result).to.deep.equal(referenceRead(ctx[root as keyof typeof ctx], keys));
          },
        ),
        { numRuns: 1000 },
      );
    });

    it('reads nothing from Object.prototype', () => {
      for (const name of Object.getOwnPropertyNames(Object.prototype).filter((n) => /^[A-Za-z_]\w*$/.test(n))) {
        const expr: Expr = { kind: 'path', root: 'record', keys: [name] };
        expect(evaluate(expr, { record: {} }), name).to.equal(undefined);
        expect(evaluate(expr, { record: [{}] }), name).to.deep.equal([undefined]);
      }
    });

    const sourceFragment = fc.constantFrom(
      'record',
      'actor',
      'now',
      'x',
      '.',
      '__proto__',
      '(',
      ')',
      '[',
      ']',
      ',',
      '&&',
      '||',
      '!',
      '-',
      '+',
      '*',
      '/',
      '%',
      '==',
      '!=',
      '=',
      '>',
      '<=',
      'contains',
      'in',
      'true',
      'null',
      "'",
      '"',
      '\\',
      '1',
      '2.5',
      '1e',
      ' ',
      '$',
      '@',
      'é',
    );

    it('parseExpression never throws on arbitrary text and reports offsets inside the source', () => {
      const checkSource = (source: string): void => {
        const result = parseExpression(source);
        if (result.ok) {
          expect(parseExpression(formatExpression(result.expr))).to.deep.equal(result);
        } else {
          expect(result.error.message).to.be.a('string').and.not.equal('');
          expect(result.error.offset).to.be.within(0, source.length);
        }
      };
      fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), checkSource), { numRuns: 1000 });
      fc.assert(
        fc.property(
          fc.array(sourceFragment, { maxLength: 40 }).map((parts) => parts.join('')),
          checkSource,
        ),
        { numRuns: 3000 },
      );
    });
  });
});
