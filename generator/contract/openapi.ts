// The app's OpenAPI 3.1 document: every route it serves, with request and response schemas and
// the error envelope, built as data from the parts under openapi/. emit/openapi.ts writes it as
// openapi.json, and the MCP tools (mcp-tools.ts) take their input schemas from its operations.

import type { Blueprint } from '../model/types.ts';
import { GENERATED_HEADER } from '../header.ts';
import { commandPath } from './openapi/command-paths.ts';
import { errorResponse, type Schema } from './openapi/common.ts';
import { entityPaths, uploadsPath } from './openapi/entity-paths.ts';
import { errorResponses } from './openapi/responses.ts';
import {
  AUDIT_SCHEMAS,
  entitySchemas,
  takesUploads,
  ERROR_SCHEMA,
  HEALTH_STATUS_SCHEMA,
  SESSION_SCHEMA,
} from './openapi/schemas.ts';
import { auditPath, authPaths, META_PATHS } from './openapi/service-paths.ts';
import { JOB_SCHEMA, jobPath, SKILL_INDEX_PATH, skillPaths } from './openapi/skill-paths.ts';
import { webhookPaths } from './openapi/webhook-paths.ts';
import { hasWebhooks, startsJobs } from '../model/workflows.ts';

/** The document as data: the MCP tools (contract/mcp-tools.ts) take their input schemas from its operations. */
export function openApiDocument(bp: Blueprint): Schema {
  const email = bp.auth.providers.includes('email');
  const paths: Record<string, Schema> = { ...META_PATHS };
  const schemas: Record<string, Schema> = {};
  for (const entity of bp.entities) {
    Object.assign(paths, entityPaths(bp, entity));
    Object.assign(schemas, entitySchemas(bp, entity));
  }
  if (email) schemas.Session = SESSION_SCHEMA;
  schemas.Error = ERROR_SCHEMA;
  schemas.HealthStatus = HEALTH_STATUS_SCHEMA;
  Object.assign(paths, uploadsPath(bp));
  if (email) Object.assign(paths, authPaths(bp));
  for (const command of bp.commands) Object.assign(paths, commandPath(bp, command));
  Object.assign(paths, auditPath(bp));
  Object.assign(paths, SKILL_INDEX_PATH);
  // Jobs exist when a skill action starts a workflow that runs as one.
  if (startsJobs(bp)) {
    Object.assign(paths, jobPath(bp));
    schemas.WorkflowJob = JOB_SCHEMA;
  }
  // An action at an entity's own path and method is served by the entity's route, as in Zebric.
  for (const [p, item] of Object.entries(skillPaths(bp))) {
    const existing = (paths[p] ??= {}) as Schema;
    for (const [method, op] of Object.entries(item)) existing[method] ??= op;
  }
  declareUnauthenticated(paths);
  Object.assign(paths, webhookPaths(bp));
  Object.assign(schemas, AUDIT_SCHEMAS);
  return {
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
      ...(email
        ? [{ name: 'Auth', description: `${bp.auth.signup ? 'Sign-up, sign-in' : 'Sign-in'} and sessions of people` }]
        : []),
      ...bp.entities.map((e) => ({
        name: e.name,
        description: e.description ?? `${e.name} records (/api/${e.collection})`,
      })),
      ...bp.skills.map((s) => ({ name: s.name, description: s.description ?? `Skill ${s.name}` })),
      ...(hasWebhooks(bp) ? [{ name: 'Webhooks', description: 'Deliveries that start workflows' }] : []),
      ...(bp.entities.some(takesUploads) ? [{ name: 'Uploads', description: 'Files of file fields' }] : []),
      { name: 'Audit', description: 'Who changed what, and why' },
      { name: 'Meta', description: 'About this API, and health checks' },
    ],
    paths,
    components: {
      schemas,
      responses: errorResponses(bp),
      headers: {
        'X-Trace-ID': {
          description: 'Trace id of this request (admin server /traces/<id>)',
          schema: { type: 'string' },
        },
      },
      ...securitySchemes(bp),
    },
  };
}

/**
 * Every request through the pipeline may be refused 401: an Authorization header or session
 * cookie the app does not accept is refused on every route, never read as anonymous (runtime-lib
 * auth/authenticate.ts), public ones included. The probes answer before the pipeline, and webhook
 * deliveries are served before credentials are read (their own 401 is a bad signature).
 */
function declareUnauthenticated(paths: Record<string, Schema>): void {
  for (const [p, item] of Object.entries(paths)) {
    if (p === '/healthz' || p === '/readyz') continue;
    for (const [method, op] of Object.entries(item)) {
      if (method === 'parameters') continue;
      const responses = (op as { responses: Record<string, Schema> }).responses;
      responses['401'] ??= errorResponse('Unauthenticated');
    }
  }
}

function securitySchemes(bp: Blueprint): { securitySchemes?: Record<string, Schema> } {
  const schemes: Record<string, Schema> = {};
  if (bp.auth.apiKeys.length) {
    schemes.apiKey = {
      type: 'http',
      scheme: 'bearer',
      description: 'An API key of auth.apiKeys. Operations list the scopes the key must hold.',
    };
  }
  if (bp.auth.providers.includes('email')) {
    schemes.session = {
      type: 'apiKey',
      in: 'cookie',
      // The production name: the __Host- prefix binds the cookie to this host, Secure, path /.
      name: `__Host-${bp.slug}.sid`,
      description: `From POST /api/auth/login (${bp.slug}.sid outside production); mutations send X-CSRF-Token.`,
    };
  }
  return Object.keys(schemes).length ? { securitySchemes: schemes } : {};
}
