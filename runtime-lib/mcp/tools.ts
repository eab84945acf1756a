// The MCP tools of the app (src/mcp.ts lists them): each bound to the skill action or command it
// runs, through the very function its REST route runs (http/skill-routes.ts skillActions,
// http/command-routes.ts execute). A tool call only turns its arguments into that function's call:
// the caller's scopes, the entity's access rules, the command's policy and availableWhen, the
// idempotency store and the audit trail are the route's own. Nothing here loads the MCP SDK.
//
// Arguments are one flat object of named arguments, as agents call tools (`{ vehicleId, destination }`):
// a skill action's path parameters, then its query parameters (a list) or its body keys (any other
// argument); a command's `recordId`, and its input (any other argument). The generator refuses a
// name two of them share (MCP_ARGUMENT_COLLISION), so each argument has one place. Every tool that
// changes data takes a required `idempotencyKey` in place of the Idempotency-Key header; the same
// key and arguments replay the stored result, over MCP or REST.

import { AppError, envelope, type ErrorDetail } from '../core/errors.ts';
import { pathParams } from '../core/path-params.ts';
import { PROTOTYPE_KEYS } from '../data/fields.ts';
import { idempotencyKeyArgument } from '../data/idempotency.ts';
import type { CommandRoute } from '../http/command-routes.ts';
import { callContext } from '../http/context.ts';
import type { ApiRequest } from '../http/request.ts';
import { type Log, reportedError } from '../http/respond.ts';
import { type ActionAnswer, hasBody, type SkillActionRunner } from '../http/skill-routes.ts';

/** MCP's tool annotations: hints for clients, taken from the action's declared risk. */
export interface McpToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A tool as src/mcp.ts declares it. */
export interface McpToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments, built from the blueprint (the schemas of openapi.json). */
  inputSchema: { type: 'object' } & Readonly<Record<string, unknown>>;
  annotations: McpToolAnnotations;
  /** What the tool runs: a skill action, or a command by its operation id. */
  runs: { skill: string; action: string } | { command: string };
}

/** A tool call's answer, in MCP's CallToolResult form. */
export interface ToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta: Record<string, unknown>;
}

/** The tools as a request serves them: their listing, and a call for one of them. */
export interface Toolbox {
  listing: ReadonlyArray<Omit<McpToolSpec, 'runs'>>;
  /** Undefined when no tool has this name. */
  call(req: ApiRequest, name: string, args: unknown): Promise<ToolResult | undefined>;
}

type Invoke = (req: ApiRequest, args: Readonly<Record<string, unknown>>) => Promise<ActionAnswer>;

/**
 * Binds each declared tool to what it runs. Throws when one names an action the app does not
 * serve or a command it does not have: the tool table and the app were generated apart.
 */
export function toolbox(
  specs: readonly McpToolSpec[],
  runners: readonly SkillActionRunner[],
  commands: readonly CommandRoute[],
  log: Log,
): Toolbox {
  const invokers = new Map<string, Invoke>();
  for (const spec of specs) {
    const { runs } = spec;
    if ('command' in runs) {
      const route = commands.find((c) => c.operationId === runs.command);
      if (!route) throw new Error(`MCP tool ${spec.name}: no command ${runs.command}`);
      invokers.set(spec.name, commandInvoke(route));
    } else {
      const runner = runners.find((r) => r.skill.name === runs.skill && r.action.name === runs.action);
      if (!runner) throw new Error(`MCP tool ${spec.name}: skill action ${runs.skill}.${runs.action} is not served`);
      invokers.set(spec.name, skillInvoke(runner));
    }
  }
  const listing = specs.map(({ runs: _runs, ...tool }) => tool);
  return {
    listing,
    async call(req, name, args) {
      const invoke = invokers.get(name);
      if (!invoke) return undefined;
      // Within the trace of the POST: the route's own spans (database, audit) follow it.
      const span = req.trace?.startSpan('mcp.tool', 'mcp', { tool: name }, req.rootSpanId);
      const traceId = req.trace?.traceId ?? '';
      try {
        const answer = await invoke(req, argumentObject(args));
        span?.end({ status: answer.status, replayed: answer.replayed });
        return answered(answer, traceId);
      } catch (err) {
        const appError = reportedError(err, req, log, `MCP tool ${name}`);
        span?.end({ status: appError.status, error: appError.code });
        const body = envelope(appError, traceId);
        return { ...text(body), structuredContent: { ...body }, isError: true, _meta: meta(appError.status, traceId) };
      }
    },
  };
}

function skillInvoke(runner: SkillActionRunner): Invoke {
  const params = pathParams(runner.action.path);
  // What is left once the path parameters (and idempotencyKey) are taken: a list's query, the body.
  const rest = runner.action.action === 'list' ? 'query' : hasBody(runner.action) ? 'body' : undefined;
  const named = new Set([...params, ...(runner.mutation ? ['idempotencyKey'] : [])]);
  return (req, args) => {
    const others = without(args, named);
    if (!rest) refuseUnknown(others, named);
    return runner.run({
      actor: req.actor,
      params: pathValues(args, params),
      query: rest === 'query' ? queryValues(others) : {},
      body: rest === 'body' ? bodyOf(others) : undefined,
      context: ({ mutation }) =>
        callContext(req, () => (mutation ? idempotencyKeyArgument(args.idempotencyKey) : undefined)),
    });
  };
}

const COMMAND_ARGUMENTS = new Set(['recordId', 'idempotencyKey']);

function commandInvoke(route: CommandRoute): Invoke {
  return (req, args) => {
    const recordId = args.recordId;
    if (recordId === undefined) throw invalidAll([{ field: 'recordId', code: 'REQUIRED', message: 'is required' }]);
    if (typeof recordId !== 'string' || recordId === '') throw invalid('recordId', 'must be a non-empty string');
    const ctx = callContext(req, () => idempotencyKeyArgument(args.idempotencyKey));
    return route.execute(ctx, recordId, bodyOf(without(args, COMMAND_ARGUMENTS)));
  };
}

/** The arguments but those named. */
function without(args: Readonly<Record<string, unknown>>, names: ReadonlySet<string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([k]) => !names.has(k)));
}

/** A body (or a command's input) of the arguments left: none when none is left, as REST without a body. */
function bodyOf(rest: Record<string, unknown>): Record<string, unknown> | undefined {
  return Object.keys(rest).length ? rest : undefined;
}

/** A stored answer as a tool result; a stored failure (a replayed 4xx) is an error result. */
function answered(answer: ActionAnswer, traceId: string): ToolResult {
  const { status, body, location, replayed } = answer;
  const structured = typeof body === 'object' && body !== null && !Array.isArray(body);
  return {
    ...text(body ?? null),
    ...(structured ? { structuredContent: { ...(body as Record<string, unknown>) } } : {}),
    ...(status >= 400 ? { isError: true } : {}),
    _meta: { ...meta(status, traceId), 'bp/replayed': replayed, ...(location ? { 'bp/location': location } : {}) },
  };
}

function text(value: unknown): Pick<ToolResult, 'content'> {
  return { content: [{ type: 'text', text: JSON.stringify(value) }] };
}

/** The HTTP status the REST route would have answered, and the trace to look the call up by. */
function meta(status: number, traceId: string): Record<string, unknown> {
  return { 'bp/status': status, 'bp/traceId': traceId };
}

/**
 * The arguments as an object without prototype keys (absent arguments: none). mcp/server.ts has
 * refused arguments that are not an object (-32602); a caller of `call` other than it may not.
 */
function argumentObject(value: unknown): Readonly<Record<string, unknown>> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid('arguments', 'must be an object');
  }
  const forbidden = Object.keys(value).filter((k) => PROTOTYPE_KEYS.has(k));
  if (forbidden.length) {
    throw new AppError('VALIDATION_FAILED', `arguments may not name ${forbidden.join(', ')}`, {
      details: forbidden.map((k) => ({ field: k, code: 'FORBIDDEN_KEY', message: `"${k}" is not allowed` })),
    });
  }
  return value as Record<string, unknown>;
}

function refuseUnknown(args: Readonly<Record<string, unknown>>, allowed: ReadonlySet<string>): void {
  const unknown = Object.keys(args).filter((k) => !allowed.has(k));
  if (!unknown.length) return;
  const takes = allowed.size ? `it takes ${[...allowed].join(', ')}` : 'it takes none';
  throw new AppError('VALIDATION_FAILED', `unknown argument(s) ${unknown.join(', ')}: ${takes}`, {
    details: unknown.map((k) => ({ field: k, code: 'UNKNOWN_ARGUMENT', message: `unknown argument "${k}"` })),
  });
}

/**
 * The path parameters, each as the text a URL would carry (a number or boolean as written in
 * JSON); as in a URL, none may be empty.
 */
function pathValues(given: Readonly<Record<string, unknown>>, names: readonly string[]): Record<string, string> {
  const issues: ErrorDetail[] = [];
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = scalarText(given[name]);
    const field = name;
    if (given[name] === undefined) issues.push({ field, code: 'REQUIRED', message: 'is required' });
    else if (value === undefined || value === '') {
      issues.push({ field, code: 'INVALID_ARGUMENT', message: 'must be a non-empty string, number or boolean' });
    } else out[name] = value;
  }
  if (issues.length) throw invalidAll(issues);
  return out;
}

/** A list's query parameters: each value as the text of a query string; the list action checks names and values. */
function queryValues(given: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const issues: ErrorDetail[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(given)) {
    const textValue = scalarText(value);
    if (textValue === undefined) {
      issues.push({ field: name, code: 'INVALID_ARGUMENT', message: 'must be a string, number or boolean' });
    } else out[name] = textValue;
  }
  if (issues.length) throw invalidAll(issues);
  return out;
}

function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return String(value);
  return undefined;
}

function invalid(field: string, message: string): AppError {
  return invalidAll([{ field, code: 'INVALID_ARGUMENT', message }]);
}

function invalidAll(issues: ErrorDetail[]): AppError {
  const message = issues.map((i) => `${i.field ?? 'arguments'} ${i.message}`).join('; ');
  return new AppError('VALIDATION_FAILED', message, { details: issues });
}
