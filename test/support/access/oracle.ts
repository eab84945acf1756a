// The expected outcome of an entity route for an actor, computed from the blueprint model alone,
// without the generated app's access code: the rules as the format contract states them.
//
//  - A missing access key allows authenticated actors only.
//  - [auth.permissions], when declared, needs an allow from one of the actor's roles and any deny
//    of its roles wins. Permissions grant to roles, so they do not apply to anonymous callers,
//    who are governed by `access` alone.
//  - An API key needs the entity's declared scopes: read for list and get, write for create,
//    update and delete. Scopes narrow the credential, so they are checked before any record.
//  - Refused: 401 when anonymous, 403 when authenticated.
//  - `read` filters rows: a list returns only readable rows; a get of a record the rule hides is
//    404. Update and delete act on records the actor can read (else 404, revealing nothing), then
//    their own rule decides on the stored record.
//  - Field `read` hides the field; field `write` refuses writes (403, 401 when anonymous).
//
// "Refused" versus "hidden": a rule that no record can satisfy for this actor refuses the route
// outright; a rule that depends on the record hides the records it does not match. Which one
// applies is decided by evaluating the rule with the record unknown (three-valued logic).

import { checkCondition, conditionReadsActor, conditionReadsRecord, type Condition } from '../../../runtime-lib/rules/conditions.ts';
import { type Expr, pathsOf } from '../../../runtime-lib/rules/expression-parse.ts';
import type { Blueprint, Entity, Rule } from '../../../generator/model/types.ts';

export type Operation = 'list' | 'get' | 'create' | 'update' | 'delete';
export const OPERATIONS: readonly Operation[] = ['list', 'get', 'create', 'update', 'delete'];
type Action = 'read' | 'create' | 'update' | 'delete';

export interface OracleActor {
  kind: 'anonymous' | 'user' | 'agent';
  id: string;
  roles: string[];
  role?: string;
  email?: string;
  credentialId?: string;
  scopes?: string[];
}

export interface Expected {
  status: number;
  /** The error code of a refusal. */
  code?: string;
  /** list: whether the given record is among the rows. */
  included?: boolean;
}

type Record_ = Record<string, unknown>;
type Tri = boolean | 'depends';

const and3 = (a: Tri, b: Tri): Tri => (a === false || b === false ? false : a === true && b === true ? true : 'depends');
const or3 = (a: Tri, b: Tri): Tri => (a === true || b === true ? true : a === false && b === false ? false : 'depends');
const not3 = (a: Tri): Tri => (a === 'depends' ? 'depends' : !a);

const conditionActor = (actor: OracleActor) => (actor.kind === 'anonymous' ? null : actor);

/** Whether `condition` holds for the actor whatever the record is (true/false), or depends on it. */
export function forActor(condition: Condition, actor: OracleActor): Tri {
  const who = conditionActor(actor);
  switch (condition.kind) {
    case 'const':
    case 'public':
    case 'authenticated':
      return checkCondition(condition, { actor: who });
    case 'owner':
      return who === null ? false : 'depends';
    case 'match':
      return condition.pairs
        .map((pair): Tri => {
          const readsActor = pair.left.kind === 'actor' || pair.right.kind === 'actor';
          const readsRecord = pair.left.kind === 'record' || pair.right.kind === 'record';
          if (who === null && readsActor) return false;
          if (readsRecord) return 'depends';
          return checkCondition({ kind: 'match', pairs: [pair] }, { actor: who });
        })
        .reduce(and3, true);
    case 'and':
      return condition.items.map((c) => forActor(c, actor)).reduce(and3, true);
    case 'or':
      return condition.items.map((c) => forActor(c, actor)).reduce(or3, false);
    case 'expr':
      // The contract: with no authenticated actor, anything reading `actor` fails closed.
      if (who === null && conditionReadsActor(condition)) return false;
      if (!conditionReadsRecord(condition)) return checkCondition(condition, { actor: who });
      return exprForActor(condition.expr, actor);
  }
}

function exprForActor(expr: Expr, actor: OracleActor): Tri {
  if (expr.kind === 'binary' && expr.op === '||') return or3(exprForActor(expr.left, actor), exprForActor(expr.right, actor));
  if (expr.kind === 'binary' && expr.op === '&&') return and3(exprForActor(expr.left, actor), exprForActor(expr.right, actor));
  if (expr.kind === 'unary' && expr.op === '!') return not3(exprForActor(expr.operand, actor));
  if (pathsOf(expr).some((p) => p.root === 'record')) return 'depends';
  return checkCondition({ kind: 'expr', expr, source: '' }, { actor: conditionActor(actor) });
}

/** Record paths a condition reads (`a.b` for relation paths). */
export function recordPaths(condition: Condition): string[] {
  switch (condition.kind) {
    case 'match':
      return condition.pairs.flatMap((p) => [p.left, p.right]).flatMap((o) => (o.kind === 'record' ? [o.keys.join('.')] : []));
    case 'and':
    case 'or':
      return condition.items.flatMap(recordPaths);
    case 'expr':
      return pathsOf(condition.expr).filter((p) => p.root === 'record').map((p) => p.keys.join('.'));
    case 'owner':
      return ['ownerId'];
    default:
      return [];
  }
}

/** Role names a condition compares the actor's roles with. */
export function roleLiterals(condition: Condition): string[] {
  switch (condition.kind) {
    case 'match':
      return condition.pairs.flatMap(({ left, right }) => {
        const pairs = [[left, right], [right, left]] as const;
        return pairs.flatMap(([a, b]) =>
          a.kind === 'actor' && (a.key === 'role' || a.key === 'roles') && b.kind === 'literal' && typeof b.value === 'string' ? [b.value] : [],
        );
      });
    case 'and':
    case 'or':
      return condition.items.flatMap(roleLiterals);
    case 'expr':
      return exprRoleLiterals(condition.expr);
    default:
      return [];
  }
}

function exprRoleLiterals(expr: Expr): string[] {
  const isRoles = (e: Expr) => e.kind === 'path' && e.root === 'actor' && e.keys.length === 1 && (e.keys[0] === 'roles' || e.keys[0] === 'role');
  const strings = (e: Expr): string[] =>
    e.kind === 'literal' && typeof e.value === 'string' ? [e.value] : e.kind === 'array' ? e.items.flatMap(strings) : [];
  switch (expr.kind) {
    case 'binary': {
      const found: string[] = [];
      if (isRoles(expr.left)) found.push(...strings(expr.right));
      if (isRoles(expr.right)) found.push(...strings(expr.left));
      return [...found, ...exprRoleLiterals(expr.left), ...exprRoleLiterals(expr.right)];
    }
    case 'unary':
      return exprRoleLiterals(expr.operand);
    case 'array':
      return expr.items.flatMap(exprRoleLiterals);
    default:
      return [];
  }
}

/** Every role the blueprint mentions: API-key roles, permission roles, and role literals in any condition. */
export function rolesUsed(model: Blueprint): string[] {
  const roles = new Set<string>();
  for (const key of model.auth.apiKeys) key.roles.forEach((r) => roles.add(r));
  const conditions: Condition[] = [];
  for (const [role, rules] of Object.entries(model.auth.permissions ?? {})) {
    roles.add(role);
    for (const rule of [...rules.allow, ...rules.deny]) if (rule.condition) conditions.push(rule.condition.condition);
  }
  for (const entity of model.entities) {
    conditions.push(...Object.values(entity.access).flatMap((r) => (r ? [r.condition] : [])));
    for (const field of entity.fields) conditions.push(...[field.access.read, field.access.write].flatMap((r) => (r ? [r.condition] : [])));
  }
  for (const command of model.commands) conditions.push(...[command.policy, command.availableWhen].flatMap((r) => (r ? [r.condition] : [])));
  for (const c of conditions) roleLiterals(c).forEach((r) => roles.add(r));
  return [...roles].sort();
}

export class Oracle {
  constructor(private readonly model: Blueprint) {}

  entity(name: string): Entity {
    const entity = this.model.entities.find((e) => e.name === name);
    if (!entity) throw new Error(`no entity ${name}`);
    return entity;
  }

  /** The actor's permission rules for an entity action, or undefined when permissions do not apply. */
  private permissionRules(entity: Entity, action: Action, actor: OracleActor) {
    const permissions = this.model.auth.permissions;
    if (!permissions || actor.kind === 'anonymous') return undefined;
    const matches = (r: { entity: string; actions: string[] }) => (r.entity === '*' || r.entity === entity.name) && (r.actions.includes('*') || r.actions.includes(action));
    const allow = actor.roles.flatMap((role) => (Object.hasOwn(permissions, role) ? permissions[role].allow.filter(matches) : []));
    const deny = actor.roles.flatMap((role) => (Object.hasOwn(permissions, role) ? permissions[role].deny.filter(matches) : []));
    return { allow, deny };
  }

  /** Whether the action can pass for this actor: always, never, or depending on the record. */
  private possible(entity: Entity, action: Action, actor: OracleActor): Tri {
    const rule = forActor(entity.access[action]?.condition ?? { kind: 'authenticated' }, actor);
    const rules = this.permissionRules(entity, action, actor);
    if (!rules) return rule;
    const one = (r: { condition?: Rule }): Tri => (r.condition ? forActor(r.condition.condition, actor) : true);
    const granted = and3(rules.allow.map(one).reduce(or3, false), not3(rules.deny.map(one).reduce(or3, false)));
    return and3(rule, granted);
  }

  /** Whether the action passes for this actor on this record. */
  allows(entity: Entity, action: Action, actor: OracleActor, record: Record_): boolean {
    const ctx = { actor: conditionActor(actor), record };
    if (!checkCondition(entity.access[action]?.condition ?? { kind: 'authenticated' }, ctx)) return false;
    const rules = this.permissionRules(entity, action, actor);
    if (!rules) return true;
    const holds = (r: { condition?: Rule }) => !r.condition || checkCondition(r.condition.condition, ctx);
    return rules.allow.some(holds) && !rules.deny.some(holds);
  }

  private missingScopes(entity: Entity, action: Action, actor: OracleActor): boolean {
    if (actor.kind !== 'agent') return false;
    const needed = action === 'read' ? entity.scopes.read : entity.scopes.write;
    return needed.some((s) => !(actor.scopes ?? []).includes(s));
  }

  private refused(actor: OracleActor): Expected {
    return actor.kind === 'anonymous' ? { status: 401, code: 'UNAUTHENTICATED' } : { status: 403, code: 'FORBIDDEN' };
  }

  /** Refusal of a field write, if any field in `fields` may not be written by the actor. */
  private fieldWrites(entity: Entity, actor: OracleActor, fields: string[], record: Record_): Expected | undefined {
    const refused = fields.some((name) => {
      const write = entity.fields.find((f) => f.name === name)?.access.write;
      return write !== undefined && !checkCondition(write.condition, { actor: conditionActor(actor), record });
    });
    return refused ? this.refused(actor) : undefined;
  }

  /** The read gate every record route passes first. */
  private readGate(entity: Entity, actor: OracleActor, record?: Record_): Expected | undefined {
    if (this.missingScopes(entity, 'read', actor)) return { status: 403, code: 'INSUFFICIENT_SCOPE' };
    if (this.possible(entity, 'read', actor) === false) return this.refused(actor);
    if (record && !this.allows(entity, 'read', actor, record)) return { status: 404, code: 'NOT_FOUND' };
    return undefined;
  }

  /**
   * @param record the stored record (list, get, update, delete) or the new one (create)
   * @param body the fields sent (create, update)
   */
  expect(entityName: string, op: Operation, actor: OracleActor, record: Record_, body: Record_ = {}): Expected {
    const entity = this.entity(entityName);
    switch (op) {
      case 'list': {
        const refusal = this.readGate(entity, actor);
        return refusal ?? { status: 200, included: this.allows(entity, 'read', actor, record) };
      }
      case 'get':
        return this.readGate(entity, actor, record) ?? { status: 200 };
      case 'create':
        if (this.missingScopes(entity, 'create', actor)) return { status: 403, code: 'INSUFFICIENT_SCOPE' };
        if (!this.allows(entity, 'create', actor, record)) return this.refused(actor);
        return this.fieldWrites(entity, actor, Object.keys(body), record) ?? { status: 201 };
      case 'update':
      case 'delete': {
        if (this.missingScopes(entity, op, actor)) return { status: 403, code: 'INSUFFICIENT_SCOPE' };
        const refusal = this.readGate(entity, actor, record);
        if (refusal) return refusal;
        if (!this.allows(entity, op, actor, record)) return this.refused(actor);
        if (op === 'delete') return { status: 204 };
        return this.fieldWrites(entity, actor, Object.keys(body), record) ?? { status: 200 };
      }
    }
  }

  /** Whether a field the actor reads in a record it may read is shown. */
  fieldVisible(entityName: string, field: string, actor: OracleActor, record: Record_): boolean {
    const read = this.entity(entityName).fields.find((f) => f.name === field)?.access.read;
    return read === undefined || checkCondition(read.condition, { actor: conditionActor(actor), record });
  }
}
