// src/mcp.ts: the MCP tools of POST /mcp as contract/mcp-tools.ts plans them from openapi.json's
// operations, with the server's name and the origins a browser may call /mcp from.

import type { McpTool } from '../contract/mcp-tools.ts';
import type { Blueprint } from '../model/types.ts';
import { render } from './templates.ts';
import { tsLiteral } from './ts-literal.ts';

export function emitMcp(bp: Blueprint, tools: readonly McpTool[]): string {
  return render('app/src/mcp.ts.hbs', {
    server: tsLiteral({ name: bp.slug, version: bp.project.version }),
    // Left out when empty: no browser origin may call /mcp then.
    origins:
      bp.auth.trustedOrigins.length > 0 &&
      tsLiteral(bp.auth.trustedOrigins, { lead: 'export const MCP_ORIGINS: string[] = '.length, trail: 1 }),
    tools: tsLiteral(tools, { lead: 'export const MCP_TOOLS: McpToolSpec[] = '.length, trail: 1 }),
  });
}
