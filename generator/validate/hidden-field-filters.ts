// Filters on fields that a read rule hides (runtime-lib/rules/access.ts comparableWhere): which
// records a filter returns tells the value of the field it compares, so the app refuses a filter
// on a field the caller may not read (403), and holds one on a field whose rule reads the record
// to the records the rule holds on, in SQL. Found here instead, where generate time can see it:
// - HIDDEN_FIELD_FILTER (error): a list action filters (a query or path parameter) on a field
//   that no actor allowed to call the action may read: every call with it would be refused.
// - READ_RULE_NOT_SQL (error): a filtered field's read rule reads the record but cannot be SQL.
// - RULE_READS_HIDDEN_FIELD (warning): an entity's access rule or a command's policy or
//   availableWhen compares a field that a read rule hides. An entity rule's answer (which records
//   a caller may read or change) tells how the value compares, and the app cannot refuse it; a
//   command is refused (403) to callers who may not read the field.
// - UNIQUE_FIELD_READ_RULE (warning): a unique field whose read rule reads the record; the app
//   refuses a write of it by a writer who may not read it on the record as written, but a writer
//   who may read it there still hears (409) whether another record, perhaps one whose field it
//   may not read, holds the value.

import { pathParams } from '../../runtime-lib/core/path-params.ts';
import { type ColumnType, conditionToSql } from '../../runtime-lib/rules/condition-sql.ts';
import { checkCondition, type Condition, conditionReadsRecord } from '../../runtime-lib/rules/conditions.ts';
import { pathsOf } from '../../runtime-lib/rules/expression-parse.ts';
import type { CompileContext } from '../context.ts';
import { matchRelations, refRelations } from '../model/relations.ts';
import type { KeyPath } from '../parse/locate.ts';
import type { Blueprint, Entity, Skill, SkillAction } from '../model/types.ts';
import { apiKeyActor } from './security/may-act.ts';
import { mayHold, type ActorFacts, type Tri } from './security/three-valued.ts';

/** Any actor works as a probe: actor values become parameters of the SQL, never its structure. */
const PROBE_ACTOR = { id: 'probe', roles: ['probe'], role: 'probe', email: 'probe@example.com' };

/** A person of the email provider, of whom generate time knows nothing: any roles, any id. */
const ANY_PERSON: ActorFacts = {
  values: { kind: 'user', type: 'user', id: '', roles: [] },
  unknown: new Set(['id', 'effectiveId', 'email', 'credentialId', 'metadata', 'roles', 'role']),
};

export function checkHiddenFieldFilters(ctx: CompileContext, bp: Blueprint): void {
  for (const skill of bp.skills) {
    for (const action of skill.actions) {
      if (action.action !== 'list' || action.entity === undefined) continue;
      const entity = bp.entities.find((e) => e.name === action.entity);
      if (!entity) continue;
      for (const { field, at } of filters(action)) checkFilter(ctx, bp, skill, action, entity, field, at);
    }
  }
  rulesReadingHiddenFields(ctx, bp);
  for (const entity of bp.entities) {
    for (const field of entity.fields) {
      const read = field.access.read;
      if (!field.unique || !read || !conditionReadsRecord(read.condition)) continue;
      const at = [...field.path, 'access', 'read'];
      if (ctx.failed(at)) continue;
      const message =
        `${entity.name}.${field.name} is unique and its read rule depends on the record: ` +
        `a write that is refused because the value is taken tells the writer that another record, ` +
        `whose ${field.name} it may not read, holds it`;
      ctx.report('UNIQUE_FIELD_READ_RULE', at, message, {
        severity: 'warning',
        hint:
          'make the read rule depend on the actor only (its role), ' +
          'or drop `unique` and check uniqueness in a command that the readers of the field run',
      });
    }
  }
}

function rulesReadingHiddenFields(ctx: CompileContext, bp: Blueprint): void {
  const hidden = (entity: Entity) => new Set(entity.fields.filter((f) => f.access.read).map((f) => f.name));
  for (const entity of bp.entities) {
    const names = hidden(entity);
    if (names.size === 0) continue;
    for (const [action, rule] of Object.entries(entity.access)) {
      const read = recordFields(rule.condition).filter((f) => names.has(f));
      if (!read.length || ctx.failed([...entity.path, 'access', action])) continue;
      const message =
        `the ${action} rule of ${entity.name} compares ${read.join(', ')}, which a field read rule hides: ` +
        `the records a caller may ${action} tell how the value compares`;
      ctx.report('RULE_READS_HIDDEN_FIELD', [...entity.path, 'access', action], message, {
        severity: 'warning',
        hint:
          `compare fields every caller of this rule may read, ` +
          `or give ${read.join(', ')} a read rule that holds wherever this one does`,
      });
    }
  }
  const refs = refRelations(bp);
  const matches = matchRelations(bp);
  const related = (entity: Entity, name: string): Entity | undefined =>
    refs.find((r) => r.from === entity && r.forward === name)?.to ??
    refs.find((r) => r.to === entity && r.back === name)?.from ??
    matches.find((m) => m.from === entity && m.name === name)?.to;
  for (const command of bp.commands) {
    const entity = bp.entities.find((e) => e.name === command.entity);
    if (!entity) continue;
    for (const key of ['policy', 'availableWhen'] as const) {
      const rule = command[key];
      if (!rule || ctx.failed([...command.path, key])) continue;
      const read = recordPaths(rule.condition).flatMap((keys) => {
        if (hidden(entity).has(keys[0])) return [keys[0]];
        // Through a relation (`record.employee.salary`), named as the app loads it (emit/commands.ts).
        const target = related(entity, keys[0]);
        return target && keys.length > 1 && hidden(target).has(keys[1]) ? [`${keys[0]}.${keys[1]}`] : [];
      });
      if (!read.length) continue;
      const message =
        `${command.name}'s ${key} compares ${[...new Set(read)].join(', ')}, which a field read rule hides: ` +
        `callers who may not read it are refused (403), as its answer would tell how the value compares`;
      ctx.report('RULE_READS_HIDDEN_FIELD', [...command.path, key], message, { severity: 'warning' });
    }
  }
}

/** The first key of each `record.<field>` path a condition reads ("owner": no field it names). */
function recordFields(condition: Condition): string[] {
  return recordPaths(condition).map((keys) => keys[0]);
}

function recordPaths(condition: Condition): string[][] {
  switch (condition.kind) {
    case 'match':
      return condition.pairs.flatMap(({ left, right }) =>
        [left, right].flatMap((o) => (o.kind === 'record' ? [o.keys] : [])),
      );
    case 'and':
    case 'or':
      return condition.items.flatMap(recordPaths);
    case 'expr':
      return pathsOf(condition.expr).flatMap((p) => (p.root === 'record' && p.keys.length ? [p.keys] : []));
    default:
      return [];
  }
}

/** The fields a list action filters on: its query parameters and its path parameters. */
function filters(action: SkillAction): Array<{ field: string; at: KeyPath }> {
  const byQuery = action.query.map((q) => ({ field: q.field, at: [...action.path, 'query', q.name] }));
  const byPath = pathParams(action.route).map((p) => ({
    field: action.mapParams[p] ?? p,
    at: [...action.path, 'path'],
  }));
  return [...byQuery, ...byPath];
}

function checkFilter(
  ctx: CompileContext,
  bp: Blueprint,
  skill: Skill,
  action: SkillAction,
  entity: Entity,
  name: string,
  at: KeyPath,
): void {
  const field = entity.fields.find((f) => f.name === name);
  const read = field?.access.read;
  if (!field || !read || ctx.failed([...field.path, 'access', 'read'])) return;
  const condition = read.condition;
  if (conditionReadsRecord(condition)) {
    const columns = new Map<string, ColumnType>(
      entity.fields.map((f) => [f.name, f.unknownType === undefined ? f.type : 'Text']),
    );
    if (conditionToSql(condition, PROBE_ACTOR, columns) !== undefined) return;
    const message =
      `${skill.name}.${action.name} filters on ${entity.name}.${name}, ` +
      `whose read rule then limits the filter in the database, but cannot be expressed in SQL`;
    ctx.report('READ_RULE_NOT_SQL', at, message, {
      hint: 'compare fields of the record itself with literals or actor values (==, !=, <, >, in, contains, &&, ||, !)',
    });
    return;
  }
  if (callers(bp, skill, action).some((who) => who(condition) !== 'no')) return;
  const message =
    `${skill.name}.${action.name} filters on ${entity.name}.${name}, which no caller of the action may read: ` +
    `every call that uses the filter would be refused (403)`;
  ctx.report('HIDDEN_FIELD_FILTER', at, message, {
    hint: `drop the filter, or let the action's callers read ${name} (its access.read)`,
  });
}

/** Whether each kind of actor that may call the action may pass a condition that does not read the record. */
function callers(bp: Blueprint, skill: Skill, action: SkillAction): Array<(c: Condition) => Tri> {
  const out: Array<(c: Condition) => Tri> = [];
  // An anonymous caller passes only what holds for nobody in particular.
  if (skill.auth === 'none') out.push((c) => (checkCondition(c, { actor: null, record: null }) ? 'yes' : 'no'));
  // People are not held to scopes, and any person may be given any role.
  if (bp.auth.providers.includes('email')) out.push((c) => (mentionsRole(c) ? 'maybe' : mayHold(c, ANY_PERSON)));
  for (const key of bp.auth.apiKeys) {
    if (!action.scopes.every((s) => key.scopes.includes(s))) continue;
    out.push((c) => mayHold(c, apiKeyActor(key)));
  }
  return out;
}

/** A table condition that compares `$currentUser.role`, which ANY_PERSON cannot leave unknown. */
function mentionsRole(condition: Condition): boolean {
  if (condition.kind === 'match')
    return condition.pairs.some(({ left, right }) => [left, right].some((o) => o.kind === 'actor' && o.key === 'role'));
  if (condition.kind === 'and' || condition.kind === 'or') return condition.items.some(mentionsRole);
  return false;
}
