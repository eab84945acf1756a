// Row-level read rules run in the database: a condition, with the actor's values known, becomes
// a SQL predicate over the entity's columns, so a list is filtered before LIMIT and OFFSET apply.
// The translation keeps checkCondition's strict semantics exactly: every leaf yields 0 or 1
// (never NULL), only `true` is true, missing values never match. A condition the translation
// cannot express returns undefined; the generator refuses such read rules at generate time.

import type { Dialect } from '../core/dialect.ts';
import { type FieldType, INTEGER_MAX, INTEGER_MIN, inIntegerRange } from '../core/values.ts';
import {
  type Condition,
  type ConditionActor,
  checkCondition,
  conditionReadsActor,
  currentUserRoleMatches,
  effectiveActorId,
  type Operand,
  readActorKey,
  ownerField,
} from './conditions.ts';
import { evaluate } from './expression-eval.ts';
import type { Expr } from './expression-parse.ts';

/** A column's field type: what the SQL of a comparison must account for. */
export type ColumnType = FieldType;

export interface SqlPredicate {
  sql: string;
  params: unknown[];
}

/** true / false when the answer does not depend on the row; a predicate otherwise. */
export type RowFilter = boolean | SqlPredicate;

type Compiled =
  | { kind: 'const'; value: unknown }
  | { kind: 'column'; name: string; type: ColumnType }
  | { kind: 'pred'; sql: string; params: unknown[] };

const STRING_TYPES = new Set<ColumnType>(['ULID', 'UUID', 'Text', 'LongText', 'Email', 'Enum', 'Ref', 'file', 'Date']);
const NUMBER_TYPES = new Set<ColumnType>(['Integer', 'Float']);

const q = (name: string): string => `"${name}"`;
const pred = (sql: string, params: unknown[] = []): Compiled => ({ kind: 'pred', sql, params });
const TRUE: Compiled = { kind: 'const', value: true };
const FALSE: Compiled = { kind: 'const', value: false };

class Unsupported extends Error {}

/** What a condition reads besides the actor and the record: a command's input, and the time. */
export interface ConditionScope {
  input?: unknown;
  now?: string;
}

/**
 * The rows for which `condition` holds, as SQL; undefined when it cannot be written as SQL. A
 * command's conditions also read its `input` and the `now` its check uses (`scope`); any other
 * condition reads the time when it is compiled.
 */
export function conditionToSql(
  condition: Condition,
  actor: ConditionActor | null,
  columns: ReadonlyMap<string, ColumnType>,
  dialect: Dialect = 'sqlite',
  scope: ConditionScope = {},
): RowFilter | undefined {
  try {
    return finish(toPred(compileCondition(condition, actor, columns, dialect, scope)));
  } catch (err) {
    if (err instanceof Unsupported) return undefined;
    throw err;
  }
}

/** Combines filters with AND, folding constants. */
export function andFilters(filters: readonly RowFilter[]): RowFilter {
  const parts: SqlPredicate[] = [];
  for (const f of filters) {
    if (f === false) return false;
    if (f !== true) parts.push(f);
  }
  if (parts.length === 0) return true;
  return { sql: parts.map((p) => `(${p.sql})`).join(' AND '), params: parts.flatMap((p) => p.params) };
}

function finish(c: Compiled): RowFilter {
  if (c.kind === 'const') return c.value === true;
  if (c.kind === 'pred') return { sql: c.sql, params: c.params };
  throw new Unsupported();
}

function compileCondition(
  condition: Condition,
  actor: ConditionActor | null,
  columns: ReadonlyMap<string, ColumnType>,
  dialect: Dialect,
  scope: ConditionScope,
): Compiled {
  switch (condition.kind) {
    case 'const':
    case 'public':
    case 'authenticated':
      return { kind: 'const', value: checkCondition(condition, { actor, record: null }) };
    case 'owner': {
      const field = ownerField((name) => columns.has(name));
      if (actor === null || !columns.has(field)) return FALSE;
      const owner = effectiveActorId(actor);
      if (owner === undefined || owner === null) return FALSE;
      return equals(
        { kind: 'column', name: field, type: columns.get(field) as ColumnType },
        { kind: 'const', value: owner },
      );
    }
    case 'and':
    case 'or':
      return combine(
        condition.kind,
        condition.items.map((item) => compileCondition(item, actor, columns, dialect, scope)),
      );
    case 'match':
      return combine(
        'and',
        condition.pairs.map(({ left, right }) => matchPair(left, right, actor, columns)),
      );
    case 'expr':
      if (actor === null && conditionReadsActor(condition)) return FALSE;
      return toPred(
        compileExpr(
          condition.expr,
          { actor: actor ?? undefined, input: scope.input, now: scope.now ?? new Date().toISOString() },
          columns,
          dialect,
        ),
      );
  }
}

function matchPair(
  left: Operand,
  right: Operand,
  actor: ConditionActor | null,
  columns: ReadonlyMap<string, ColumnType>,
): Compiled {
  const recordSide = left.kind === 'record' ? left : right.kind === 'record' ? right : undefined;
  if (!recordSide)
    return {
      kind: 'const',
      value: checkCondition({ kind: 'match', pairs: [{ left, right }] }, { actor, record: null }),
    };
  const other = recordSide === left ? right : left;
  if (other.kind === 'actor' && actor === null) return FALSE;
  const column = recordColumn(recordSide.keys, columns);
  if (column.kind === 'const') return FALSE;
  if (other.kind === 'record') {
    const second = recordColumn(other.keys, columns);
    if (second.kind === 'const' || column.kind !== 'column' || second.kind !== 'column') return FALSE;
    if (column.type === 'JSON' || second.type === 'JSON') throw new Unsupported();
    return sameKind(column.type, second.type) ? pred(`(${q(column.name)} = ${q(second.name)}) IS TRUE`) : FALSE;
  }
  if (column.kind !== 'column') throw new Unsupported();
  let values: unknown[];
  if (other.kind === 'actor' && other.key === 'role') {
    // `$currentUser.role` matches any role the actor holds (conditions.ts currentUserRoleMatches).
    const a = actor as ConditionActor;
    values = [...new Set([(a as { role?: unknown }).role ?? a.roles[0], ...a.roles])].filter((v) =>
      currentUserRoleMatches(a as never, v),
    );
  } else {
    // Actor values are parameters, never SQL: `$currentUser.<key>` read as conditions.ts reads it.
    const value = other.kind === 'literal' ? other.value : readActorKey(actor as ConditionActor, other.key);
    if (value === undefined || value === null) return FALSE;
    values = Array.isArray(value) ? value : [value];
  }
  if (column.type === 'JSON') throw new Unsupported();
  const encoded = values.filter((v) => v !== null && v !== undefined).flatMap((v) => encodeFor(column.type, v));
  if (encoded.length === 0) return FALSE;
  return pred(`${q(column.name)} IN (${encoded.map(() => '?').join(', ')}) IS TRUE`, encoded);
}

function recordColumn(keys: readonly string[], columns: ReadonlyMap<string, ColumnType>): Compiled {
  if (keys.length !== 1) throw new Unsupported();
  const type = columns.get(keys[0]);
  return type ? { kind: 'column', name: keys[0], type } : { kind: 'const', value: undefined };
}

/** The stored forms a JSON value equals in a column of this type ([] when it can equal none). */
function encodeFor(type: ColumnType, value: unknown): unknown[] {
  if (type === 'Boolean') return typeof value === 'boolean' ? [value ? 1 : 0] : [];
  // An Integer column holds whole numbers of 32 bits: no other number can equal one, and
  // PostgreSQL refuses to bind one to it (1.5 is no int4) where SQLite would compare.
  if (type === 'Integer') return Number.isInteger(value) && inIntegerRange(value as number) ? [value] : [];
  if (NUMBER_TYPES.has(type)) return typeof value === 'number' && Number.isFinite(value) ? [value] : [];
  if (type === 'DateTime') {
    // Rows decode to toISOString(); only such strings can be equal to them.
    if (typeof value !== 'string' || Number.isNaN(Date.parse(value)) || new Date(value).toISOString() !== value)
      return [];
    return [value.replace('Z', '+00:00')];
  }
  if (STRING_TYPES.has(type)) return typeof value === 'string' ? [value] : [];
  throw new Unsupported();
}

function sameKind(a: ColumnType, b: ColumnType): boolean {
  const kind = (t: ColumnType) => (STRING_TYPES.has(t) ? 'string' : NUMBER_TYPES.has(t) ? 'number' : t);
  return kind(a) === kind(b);
}

function combine(op: 'and' | 'or', parts: Compiled[]): Compiled {
  const preds: Compiled[] = [];
  for (const part of parts.map(toPred)) {
    if (part.kind === 'const') {
      if (op === 'and' && part.value !== true) return FALSE;
      if (op === 'or' && part.value === true) return TRUE;
      continue;
    }
    preds.push(part);
  }
  if (preds.length === 0) return op === 'and' ? TRUE : FALSE;
  const sqls = preds as Array<{ kind: 'pred'; sql: string; params: unknown[] }>;
  return pred(
    sqls.map((p) => `(${p.sql})`).join(op === 'and' ? ' AND ' : ' OR '),
    sqls.flatMap((p) => p.params),
  );
}

/** Truthiness under strict semantics: only true is true. */
function toPred(c: Compiled): Compiled {
  if (c.kind === 'const') return { kind: 'const', value: c.value === true };
  if (c.kind === 'column') return c.type === 'Boolean' ? pred(`${q(c.name)} IS TRUE`) : FALSE;
  return c;
}

function negate(c: Compiled): Compiled {
  const p = toPred(c);
  return p.kind === 'const'
    ? { kind: 'const', value: p.value !== true }
    : pred(`NOT (${(p as { sql: string }).sql})`, (p as { params: unknown[] }).params);
}

function compileExpr(
  expr: Expr,
  ctx: Record<string, unknown>,
  columns: ReadonlyMap<string, ColumnType>,
  dialect: Dialect,
): Compiled {
  switch (expr.kind) {
    case 'literal':
      return { kind: 'const', value: expr.value };
    case 'array': {
      const items = expr.items.map((i) => compileExpr(i, ctx, columns, dialect));
      if (items.some((i) => i.kind !== 'const')) throw new Unsupported();
      return { kind: 'const', value: items.map((i) => (i as { value: unknown }).value) };
    }
    case 'path':
      if (expr.root === 'record') return recordColumn(expr.keys, columns);
      return { kind: 'const', value: evaluate(expr, ctx) };
    case 'unary': {
      if (expr.op === '!') return negate(compileExpr(expr.operand, ctx, columns, dialect));
      const operand = compileExpr(expr.operand, ctx, columns, dialect);
      if (operand.kind !== 'const') throw new Unsupported();
      return { kind: 'const', value: evaluate({ kind: 'unary', op: '-', operand: literalOf(operand.value) }, {}) };
    }
    case 'binary': {
      const left = compileExpr(expr.left, ctx, columns, dialect);
      const right = compileExpr(expr.right, ctx, columns, dialect);
      if (expr.op === '&&' || expr.op === '||') return combine(expr.op === '&&' ? 'and' : 'or', [left, right]);
      if (left.kind === 'const' && right.kind === 'const') {
        return {
          kind: 'const',
          value: evaluate(
            { kind: 'binary', op: expr.op, left: literalOf(left.value), right: literalOf(right.value) },
            {},
          ),
        };
      }
      switch (expr.op) {
        case '==':
          return equals(left, right);
        case '!=':
          return negate(equals(left, right));
        case 'contains':
          return contains(left, right, dialect);
        case 'in':
          return contains(right, left, dialect);
        case '>':
        case '>=':
        case '<':
        case '<=':
          return compare(expr.op, left, right, dialect);
        default:
          throw new Unsupported();
      }
    }
  }
}

/** A constant as an expression node, so constant folding reuses the evaluator's semantics. */
function literalOf(value: unknown): Expr {
  if (Array.isArray(value)) return { kind: 'array', items: value.map(literalOf) };
  if (value === undefined) return { kind: 'path', root: 'missing', keys: [] };
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    return { kind: 'literal', value };
  throw new Unsupported();
}

function equals(a: Compiled, b: Compiled): Compiled {
  if (a.kind === 'const' && b.kind !== 'const') return equals(b, a);
  if (a.kind === 'pred') {
    if (b.kind !== 'const') throw new Unsupported();
    return b.value === true ? a : b.value === false ? negate(a) : FALSE;
  }
  if (a.kind !== 'column') throw new Unsupported();
  if (a.type === 'JSON') throw new Unsupported();
  if (b.kind === 'column') {
    if (b.type === 'JSON') throw new Unsupported();
    return sameKind(a.type, b.type)
      ? pred(`${q(a.name)} IS NOT DISTINCT FROM ${q(b.name)}`)
      : pred(`${q(a.name)} IS NULL AND ${q(b.name)} IS NULL`);
  }
  if (b.kind !== 'const') throw new Unsupported();
  if (b.value === null) return pred(`${q(a.name)} IS NULL`);
  const encoded = encodeFor(a.type, b.value);
  return encoded.length ? pred(`${q(a.name)} IS NOT DISTINCT FROM ?`, encoded) : FALSE;
}

/** Where a substring starts in a string (1-based, 0 when absent): named differently by each database. */
const POSITION: Record<Dialect, string> = { sqlite: 'instr', postgres: 'strpos' };

function contains(container: Compiled, item: Compiled, dialect: Dialect): Compiled {
  if (container.kind === 'const' && Array.isArray(container.value) && item.kind === 'column') {
    if (item.type === 'JSON') throw new Unsupported();
    const values = container.value as unknown[];
    const encoded = values.filter((v) => v !== null).flatMap((v) => encodeFor(item.type, v));
    const parts: string[] = [];
    if (values.includes(null)) parts.push(`${q(item.name)} IS NULL`);
    if (encoded.length) parts.push(`${q(item.name)} IN (${encoded.map(() => '?').join(', ')}) IS TRUE`);
    return parts.length ? pred(parts.join(' OR '), encoded) : FALSE;
  }
  if (container.kind === 'column' && item.kind === 'const' && STRING_TYPES.has(container.type)) {
    if (typeof item.value !== 'string') return FALSE;
    return pred(`(${POSITION[dialect]}(${q(container.name)}, ?) > 0) IS TRUE`, [item.value]);
  }
  if (container.kind === 'const' && !Array.isArray(container.value) && typeof container.value !== 'string')
    return FALSE;
  throw new Unsupported();
}

/**
 * How text is ordered in a comparison: by code point, as SQLite's BINARY collation orders UTF-8
 * and checkCondition (JavaScript's `<`) orders all but the rare characters past U+FFFF. PostgreSQL
 * orders by the database's collation, whose language rules (`en_US`: a < B) would have a list's
 * row filter and a record's check decide differently; `C` is its byte order.
 */
const TEXT_ORDER: Record<Dialect, string> = { sqlite: '', postgres: ' COLLATE "C"' };

function compare(op: '>' | '>=' | '<' | '<=', a: Compiled, b: Compiled, dialect: Dialect): Compiled {
  if (a.kind === 'const' && b.kind === 'column') {
    const flipped = { '>': '<', '>=': '<=', '<': '>', '<=': '>=' } as const;
    return compare(flipped[op], b, a, dialect);
  }
  if (a.kind !== 'column' || b.kind !== 'const') throw new Unsupported();
  if (a.type === 'Integer') return typeof b.value === 'number' ? integerBound(a.name, op, b.value) : FALSE;
  if (NUMBER_TYPES.has(a.type))
    return typeof b.value === 'number' ? pred(`(${q(a.name)} ${op} ?) IS TRUE`, [b.value]) : FALSE;
  if (STRING_TYPES.has(a.type)) {
    if (typeof b.value !== 'string') return FALSE;
    return pred(`(${q(a.name)}${TEXT_ORDER[dialect]} ${op} ?) IS TRUE`, [b.value]);
  }
  throw new Unsupported();
}

/**
 * An Integer column compared with any number, as the same comparison in memory decides: the bound
 * made a whole number (x > 1.5 is x >= 2) and kept within 32 bits (x < 3e9 holds for every value),
 * since PostgreSQL binds the parameter as the column's int4 and refuses 1.5 or 3e9.
 */
function integerBound(name: string, op: '>' | '>=' | '<' | '<=', value: number): Compiled {
  if (Number.isNaN(value)) return FALSE;
  const isSet = pred(`${q(name)} IS NOT NULL`);
  if (op === '>' || op === '>=') {
    const least = op === '>' ? Math.floor(value) + 1 : Math.ceil(value);
    if (least <= INTEGER_MIN) return isSet;
    return least > INTEGER_MAX ? FALSE : pred(`(${q(name)} >= ?) IS TRUE`, [least]);
  }
  const most = op === '<' ? Math.ceil(value) - 1 : Math.floor(value);
  if (most >= INTEGER_MAX) return isSet;
  return most < INTEGER_MIN ? FALSE : pred(`(${q(name)} <= ?) IS TRUE`, [most]);
}

/** Combines filters with OR, folding constants. */
export function orFilters(filters: readonly RowFilter[]): RowFilter {
  const parts: SqlPredicate[] = [];
  for (const f of filters) {
    if (f === true) return true;
    if (f !== false) parts.push(f);
  }
  if (parts.length === 0) return false;
  return { sql: parts.map((p) => `(${p.sql})`).join(' OR '), params: parts.flatMap((p) => p.params) };
}

/** Negation; safe because every predicate this module builds is 0 or 1, never NULL. */
export function notFilter(filter: RowFilter): RowFilter {
  return typeof filter === 'boolean' ? !filter : { sql: `NOT (${filter.sql})`, params: filter.params };
}
