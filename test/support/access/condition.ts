// The oracle's own reading of blueprint conditions (format contract, "Conditions"), from each
// rule's source as the blueprint wrote it: true / false, "public", "authenticated", "owner",
// a table of `path = value` pairs, { or = [...] } / { and = [...] }, or an expression string.
// Independent of runtime-lib/rules on purpose (see expression.ts); anything it does not know
// throws OracleUnsupported.

import {
  ACTOR_KEYS,
  type Expr,
  evaluate,
  OracleUnsupported,
  parseExpression,
  pathsIn,
  type Scope,
  step,
  UNKNOWN,
} from './expression.ts';

export type Tri = boolean | 'depends';
export type Source = boolean | string | Record<string, unknown>;

type Side =
  | { from: 'actor'; key: string }
  | { from: 'record'; keys: string[] }
  | { from: 'value'; value: string | number | boolean };

export type Cond =
  | { kind: 'const'; value: boolean }
  | { kind: 'public' | 'authenticated' | 'owner' }
  | { kind: 'pairs'; pairs: Array<[Side, Side]> }
  | { kind: 'and' | 'or'; items: Cond[] }
  | { kind: 'expr'; expr: Expr; source: string };

/** The actor a condition sees: undefined for an anonymous caller. */
export type ConditionActor = Readonly<Record<string, unknown>> & { roles: readonly string[] };

const CURRENT_USER = '$currentUser.';

function side(text: string, isKey: boolean): Side {
  if (text.startsWith(CURRENT_USER) && /^[A-Za-z_]\w*$/.test(text.slice(CURRENT_USER.length)))
    return { from: 'actor', key: text.slice(CURRENT_USER.length) };
  if (text.startsWith('$')) throw new OracleUnsupported(`reference "${text}"`);
  if (!isKey) return { from: 'value', value: text };
  if (!/^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$/.test(text)) throw new OracleUnsupported(`record path "${text}"`);
  return { from: 'record', keys: text.split('.') };
}

export function parseCondition(source: Source): Cond {
  if (typeof source === 'boolean') return { kind: 'const', value: source };
  if (typeof source === 'string') {
    if (source === 'public' || source === 'authenticated' || source === 'owner') return { kind: source };
    return { kind: 'expr', expr: parseExpression(source), source };
  }
  if (typeof source !== 'object' || source === null || Array.isArray(source))
    throw new OracleUnsupported(`condition ${JSON.stringify(source)}`);
  const entries = Object.entries(source);
  if (entries.length === 0) throw new OracleUnsupported('an empty table');
  const [first] = entries;
  if (first[0] === 'or' || first[0] === 'and') {
    if (entries.length !== 1 || !Array.isArray(first[1]) || first[1].length === 0)
      throw new OracleUnsupported(`"${first[0]}" table ${JSON.stringify(source)}`);
    return { kind: first[0], items: (first[1] as Source[]).map(parseCondition) };
  }
  const pairs = entries.map(([key, value]): [Side, Side] => {
    if (key === 'or' || key === 'and') throw new OracleUnsupported(`"${key}" beside other keys`);
    if (typeof value === 'string') return [side(key, true), side(value, false)];
    if (typeof value === 'number' || typeof value === 'boolean') return [side(key, true), { from: 'value', value }];
    throw new OracleUnsupported(`value of "${key}": ${JSON.stringify(value)}`);
  });
  return { kind: 'pairs', pairs };
}

const missing = (v: unknown) => v === undefined || v === null;

/** Keys of the actor the oracle does not model: reading one is not a metadata key either. */
const UNMODELLED = ['credentialId', 'displayName', 'scopes', 'delegatedBy'];

/**
 * `$currentUser.<key>` as Zebric reads it: `id` is the effective id (delegatedBy ?? id); any other
 * key the actor's own, else its metadata's (a person's record).
 */
function actorValue(actor: ConditionActor, key: string): unknown {
  if (UNMODELLED.includes(key))
    throw new OracleUnsupported(`$currentUser.${key} is not modelled (only ${ACTOR_KEYS.join(', ')} and metadata)`);
  if (key === 'id') return step(actor, 'effectiveId') ?? step(actor, 'id');
  const own = ACTOR_KEYS.includes(key) ? step(actor, key) : undefined;
  return own !== undefined ? own : step(step(actor, 'metadata'), key);
}

function sideValue(s: Side, actor: ConditionActor, scope: Scope): unknown {
  if (s.from === 'value') return s.value;
  if (s.from === 'actor') return actorValue(actor, s.key);
  if (s.keys.length !== 1)
    throw new OracleUnsupported(`record path "${s.keys.join('.')}" (only a field of the record)`);
  return scope.record === UNKNOWN ? UNKNOWN : step(scope.record, s.keys[0]);
}

function pairHolds(pair: [Side, Side], scope: Scope): Tri {
  const actor = scope.actor as ConditionActor | undefined;
  // The contract: with no authenticated actor, anything reading `$currentUser` fails closed.
  if (actor === undefined && pair.some((s) => s.from === 'actor')) return false;
  const isRole = (s: Side) => s.from === 'actor' && s.key === 'role';
  const values = pair.map((s) => (isRole(s) ? undefined : sideValue(s, actor!, scope)));
  if (values.includes(UNKNOWN)) return 'depends';
  // `$currentUser.role` matches any role the actor holds, not only its first one.
  const roleAt = pair.findIndex(isRole);
  if (roleAt !== -1) {
    const other = values[1 - roleAt];
    if (isRole(pair[1 - roleAt]) || Array.isArray(other))
      throw new OracleUnsupported('$currentUser.role compared with a list');
    return !missing(other) && actor!.roles.includes(other as string);
  }
  // Missing values never match; a list matches by membership.
  const [a, b] = values;
  if (missing(a) || missing(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) throw new OracleUnsupported('a list compared with a list');
  if (Array.isArray(a)) return a.includes(b);
  if (Array.isArray(b)) return b.includes(a);
  return a === b;
}

const and3 = (a: Tri, b: Tri): Tri =>
  a === false || b === false ? false : a === true && b === true ? true : 'depends';
const or3 = (a: Tri, b: Tri): Tri => (a === true || b === true ? true : a === false && b === false ? false : 'depends');

/** Whether the condition holds: true / false, or 'depends' when it reads an UNKNOWN record. */
export function decide(cond: Cond, scope: Scope): Tri {
  switch (cond.kind) {
    case 'const':
      return cond.value;
    case 'public':
      return true;
    case 'authenticated':
      return scope.actor !== undefined;
    case 'owner': {
      // Zebric's "owner": the record's userId is the actor's effective id; ownerId where a record
      // has no userId (bp's own blueprints).
      const owner = scope.actor === undefined ? undefined : (step(scope.actor, 'effectiveId') ?? scope.actor.id);
      if (missing(owner)) return false;
      if (scope.record === UNKNOWN) return 'depends';
      const field = Object.hasOwn(scope.record as object, 'userId') ? 'userId' : 'ownerId';
      return step(scope.record, field) === owner;
    }
    case 'pairs':
      return cond.pairs.map((p) => pairHolds(p, scope)).reduce(and3, true);
    case 'and':
      return cond.items.map((c) => decide(c, scope)).reduce(and3, true);
    case 'or':
      return cond.items.map((c) => decide(c, scope)).reduce(or3, false);
    case 'expr': {
      // The contract: with no authenticated actor, an expression reading `actor` fails closed.
      if (scope.actor === undefined && pathsIn(cond.expr).some((p) => p.root === 'actor')) return false;
      const value = evaluate(cond.expr, scope);
      return value === UNKNOWN ? 'depends' : value === true;
    }
  }
}

/** Record fields a condition reads (`a.b` for a relation path). */
export function recordPaths(cond: Cond): string[] {
  switch (cond.kind) {
    case 'pairs':
      return cond.pairs.flat().flatMap((s) => (s.from === 'record' ? [s.keys.join('.')] : []));
    case 'and':
    case 'or':
      return cond.items.flatMap(recordPaths);
    case 'expr':
      return pathsIn(cond.expr).flatMap((p) => (p.root === 'record' ? [p.keys.join('.')] : []));
    case 'owner':
      return ['userId', 'ownerId'];
    default:
      return [];
  }
}

/** Role names a condition compares the actor's `role` / `roles` with. */
export function roleLiterals(cond: Cond): string[] {
  const isRoleKey = (key: string) => key === 'role' || key === 'roles';
  switch (cond.kind) {
    case 'pairs':
      return cond.pairs.flatMap(([l, r]) =>
        [
          [l, r],
          [r, l],
        ].flatMap(([a, b]) =>
          a.from === 'actor' && isRoleKey(a.key) && b.from === 'value' && typeof b.value === 'string' ? [b.value] : [],
        ),
      );
    case 'and':
    case 'or':
      return cond.items.flatMap(roleLiterals);
    case 'expr':
      return exprRoleLiterals(cond.expr);
    default:
      return [];
  }
}

function exprRoleLiterals(expr: Expr): string[] {
  const isRoles = (e: Expr) =>
    e.kind === 'path' && e.root === 'actor' && e.keys.length === 1 && (e.keys[0] === 'role' || e.keys[0] === 'roles');
  const strings = (e: Expr): string[] =>
    e.kind === 'value' && typeof e.value === 'string' ? [e.value] : e.kind === 'list' ? e.items.flatMap(strings) : [];
  switch (expr.kind) {
    case 'op':
      return [
        ...(isRoles(expr.left) ? strings(expr.right) : []),
        ...(isRoles(expr.right) ? strings(expr.left) : []),
        ...exprRoleLiterals(expr.left),
        ...exprRoleLiterals(expr.right),
      ];
    case 'not':
    case 'negate':
      return exprRoleLiterals(expr.operand);
    case 'list':
      return expr.items.flatMap(exprRoleLiterals);
    default:
      return [];
  }
}
