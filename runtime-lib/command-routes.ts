// HTTP surface of commands and audit: POST /api/commands/<operation_id>/:id runs a command
// through the one executor; GET /api/audit lists a record's audit trail for actors who may read
// the record.

import type { ServerResponse } from 'node:http';
import { Router } from 'express';
import { executeCommand, type CommandRuntime, type CommandSpec } from './commands.ts';
import type { AuditLog } from './audit.ts';
import { type EntityStore, parseListQuery, type RequestContext } from './entity-store.ts';
import { AppError } from './errors.ts';
import { type ApiRequest, jsonBody, matched, sendJson, sendStored } from './http.ts';
import { idempotencyKeyOf } from './idempotency.ts';

const RUN_ID = /^[\x21-\x7e]{1,255}$/;

/** The request's actor, trace and correlation ids (X-Agent-Run-ID, Idempotency-Key). */
export function requestContext(req: ApiRequest, options: { mutation: boolean }): RequestContext {
  const runId = header(req, 'x-agent-run-id');
  if (runId !== undefined && !RUN_ID.test(runId)) {
    throw new AppError('VALIDATION_FAILED', 'X-Agent-Run-ID must be 1 to 255 visible ASCII characters', {
      details: [{ field: 'X-Agent-Run-ID', code: 'INVALID_HEADER', message: 'must be 1 to 255 visible ASCII characters' }],
    });
  }
  return {
    actor: req.actor,
    trace: req.trace,
    agentRunId: runId,
    idempotencyKey: options.mutation ? idempotencyKeyOf(header(req, 'idempotency-key'), req.actor) : undefined,
    sessionId: req.sessionId,
  };
}

/** A custom header's value (node joins repeated ones with ", "). */
function header(req: ApiRequest, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** A command's HTTP route, POST /api/commands/<operationId>/<id>, as the front door calls it. */
export interface CommandRoute {
  operationId: string;
  /** The route's name in traces. */
  name: string;
  /** Runs with the body parsed (jsonBody). */
  run(req: ApiRequest, res: ServerResponse, recordId: string): Promise<void>;
}

export function commandRoutes(rt: CommandRuntime, commands: ReadonlyArray<CommandSpec<never, never>>): CommandRoute[] {
  return commands.map((spec) => ({
    operationId: spec.operationId,
    name: `command.${spec.operationId}`,
    async run(req, res, recordId) {
      sendStored(res, await executeCommand(rt, spec, { ...requestContext(req, { mutation: true }), recordId, input: req.body }));
    },
  }));
}

/** The Express form of the command routes, for the URL forms the front door leaves to it. */
export function commandRouter(routes: readonly CommandRoute[]): Router {
  // Operation ids are exact identifiers: START_TICKET is not start_ticket.
  const router = Router({ caseSensitive: true });
  for (const route of routes) {
    router.post(`/api/commands/${route.operationId}/:id`, matched(route.name), jsonBody, (req, res) => route.run(req, res, String(req.params.id)));
  }
  return router;
}

export function auditRoutes(audit: AuditLog, stores: ReadonlyMap<string, EntityStore>): Router {
  const router = Router();
  router.get('/api/audit', matched('audit.list'), (req, res) => {
    const { entity, recordId, ...paging } = req.query as Record<string, unknown>;
    if (typeof entity !== 'string' || typeof recordId !== 'string') {
      throw new AppError('INVALID_QUERY', 'entity and recordId are required', {
        details: [{ field: typeof entity !== 'string' ? 'entity' : 'recordId', code: 'REQUIRED', message: 'required' }],
      });
    }
    const store = stores.get(entity);
    if (!store) throw new AppError('INVALID_QUERY', `unknown entity "${entity}"`, { details: [{ field: 'entity', code: 'UNKNOWN_ENTITY', message: `no entity ${entity}` }] });
    const ctx = requestContext(req, { mutation: false });
    // The trail is as private as the record: the actor must be able to read it.
    store.load(ctx, recordId, store.access.filter(ctx.actor, 'read'));
    const { limit, offset } = parseListQuery(paging);
    const page = audit.list(req.trace, entity, recordId, limit, offset);
    sendJson(res, 200, { items: page.items, limit, offset, hasMore: page.hasMore });
  });
  return router;
}
