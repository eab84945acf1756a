// src/permissions.ts: [auth.permissions] as the blueprint wrote it, each condition a `rule(...)`
// the app parses when the module loads.

import type { Blueprint, PermissionRule } from '../model/types.ts';
import { ruleCall } from './rules.ts';
import { render } from './templates.ts';
import { tsProperties } from './ts-literal.ts';

function grant(rule: PermissionRule): Record<string, unknown> {
  return { entity: rule.entity, actions: rule.actions, condition: rule.condition && ruleCall(rule.condition) };
}

/**
 * The module, or undefined when the blueprint declares no [auth.permissions]: then there is no
 * file, the entity modules import nothing from one, and each entity's access rules alone decide.
 */
export function emitPermissions(bp: Blueprint): string | undefined {
  const roles = bp.auth.permissions;
  if (roles === undefined) return undefined;
  const table = Object.fromEntries(
    Object.entries(roles).map(([role, { allow, deny }]) => [role, { allow: allow.map(grant), deny: deny.map(grant) }]),
  );
  return render('app/src/permissions.ts.hbs', {
    roles: tsProperties(table, 2),
    usesRules: Object.values(roles).some(({ allow, deny }) => [...allow, ...deny].some((r) => r.condition)),
  });
}
