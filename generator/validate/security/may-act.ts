// Whether an entity's rules might let a known actor act on some record: its `access` rule (a
// missing rule means "authenticated") and, when declared, [auth.permissions] for the actor's
// roles, each read three-valued with the record unknown. The actors checked are the ones
// generate time knows: a person who just signed up, and each API key.

import type { CompileContext } from '../../context.ts';
import type { ApiKey, Blueprint, Entity, EntityAction } from '../../model/types.ts';
import { and, mayHold, not, or, type ActorFacts, type Tri } from './three-valued.ts';

/** A person who just signed up (runtime-lib/auth/email/users.ts userActor): no roles, a fresh id. */
export const SIGNED_UP: ActorFacts = {
  values: { kind: 'user', id: '', roles: [] },
  unknown: new Set(['id', 'email', 'credentialId']),
};

/** An API key's actor (runtime-lib/auth/api-keys.ts); trusted server code may add delegatedBy. */
export function apiKeyActor(key: ApiKey): ActorFacts {
  return {
    values: {
      kind: 'agent',
      id: key.agentId,
      credentialId: key.credentialId,
      roles: key.roles,
      role: key.roles[0],
      scopes: key.scopes,
      displayName: key.displayName,
    },
    unknown: new Set(['delegatedBy']),
  };
}

/**
 * 'no' when the app refuses `action` on every record; undefined when a rule it depends on has an
 * error (already reported: guessing its meaning would only add noise).
 */
export function mayAct(ctx: CompileContext, bp: Blueprint, entity: Entity, action: EntityAction, actor: ActorFacts): Tri | undefined {
  if (ctx.failed([...entity.path, 'access']) || ctx.failed(['auth', 'permissions'])) return undefined;
  const rule = entity.access[action];
  return and([rule ? mayHold(rule.condition, actor) : 'yes', permitted(bp, entity, action, actor)]);
}

/** [auth.permissions] grants to roles: some allow rule of the actor's roles holds and no deny rule does. */
function permitted(bp: Blueprint, entity: Entity, action: EntityAction, actor: ActorFacts): Tri {
  const permissions = bp.auth.permissions;
  if (!permissions) return 'yes';
  const holds = (kind: 'allow' | 'deny'): Tri =>
    or(
      actor.values.roles
        .flatMap((role) => (Object.hasOwn(permissions, role) ? permissions[role][kind] : []))
        .filter((r) => (r.entity === '*' || r.entity === entity.name) && (r.actions.includes('*') || r.actions.includes(action)))
        .map((r) => (r.condition ? mayHold(r.condition.condition, actor) : 'yes')),
    );
  return and([holds('allow'), not(holds('deny'))]);
}
