// POST /api/commands/<operation_id>/:id: runs a command through the one executor
// (commands/executor.ts). The MCP tools (http/mcp-routes.ts) call the same `execute`.

import type { ServerResponse } from 'node:http';
import { Router } from 'express';
import { executeCommand, type CommandResult, type CommandRuntime, type CommandSpec } from '../commands/executor.ts';
import type { RequestContext } from '../data/entity-store.ts';
import { jsonBody } from './body.ts';
import { requestContext } from './context.ts';
import { matched } from './pipeline.ts';
import type { ApiRequest } from './request.ts';
import { sendStored } from './respond.ts';

/** A command's HTTP route, POST /api/commands/<operationId>/<id>, as the front door calls it. */
export interface CommandRoute {
  operationId: string;
  /** The route's name in traces. */
  name: string;
  /** Runs with the body parsed (jsonBody). */
  run(req: ApiRequest, res: ServerResponse, recordId: string): Promise<void>;
  /** The command on `recordId` with `input`, for the caller of `ctx`: what `run` sends. */
  execute(ctx: RequestContext, recordId: string, input: unknown): Promise<CommandResult>;
}

export function commandRoutes(rt: CommandRuntime, commands: ReadonlyArray<CommandSpec<never, never>>): CommandRoute[] {
  return commands.map((spec) => {
    const execute = (ctx: RequestContext, recordId: string, input: unknown) =>
      executeCommand(rt, spec, { ...ctx, recordId, input });
    return {
      operationId: spec.operationId,
      name: `command.${spec.operationId}`,
      execute,
      async run(req, res, recordId) {
        sendStored(res, await execute(requestContext(req, { mutation: true }), recordId, req.body));
      },
    };
  });
}

/** The Express form of the command routes, for the URL forms the front door leaves to it. */
export function commandRouter(routes: readonly CommandRoute[]): Router {
  // Operation ids are exact identifiers: START_TICKET is not start_ticket.
  const router = Router({ caseSensitive: true });
  for (const route of routes) {
    router.post(`/api/commands/${route.operationId}/:id`, matched(route.name), jsonBody, (req, res) =>
      route.run(req, res, String(req.params.id)),
    );
  }
  return router;
}
