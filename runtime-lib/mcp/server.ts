// The MCP SDK's side of POST /mcp, loaded by the first request (mcp/endpoint.ts): the SDK's
// low-level Server, so that tools carry the JSON Schemas bp generated from the blueprint as they
// are, and its Streamable HTTP transport without sessions, answering in plain JSON.
//
// tools/call is answered by the fallback handler, which gets the request as sent: a handler set
// with setRequestHandler has it parsed by the SDK first, and a malformed `name` or `arguments`
// then fails as -32603 (internal error) carrying the schema library's dump of issues. Invalid
// params are the client's mistake: -32602, with a message saying which one.

import type { ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ApiRequest } from '../http/request.ts';
import type { McpServerInfo } from './endpoint.ts';
import type { Toolbox } from './tools.ts';

/** Serves one JSON-RPC POST (its body parsed) with a server and transport made for it alone. */
export async function serveMcp(info: McpServerInfo, tools: Toolbox, req: ApiRequest, res: ServerResponse) {
  const server = new Server(info, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools.listing] }));
  server.fallbackRequestHandler = async (request) => {
    if (request.method !== 'tools/call') throw new McpError(ErrorCode.MethodNotFound, `no method ${request.method}`);
    const { name, args } = toolCall(request.params);
    const result = await tools.call(req, name, args);
    if (!result) throw new McpError(ErrorCode.InvalidParams, `no tool ${name}`);
    return result;
  };
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.once('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
}

/** tools/call's params: a tool name and, if any, an object of arguments (the tool checks them). */
function toolCall(params: unknown): { name: string; args: unknown } {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    throw new McpError(ErrorCode.InvalidParams, 'tools/call params must be an object with a "name"');
  }
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string' || name === '') {
    throw new McpError(ErrorCode.InvalidParams, 'tools/call "name" must be a tool name');
  }
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) {
    throw new McpError(ErrorCode.InvalidParams, 'tools/call "arguments" must be an object of named arguments');
  }
  return { name, args };
}
