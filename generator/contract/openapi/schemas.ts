// Schemas of the OpenAPI document: one per field type, the entity record, create, update and
// list bodies, the session, the error envelope and the audit trail.

import { ERROR_CODES } from '../../../runtime-lib/core/errors.ts';
import type { Blueprint, Entity, Field } from '../../model/types.ts';
import { TEXT_KEY_MAX_LENGTH } from '../../../runtime-lib/core/ids.ts';
import { EMAIL, INTEGER_MAX, INTEGER_MIN, UPLOAD_LIMIT } from '../../../runtime-lib/core/values.ts';
import { indexedTextMaxBytes } from '../../model/indexes.ts';
import { refTarget } from '../../model/keys.ts';
import { ref, ULID_PATTERN, type Schema } from './common.ts';

/**
 * Text as runtime-lib/core/values.ts textProblem takes it: no C0 or C1 control character nor DEL;
 * LongText may hold tab, line feed and carriage return. Required text is not blank (white space
 * only) either: the lookahead refuses a value of white space alone (what trim removes).
 */
function textPattern(lineBreaks: boolean, required: boolean): string {
  const controls = lineBreaks ? '\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f' : '\\x00-\\x1f';
  return `^${required ? '(?!\\s*$)' : ''}[^${controls}\\x7f-\\x9f]*$`;
}

/**
 * An e-mail address as runtime-lib/core/values.ts isEmail takes it (idn-email alone takes `0@com`):
 * its pattern in two, the local part and the domain, so that no line of openapi.json grows long.
 * The local part holds no "@", so the two together match what the one does.
 */
function emailPatterns(): [string, string] {
  const at = EMAIL.source.indexOf(']{1,64}@');
  if (at === -1) throw new Error('core/values.ts EMAIL changed: split its pattern anew');
  const split = at + ']{1,64}@'.length;
  return [EMAIL.source.slice(0, split), `@${EMAIL.source.slice(split)}`];
}

export const EMAIL_SCHEMA: Schema = {
  type: 'string',
  format: 'idn-email',
  maxLength: 254,
  allOf: emailPatterns().map((pattern) => ({ pattern })),
};

/** An Integer: Prisma's Int, 32 bits on PostgreSQL (runtime-lib/core/values.ts). */
const INTEGER: Schema = { type: 'integer', format: 'int32', minimum: INTEGER_MIN, maximum: INTEGER_MAX };

/**
 * The schema of an id of a key of this type: in records, Refs and path parameters. A Text id is
 * what runtime-lib/core/ids.ts keyProblem accepts (the length, at least).
 */
export function keySchema(type: Field['type']): Schema {
  switch (type) {
    case 'ULID':
      return { type: 'string', pattern: ULID_PATTERN };
    case 'UUID':
      return { type: 'string', format: 'uuid' };
    case 'Integer':
      return { ...INTEGER };
    case 'Text':
      return {
        type: 'string',
        minLength: 1,
        maxLength: TEXT_KEY_MAX_LENGTH,
        description: 'A Text id: no control characters or white space at either end, not "." or ".."',
      };
    default:
      return { type: 'string' };
  }
}

/**
 * A Ref's values: its target key's ids, or a string for a unique Text field that is not the key;
 * either kind of id when the target is unknown (a command input no mutation ties to a field).
 */
function refSchema(target: { entity: Entity; field: Field } | undefined): Schema {
  if (!target) return { type: ['string', 'integer'] };
  if (target.field.primaryKey || target.field.type !== 'Text') {
    const { description: _, ...schema } = keySchema(target.field.type);
    return schema;
  }
  return { type: 'string' };
}

/** `entity`: the field's own, whose indexes may limit its text (model/indexes.ts indexedTextMaxBytes). */
export function fieldSchema(bp: Blueprint, field: Field, entity?: Entity): Schema {
  let s: Schema;
  if (field.primaryKey) s = keySchema(field.type);
  else
    switch (field.type) {
      case 'ULID':
        s = { type: 'string', pattern: ULID_PATTERN };
        break;
      case 'UUID':
        s = { type: 'string', format: 'uuid' };
        break;
      case 'Email':
        // idn-email: the app takes addresses in any script (Élise@exämple.de), which JSON Schema's
        // `email` (RFC 5321, ASCII only) would call invalid.
        s = { ...EMAIL_SCHEMA };
        break;
      case 'Integer':
        s = { ...INTEGER };
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
      case 'Text':
      case 'LongText':
        s = {
          type: 'string',
          ...(field.required ? { minLength: 1 } : {}),
          pattern: textPattern(field.type === 'LongText', field.required),
        };
        break;
      case 'Enum':
        s = { type: 'string', enum: [...(field.values ?? [])] };
        break;
      case 'Ref': {
        const target = refTarget(bp, field);
        s = refSchema(target);
        s.description = target
          ? `${target.entity.name}.${target.field.name} of an existing ${target.entity.name}`
          : 'The id of an existing record';
        break;
      }
      case 'file':
        s = { type: 'string', format: 'uri-reference' };
        break;
      default:
        s = { type: 'string' };
    }
  const maxBytes = entity && indexedTextMaxBytes(bp, entity, field);
  if (field.nullable && field.type !== 'JSON') {
    s.type = [...(Array.isArray(s.type) ? s.type : [s.type]), 'null'];
    if (Array.isArray(s.enum)) s.enum = [...(s.enum as unknown[]), null];
  }
  const notes = [
    field.description,
    field.access.read ? 'Shown only to actors its read rule allows.' : undefined,
    field.access.write ? 'Written only by actors its write rule allows.' : undefined,
    field.commandOnly ? `Command-only: changed only by ${field.commands?.join(', ') ?? 'commands'}.` : undefined,
    maxBytes === undefined ? undefined : `At most ${maxBytes} bytes long in UTF-8 (an index holds it).`,
  ]
    .filter(Boolean)
    .join(' ');
  if (notes) s.description = s.description ? `${s.description as string}. ${notes}` : notes;
  if (field.default?.kind === 'value' && field.type !== 'JSON') s.default = field.default.value;
  return s;
}

/**
 * A file field in a JSON body: null clears it, and nothing else is taken (a name would let a
 * record point at someone else's file); a file is a part of a multipart/form-data body.
 */
const FILE_IN_JSON: Schema = {
  type: 'null',
  description: 'null clears the file; a file is uploaded as a part of a multipart/form-data body.',
};

/** A file field as a multipart/form-data part: the file's bytes, within its max and accept. */
function fileUploadSchema(field: Field): Schema {
  const limit = Math.min(field.max ?? UPLOAD_LIMIT, UPLOAD_LIMIT);
  // The types it accepts are the part's encoding (entity-paths.ts), checked on the file's bytes too.
  const types = field.accept ? ", of a type the part's encoding lists" : '';
  const notes = [
    field.description,
    `A file of at most ${limit} bytes${types}.`,
    field.access.read ? 'Shown only to actors its read rule allows.' : undefined,
    field.access.write ? 'Written only by actors its write rule allows.' : undefined,
  ];
  return { type: 'string', format: 'binary', description: notes.filter(Boolean).join(' ') };
}

/** Whether an entity has file fields: its creates and updates also take multipart/form-data bodies. */
export function takesUploads(entity: Entity): boolean {
  return entity.fields.some((f) => f.type === 'file');
}

/** The encoding of a multipart body's file parts: the types each accepts. */
export function uploadEncoding(entity: Entity): Schema | undefined {
  const accepting = entity.fields.filter((f) => f.type === 'file' && f.accept?.length);
  if (!accepting.length) return undefined;
  return Object.fromEntries(accepting.map((f) => [f.name, { contentType: (f.accept ?? []).join(', ') }]));
}

export function entitySchemas(bp: Blueprint, entity: Entity): Record<string, Schema> {
  // Ids are the server's (ULID, UUID) or the database's (Integer); a Text id may come with a create.
  const clientKey = entity.primaryKey.type === 'Text';
  const all = Object.fromEntries(
    entity.fields.map((f) => [
      f.name,
      f.primaryKey && !clientKey ? { ...fieldSchema(bp, f, entity), readOnly: true } : fieldSchema(bp, f, entity),
    ]),
  );
  const writable = entity.fields.filter((f) => !f.primaryKey && !f.commandOnly);
  const input = Object.fromEntries(
    writable.map((f) => [f.name, f.type === 'file' ? FILE_IN_JSON : fieldSchema(bp, f, entity)]),
  );
  const key = {
    ...fieldSchema(bp, entity.primaryKey, entity),
    description: 'The Text id; when absent, a ULID is generated.',
  };
  const createInput = clientKey ? { [entity.primaryKey.name]: key, ...input } : input;
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
      properties: createInput,
      required: writable.filter((f) => f.required && !f.default).map((f) => f.name),
      additionalProperties: false,
    },
    [`${entity.name}Update`]: {
      type: 'object',
      description: 'The given fields change; others keep their values.',
      properties: input,
      additionalProperties: false,
    },
    ...(takesUploads(entity) ? uploadSchemas(bp, entity, createInput, writable) : {}),
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

/** The signed-in actor (or null) and the CSRF token, as GET /api/auth/session returns them. */
export const SESSION_SCHEMA: Schema = {
  type: 'object',
  properties: {
    actor: {
      oneOf: [
        { type: 'null' },
        {
          type: 'object',
          properties: {
            kind: { type: 'string' },
            type: { type: 'string', description: "The kind under Zebric's name" },
            id: { type: 'string' },
            effectiveId: { type: 'string', description: 'delegatedBy when set, else id' },
            email: { type: 'string' },
            roles: { type: 'array', items: { type: 'string' } },
          },
          required: ['kind', 'id', 'roles'],
        },
      ],
    },
    // API keys skip CSRF (runtime-lib/auth/email/routes.ts): they are given no token.
    csrfToken: {
      type: ['string', 'null'],
      description: 'The CSRF token of mutations; null for an API key, which needs none',
    },
  },
  required: ['actor', 'csrfToken'],
};

/** What GET /healthz and GET /readyz answer when all is well. */
export const HEALTH_STATUS_SCHEMA: Schema = {
  type: 'object',
  properties: { status: { type: 'string', const: 'ok' } },
  required: ['status'],
  additionalProperties: false,
};

/** The error envelope every failure is sent in (runtime-lib/core/errors.ts). */
export const ERROR_SCHEMA: Schema = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_CODES) },
        message: { type: 'string' },
        retryable: {
          type: 'boolean',
          description: 'Retry (same Idempotency-Key, honouring Retry-After) only when true.',
        },
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

export const AUDIT_SCHEMAS: Record<string, Schema> = {
  AuditRecord: {
    type: 'object',
    properties: {
      id: { type: 'string' },
      at: { type: 'string', format: 'date-time' },
      operation: {
        type: 'string',
        description: '"Entity.create|update|delete", "command:Name", or "command:Name:<handler action>"',
      },
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
    required: [
      'id',
      'at',
      'operation',
      'entity',
      'recordId',
      'actorId',
      'credentialId',
      'delegatedBy',
      'agentRunId',
      'idempotencyKey',
      'traceId',
      'changes',
      'detail',
    ],
    additionalProperties: false,
  },
  AuditList: {
    type: 'object',
    properties: {
      items: { type: 'array', items: ref('AuditRecord') },
      limit: { type: 'integer', minimum: 1, maximum: 1000 },
      offset: { type: 'integer', minimum: 0 },
      hasMore: { type: 'boolean' },
    },
    required: ['items', 'limit', 'offset', 'hasMore'],
    additionalProperties: false,
  },
};

/**
 * The multipart/form-data bodies of an entity with file fields: each field a part, a file field's
 * part a file; text parts are read as their field's JSON value (a number, true or false, JSON). A
 * browser form without JavaScript sends its CSRF token as a `_csrf` part before the first file.
 */
function uploadSchemas(
  bp: Blueprint,
  entity: Entity,
  createInput: Record<string, Schema>,
  writable: readonly Field[],
): Record<string, Schema> {
  const parts = (input: Record<string, Schema>) => {
    const out: Record<string, Schema> = {};
    if (bp.auth.providers.includes('email'))
      out._csrf = { type: 'string', description: "A signed-in browser's CSRF token; before the first file part" };
    for (const [name, schema] of Object.entries(input)) {
      const field = entity.fields.find((f) => f.name === name);
      out[name] = field?.type === 'file' ? fileUploadSchema(field) : schema;
    }
    return out;
  };
  const { [entity.primaryKey.name]: _key, ...updateInput } = createInput;
  return {
    [`${entity.name}CreateUpload`]: {
      type: 'object',
      properties: parts(createInput),
      required: writable.filter((f) => f.required && !f.default).map((f) => f.name),
      additionalProperties: false,
    },
    [`${entity.name}UpdateUpload`]: {
      type: 'object',
      description: 'The given fields change; others keep their values.',
      properties: parts(updateInput),
      additionalProperties: false,
    },
  };
}
