// openapi.json: OpenAPI 3.1 for every route the app serves, with request and response schemas
// and the error envelope. Built as data and serialized once, keys in a fixed order.

import { ERROR_CODES } from '../../runtime-lib/core/errors.ts';
import type { Blueprint, Command, Entity, Field, Rule } from '../model/types.ts';
import { GENERATED_HEADER } from './header.ts';

type Schema = Record<string, unknown>;
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const errorResponse = (name: string): Schema => ({ $ref: `#/components/responses/${name}` });

const ULID_PATTERN = '^[0-7][0-9A-HJKMNP-TV-Z]{25}$';

function fieldSchema(bp: Blueprint, field: Field): Schema {
  let s: Schema;
  switch (field.type) {
    case 'ULID':
      s = { type: 'string', pattern: ULID_PATTERN };
      break;
    case 'UUID':
      s = { type: 'string', format: 'uuid' };
      break;
    case 'Email':
      s = { type: 'string', format: 'email', maxLength: 254 };
      break;
    case 'Integer':
      s = { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };
      break;
    case 'Float':
      s = { type: 'number' };
      break;
    case 'Boolean':
      s = { type: 'boolean' };
      break;
    case 'Date':
      s = { type: 'string', format: 'date' };
      break;
    case 'DateTime':
      s = { type: 'string', format: 'date-time' };
      break;
    case 'JSON':
      s = {};
      break;
    case 'Enum':
      s = { type: 'string', enum: [...(field.values ?? [])] };
      break;
    case 'Ref': {
      const target = bp.entities.find((e) => e.name === field.ref?.entity);
      const targetField = target?.fields.find((f) => f.name === field.ref?.field);
      s = targetField?.type === 'ULID' ? { type: 'string', pattern: ULID_PATTERN } : targetField?.type === 'UUID' ? { type: 'string', format: 'uuid' } : { type: 'string' };
      s.description = `${field.ref?.entity}.${field.ref?.field} of an existing ${field.ref?.entity}`;
      break;
    }
    case 'file':
      s = { type: 'string', format: 'uri-reference' };
      break;
    default:
      s = { type: 'string' };
  }
  if (field.nullable && field.type !== 'JSON') {
    s.type = [s.type as string, 'null'];
    if (Array.isArray(s.enum)) s.enum = [...(s.enum as unknown[]), null];
  }
  const notes = [
    field.description,
    field.access.read ? 'Present only for actors its read rule allows.' : undefined,
    field.access.write ? 'Writable only by actors its write rule allows.' : undefined,
    field.commandOnly ? `Command-only: changed only by ${field.commands?.join(', ') ?? 'commands'}.` : undefined]
    .filter(Boolean)
    .join(' ');
  if (notes) s.description = s.description ? `${s.description as string}. ${notes}` : notes;
  if (field.default?.kind === 'value' && field.type !== 'JSON') s.default = field.default.value;
  return s;
}

function entitySchemas(bp: Blueprint, entity: Entity): Record<string, Schema> {
  const all = Object.fromEntries(entity.fields.map((f) => [f.name, f.primaryKey ? { ...fieldSchema(bp, f), readOnly: true } : fieldSchema(bp, f)]));
  const writable = entity.fields.filter((f) => !f.primaryKey && !f.commandOnly);
  const input = Object.fromEntries(writable.map((f) => [f.name, fieldSchema(bp, f)]));
  return {
    [entity.name]: {
      type: 'object',
      ...(entity.description ? { description: entity.description } : {}),
      properties: all,
      // A field with a read rule is left out of responses for actors who may not read it.
      required: entity.fields.filter((f) => !f.access.read).map((f) => f.name),
      additionalProperties: false,
    },
    [`${entity.name}Create`]: {
      type: 'object',
      properties: input,
      required: writable.filter((f) => f.required && !f.default).map((f) => f.name),
      additionalProperties: false,
    },
    [`${entity.name}Update`]: {
      type: 'object',
      description: 'The given fields change; others keep their values.',
      properties: input,
      additionalProperties: false,
    },
    [`${entity.name}List`]: {
      type: 'object',
      properties: {
        items: { type: 'array', items: ref(entity.name) },
        limit: { type: 'integer', minimum: 1, maximum: 1000 },
        offset: { type: 'integer', minimum: 0 },
        hasMore: { type: 'boolean' },
      },
      required: ['items', 'limit', 'offset', 'hasMore'],
      additionalProperties: false,
    },
  };
}

/** Security requirements of one operation: any credential, plus anonymous when its rule is public. */
function securityFor(bp: Blueprint, entity: Entity, action: 'read' | 'create' | 'update' | 'delete'): Schema[] | undefined {
  const schemes = schemeNames(bp);
  if (schemes.length === 0) return undefined;
  const rule = entity.access[action];
  const open = rule !== undefined && (rule.condition.kind === 'public' || (rule.condition.kind === 'const' && rule.condition.value));
  const scopes = action === 'read' ? entity.scopes.read : entity.scopes.write;
  return [...schemes.map((name) => ({ [name]: name === 'apiKey' ? [...scopes] : [] })), ...(open ? [{}] : [])];
}

function schemeNames(bp: Blueprint): string[] {
  return [...(bp.auth.apiKeys.length ? ['apiKey'] : []), ...(bp.auth.providers.includes('email') ? ['session'] : [])];
}

const IDEMPOTENCY_HEADER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Required from API keys on every mutation (1 to 255 visible ASCII characters). Same key and input: the stored response is replayed.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};
const RUN_ID_HEADER = {
  name: 'X-Agent-Run-ID',
  in: 'header',
  required: false,
  description: 'Ties the audit record to one agent invocation.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

function entityPaths(bp: Blueprint, entity: Entity): Record<string, Schema> {
  const n = entity.name;
  const secured = (action: 'read' | 'create' | 'update' | 'delete', op: Schema): Schema => {
    const security = securityFor(bp, entity, action);
    if (!security) return op;
    const responses = op.responses as Record<string, Schema>;
    return {
      ...op,
      security,
      responses: { ...responses, '401': errorResponse('Unauthenticated'), '403': errorResponse('Forbidden') },
    };
  };
  const json = (schema: Schema) => ({ 'application/json': { schema } });
  const ok = (description: string, schema: Schema) => ({ description, headers: { 'X-Trace-ID': { $ref: '#/components/headers/X-Trace-ID' } }, content: json(schema) });
  const idParam = { name: 'id', in: 'path', required: true, description: `${n} id`, schema: { type: 'string' } };
  const body = (schema: string) => ({ required: true, content: json(ref(schema)) });
  const writeErrors = {
    '400': errorResponse('BadRequest'),
    '403': errorResponse('Forbidden'),
    '409': errorResponse('Conflict'),
    '413': errorResponse('PayloadTooLarge'),
    '415': errorResponse('UnsupportedMediaType'),
    '422': errorResponse('UnprocessableEntity'),
    '503': errorResponse('ServiceUnavailable'),
  };
  return {
    [`/api/${entity.collection}`]: {
      get: secured('read', {
        operationId: `list${n}s`,
        tags: [n],
        summary: `List ${n} records, ordered by id`,
        parameters: [
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
          { name: 'offset', in: 'query', required: false, schema: { type: 'integer', minimum: 0, default: 0 } },
        ],
        responses: { '200': ok(`A page of ${n} records`, ref(`${n}List`)), '400': errorResponse('BadRequest') },
      }),
      post: secured('create', {
        operationId: `create${n}`,
        tags: [n],
        summary: `Create a ${n}`,
        parameters: [IDEMPOTENCY_HEADER, RUN_ID_HEADER],
        requestBody: body(`${n}Create`),
        responses: {
          '201': { ...ok(`The stored ${n}`, ref(n)), headers: { 'X-Trace-ID': { $ref: '#/components/headers/X-Trace-ID' }, Location: { schema: { type: 'string' } } } },
          ...writeErrors,
        },
      }),
    },
    [`/api/${entity.collection}/{id}`]: {
      parameters: [idParam],
      get: secured('read', {
        operationId: `get${n}`,
        tags: [n],
        summary: `Get one ${n}`,
        responses: { '200': ok(`The ${n}`, ref(n)), '404': errorResponse('NotFound') },
      }),
      put: secured('update', {
        operationId: `update${n}`,
        tags: [n],
        summary: `Change the given fields of a ${n}`,
        parameters: [IDEMPOTENCY_HEADER, RUN_ID_HEADER],
        requestBody: body(`${n}Update`),
        responses: { '200': ok(`The updated ${n}`, ref(n)), '404': errorResponse('NotFound'), ...writeErrors },
      }),
      delete: secured('delete', {
        operationId: `delete${n}`,
        tags: [n],
        summary: `Delete a ${n}`,
        parameters: [IDEMPOTENCY_HEADER, RUN_ID_HEADER],
        responses: {
          '204': { description: 'Deleted', headers: { 'X-Trace-ID': { $ref: '#/components/headers/X-Trace-ID' } } },
          '400': errorResponse('BadRequest'),
          '404': errorResponse('NotFound'),
          '409': errorResponse('Conflict'),
          '503': errorResponse('ServiceUnavailable'),
        },
      }),
    },
  };
}

const ERROR_RESPONSES: Record<string, string> = {
  BadRequest: 'The request is malformed or fails validation (VALIDATION_FAILED, INVALID_JSON, INVALID_QUERY, IDEMPOTENCY_KEY_REQUIRED)',
  Unauthenticated: 'No valid credential: sign in, or send Authorization: Bearer <API key> (UNAUTHENTICATED)',
  Forbidden: 'Not allowed (FORBIDDEN, INSUFFICIENT_SCOPE, CSRF_FAILED, PROTECTED_FIELD_MUTATION)',
  NotFound: 'No such record or route (NOT_FOUND, ROUTE_NOT_FOUND)',
  Conflict:
    'A conflict with stored data or state (UNIQUE_CONFLICT, REFERENCE_CONFLICT, STATE_CONFLICT, COMMAND_UNAVAILABLE, IDEMPOTENCY_KEY_REUSE, IDEMPOTENCY_KEY_IN_PROGRESS)',
  PayloadTooLarge: 'The body exceeds the size limit (PAYLOAD_TOO_LARGE)',
  UnsupportedMediaType: 'The body is not application/json (UNSUPPORTED_MEDIA_TYPE)',
  UnprocessableEntity: 'A referenced record does not exist (REFERENCE_NOT_FOUND)',
  ServiceUnavailable: 'The database is busy; retry after Retry-After seconds (DATABASE_BUSY)',
  TooManyRequests: 'Too many failed attempts; retry after Retry-After seconds (TOO_MANY_ATTEMPTS)',
  InternalError: 'An unexpected failure, for example a command handler that threw (INTERNAL_ERROR)',
};

export function emitOpenApi(bp: Blueprint): string {
  const paths: Record<string, Schema> = {
    '/api/openapi.json': {
      get: {
        operationId: 'getOpenApi',
        tags: ['Meta'],
        summary: 'This OpenAPI description',
        responses: { '200': { description: 'OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object' } } } } },
      },
    },
  };
  const schemas: Record<string, Schema> = {};
  for (const entity of bp.entities) {
    Object.assign(paths, entityPaths(bp, entity));
    Object.assign(schemas, entitySchemas(bp, entity));
  }
  if (bp.auth.providers.includes('email')) schemas.Session = {
    type: 'object',
    properties: {
      actor: {
        oneOf: [
          { type: 'null' },
          {
            type: 'object',
            properties: { kind: { type: 'string' }, id: { type: 'string' }, email: { type: 'string' }, roles: { type: 'array', items: { type: 'string' } } },
            required: ['kind', 'id', 'roles'],
          },
        ],
      },
      csrfToken: { type: 'string' },
    },
    required: ['actor', 'csrfToken'],
  };
  schemas.Error = {
    type: 'object',
    properties: {
      error: {
        type: 'object',
        properties: {
          code: { type: 'string', enum: Object.keys(ERROR_CODES) },
          message: { type: 'string' },
          retryable: { type: 'boolean', description: 'Retry (same Idempotency-Key, honouring Retry-After) only when true.' },
          details: {
            type: 'array',
            items: {
              type: 'object',
              properties: { field: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } },
              required: ['code', 'message'],
              additionalProperties: false,
            },
          },
          traceId: { type: 'string' },
        },
        required: ['code', 'message', 'retryable', 'traceId'],
        additionalProperties: false,
      },
    },
    required: ['error'],
    additionalProperties: false,
  };
  const responses = Object.fromEntries(
    Object.entries(ERROR_RESPONSES)
      // Sign-in throttling exists only with the email provider.
      .filter(([name]) => name !== 'TooManyRequests' || bp.auth.providers.includes('email'))
      .map(([name, description]) => [
      name,
      { description, headers: { 'X-Trace-ID': { $ref: '#/components/headers/X-Trace-ID' } }, content: { 'application/json': { schema: ref('Error') } } },
    ]),
  );
  if (bp.auth.providers.includes('email')) Object.assign(paths, authPaths());
  for (const command of bp.commands) Object.assign(paths, commandPath(bp, command));
  Object.assign(paths, auditPath(bp));
  schemas.AuditRecord = {
    type: 'object',
    properties: {
      id: { type: 'string' },
      at: { type: 'string', format: 'date-time' },
      operation: { type: 'string', description: '"Entity.create|update|delete", "command:Name", or "command:Name:<handler action>"' },
      entity: { type: 'string' },
      recordId: { type: 'string' },
      actorId: { type: 'string' },
      credentialId: { type: ['string', 'null'] },
      delegatedBy: { type: ['string', 'null'] },
      agentRunId: { type: ['string', 'null'] },
      idempotencyKey: { type: ['string', 'null'] },
      traceId: { type: ['string', 'null'] },
      changes: {
        type: 'object',
        additionalProperties: { type: 'object', properties: { before: {}, after: {} }, required: ['before', 'after'] },
      },
      detail: { type: ['object', 'null'] },
    },
    required: ['id', 'at', 'operation', 'entity', 'recordId', 'actorId', 'credentialId', 'delegatedBy', 'agentRunId', 'idempotencyKey', 'traceId', 'changes', 'detail'],
    additionalProperties: false,
  };
  schemas.AuditList = {
    type: 'object',
    properties: {
      items: { type: 'array', items: ref('AuditRecord') },
      limit: { type: 'integer', minimum: 1, maximum: 1000 },
      offset: { type: 'integer', minimum: 0 },
      hasMore: { type: 'boolean' },
    },
    required: ['items', 'limit', 'offset', 'hasMore'],
    additionalProperties: false,
  };
  const securitySchemes: Record<string, Schema> = {};
  if (bp.auth.apiKeys.length) {
    securitySchemes.apiKey = { type: 'http', scheme: 'bearer', description: 'An API key of auth.apiKeys. Operations list the scopes the key must hold.' };
  }
  if (bp.auth.providers.includes('email')) {
    securitySchemes.session = {
      type: 'apiKey',
      in: 'cookie',
      name: `${bp.slug}.sid`,
      description: 'A session from POST /api/auth/login. Mutations also need the X-CSRF-Token header from GET /api/auth/session.',
    };
  }
  const doc = {
    'x-generated-by': GENERATED_HEADER,
    openapi: '3.1.0',
    info: {
      title: bp.project.name,
      version: bp.project.version,
      ...(bp.project.description ? { description: bp.project.description } : {}),
    },
    servers: [{ url: '/' }],
    // Operations state their own requirements; without declared credentials nothing is required.
    security: [],
    tags: [
      ...(bp.auth.providers.includes('email') ? [{ name: 'Auth', description: 'Sign-up, sign-in and sessions of people' }] : []),
      ...bp.entities.map((e) => ({ name: e.name, description: e.description ?? `${e.name} records (/api/${e.collection})` })),
      { name: 'Audit', description: 'Who changed what, and why' },
      { name: 'Meta', description: 'About this API' },
    ],
    paths,
    components: {
      schemas,
      responses,
      headers: { 'X-Trace-ID': { description: 'Trace id of this request (admin server /traces/<id>)', schema: { type: 'string' } } },
      ...(Object.keys(securitySchemes).length ? { securitySchemes } : {}),
    },
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

function authPaths(): Record<string, Schema> {
  const credentials = {
    required: true,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          properties: { email: { type: 'string', format: 'email' }, password: { type: 'string', minLength: 12, maxLength: 1024 }, _csrf: { type: 'string' } },
          required: ['email', 'password'],
        },
      },
      'application/x-www-form-urlencoded': {
        schema: {
          type: 'object',
          properties: { email: { type: 'string' }, password: { type: 'string' }, _csrf: { type: 'string' }, next: { type: 'string' } },
          required: ['email', 'password'],
        },
      },
    },
  };
  const session = { 'application/json': { schema: ref('Session') } };
  const open = [{}];
  return {
    '/api/auth/signup': {
      post: {
        operationId: 'signUp',
        tags: ['Auth'],
        summary: 'Create an account (no roles) and start a session',
        security: open,
        requestBody: credentials,
        responses: { '201': { description: 'Signed up and signed in', content: session }, '400': errorResponse('BadRequest'), '403': errorResponse('Forbidden'), '409': errorResponse('Conflict') },
      },
    },
    '/api/auth/login': {
      post: {
        operationId: 'logIn',
        tags: ['Auth'],
        summary: 'Start a session (a new session id)',
        security: open,
        requestBody: credentials,
        responses: {
          '200': { description: 'Signed in', content: session },
          '303': { description: 'Form post: signed in, redirected to next' },
          '400': errorResponse('BadRequest'),
          '401': errorResponse('Unauthenticated'),
          '403': errorResponse('Forbidden'),
          '429': errorResponse('TooManyRequests'),
        },
      },
    },
    '/api/auth/logout': {
      post: {
        operationId: 'logOut',
        tags: ['Auth'],
        summary: 'End the session',
        security: [{ session: [] }],
        responses: { '204': { description: 'Signed out' }, '403': errorResponse('Forbidden') },
      },
    },
    '/api/auth/session': {
      get: {
        operationId: 'getSession',
        tags: ['Auth'],
        summary: 'The signed-in actor (or null) and the CSRF token for mutations',
        security: open,
        responses: { '200': { description: 'The session', content: session } },
      },
    },
  };
}

function conditionText(rule: Rule | undefined): string | undefined {
  if (!rule) return undefined;
  return typeof rule.source === 'string' ? rule.source : JSON.stringify(rule.source);
}

function commandPath(bp: Blueprint, command: Command): Record<string, Schema> {
  const entity = bp.entities.find((e) => e.name === command.entity) as Entity;
  const inputSchema = {
    type: 'object',
    properties: Object.fromEntries(
      command.input.map((i) => [
        i.name,
        { ...fieldSchema(bp, { ...i, nullable: false, primaryKey: false, commandOnly: false, access: {} } as unknown as Field), ...(i.description ? { description: i.description } : {}) },
      ]),
    ),
    required: command.input.filter((i) => i.required).map((i) => i.name),
    additionalProperties: false,
  };
  const schemes = schemeNames(bp);
  const json = (schema: Schema) => ({ 'application/json': { schema } });
  return {
    [`/api/commands/${command.operationId}/{id}`]: {
      post: {
        operationId: command.operationId,
        tags: [command.entity],
        summary: command.label,
        ...(command.description ? { description: command.description } : {}),
        ...(conditionText(command.policy) ? { 'x-policy': conditionText(command.policy) } : {}),
        ...(conditionText(command.availableWhen) ? { 'x-available-when': conditionText(command.availableWhen) } : {}),
        'x-scopes': [...command.scopes],
        ...(schemes.length ? { security: schemes.map((name) => ({ [name]: name === 'apiKey' ? [...command.scopes] : [] })) } : {}),
        parameters: [
          { name: 'id', in: 'path', required: true, description: `${command.entity} id`, schema: { type: 'string' } },
          IDEMPOTENCY_HEADER,
          RUN_ID_HEADER,
        ],
        requestBody: { required: command.input.some((i) => i.required), content: json(inputSchema) },
        responses: {
          '200': { description: `The ${entity.name} after the command`, headers: { 'X-Trace-ID': { $ref: '#/components/headers/X-Trace-ID' } }, content: json(ref(entity.name)) },
          '400': errorResponse('BadRequest'),
          '401': errorResponse('Unauthenticated'),
          '403': errorResponse('Forbidden'),
          '404': errorResponse('NotFound'),
          '409': errorResponse('Conflict'),
          '413': errorResponse('PayloadTooLarge'),
          '415': errorResponse('UnsupportedMediaType'),
          '422': errorResponse('UnprocessableEntity'),
          '500': errorResponse('InternalError'),
          '503': errorResponse('ServiceUnavailable'),
        },
      },
    },
  };
}

function auditPath(bp: Blueprint): Record<string, Schema> {
  const schemes = schemeNames(bp);
  return {
    '/api/audit': {
      get: {
        operationId: 'listAudit',
        tags: ['Audit'],
        summary: 'The audit trail of one record, newest first (for actors who may read the record)',
        ...(schemes.length ? { security: schemes.map((name) => ({ [name]: [] })) } : {}),
        parameters: [
          { name: 'entity', in: 'query', required: true, schema: { type: 'string', enum: bp.entities.map((e) => e.name) } },
          { name: 'recordId', in: 'query', required: true, schema: { type: 'string' } },
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
          { name: 'offset', in: 'query', required: false, schema: { type: 'integer', minimum: 0, default: 0 } },
        ],
        responses: {
          '200': { description: 'Audit records', content: { 'application/json': { schema: ref('AuditList') } } },
          '400': errorResponse('BadRequest'),
          '401': errorResponse('Unauthenticated'),
          '403': errorResponse('Forbidden'),
          '404': errorResponse('NotFound'),
        },
      },
    },
  };
}
