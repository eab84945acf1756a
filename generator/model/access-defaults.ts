// The access rule an entity route runs for an action: the one the blueprint wrote or, where it
// wrote none, the default. With an [auth] section the default allows authenticated actors only
// (the runtime's, runtime-lib/rules/access.ts); without one nobody can sign in, and a missing rule
// is public, as in Zebric 0.6 (the generator writes `public` into the entity's module, and warns:
// PUBLIC_ENTITY).

import {
  checkCondition,
  type Condition,
  conditionReadsActor,
  conditionReadsRecord,
} from '../../runtime-lib/rules/conditions.ts';
import type { Blueprint, Entity, EntityAction, Rule } from './types.ts';

export const ENTITY_ACTIONS: readonly EntityAction[] = ['read', 'create', 'update', 'delete'];

const PUBLIC_RULE: Rule = Object.freeze({ source: 'public', condition: Object.freeze({ kind: 'public' as const }) });

/** The rule of `action`, or undefined for the runtime's default (authenticated actors only). */
export function accessRule(bp: Blueprint, entity: Entity, action: EntityAction): Rule | undefined {
  return entity.access[action] ?? (bp.auth.declared ? undefined : PUBLIC_RULE);
}

/** Every action's rule as accessRule gives it. */
export function effectiveAccess(bp: Blueprint, entity: Entity): Partial<Record<EntityAction, Rule>> {
  const out: Partial<Record<EntityAction, Rule>> = {};
  for (const action of ENTITY_ACTIONS) {
    const rule = accessRule(bp, entity, action);
    if (rule) out[action] = rule;
  }
  return out;
}

/**
 * Without [auth] nobody signs in, so every caller is anonymous: the actions an anonymous caller
 * may take on each entity, by entity (empty with [auth]). The PUBLIC_ENTITY warnings, the app's
 * start-up log and its README all list these.
 */
export function publicActions(bp: Blueprint): Array<{ entity: string; collection: string; actions: EntityAction[] }> {
  if (bp.auth.declared) return [];
  return bp.entities.flatMap((entity) => {
    const actions = ENTITY_ACTIONS.filter((action) => {
      const rule = accessRule(bp, entity, action);
      return rule !== undefined && anonymousMayPass(rule.condition);
    });
    return actions.length ? [{ entity: entity.name, collection: entity.collection, actions }] : [];
  });
}

/** Whether an anonymous caller might pass `condition` on some record. */
function anonymousMayPass(condition: Condition): boolean {
  switch (condition.kind) {
    case 'const':
      return condition.value;
    case 'public':
      return true;
    case 'authenticated':
    case 'owner':
      return false;
    case 'match':
    case 'expr':
      // Anything reading the actor fails closed for anonymous callers; the record is unknown.
      if (conditionReadsActor(condition)) return false;
      return conditionReadsRecord(condition) || checkCondition(condition, { actor: null, record: null });
    case 'and':
      return condition.items.every(anonymousMayPass);
    case 'or':
      return condition.items.some(anonymousMayPass);
  }
}
