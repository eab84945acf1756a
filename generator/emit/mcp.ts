// src/mcp.ts: the MCP tools of POST /mcp (runtime/mcp/), one per skill action and command the app
// serves, named as their operations in openapi.json. Their input schemas are made from those
// operations' own parameters and bodies, references inlined (a tool's schema stands alone), so
// that openapi.json and the tools cannot describe the same input two ways.

import type { Blueprint, Command, Skill, SkillAction } from '../model/types.ts';
import type { Schema } from './openapi/common.ts';
import { openApiDocument } from './openapi.ts';
import { actionRisk } from './skills.ts';
import { render } from './templates.ts';
import { tsLiteral } from './ts-literal.ts';

export interface McpTool {
  name: string;
  description: string;
  inputSchema: Schema;
  annotations: Schema;
  runs: { skill: string; action: string } | { command: string };
}

/** MCP's rule for tool names. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

const IDEMPOTENCY_ARGUMENT: Schema = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x21-\\x7e]+$',
  description:
    'Required: the Idempotency-Key of this change. The same key and arguments return the stored result ' +
    'without running again; a new change needs a new key.',
};

/** Every tool: the served skill actions in blueprint order, then the commands. */
export function mcpTools(bp: Blueprint): McpTool[] {
  const doc = openApiDocument(bp);
  const paths = doc.paths as Record<string, Record<string, Schema | undefined> | undefined>;
  const schemas = (doc.components as { schemas: Record<string, Schema> }).schemas;
  const tools: McpTool[] = [];
  for (const skill of bp.skills) {
    for (const action of skill.actions) {
      const op = paths[action.route]?.[action.method.toLowerCase()];
      // Not served by the skill's route: a pass-through action, a workflow not started by hand, or
      // an action at an entity route's own method and path (that route serves it).
      if (op?.operationId !== `${skill.name}_${action.name}`) continue;
      tools.push(skillTool(skill, action, op, schemas));
    }
  }
  for (const command of bp.commands) {
    const op = paths[`/api/commands/${command.operationId}/{id}`]?.post as Schema;
    tools.push(commandTool(command, op, schemas));
  }
  const seen = new Set<string>();
  for (const { name } of tools) {
    if (!TOOL_NAME.test(name)) throw new Error(`MCP tool "${name}": a tool name is 1 to 128 of A-Z a-z 0-9 _ . -`);
    if (seen.has(name)) throw new Error(`MCP tool "${name}": a skill action and a command share the name`);
    seen.add(name);
  }
  return tools;
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema: Schema;
}

function skillTool(skill: Skill, action: SkillAction, op: Schema, schemas: Record<string, Schema>): McpTool {
  const parameters = (op.parameters ?? []) as Parameter[];
  const group = (where: string) => {
    const list = parameters.filter((p) => p.in === where);
    const required = list.filter((p) => p.required).map((p) => p.name);
    const described = (p: Parameter) => ({
      ...inline(p.schema, schemas),
      ...(p.description ? { description: p.description } : {}),
    });
    const properties = Object.fromEntries(list.map((p) => [p.name, described(p)]));
    return list.length
      ? { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false }
      : undefined;
  };
  const params = group('path');
  const query = action.action === 'list' ? group('query') : undefined;
  const requestBody = op.requestBody as { required?: boolean; content: Record<string, { schema: Schema }> } | undefined;
  const body = requestBody && inline(requestBody.content['application/json'].schema, schemas);
  // As the runtime decides (http/skill-routes.ts): a job is a change whatever the method.
  const mutation = action.workflow !== undefined || !['list', 'get'].includes(action.action as string);
  const risk = actionRisk(action);
  const rest = `${action.method} ${action.route}`;
  return {
    name: `${skill.name}_${action.name}`,
    description: `${action.description ?? defaultDescription(action)} Same as ${rest}.`,
    inputSchema: objectSchema({
      ...(params ? { params: { ...params, description: 'The path parameters' } } : {}),
      ...(query ? { query: { ...query, description: 'The query parameters' } } : {}),
      ...(body ? { body: { ...body, description: 'The JSON body' } } : {}),
      ...(mutation ? { idempotencyKey: IDEMPOTENCY_ARGUMENT } : {}),
    }, [
      ...(params ? ['params'] : []),
      ...(body && requestBody?.required ? ['body'] : []),
      ...(mutation ? ['idempotencyKey'] : []),
    ]),
    annotations: {
      readOnlyHint: risk === 'read',
      // Only a declared risk says a change cannot be undone; `external` leaves MCP's default (it may).
      ...(risk === 'write' ? { destructiveHint: false } : risk === 'destructive' ? { destructiveHint: true } : {}),
      ...(mutation ? { idempotentHint: true } : {}),
      // A workflow may notify the world outside the app; CRUD stays inside its database.
      openWorldHint: risk === 'external' || action.workflow !== undefined,
    },
    runs: { skill: skill.name, action: action.name },
  };
}

function defaultDescription(action: SkillAction): string {
  if (action.workflow !== undefined) return `Starts the workflow ${action.workflow}.`;
  if (action.action === 'list') return `Lists the ${action.entity} records.`;
  const what = { get: 'Reads', create: 'Creates', update: 'Updates', delete: 'Deletes' };
  return `${what[action.action as keyof typeof what]} a ${action.entity} record.`;
}

function commandTool(command: Command, op: Schema, schemas: Record<string, Schema>): McpTool {
  const [id] = op.parameters as Parameter[];
  const requestBody = op.requestBody as { required: boolean; content: Record<string, { schema: Schema }> };
  const input = inline(requestBody.content['application/json'].schema, schemas);
  const text = command.description ?? command.label;
  return {
    name: command.operationId,
    description: `${/[.!?]$/.test(text) ? text : `${text}.`} Same as POST /api/commands/${command.operationId}/{id}.`,
    inputSchema: objectSchema({
      recordId: { ...inline(id.schema, schemas), description: `The ${command.entity} the command runs on` },
      input: { ...input, description: 'The command input' },
      idempotencyKey: IDEMPOTENCY_ARGUMENT,
    }, ['recordId', ...(requestBody.required ? ['input'] : []), 'idempotencyKey']),
    // A command overwrites fields of its record: MCP's default (it may destroy) stands.
    annotations: { title: command.label, readOnlyHint: false, idempotentHint: true, openWorldHint: false },
    runs: { command: command.operationId },
  };
}

function objectSchema(properties: Record<string, Schema>, required: string[]): Schema {
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
}

/** The schema with every `#/components/schemas/...` reference replaced by (a copy of) its target. */
function inline(schema: Schema, schemas: Record<string, Schema>, through: readonly string[] = []): Schema {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (typeof value !== 'object' || value === null) return value;
    const ref = (value as Schema).$ref;
    if (typeof ref === 'string') {
      const name = ref.replace('#/components/schemas/', '');
      const target = Object.hasOwn(schemas, name) ? schemas[name] : undefined;
      if (!target || through.includes(name)) throw new Error(`MCP input schema: cannot inline ${ref}`);
      return inline(target, schemas, [...through, name]);
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
  };
  return walk(schema) as Schema;
}

export function emitMcp(bp: Blueprint, tools: readonly McpTool[]): string {
  return render('app/src/mcp.ts.hbs', {
    server: tsLiteral({ name: bp.slug, version: bp.project.version }),
    origins: tsLiteral(bp.auth.trustedOrigins, { lead: 'export const MCP_ORIGINS: string[] = '.length, trail: 1 }),
    tools: tsLiteral(tools, { lead: 'export const MCP_TOOLS: McpToolSpec[] = '.length, trail: 1 }),
  });
}
