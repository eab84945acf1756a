// POST /mcp: the app's skill actions and commands as MCP tools (mcp/tools.ts), over Streamable
// HTTP without sessions: each POST gets a server and transport of its own, and nothing outlives it.
//
// Before anything of MCP runs, the request must pass three checks, each answered with the app's
// error envelope:
//  - an Origin header, when present, must be one of auth.trustedOrigins (403 ORIGIN_NOT_ALLOWED):
//    the defence against DNS rebinding, where a page of any site reaches a server on the user's
//    machine under a name the attacker controls, so that the app's own host proves nothing;
//  - the method must be POST (405 METHOD_NOT_ALLOWED, with Allow): no server-sent event streams;
//  - the caller must be an API key (401 UNAUTHENTICATED): MCP is the agents' surface, and a
//    browser's session cookie must not ride along on a request to it.
//
// The MCP SDK costs about 300 ms and 30 MB when loaded, so it is loaded by the first request to
// /mcp (the production build puts it in a chunk of its own), never at start.

import type { ServerResponse } from 'node:http';
import { Router } from 'express';
import { AppError } from '../core/errors.ts';
import { jsonBody } from '../http/body.ts';
import type { CommandRoute } from '../http/command-routes.ts';
import { matched } from '../http/pipeline.ts';
import type { ApiRequest, Middleware } from '../http/request.ts';
import type { Log } from '../http/respond.ts';
import type { SkillActionRunner } from '../http/skill-routes.ts';
import { type McpToolSpec, type Toolbox, toolbox } from './tools.ts';

/** The server's name and version, as MCP's initialize answers them. */
export interface McpServerInfo {
  name: string;
  version: string;
}

export interface McpOptions {
  info: McpServerInfo;
  tools: readonly McpToolSpec[];
  skills: readonly SkillActionRunner[];
  commands: readonly CommandRoute[];
  /** auth.trustedOrigins: the only origins a browser may call /mcp from; none when absent. */
  trustedOrigins?: readonly string[];
  log?: Log;
}

type Serve = (info: McpServerInfo, tools: Toolbox, req: ApiRequest, res: ServerResponse) => Promise<void>;

/** The route of /mcp. Throws when a tool is bound to nothing the app serves. */
export function mcpRouter(options: McpOptions): Router {
  const tools = toolbox(options.tools, options.skills, options.commands, options.log ?? ((l) => console.error(l)));
  const trusted = new Set((options.trustedOrigins ?? []).map(originOf));
  let serve: Promise<Serve> | undefined;
  const load = () =>
    (serve ??= import('./server.ts').then(
      (m) => m.serveMcp,
      (err: unknown) => {
        // The next request tries again: a failed load is not remembered.
        serve = undefined;
        throw err;
      },
    ));
  const router = Router({ caseSensitive: true, strict: true });
  router.all('/mcp', matched('mcp'), admit(trusted), jsonBody, async (req, res) => {
    await (
      await load()
    )(options.info, tools, req as ApiRequest, res);
  });
  return router;
}

function admit(trusted: ReadonlySet<string>): Middleware {
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (origin !== undefined && !trusted.has(origin)) {
      return next(
        new AppError(
          'ORIGIN_NOT_ALLOWED',
          `/mcp does not take requests from ${origin}; add the origin to auth.trustedOrigins if it is yours`,
        ),
      );
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      return next(new AppError('METHOD_NOT_ALLOWED', '/mcp takes POST only (Streamable HTTP without sessions)'));
    }
    if (req.actor.kind !== 'agent') {
      res.setHeader('WWW-Authenticate', 'Bearer');
      return next(new AppError('UNAUTHENTICATED', '/mcp takes an API key: send "Authorization: Bearer <API key>"'));
    }
    next();
  };
}

/** A trusted origin as browsers send it (scheme, host, port; lower case, no trailing slash). */
function originOf(value: string): string {
  const origin = URL.canParse(value) ? new URL(value).origin : 'null';
  if (origin === 'null') throw new Error(`auth.trustedOrigins: "${value}" is not an origin`);
  return origin;
}
