// Access rules that must run inside the database: an entity's `read` condition and permission
// conditions filter list rows in SQL (runtime-lib/condition-sql.ts). A condition that the
// translation cannot express is refused here, at generate time, rather than failing at run time.

import { type ColumnType, conditionToSql } from '../../runtime-lib/rules/condition-sql.ts';
import type { Condition } from '../../runtime-lib/rules/conditions.ts';
import type { CompileContext } from '../context.ts';
import type { Blueprint, Entity } from '../model/types.ts';
import type { KeyPath } from '../parse/locate.ts';

/** Any actor works as a probe: actor values become parameters, never SQL structure. */
const PROBE_ACTOR = { id: 'probe', roles: ['probe'], role: 'probe', email: 'probe@example.com' };

export function checkAccessRules(ctx: CompileContext, bp: Blueprint): void {
  for (const entity of bp.entities) {
    const columns = columnsOf(entity);
    const read = entity.access.read;
    if (read) requireSql(ctx, entity, [...entity.path, 'access', 'read'], read.condition, columns);
    for (const [action, condition] of Object.entries(entity.access)) {
      if (usesOwner(condition.condition) && !columns.has('userId') && !columns.has('ownerId')) {
        const message =
          `"owner" compares the record's userId (or ownerId) with the actor, ` + `but ${entity.name} has neither field`;
        ctx.report('OWNER_WITHOUT_FIELD', [...entity.path, 'access', action], message, {
          severity: 'warning',
          hint:
            'add { name = "userId", type = "Ref", ref = "User.id" } ' +
            'or write the rule as { someField = "$currentUser.id" }',
        });
      }
    }
  }
  for (const [role, rules] of Object.entries(bp.auth.permissions ?? {})) {
    for (const kind of ['allow', 'deny'] as const) {
      rules[kind].forEach((rule) => {
        if (!rule.condition) return;
        const at = ctx.declaredAt.get(rule) ?? ['auth', 'permissions', role, kind];
        const targets = rule.entity === '*' ? bp.entities : bp.entities.filter((e) => e.name === rule.entity);
        for (const entity of targets)
          requireSql(ctx, entity, [...at, 'condition'], rule.condition.condition, columnsOf(entity));
      });
    }
  }
}

/** Column types for the translation; a field of unknown type reads as Text, which every comparison accepts. */
function columnsOf(entity: Entity): Map<string, ColumnType> {
  return new Map<string, ColumnType>(entity.fields.map((f) => [f.name, f.unknownType === undefined ? f.type : 'Text']));
}

function requireSql(
  ctx: CompileContext,
  entity: Entity,
  at: KeyPath,
  condition: Condition,
  columns: Map<string, ColumnType>,
): void {
  // A name in the condition that does not resolve has its own error.
  if (ctx.failed(at) || conditionToSql(condition, PROBE_ACTOR, columns) !== undefined) return;
  ctx.report(
    'READ_RULE_NOT_SQL',
    at,
    `this condition filters ${entity.name} rows in the database but cannot be expressed in SQL`,
    {
      hint:
        'compare fields of the record itself with literals or actor values (==, !=, <, >, in, contains, &&, ||, !); ' +
        'paths through relations, JSON fields and arithmetic on fields are not supported here',
    },
  );
}

function usesOwner(condition: Condition): boolean {
  if (condition.kind === 'owner') return true;
  if (condition.kind === 'and' || condition.kind === 'or') return condition.items.some(usesOwner);
  return false;
}
