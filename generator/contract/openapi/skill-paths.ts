// The paths of skill actions: one operation per served action (`<skill>_<action>`, as Zebric names
// them) at the action's own method and path: a CRUD action with the entity's schemas, a workflow
// action with its body and the 202 job it answers; and GET /api/skills and GET /api/jobs/{id}.

import type { Blueprint, Entity, Skill, SkillAction } from '../../model/types.ts';
import { pathParams } from '../../../runtime-lib/core/path-params.ts';
import { requiredBodyKeys, startedByHand } from '../../model/workflows.ts';
import { actionRisk } from '../../model/action-risk.ts';
import {
  errorResponse,
  IDEMPOTENCY_HEADER,
  json,
  OFFSET_SCHEMA,
  ref,
  RUN_ID_HEADER,
  schemeNames,
  TRACE_HEADER,
  type Schema,
} from './common.ts';
import { entitySchemas, fieldSchema, keySchema } from './schemas.ts';

export const SKILL_INDEX_PATH: Record<string, Schema> = {
  '/api/skills': {
    get: {
      operationId: 'listSkills',
      tags: ['Meta'],
      summary: 'Every skill and its actions: method, path, risk, scopes, and whether the app serves it',
      security: [],
      responses: { '200': { description: 'The skills', headers: TRACE_HEADER, content: json({ type: 'object' }) } },
    },
  },
};

function paramSchema(bp: Blueprint, entity: Entity, fieldName: string): Schema {
  const field = entity.fields.find((f) => f.name === fieldName);
  if (!field) return { type: 'string' };
  const { description: _, ...schema } = field.primaryKey ? keySchema(field.type) : fieldSchema(bp, field);
  return schema;
}

/**
 * What every action's operation starts with: its id (`<skill>_<action>`, as Zebric names it), tag,
 * summary, risk and scopes (and `extensions`), and the credentials it takes (none needed for a skill
 * with auth none).
 */
function identity(bp: Blueprint, skill: Skill, action: SkillAction, extensions: Schema = {}): Schema {
  const schemes = schemeNames(bp);
  return {
    operationId: `${skill.name}_${action.name}`,
    tags: [skill.name],
    ...(action.description ? { summary: action.description } : {}),
    'x-risk': actionRisk(action),
    'x-scopes': [...action.scopes],
    ...extensions,
    ...(schemes.length
      ? {
          security: [
            ...schemes.map((name) => ({ [name]: name === 'apiKey' ? [...action.scopes] : [] })),
            ...(skill.auth === 'none' ? [{}] : []),
          ],
        }
      : {}),
  };
}

function operation(bp: Blueprint, skill: Skill, action: SkillAction, entity: Entity): Schema {
  const n = entity.name;
  const params = pathParams(action.route);
  const pathParameters = params.map((p) => {
    const field = action.mapParams[p] ?? p;
    return {
      name: p,
      in: 'path',
      required: true,
      description: `${n}.${field}`,
      schema: paramSchema(bp, entity, field),
    };
  });
  const queryParams =
    action.action === 'list'
      ? [
          ...['limit', 'offset']
            .filter((name) => !action.query.some((q) => q.name === name))
            .map((name) => ({
              name,
              in: 'query',
              required: false,
              schema: name === 'limit' ? { type: 'integer', minimum: 1, maximum: 1000, default: 100 } : OFFSET_SCHEMA,
            })),
          ...action.query.map((q) => ({
            name: q.name,
            in: 'query',
            required: q.required,
            ...(q.description ? { description: q.description } : {}),
            schema: {
              ...(q.values ? { type: 'string', enum: q.values } : paramSchema(bp, entity, q.field)),
              ...(q.default !== undefined ? { default: q.default } : {}),
            },
          })),
        ]
      : [];
  const mutation = action.action === 'create' || action.action === 'update' || action.action === 'delete';
  const schemes = schemeNames(bp);
  const ok = (description: string, schema: Schema) => ({ description, headers: TRACE_HEADER, content: json(schema) });
  const responses: Record<string, Schema> = {
    list: { '200': ok(`A page of ${n} records`, ref(`${n}List`)) },
    get: { '200': ok(`The ${n}`, ref(n)), '404': errorResponse('NotFound') },
    create: {
      '201': {
        ...ok(`The stored ${n}`, ref(n)),
        headers: { ...TRACE_HEADER, Location: { schema: { type: 'string' } } },
      },
      '409': errorResponse('Conflict'),
      '422': errorResponse('UnprocessableEntity'),
    },
    update: {
      '200': ok(`The updated ${n}`, ref(n)),
      '404': errorResponse('NotFound'),
      '409': errorResponse('Conflict'),
      '422': errorResponse('UnprocessableEntity'),
    },
    delete: {
      '204': { description: 'Deleted', headers: TRACE_HEADER },
      '404': errorResponse('NotFound'),
      '409': errorResponse('Conflict'),
    },
  }[action.action as string] as Record<string, Schema>;
  return {
    ...identity(bp, skill, action),
    parameters: [...pathParameters, ...queryParams, ...(mutation ? [IDEMPOTENCY_HEADER, RUN_ID_HEADER] : [])],
    ...(action.action === 'create' || action.action === 'update'
      ? { requestBody: requestBody(bp, action, entity, params) }
      : {}),
    responses: {
      ...responses,
      '400': errorResponse(mutation ? 'BadWriteRequest' : 'BadRequest'),
      ...(schemes.length ? { '401': errorResponse('Unauthenticated'), '403': errorResponse('Forbidden') } : {}),
      ...(mutation && action.action !== 'delete'
        ? { '413': errorResponse('PayloadTooLarge'), '415': errorResponse('UnsupportedMediaType') }
        : {}),
      '503': errorResponse('ServiceUnavailable'),
    },
  };
}

/**
 * The entity's create or update body; for a create, without the fields its path parameters write
 * (they win over the body's values, so the body need not carry them).
 */
function requestBody(bp: Blueprint, action: SkillAction, entity: Entity, params: string[]): Schema {
  const name = `${entity.name}${action.action === 'create' ? 'Create' : 'Update'}`;
  const written = new Set(params.map((p) => action.mapParams[p] ?? p));
  if (action.action !== 'create' || written.size === 0) return { required: true, content: json(ref(name)) };
  const schema = entitySchemas(bp, entity)[name] as { properties: Record<string, Schema>; required?: string[] };
  const properties = Object.fromEntries(Object.entries(schema.properties).filter(([k]) => !written.has(k)));
  const required = (schema.required ?? []).filter((k) => !written.has(k));
  return { required: true, content: json({ ...schema, properties, ...(required.length ? { required } : {}) }) };
}

/** A workflow job as GET /api/jobs/{id} answers it (runtime/workflows/jobs.ts). */
export const JOB_SCHEMA: Schema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    workflow: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'running', 'completed', 'failed'] },
    url: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
    startedAt: { type: ['string', 'null'], format: 'date-time' },
    completedAt: { type: ['string', 'null'], format: 'date-time' },
    attempts: { type: 'integer' },
    result: { description: 'What the steps stored with assignTo, once completed' },
    error: {
      type: ['object', 'null'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, retryable: { type: 'boolean' } },
    },
  },
  required: ['id', 'workflow', 'status', 'url', 'createdAt'],
};

export function jobPath(bp: Blueprint): Record<string, Schema> {
  const schemes = schemeNames(bp);
  return {
    '/api/jobs/{id}': {
      get: {
        operationId: 'getJob',
        tags: ['Meta'],
        summary: 'A workflow job, for the credential that submitted it (anyone else: 404)',
        ...(schemes.length ? { security: schemes.map((name) => ({ [name]: [] })) } : {}),
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': { description: 'The job', headers: TRACE_HEADER, content: json(ref('WorkflowJob')) },
          '404': errorResponse('NotFound'),
          '503': errorResponse('ServiceUnavailable'),
        },
      },
    },
  };
}

/** A workflow action: its declared body, the record its path names, and the 202 job. */
function workflowOperation(bp: Blueprint, skill: Skill, action: SkillAction, entity: Entity | undefined): Schema {
  const params = pathParams(action.route);
  const schemes = schemeNames(bp);
  // A key the workflow reads is required, and not null: the app refuses the request without it.
  const required = requiredBodyKeys(bp, action);
  const body = {
    type: 'object',
    properties: Object.fromEntries(
      Object.entries(action.body).map(([name, type]) => {
        const nullable = !required.includes(name);
        const { description: _, ...schema } = fieldSchema(bp, {
          name,
          type,
          required: !nullable,
          nullable,
          primaryKey: false,
          commandOnly: false,
          access: {},
        } as unknown as Entity['fields'][number]);
        return [name, nullable || type !== 'JSON' ? schema : { ...schema, not: { type: 'null' } }];
      }),
    ),
    ...(required.length ? { required } : {}),
    additionalProperties: false,
  };
  return {
    ...identity(bp, skill, action, { 'x-workflow': action.workflow }),
    parameters: [
      ...params.map((p) => ({
        name: p,
        in: 'path',
        required: true,
        schema: entity ? paramSchema(bp, entity, action.mapParams[p] ?? p) : { type: 'string' },
      })),
      ...(action.method === 'GET' ? [] : [IDEMPOTENCY_HEADER, RUN_ID_HEADER]),
    ],
    ...(action.method === 'GET' ? {} : { requestBody: { required: required.length > 0, content: json(body) } }),
    responses: {
      '202': {
        description: 'The job, pending: poll its url',
        headers: { ...TRACE_HEADER, Location: { schema: { type: 'string' } } },
        content: json({
          type: 'object',
          properties: { success: { type: 'boolean' }, job: ref('WorkflowJob') },
          required: ['success', 'job'],
        }),
      },
      '400': errorResponse(action.method === 'GET' ? 'BadRequest' : 'BadWriteRequest'),
      ...(schemes.length ? { '401': errorResponse('Unauthenticated'), '403': errorResponse('Forbidden') } : {}),
      '404': errorResponse('NotFound'),
      '409': errorResponse('Conflict'),
      '503': errorResponse('ServiceUnavailable'),
    },
  };
}

/** The served actions of every skill, by path and method. */
export function skillPaths(bp: Blueprint): Record<string, Schema> {
  const paths: Record<string, Schema> = {};
  for (const skill of bp.skills) {
    for (const action of skill.actions) {
      const entity = bp.entities.find((e) => e.name === action.entity);
      const workflow = bp.workflows.find((w) => w.name === action.workflow);
      let op: Schema | undefined;
      if (workflow && startedByHand(workflow)) op = workflowOperation(bp, skill, action, entity);
      else if (entity && action.action !== undefined && action.workflow === undefined)
        op = operation(bp, skill, action, entity);
      if (!op) continue;
      const item = (paths[action.route] ??= {});
      item[action.method.toLowerCase()] = op;
    }
  }
  return paths;
}
