// Whether a condition can hold for an actor known at generate time (a freshly signed-up person,
// an API key), with the record unknown: yes, no, or maybe (it depends on the record or on a value
// only the running app knows, such as a new account's id). Known parts are evaluated with the
// app's own semantics (runtime-lib/rules), so "no" here means the app refuses.

import {
  checkCondition,
  type Condition,
  type ConditionActor,
  type Operand,
} from '../../../runtime-lib/rules/conditions.ts';
import { evaluate, readPath } from '../../../runtime-lib/rules/expression-eval.ts';
import type { BinaryOp, Expr } from '../../../runtime-lib/rules/expression-parse.ts';

export type Tri = 'yes' | 'no' | 'maybe';

/** An actor as far as generate time knows it: the keys in `unknown` exist, their values do not. */
export interface ActorFacts {
  values: ConditionActor & Record<string, unknown>;
  unknown: ReadonlySet<string>;
}

type Value = { known: true; value: unknown } | { known: false };
const UNKNOWN: Value = { known: false };
const known = (value: unknown): Value => ({ known: true, value });

export const and = (items: Tri[]): Tri =>
  items.includes('no') ? 'no' : items.every((t) => t === 'yes') ? 'yes' : 'maybe';
export const or = (items: Tri[]): Tri =>
  items.includes('yes') ? 'yes' : items.every((t) => t === 'no') ? 'no' : 'maybe';
export const not = (t: Tri): Tri => (t === 'yes' ? 'no' : t === 'no' ? 'yes' : 'maybe');

/** For an authenticated actor: whether `condition` holds, with the record unknown. */
export function mayHold(condition: Condition, actor: ActorFacts): Tri {
  switch (condition.kind) {
    case 'const':
      return condition.value ? 'yes' : 'no';
    case 'public':
    case 'authenticated':
      return 'yes';
    case 'owner':
      return 'maybe';
    case 'match':
      return and(condition.pairs.map((pair) => pairHolds(pair, actor)));
    case 'and':
      return and(condition.items.map((c) => mayHold(c, actor)));
    case 'or':
      return or(condition.items.map((c) => mayHold(c, actor)));
    case 'expr':
      return truth(valueOf(condition.expr, actor));
  }
}

function pairHolds(pair: { left: Operand; right: Operand }, actor: ActorFacts): Tri {
  const operands = [pair.left, pair.right];
  const values = operands.map((o): Value =>
    o.kind === 'record' ? UNKNOWN : o.kind === 'actor' ? currentUser(actor, o.key) : known(o.value),
  );
  if (values.every((v) => v.known))
    return checkCondition({ kind: 'match', pairs: [pair] }, { actor: actor.values, record: null }) ? 'yes' : 'no';
  // `$currentUser.role` matches one of the actor's roles: none, and nothing can match.
  const role = currentUser(actor, 'role') as { value: unknown };
  if (operands.some((o) => o.kind === 'actor' && o.key === 'role') && role.value === undefined) return 'no';
  // A known side that is missing never matches (conditions.ts valuesMatch).
  return values.some((v) => v.known && (v.value === undefined || v.value === null)) ? 'no' : 'maybe';
}

/**
 * `$currentUser.<key>` as conditions.ts reads it (readActorKey): `id` is the effective id, `role`
 * the first role, any other key the actor's own, else its metadata's.
 */
function currentUser(actor: ActorFacts, key: string): Value {
  if (key === 'id')
    return actor.unknown.has('effectiveId') ? UNKNOWN : known(actor.values.effectiveId ?? actor.values.id);
  if (key === 'role') return known(actor.values.role ?? actor.values.roles[0]);
  if (actor.unknown.has(key)) return UNKNOWN;
  if (actor.values[key] !== undefined) return known(actor.values[key]);
  if (actor.unknown.has('metadata')) return UNKNOWN;
  return known(readPath(actor.values.metadata, [key]));
}

const truth = (v: Value): Tri => (v.known ? (v.value === true ? 'yes' : 'no') : 'maybe');

function valueOf(expr: Expr, actor: ActorFacts): Value {
  switch (expr.kind) {
    case 'literal':
      return known(expr.value);
    case 'array': {
      const items = expr.items.map((item) => valueOf(item, actor));
      return items.every((i) => i.known) ? known(items.map((i) => (i as { value: unknown }).value)) : UNKNOWN;
    }
    case 'path':
      if (expr.root !== 'actor' || expr.keys.length === 0 || actor.unknown.has(expr.keys[0])) return UNKNOWN;
      return known(readPath(actor.values, expr.keys));
    case 'unary': {
      const operand = valueOf(expr.operand, actor);
      return operand.known ? known(apply({ kind: 'unary', op: expr.op, operand: VALUE_A }, operand.value)) : UNKNOWN;
    }
    case 'binary':
      return binaryValue(expr.op, valueOf(expr.left, actor), valueOf(expr.right, actor));
  }
}

function binaryValue(op: BinaryOp, l: Value, r: Value): Value {
  const isKnown = (v: Value, test: (x: unknown) => boolean) => v.known && test(v.value);
  if (op === '&&') {
    if (isKnown(l, (x) => x !== true) || isKnown(r, (x) => x !== true)) return known(false);
  } else if (op === '||') {
    if (isKnown(l, (x) => x === true) || isKnown(r, (x) => x === true)) return known(true);
  } else if (op === 'contains' || op === 'in') {
    // Nothing is in an empty list, and only lists and strings contain anything.
    const container = op === 'contains' ? l : r;
    if (isKnown(container, (x) => (Array.isArray(x) ? x.length === 0 : typeof x !== 'string'))) return known(false);
  } else if (op === '<' || op === '<=' || op === '>' || op === '>=') {
    const unordered = (x: unknown) => typeof x !== 'number' && typeof x !== 'string' && !(x instanceof Date);
    if (isKnown(l, unordered) || isKnown(r, unordered)) return known(false);
  }
  if (!l.known || !r.known) return UNKNOWN;
  return known(apply({ kind: 'binary', op, left: VALUE_A, right: VALUE_B }, l.value, r.value));
}

// Known values are handed to the app's evaluator through its context, so no value needs a literal form.
const VALUE_A: Expr = { kind: 'path', root: 'a', keys: [] };
const VALUE_B: Expr = { kind: 'path', root: 'b', keys: [] };
const apply = (expr: Expr, a: unknown, b?: unknown): unknown => evaluate(expr, { a, b });
