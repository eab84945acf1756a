// The REST paths of one entity: list and create, get, update and delete, each with the security
// its access rules and scopes call for.

import { accessRule } from '../../model/access-defaults.ts';
import type { Blueprint, Entity, Rule } from '../../model/types.ts';
import { keySchema, takesUploads, uploadEncoding } from './schemas.ts';
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

/** A rule that lets every caller through: `public` or `true`. */
function isOpen(rule: Rule | undefined): boolean {
  return (
    rule !== undefined &&
    (rule.condition.kind === 'public' || (rule.condition.kind === 'const' && rule.condition.value))
  );
}

/** Security requirements of one operation: any credential, plus anonymous when its rule is public. */
function securityFor(
  bp: Blueprint,
  entity: Entity,
  action: 'read' | 'create' | 'update' | 'delete',
): Schema[] | undefined {
  const schemes = schemeNames(bp);
  if (schemes.length === 0) return undefined;
  const open = isOpen(accessRule(bp, entity, action));
  const scopes = action === 'read' ? entity.scopes.read : entity.scopes.write;
  return [...schemes.map((name) => ({ [name]: name === 'apiKey' ? [...scopes] : [] })), ...(open ? [{}] : [])];
}

/**
 * The `{id}` of a record's path: an id of the entity's key type (percent-encoded, for a Text id).
 * An id of another form names no record: 404, as for one that does not exist.
 */
export function idParameter(entity: Entity): Schema {
  const text = entity.primaryKey.type === 'Text' ? ', percent-encoded' : '';
  const { description: _, ...schema } = keySchema(entity.primaryKey.type);
  return { name: 'id', in: 'path', required: true, description: `${entity.name} id${text}`, schema };
}

export function entityPaths(bp: Blueprint, entity: Entity): Record<string, Schema> {
  const n = entity.name;
  const secured = (action: 'read' | 'create' | 'update' | 'delete', op: Schema): Schema => {
    const security = securityFor(bp, entity, action);
    const responses = op.responses as Record<string, Schema>;
    if (!security) {
      // No credentials at all (no [auth]): a public operation needs none; a written rule that is
      // not public may still refuse every caller, who is anonymous: 401.
      const rule = accessRule(bp, entity, action);
      return isOpen(rule) ? op : { ...op, responses: { ...responses, '401': errorResponse('Unauthenticated') } };
    }
    return {
      ...op,
      security,
      responses: { ...responses, '401': errorResponse('Unauthenticated'), '403': errorResponse('Forbidden') },
    };
  };
  const ok = (description: string, schema: Schema) => ({ description, headers: TRACE_HEADER, content: json(schema) });
  const idParam = idParameter(entity);
  // An entity with file fields takes multipart/form-data too: its files as parts (schemas.ts).
  const encoding = uploadEncoding(entity);
  const multipart = (schema: string) => ({
    'multipart/form-data': { schema: ref(`${schema}Upload`), ...(encoding ? { encoding } : {}) },
  });
  const body = (schema: string) => ({
    required: true,
    content: { ...json(ref(schema)), ...(takesUploads(entity) ? multipart(schema) : {}) },
  });
  const writeErrors = {
    '400': errorResponse('BadWriteRequest'),
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
          {
            name: 'limit',
            in: 'query',
            required: false,
            schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
          },
          { name: 'offset', in: 'query', required: false, schema: OFFSET_SCHEMA },
        ],
        responses: {
          '200': ok(`A page of ${n} records`, ref(`${n}List`)),
          '400': errorResponse('BadRequest'),
          '503': errorResponse('ServiceUnavailable'),
        },
      }),
      post: secured('create', {
        operationId: `create${n}`,
        tags: [n],
        summary: `Create a ${n}`,
        parameters: [IDEMPOTENCY_HEADER, RUN_ID_HEADER],
        requestBody: body(`${n}Create`),
        responses: {
          '201': {
            ...ok(`The stored ${n}`, ref(n)),
            headers: { ...TRACE_HEADER, Location: { schema: { type: 'string' } } },
          },
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
        responses: {
          '200': ok(`The ${n}`, ref(n)),
          '404': errorResponse('NotFound'),
          '503': errorResponse('ServiceUnavailable'),
        },
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
          '204': { description: 'Deleted', headers: TRACE_HEADER },
          '400': errorResponse('BadWriteRequest'),
          '404': errorResponse('NotFound'),
          '409': errorResponse('Conflict'),
          '503': errorResponse('ServiceUnavailable'),
        },
      }),
    },
  };
}

/**
 * GET /uploads/{name}, where some entity has file fields: a stored file, to an actor who may read
 * a record whose file field holds it (and that field); 404 to anyone else, as for no such file.
 */
export function uploadsPath(bp: Blueprint): Record<string, Schema> {
  if (!bp.entities.some(takesUploads)) return {};
  const schemes = schemeNames(bp);
  const file = { schema: { type: 'string', format: 'binary' } };
  const headers = {
    ...TRACE_HEADER,
    'Content-Disposition': {
      description: '`inline` for PNG, JPEG, GIF, WebP and AVIF, else `attachment`',
      schema: { type: 'string' },
    },
    'X-Content-Type-Options': { schema: { type: 'string', const: 'nosniff' } },
  };
  return {
    '/uploads/{name}': {
      get: {
        operationId: 'getUpload',
        tags: ['Uploads'],
        summary: 'An uploaded file, by the stored name its field holds (/uploads/<name>)',
        ...(schemes.length ? { security: [...schemes.map((name) => ({ [name]: [] })), {}] } : {}),
        parameters: [
          {
            name: 'name',
            in: 'path',
            required: true,
            description: 'The stored name: 32 hexadecimal digits, a dot and an extension',
            schema: { type: 'string', pattern: '^[0-9a-f]{32}\\.[a-z0-9]{1,5}$' },
          },
        ],
        responses: {
          '200': { description: 'The file, with its stored type', headers, content: { '*/*': file } },
          '404': errorResponse('NotFound'),
          '503': errorResponse('ServiceUnavailable'),
        },
      },
    },
  };
}
