// The MCP SDK's side of POST /mcp, loaded by the first request (mcp/endpoint.ts): the SDK's
// low-level Server, so that tools carry the JSON Schemas bp generated from the blueprint as they
// are, and its Streamable HTTP transport without sessions, answering in plain JSON.

import type { ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ApiRequest } from '../http/request.ts';
import type { McpServerInfo } from './endpoint.ts';
import type { Toolbox } from './tools.ts';

/** Serves one JSON-RPC POST (its body parsed) with a server and transport made for it alone. */
export async function serveMcp(info: McpServerInfo, tools: Toolbox, req: ApiRequest, res: ServerResponse) {
  const server = new Server(info, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools.listing] }));
  server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
    const result = await tools.call(req, params.name, params.arguments);
    if (!result) throw new McpError(ErrorCode.InvalidParams, `no tool ${params.name}`);
    return result;
  });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.once('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
}
