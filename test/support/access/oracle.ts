// The expected outcome of an entity route for an actor, computed from the blueprint model alone,
// without the generated app's access code: the rules as the format contract states them.
//
//  - A missing access key allows authenticated actors only; in a blueprint without [auth] (where
//    nobody signs in) it is public, as in Zebric 0.6.
//  - [auth.permissions], when declared, needs an allow from one of the actor's roles and any deny
//    of its roles wins. An actor without roles, and an anonymous caller, is held to the
//    `anonymous` entry (else the `public` one), as Zebric's permission manager does.
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
//
// Conditions are read from each rule's `source` (as the blueprint wrote it) by the oracle's own
// reader (condition.ts, expression.ts), never by runtime-lib/rules: the matrix checks that code,
// so sharing it would mirror its bugs. The reader throws on any rule shape it does not know.

import type { Blueprint, Entity, Rule } from '../../../generator/model/types.ts';
import {
  type Cond,
  type ConditionActor,
  decide,
  parseCondition,
  recordPaths as condRecordPaths,
  roleLiterals,
  type Tri,
} from './condition.ts';
import { UNKNOWN } from './expression.ts';

export type Operation = 'list' | 'get' | 'create' | 'update' | 'delete';
export const OPERATIONS: readonly Operation[] = ['list', 'get', 'create', 'update', 'delete'];
type Action = 'read' | 'create' | 'update' | 'delete';

export interface OracleActor {
  kind: 'anonymous' | 'user' | 'agent';
  /** Zebric's name for the kind. */
  type?: 'user' | 'agent';
  id: string;
  /** delegatedBy ?? id; the matrix delegates nothing, so the id. */
  effectiveId?: string;
  roles: string[];
  role?: string;
  email?: string;
  credentialId?: string;
  scopes?: string[];
  /** A person's e-mail, name, role and User record; an API key's name and role. */
  metadata?: Record<string, unknown>;
}

export interface Expected {
  status: number;
  /** The error code of a refusal. */
  code?: string;
  /** list: whether the given record is among the rows. */
  included?: boolean;
}

type Record_ = Record<string, unknown>;

const and3 = (a: Tri, b: Tri): Tri =>
  a === false || b === false ? false : a === true && b === true ? true : 'depends';
const or3 = (a: Tri, b: Tri): Tri => (a === true || b === true ? true : a === false && b === false ? false : 'depends');
const not3 = (a: Tri): Tri => (a === 'depends' ? 'depends' : !a);

/** Each rule parsed once, from the source the blueprint wrote (never from the model's parsed form). */
const parsed = new WeakMap<Rule, Cond>();
function conditionOf(rule: Rule): Cond {
  let cond = parsed.get(rule);
  if (!cond) parsed.set(rule, (cond = parseCondition(rule.source)));
  return cond;
}

const AUTHENTICATED = parseCondition('authenticated');
const PUBLIC = parseCondition('public');

const conditionActor = (actor: OracleActor): ConditionActor | undefined =>
  actor.kind === 'anonymous' ? undefined : { ...actor };

/** Whether `rule` holds for the actor whatever the record is (true/false), or depends on it. */
function forActor(cond: Cond, actor: OracleActor): Tri {
  return decide(cond, { actor: conditionActor(actor), record: UNKNOWN });
}

/** Whether `rule` holds for the actor on this record. */
function holds(cond: Cond, actor: OracleActor, record: Record_): boolean {
  const result = decide(cond, { actor: conditionActor(actor), record });
  if (result === 'depends') throw new Error('access oracle: a condition depends on a known record');
  return result;
}

/** Record fields a rule reads (`a.b` for relation paths). */
export function recordPaths(rule: Rule): string[] {
  return condRecordPaths(conditionOf(rule));
}

/** Every role the blueprint mentions: API-key roles, permission roles, and role literals in any condition. */
export function rolesUsed(model: Blueprint): string[] {
  const roles = new Set<string>();
  for (const key of model.auth.apiKeys) key.roles.forEach((r) => roles.add(r));
  const rules: Rule[] = [];
  for (const [role, permission] of Object.entries(model.auth.permissions ?? {})) {
    roles.add(role);
    for (const p of [...permission.allow, ...permission.deny]) if (p.condition) rules.push(p.condition);
  }
  for (const entity of model.entities) {
    rules.push(...Object.values(entity.access).flatMap((r) => (r ? [r] : [])));
    for (const field of entity.fields)
      rules.push(...[field.access.read, field.access.write].flatMap((r) => (r ? [r] : [])));
  }
  for (const command of model.commands)
    rules.push(...[command.policy, command.availableWhen].flatMap((r) => (r ? [r] : [])));
  for (const rule of rules) roleLiterals(conditionOf(rule)).forEach((r) => roles.add(r));
  return [...roles].sort();
}

export class Oracle {
  constructor(private readonly model: Blueprint) {}

  /** A missing access key allows authenticated actors only; without [auth], anyone. */
  private ruleOrDefault(rule: Rule | undefined): Cond {
    return rule ? conditionOf(rule) : this.model.auth.declared ? AUTHENTICATED : PUBLIC;
  }

  entity(name: string): Entity {
    const entity = this.model.entities.find((e) => e.name === name);
    if (!entity) throw new Error(`no entity ${name}`);
    return entity;
  }

  /** The actor's permission rules for an entity action, or undefined when permissions do not apply. */
  private permissionRules(entity: Entity, action: Action, actor: OracleActor) {
    const permissions = this.model.auth.permissions;
    if (!permissions) return undefined;
    const matches = (r: { entity: string; actions: string[] }) =>
      (r.entity === '*' || r.entity === entity.name) && (r.actions.includes('*') || r.actions.includes(action));
    const roleless = ['anonymous', 'public'].find((r) => Object.hasOwn(permissions, r));
    const roles = actor.kind !== 'anonymous' && actor.roles.length ? actor.roles : roleless ? [roleless] : [];
    const allow = roles.flatMap((role) =>
      Object.hasOwn(permissions, role) ? permissions[role].allow.filter(matches) : [],
    );
    const deny = roles.flatMap((role) =>
      Object.hasOwn(permissions, role) ? permissions[role].deny.filter(matches) : [],
    );
    return { allow, deny };
  }

  /** Whether the action can pass for this actor: always, never, or depending on the record. */
  private possible(entity: Entity, action: Action, actor: OracleActor): Tri {
    const rule = forActor(this.ruleOrDefault(entity.access[action]), actor);
    const rules = this.permissionRules(entity, action, actor);
    if (!rules) return rule;
    const one = (r: { condition?: Rule }): Tri => (r.condition ? forActor(conditionOf(r.condition), actor) : true);
    const granted = and3(rules.allow.map(one).reduce(or3, false), not3(rules.deny.map(one).reduce(or3, false)));
    return and3(rule, granted);
  }

  /** Whether the action passes for this actor on this record. */
  allows(entity: Entity, action: Action, actor: OracleActor, record: Record_): boolean {
    if (!holds(this.ruleOrDefault(entity.access[action]), actor, record)) return false;
    const rules = this.permissionRules(entity, action, actor);
    if (!rules) return true;
    const applies = (r: { condition?: Rule }) => !r.condition || holds(conditionOf(r.condition), actor, record);
    return rules.allow.some(applies) && !rules.deny.some(applies);
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
      return write !== undefined && !holds(conditionOf(write), actor, record);
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
    return read === undefined || holds(conditionOf(read), actor, record);
  }
}
