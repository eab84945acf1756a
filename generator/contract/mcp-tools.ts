// The MCP tools of POST /mcp (runtime/mcp/), one per skill action and command the app
// serves, named as their operations in openapi.json. Their input schemas are made from those
// operations' own parameters and bodies, references inlined (a tool's schema stands alone), so
// that openapi.json and the tools cannot describe the same input two ways: one flat object of
// named arguments, a path parameter, query parameter or body key each.

import { actionRisk } from '../model/action-risk.ts';
import type { Blueprint, Command, Skill, SkillAction } from '../model/types.ts';
import type { KeyPath } from '../parse/locate.ts';
import type { Schema } from './openapi/common.ts';
import { openApiDocument } from './openapi.ts';

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

/**
 * Where a tool's arguments come from: one flat object merges the REST request's path parameters,
 * query parameters and body keys (a command's record id and input), as agents expect named
 * arguments. `sources` keeps each argument's origin, so that a name two of them share is found
 * (validate/mcp-arguments.ts refuses it) and the runtime can split a call back (mcp/tools.ts).
 */
export interface ToolInput {
  name: string;
  /** Where the skill action or command is declared in the blueprint. */
  declaredAt: KeyPath;
  sources: ArgumentSource[];
}

export interface ArgumentSource {
  from: 'path' | 'query' | 'body' | 'recordId' | 'input' | 'idempotencyKey';
  properties: Record<string, Schema>;
  required: string[];
}

interface ToolPlan extends ToolInput {
  build(): Omit<McpTool, 'inputSchema'>;
}

/** Every tool's arguments by origin: the served skill actions in blueprint order, then the commands. */
export function toolInputs(bp: Blueprint): ToolInput[] {
  return toolPlans(bp).map(({ name, declaredAt, sources }) => ({ name, declaredAt, sources }));
}

/** Argument names that two sources of one tool share: each one a collision. */
export function argumentCollisions(tool: ToolInput): Array<{ argument: string; from: ArgumentSource['from'][] }> {
  const origins = new Map<string, ArgumentSource['from'][]>();
  for (const source of tool.sources) {
    for (const name of Object.keys(source.properties)) origins.set(name, [...(origins.get(name) ?? []), source.from]);
  }
  return [...origins].filter(([, from]) => from.length > 1).map(([argument, from]) => ({ argument, from }));
}

/** Every tool: the served skill actions in blueprint order, then the commands. */
export function mcpTools(bp: Blueprint): McpTool[] {
  const tools = toolPlans(bp).map((plan) => {
    const clash = argumentCollisions(plan)[0];
    // validate/mcp-arguments.ts reports this as MCP_ARGUMENT_COLLISION before anything is emitted.
    if (clash) {
      throw new Error(`MCP tool "${plan.name}": argument ${clash.argument} comes from ${clash.from.join(' and ')}`);
    }
    const { name, description, annotations, runs } = plan.build();
    return { name, description, inputSchema: flatSchema(plan.sources), annotations, runs };
  });
  const seen = new Set<string>();
  for (const { name } of tools) {
    if (!TOOL_NAME.test(name)) throw new Error(`MCP tool "${name}": a tool name is 1 to 128 of A-Z a-z 0-9 _ . -`);
    if (seen.has(name)) throw new Error(`MCP tool "${name}": a skill action and a command share the name`);
    seen.add(name);
  }
  return tools;
}

function toolPlans(bp: Blueprint): ToolPlan[] {
  const doc = openApiDocument(bp);
  const paths = doc.paths as Record<string, Record<string, Schema | undefined> | undefined>;
  const schemas = (doc.components as { schemas: Record<string, Schema> }).schemas;
  const plans: ToolPlan[] = [];
  for (const skill of bp.skills) {
    for (const action of skill.actions) {
      const op = paths[action.route]?.[action.method.toLowerCase()];
      // Not served by the skill's route: a pass-through action, a workflow not started by hand, or
      // an action at an entity route's own method and path (that route serves it).
      if (op?.operationId !== `${skill.name}_${action.name}`) continue;
      plans.push(skillTool(skill, action, op, schemas));
    }
  }
  for (const command of bp.commands) {
    const op = paths[`/api/commands/${command.operationId}/{id}`]?.post as Schema;
    plans.push(commandTool(command, op, schemas));
  }
  return plans;
}

/** The one object of a tool's arguments: every source's properties side by side. */
function flatSchema(sources: readonly ArgumentSource[]): Schema {
  return objectSchema(
    Object.assign({}, ...sources.map((s) => s.properties)) as Record<string, Schema>,
    sources.flatMap((s) => s.required),
  );
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema: Schema;
}

function skillTool(skill: Skill, action: SkillAction, op: Schema, schemas: Record<string, Schema>): ToolPlan {
  const parameters = (op.parameters ?? []) as Parameter[];
  const group = (where: 'path' | 'query', what: string): ArgumentSource => {
    const list = parameters.filter((p) => p.in === where);
    const described = (p: Parameter) => ({
      ...inline(p.schema, schemas),
      description: p.description ? `${p.description} (${what})` : `The ${what} ${p.name}`,
    });
    return {
      from: where,
      properties: Object.fromEntries(list.map((p) => [p.name, described(p)])),
      required: list.filter((p) => p.required).map((p) => p.name),
    };
  };
  const requestBody = op.requestBody as { required?: boolean; content: Record<string, { schema: Schema }> } | undefined;
  const body = requestBody && (inline(requestBody.content['application/json'].schema, schemas) as BodySchema);
  // As the runtime decides (http/skill-routes.ts): a job is a change whatever the method.
  const mutation = action.workflow !== undefined || !['list', 'get'].includes(action.action as string);
  const sources: ArgumentSource[] = [
    group('path', 'path parameter'),
    ...(action.action === 'list' ? [group('query', 'query parameter')] : []),
    ...(body ? [bodySource('body', body, requestBody?.required === true)] : []),
    ...(mutation ? [IDEMPOTENCY_SOURCE] : []),
  ];
  const risk = actionRisk(action);
  const rest = `${action.method} ${action.route}`;
  return {
    name: `${skill.name}_${action.name}`,
    declaredAt: action.path,
    sources,
    build: () => ({
      name: `${skill.name}_${action.name}`,
      description: `${action.description ?? defaultDescription(action)} Same as ${rest}.`,
      annotations: {
        readOnlyHint: risk === 'read',
        // Only a declared risk says a change cannot be undone; `external` leaves MCP's default (it may).
        ...(risk === 'write' ? { destructiveHint: false } : risk === 'destructive' ? { destructiveHint: true } : {}),
        ...(mutation ? { idempotentHint: true } : {}),
        // A workflow may notify the world outside the app; CRUD stays inside its database.
        openWorldHint: risk === 'external' || action.workflow !== undefined,
      },
      runs: { skill: skill.name, action: action.name },
    }),
  };
}

type BodySchema = Schema & { properties?: Record<string, Schema>; required?: string[] };

/**
 * A body's keys as arguments. A key the body requires is required only when the body is: an
 * optional body (a workflow's) may be left out whole, and its keys with it.
 */
function bodySource(from: 'body' | 'input', body: BodySchema, bodyRequired: boolean): ArgumentSource {
  const properties = body.properties ?? {};
  return { from, properties: { ...properties }, required: bodyRequired ? [...(body.required ?? [])] : [] };
}

const IDEMPOTENCY_SOURCE: ArgumentSource = {
  from: 'idempotencyKey',
  properties: { idempotencyKey: IDEMPOTENCY_ARGUMENT },
  required: ['idempotencyKey'],
};

function defaultDescription(action: SkillAction): string {
  if (action.workflow !== undefined) return `Starts the workflow ${action.workflow}.`;
  if (action.action === 'list') return `Lists the ${action.entity} records.`;
  const what = { get: 'Reads', create: 'Creates', update: 'Updates', delete: 'Deletes' };
  return `${what[action.action as keyof typeof what]} a ${action.entity} record.`;
}

function commandTool(command: Command, op: Schema, schemas: Record<string, Schema>): ToolPlan {
  const [id] = op.parameters as Parameter[];
  const requestBody = op.requestBody as { required: boolean; content: Record<string, { schema: Schema }> };
  const input = inline(requestBody.content['application/json'].schema, schemas) as BodySchema;
  const text = command.description ?? command.label;
  return {
    name: command.operationId,
    declaredAt: command.path,
    sources: [
      {
        from: 'recordId',
        properties: {
          recordId: { ...inline(id.schema, schemas), description: `The ${command.entity} the command runs on` },
        },
        required: ['recordId'],
      },
      bodySource('input', input, requestBody.required),
      IDEMPOTENCY_SOURCE,
    ],
    build: () => ({
      name: command.operationId,
      description: `${/[.!?]$/.test(text) ? text : `${text}.`} Same as POST /api/commands/${command.operationId}/{id}.`,
      // A command overwrites fields of its record: MCP's default (it may destroy) stands.
      annotations: { title: command.label, readOnlyHint: false, idempotentHint: true, openWorldHint: false },
      runs: { command: command.operationId },
    }),
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
