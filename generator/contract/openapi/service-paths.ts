// Paths that do not come from one entity or command: the document itself, health checks, sign-up
// (unless auth.signup = false), sign-in and sessions (email provider), and the audit trail.

import type { Blueprint, Entity } from '../../model/types.ts';
import { errorResponse, OFFSET_SCHEMA, ref, schemeNames, type Schema } from './common.ts';
import { EMAIL_SCHEMA, fieldSchema } from './schemas.ts';

/** The document describes itself. */
export const META_PATHS: Record<string, Schema> = {
  '/api/openapi.json': {
    get: {
      operationId: 'getOpenApi',
      tags: ['Meta'],
      summary: 'This OpenAPI description',
      responses: {
        '200': { description: 'OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object' } } } },
      },
    },
  },
  // Probes for orchestrators: no credentials, nothing about the app beyond "ok".
  '/healthz': {
    get: {
      operationId: 'getHealth',
      tags: ['Meta'],
      summary: 'Liveness: the process answers',
      responses: { '200': { description: 'Alive', content: { 'application/json': { schema: ref('HealthStatus') } } } },
    },
  },
  '/readyz': {
    get: {
      operationId: 'getReadiness',
      tags: ['Meta'],
      summary: 'Readiness: storage answers, so requests can be served',
      responses: {
        '200': { description: 'Ready', content: { 'application/json': { schema: ref('HealthStatus') } } },
        '503': errorResponse('ServiceUnavailable'),
      },
    },
  },
};

/** JSON sign-in and sign-up need no CSRF token (a browser cannot post JSON cross-site unasked). */
const FORM_ONLY_CSRF: Schema = { description: 'The CSRF token of a form post; a JSON body needs none' };

export function authPaths(bp: Blueprint): Record<string, Schema> {
  const credentials = {
    required: true,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          properties: {
            email: EMAIL_SCHEMA,
            password: { type: 'string', minLength: 12, maxLength: 1024 },
            _csrf: FORM_ONLY_CSRF,
          },
          required: ['email', 'password'],
        },
      },
      'application/x-www-form-urlencoded': {
        schema: {
          type: 'object',
          properties: {
            email: { type: 'string' },
            password: { type: 'string' },
            _csrf: { type: 'string' },
            next: { type: 'string' },
          },
          required: ['email', 'password'],
        },
      },
    },
  };
  const session = { 'application/json': { schema: ref('Session') } };
  const open = [{}];
  // Sign-in and sign-up start a browser session, which a request with an Authorization header
  // never reaches (API keys skip the session middleware): such a request is refused.
  const noKey = 'Send no Authorization header: with one the request is 400 SESSION_WITH_API_KEY.';
  const records = bp.auth.userRecords;
  const signup = {
    post: {
      operationId: 'signUp',
      tags: ['Auth'],
      summary: records
        ? `Create a ${records.entity} record (its ${records.loginField} is the e-mail) with a password, ` +
          'and start a session'
        : 'Create an account (no roles) and start a session',
      description: noKey,
      security: open,
      requestBody: records ? signupBody(bp, credentials) : credentials,
      responses: {
        '201': { description: 'Signed up and signed in', content: session },
        '400': errorResponse('BadRequest'),
        '403': errorResponse('Forbidden'),
        '409': errorResponse('Conflict'),
      },
    },
  };
  return {
    // With auth.signup = false the users command adds people; there is no route for it.
    ...(bp.auth.signup ? { '/api/auth/signup': signup } : {}),
    '/api/auth/login': {
      post: {
        operationId: 'logIn',
        tags: ['Auth'],
        summary: 'Start a session (a new session id)',
        description: noKey,
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

/**
 * Sign-up when people are User records: e-mail and password, and the record's fields an anonymous
 * caller may set (runtime-lib/auth/email/user-records.ts): neither its id, its role fields,
 * command-only fields nor fields behind a write rule. Anything else is refused.
 */
function signupBody(bp: Blueprint, credentials: { content: Record<string, { schema: Schema }> }): Schema {
  const records = bp.auth.userRecords as NonNullable<Blueprint['auth']['userRecords']>;
  const user = bp.entities.find((e) => e.name === records.entity) as Entity;
  const fields = user.fields.filter(
    (f) =>
      !f.primaryKey &&
      !f.commandOnly &&
      !records.roleFields.includes(f.name) &&
      f.name !== records.loginField &&
      f.type !== 'file' &&
      !f.access.write,
  );
  const json = credentials.content['application/json'].schema as {
    properties: Record<string, Schema>;
    required: string[];
  };
  return {
    required: true,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          properties: { ...json.properties, ...Object.fromEntries(fields.map((f) => [f.name, fieldSchema(bp, f)])) },
          required: [...json.required, ...fields.filter((f) => f.required && !f.default).map((f) => f.name)],
          additionalProperties: false,
        },
      },
      'application/x-www-form-urlencoded': credentials.content['application/x-www-form-urlencoded'],
    },
  };
}

export function auditPath(bp: Blueprint): Record<string, Schema> {
  const schemes = schemeNames(bp);
  return {
    '/api/audit': {
      get: {
        operationId: 'listAudit',
        tags: ['Audit'],
        summary: 'The audit trail of one record, newest first (for actors who may read the record)',
        ...(schemes.length ? { security: schemes.map((name) => ({ [name]: [] })) } : {}),
        parameters: [
          {
            name: 'entity',
            in: 'query',
            required: true,
            schema: { type: 'string', enum: bp.entities.map((e) => e.name) },
          },
          { name: 'recordId', in: 'query', required: true, schema: { type: 'string' } },
          {
            name: 'limit',
            in: 'query',
            required: false,
            schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
          },
          { name: 'offset', in: 'query', required: false, schema: OFFSET_SCHEMA },
        ],
        responses: {
          '200': { description: 'Audit records', content: { 'application/json': { schema: ref('AuditList') } } },
          '400': errorResponse('BadRequest'),
          '401': errorResponse('Unauthenticated'),
          '403': errorResponse('Forbidden'),
          '404': errorResponse('NotFound'),
          '503': errorResponse('ServiceUnavailable'),
        },
      },
    },
  };
}
