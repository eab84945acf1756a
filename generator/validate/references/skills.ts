// Cross-reference rules of skills: action names and routes (webhook routes among them, which are
// served first), their entity or workflow, path and query parameters.

import type { CompileContext } from '../../context.ts';
import { type Blueprint, type Entity } from '../../model/types.ts';
import { FIELD_TYPES } from '../../../runtime-lib/core/values.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';
import { startsJobs } from '../../model/workflows.ts';
import { unknownQueryFields } from '../../model/build-sections.ts';
import { entityNamed, fieldNamed, names, unknownEntity, unknownField } from './common.ts';

export function skillActions(ctx: CompileContext, bp: Blueprint): void {
  const routes = new Map<string, string>();
  // Jobs are polled at GET /api/jobs/<id> (spec 4.4): an entity whose routes are /api/jobs would take it.
  const jobs = bp.entities.find((e) => e.collection === 'jobs');
  if (jobs && startsJobs(bp)) {
    ctx.report(
      'DUPLICATE_ROUTE',
      ['entity', jobs.name],
      `entity "${jobs.name}" is served at /api/jobs, where workflow jobs are polled (GET /api/jobs/<id>)`,
      {
        hint: `rename the entity (its routes follow its name), or start no workflow from a skill action`,
      },
    );
  }
  for (const workflow of bp.workflows) {
    if (workflow.trigger.kind !== 'webhook') continue;
    const routeKey = `POST ${workflow.trigger.route}`;
    const clash = routes.get(routeKey);
    const at = [...workflow.path, 'trigger', 'webhook'];
    if (clash) ctx.report('DUPLICATE_ROUTE', at, `POST ${workflow.trigger.route} is also the route of ${clash}`);
    else routes.set(routeKey, `the webhook of workflow ${workflow.name}`);
  }
  for (const skill of bp.skills) {
    const seenNames = new Set<string>();
    // Actions left out are checked too: only their unknown query fields are forgiven.
    for (const action of [...skill.actions, ...skill.notServed]) {
      const served = !skill.notServed.includes(action);
      const at = action.path;
      if (seenNames.has(action.name))
        ctx.report(
          'DUPLICATE_DEFINITION',
          [...at, 'name'],
          `skill "${skill.name}" has two actions named "${action.name}"`,
        );
      seenNames.add(action.name);
      if (served && action.route && action.method) {
        const routeKey = `${action.method} ${action.route.replace(/\{[^}]*\}/g, '{}')}`;
        const clash = routes.get(routeKey);
        if (clash)
          ctx.report(
            'DUPLICATE_ROUTE',
            [...at, 'path'],
            `${action.method} ${action.route} is also the route of ${clash}`,
          );
        routes.set(routeKey, `${skill.name}.${action.name}`);
      }

      // With neither action nor workflow, an action only documents a route served elsewhere (Zebric's pass-through).
      if (action.action !== undefined && action.workflow !== undefined) {
        ctx.report('INVALID_SKILL_ACTION', at, `skill action "${action.name}" has both action and workflow`, {
          hint: 'an action either runs a CRUD operation or starts a workflow; keep one of the two',
        });
      }
      const entity = action.entity === undefined ? undefined : entityNamed(bp, action.entity);
      if (action.entity !== undefined && !entity) unknownEntity(ctx, bp, [...at, 'entity'], action.entity);
      if (action.action !== undefined && action.entity === undefined) {
        ctx.report('MISSING_KEY', [...at, 'entity'], `CRUD skill action "${action.name}" needs entity`);
      }
      if (action.workflow !== undefined && !bp.workflows.some((w) => w.name === action.workflow)) {
        ctx.report('UNKNOWN_WORKFLOW', [...at, 'workflow'], `workflow "${action.workflow}" does not exist`, {
          hint: didYouMean(action.workflow, names(bp.workflows)),
        });
      }
      skillActionParams(ctx, action, entity);
      // A real blueprint's typo here makes this one action unusable, not the app: it is left out.
      for (const param of entity ? unknownQueryFields(action, bp.entities) : []) {
        const paramAt: KeyPath = [...at, 'query', param.name, ...(param.field === param.name ? [] : ['field'])];
        ctx.report(
          'SKILL_ACTION_NOT_SERVED',
          paramAt,
          `entity "${entity?.name}" has no field "${param.field}", so skill action "${action.name}" is left out`,
          { severity: 'warning', hint: didYouMean(param.field, names(entity?.fields ?? [])) },
        );
      }
      for (const [key, type] of Object.entries(action.body)) {
        if (!(FIELD_TYPES as readonly string[]).includes(type)) {
          ctx.report('UNKNOWN_FIELD_TYPE', [...at, 'body', key], `unknown field type "${type}" for body key "${key}"`, {
            hint: didYouMean(type, FIELD_TYPES) ?? `field types: ${FIELD_TYPES.join(', ')}`,
          });
        }
      }
    }
  }
}

/** Every `{param}` of the path names a field (through mapParams or by its own name), and only those. */
function skillActionParams(
  ctx: CompileContext,
  action: Blueprint['skills'][number]['actions'][number],
  entity: Entity | undefined,
): void {
  const at = action.path;
  const params = [...action.route.matchAll(/\{([^}]*)\}/g)].map((m) => m[1]);
  for (const p of params) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(p)) {
      ctx.report(
        'INVALID_PATH_PARAM',
        [...at, 'path'],
        `path parameter {${p}} of ${action.route} must be an identifier`,
      );
    } else if (entity && action.mapParams[p] === undefined && !fieldNamed(entity, p)) {
      ctx.report(
        'UNKNOWN_PATH_PARAM',
        [...at, 'path'],
        `path parameter {${p}} is not a field of entity "${entity.name}" and has no mapParams entry`,
        {
          hint: `map it to a field: mapParams = { ${p} = "${entity.primaryKey?.name ?? 'id'}" }`,
        },
      );
    }
  }
  const identifiesRecord = action.action === 'get' || action.action === 'update' || action.action === 'delete';
  if (identifiesRecord && action.route && params.length === 0) {
    ctx.report(
      'MISSING_PATH_PARAM',
      [...at, 'path'],
      `a "${action.action}" skill action needs a {param} in its path to find the record`,
      {
        hint: `e.g. path = "${action.route.replace(/\/$/, '')}/{id}"`,
      },
    );
  } else if (
    identifiesRecord &&
    entity?.primaryKey &&
    // A mapParams entry already refused (an unknown parameter or field) says what is wrong.
    Object.entries(action.mapParams).every(([p, f]) => params.includes(p) && fieldNamed(entity, f)) &&
    !params.some((p) => (action.mapParams[p] ?? p) === entity.primaryKey?.name)
  ) {
    // The record is found by its id: one parameter must name the primary key.
    const key = entity.primaryKey.name;
    ctx.report(
      'MISSING_PATH_PARAM',
      [...at, 'path'],
      `no path parameter of ${action.route} names ${entity.name}'s id (${key}), ` +
        `so the "${action.action}" action cannot find the record`,
      {
        hint: `map one to it: mapParams = { ${params[params.length - 1]} = "${key}" }`,
      },
    );
  }
  for (const [param, fieldName] of Object.entries(action.mapParams)) {
    if (action.route && !params.includes(param)) {
      ctx.report(
        'UNKNOWN_PATH_PARAM',
        [...at, 'mapParams', param],
        `mapParams names {${param}}, which is not a parameter of ${action.route}`,
        {
          hint:
            didYouMean(param, params) ??
            (params.length
              ? `path parameters: ${params.map((p) => `{${p}}`).join(', ')}`
              : 'the path has no parameters'),
        },
      );
    }
    if (entity && !fieldNamed(entity, fieldName)) unknownField(ctx, entity, [...at, 'mapParams', param], fieldName);
  }
}
