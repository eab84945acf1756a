// Whether an entity's rules might let a known actor act on some record: its `access` rule (a
// missing rule means "authenticated", or "public" without [auth]) and, when declared,
// [auth.permissions] for the actor's roles, each read three-valued with the record unknown. The
// actors checked are the ones generate time knows: a person who just signed up, and each API key.

import type { CompileContext } from '../../context.ts';
import { accessRule } from '../../model/access-defaults.ts';
import type { ApiKey, Blueprint, Entity, EntityAction, Field } from '../../model/types.ts';
import { and, mayHold, not, or, type ActorFacts, type Tri } from './three-valued.ts';

/** The role of a person who holds none (runtime-lib/auth/email/user-records.ts DEFAULT_PERSON_ROLE). */
const DEFAULT_PERSON_ROLE = 'user';

/**
 * A person who just signed up, as the runtime makes them: a fresh id, no granted roles. People of
 * the built-in table have no roles (users.ts userActor); a User record's person holds its role
 * fields' defaults, else `user` (user-records.ts).
 */
export function signedUpActor(bp: Blueprint): ActorFacts {
  const records = bp.auth.userRecords;
  const user = records && bp.entities.find((e) => e.name === records.entity);
  const roles = user ? defaultRoles(user, records.roleFields) : [];
  return {
    values: { kind: 'user', type: 'user', id: '', roles, role: roles[0] },
    unknown: new Set(['id', 'effectiveId', 'email', 'credentialId', 'metadata']),
  };
}

function defaultRoles(user: Entity, roleFields: readonly string[]): string[] {
  const fromDefaults = roleFields.flatMap((name) => {
    const field = user.fields.find((f) => f.name === name) as Field;
    const value = field.default?.kind === 'value' ? field.default.value : undefined;
    if (typeof value === 'string') return value === '' ? [] : [value];
    return Array.isArray(value) ? value.filter((r): r is string => typeof r === 'string' && r !== '') : [];
  });
  const roles = [...new Set(fromDefaults)];
  return roles.length ? roles : [DEFAULT_PERSON_ROLE];
}

/** An API key's actor (runtime-lib/auth/api-keys.ts); trusted server code may add delegatedBy. */
export function apiKeyActor(key: ApiKey): ActorFacts {
  return {
    values: {
      kind: 'agent',
      type: 'agent',
      id: key.agentId,
      credentialId: key.credentialId,
      roles: key.roles,
      role: key.roles[0],
      scopes: key.scopes,
      displayName: key.displayName,
      metadata: { name: key.displayName, role: key.roles[0] },
    },
    unknown: new Set(['delegatedBy', 'effectiveId']),
  };
}

/**
 * 'no' when the app refuses `action` on every record; undefined when a rule it depends on has an
 * error (already reported: guessing its meaning would only add noise).
 */
export function mayAct(
  ctx: CompileContext,
  bp: Blueprint,
  entity: Entity,
  action: EntityAction,
  actor: ActorFacts,
): Tri | undefined {
  if (ctx.failed([...entity.path, 'access']) || ctx.failed(['auth', 'permissions'])) return undefined;
  const rule = accessRule(bp, entity, action);
  return and([rule ? mayHold(rule.condition, actor) : 'yes', permitted(bp, entity, action, actor)]);
}

/**
 * [auth.permissions] grants to roles: some allow rule of the actor's roles holds and no deny rule
 * does. An actor without roles is held to the `anonymous` entry, else the `public` one (as Zebric).
 */
function permitted(bp: Blueprint, entity: Entity, action: EntityAction, actor: ActorFacts): Tri {
  const permissions = bp.auth.permissions;
  if (!permissions) return 'yes';
  const roleless = ['anonymous', 'public'].find((r) => Object.hasOwn(permissions, r));
  const roles = actor.values.roles.length ? actor.values.roles : roleless === undefined ? [] : [roleless];
  const holds = (kind: 'allow' | 'deny'): Tri =>
    or(
      roles
        .flatMap((role) => (Object.hasOwn(permissions, role) ? permissions[role][kind] : []))
        .filter(
          (r) =>
            (r.entity === '*' || r.entity === entity.name) && (r.actions.includes('*') || r.actions.includes(action)),
        )
        .map((r) => (r.condition ? mayHold(r.condition.condition, actor) : 'yes')),
    );
  return and([holds('allow'), not(holds('deny'))]);
}
