// Skill actions: each CRUD action of a `[skill.X]` is served at its own method and
// path, and runs the entity's own pipeline (access rules, validation, audit, Idempotency-Key), so
// an agent gets nothing through a skill that it could not get through /api/<entity>s. On top of
// the entity's checks an action holds its own: who may call it (the skill's `auth`) and the scopes
// an API key needs (every one of the action's). `GET /api/skills` lists the actions the caller may call.
//
// Path parameters name entity fields (through mapParams, else by their own name). For get, update
// and delete the one naming the primary key is the record's id and any other must match the
// record (else 404, as for a record that does not exist); for list they filter, with the typed
// `query` parameters; for create they are written into the record, over the body's values.
//
// A workflow action stores a job and answers 202 with it (http/skill-jobs.ts, handed in by an app
// that has workflows, so that one without them carries no workflow code).
//
// Each action runs as a function of an ActionCall (the caller, its parameters, body and context),
// not of an HTTP request: the routes here and the MCP tools (http/mcp-routes.ts) call the same one.

import { Router } from 'express';
import { type Actor, isAuthenticated, requireScopes } from '../core/actor.ts';
import { pathParams } from '../core/path-params.ts';
import { AppError, type ErrorDetail } from '../core/errors.ts';
import type { FieldType } from '../core/values.ts';
import type { EntityStore, RequestContext } from '../data/entity-store.ts';
import { checkBody, type FieldSpec, type Row } from '../data/fields.ts';
import { valueFromText } from '../data/field-text.ts';
import { runIdempotent } from '../data/idempotency.ts';
import type { IdempotencyStore, StoredResponse } from '../data/idempotency-store.ts';
import { jsonBody } from './body.ts';
import { requestContext } from './context.ts';
import { pagingValue } from './list-query.ts';
import { matched } from './pipeline.ts';
import type { ApiRequest } from './request.ts';
import { sendJson, sendStored } from './respond.ts';

export type SkillRisk = 'read' | 'write' | 'destructive' | 'external';

/** A typed query parameter of a list action: an equality filter on `field`, or `limit` / `offset`. */
export interface SkillQueryParam {
  name: string;
  type: FieldType;
  field: string;
  values?: readonly string[];
  required: boolean;
  default?: string | number | boolean;
  description?: string;
}

export interface SkillActionSpec {
  name: string;
  description?: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** As declared, with `{param}` placeholders. */
  path: string;
  entity?: string;
  action?: 'create' | 'list' | 'get' | 'update' | 'delete';
  workflow?: string;
  /** Path parameter -> entity field. */
  mapParams?: Readonly<Record<string, string>>;
  /** The body's keys and their field types, as declared (documentation of create and update). */
  body?: Readonly<Record<string, string>>;
  /** Of a workflow action: the body keys its workflow reads, which every request must give (not null). */
  requiredBody?: readonly string[];
  query?: readonly SkillQueryParam[];
  scopes: readonly string[];
  /** As declared, else from the method (GET read, DELETE destructive, others write), as in Zebric. */
  risk: SkillRisk;
}

export interface SkillSpec {
  name: string;
  description?: string;
  /** `none`: anonymous callers may call its actions (the entity's access rules still decide). */
  auth: 'required' | 'none';
  actions: readonly SkillActionSpec[];
}

/** How workflow actions start their workflows (http/skill-jobs.ts skillJobs). */
export interface SkillWorkflows {
  /** Whether an action may start the workflow by hand: one entity events start is not. */
  startable(name: string): boolean;
  /** The run of an action that starts a workflow. */
  action(skill: SkillSpec, action: SkillActionSpec, store: EntityStore | undefined, idempotency: IdempotencyStore): Run;
}

/** What an action does once its route is matched: a CRUD operation, a workflow job, or nothing. */
export type SkillActionKind = 'crud' | 'workflow' | 'pass-through';

export function actionKind(action: SkillActionSpec): SkillActionKind {
  if (action.workflow !== undefined) return 'workflow';
  return action.action !== undefined && action.entity !== undefined ? 'crud' : 'pass-through';
}

/** One call of an action, from whichever surface: who calls, with what, and the data layer's context. */
export interface ActionCall {
  actor: Actor;
  /** Every path parameter of the action, by name, as text. */
  params: Readonly<Record<string, string>>;
  /** The query of a list action: each value as text (a repeated one as several). */
  query: Readonly<Record<string, unknown>>;
  body: unknown;
  /** Called once the caller is admitted, so that a refused caller hears that before any key problem. */
  context(options: { mutation: boolean }): RequestContext;
}

/** What an action answers: a (possibly replayed) stored response. */
export type ActionAnswer = StoredResponse & { replayed: boolean };

/** A served action, ready to run. */
export interface SkillActionRunner {
  skill: SkillSpec;
  action: SkillActionSpec;
  /** Whether it writes (a CRUD create, update or delete, or a job): its callers give an idempotency key. */
  mutation: boolean;
  run(call: ActionCall): Promise<ActionAnswer>;
}

/** The CRUD and workflow actions the app serves (pass-through actions and entity-started workflows are not). */
export function skillActions(
  skills: readonly SkillSpec[],
  stores: ReadonlyMap<string, EntityStore>,
  idempotency: IdempotencyStore,
  /** Absent where the app has no workflows. */
  workflows?: SkillWorkflows,
): SkillActionRunner[] {
  const startable = (name: string) => workflows?.startable(name) ?? false;
  const runners: SkillActionRunner[] = [];
  for (const skill of skills) {
    for (const action of skill.actions) {
      const kind = actionKind(action);
      if (kind === 'pass-through' || (action.workflow !== undefined && !startable(action.workflow))) continue;
      const store = action.entity === undefined ? undefined : stores.get(action.entity);
      if (action.entity !== undefined && !store)
        throw new Error(`skill ${skill.name}.${action.name}: no entity ${action.entity}`);
      const run =
        kind === 'crud'
          ? crudAction(skill, action, store as EntityStore, idempotency)
          : (workflows as SkillWorkflows).action(skill, action, store, idempotency);
      const mutation = kind === 'workflow' || (action.action !== 'list' && action.action !== 'get');
      runners.push({ skill, action, mutation, run });
    }
  }
  return runners;
}

/** The routes of every served skill action (skillActions), and GET /api/skills. */
export function skillRouter(skills: readonly SkillSpec[], runners: readonly SkillActionRunner[]): Router {
  const router = Router({ caseSensitive: true });
  const servedActions = new Set(runners.map((r) => r.action));
  const index = skillIndexFor(skills, (a) => servedActions.has(a));
  router.get('/api/skills', matched('skills.index'), (req, res) =>
    sendJson(res, 200, index((req as ApiRequest).actor)),
  );
  for (const { skill, action, run } of runners) {
    const route = action.path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1');
    const handlers = [matched(`skill.${skill.name}.${action.name}`), ...(hasBody(action) ? [jsonBody] : [])];
    router[method(action)](route, ...handlers, async (req, res) => {
      const request = req as ApiRequest;
      sendStored(
        res,
        await run({
          actor: request.actor,
          params: (req as { params?: Record<string, string> }).params ?? {},
          query: ((req as { query?: unknown }).query ?? {}) as Record<string, unknown>,
          body: request.body,
          context: (options) => requestContext(request, options),
        }),
      );
    });
  }
  return router;
}

function method(action: SkillActionSpec): 'get' | 'post' | 'put' | 'delete' {
  return action.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete';
}

/** Whether the action takes a JSON body: create, update, and a workflow action other than a GET. */
export function hasBody(action: SkillActionSpec): boolean {
  if (action.workflow !== undefined) return action.method !== 'GET';
  return action.action === 'create' || action.action === 'update';
}

/**
 * Which skills and actions a caller is told of: those admitCaller would let it call. An anonymous
 * caller sees the skills with auth `none`; an API key, the actions whose every scope it holds; a
 * person (never held to scopes) every action of every skill. The entity's access rules still
 * decide per record, as on the entity routes. A skill with no action left is left out.
 */
export function callableBy(actor: Actor): (skill: SkillSpec, action: SkillActionSpec) => boolean {
  if (!isAuthenticated(actor)) return (skill) => skill.auth === 'none';
  if (actor.kind !== 'agent') return () => true;
  const held = new Set(actor.scopes ?? []);
  return (_skill, action) => action.scopes.every((s) => held.has(s));
}

/** How many differently scoped callers' indexes are kept; beyond it, an index is built per request. */
const INDEXES_KEPT = 64;

/**
 * GET /api/skills for a caller: its index depends only on whether it is signed in and, for an API
 * key, on its scopes, so each such kind of caller's index is built once and kept.
 */
export function skillIndexFor(
  skills: readonly SkillSpec[],
  served: (action: SkillActionSpec) => boolean,
): (actor: Actor) => unknown {
  const kept = new Map<string, unknown>();
  return (actor) => {
    let kind = 'anonymous';
    if (isAuthenticated(actor))
      kind = actor.kind === 'agent' ? `key:${[...new Set(actor.scopes ?? [])].sort().join(' ')}` : 'person';
    let index = kept.get(kind);
    if (index === undefined) {
      index = skillIndex(skills, served, callableBy(actor));
      if (kept.size < INDEXES_KEPT) kept.set(kind, index);
    }
    return index;
  };
}

/**
 * The machine-readable index of GET /api/skills: the skills and actions `listed` lets through,
 * and whether each is served.
 */
export function skillIndex(
  skills: readonly SkillSpec[],
  served: (action: SkillActionSpec) => boolean,
  listed: (skill: SkillSpec, action: SkillActionSpec) => boolean = () => true,
): unknown {
  const visible = skills
    .map((skill) => ({ skill, actions: skill.actions.filter((a) => listed(skill, a)) }))
    .filter(({ actions }) => actions.length > 0);
  return {
    skills: visible.map(({ skill, actions }) => ({
      name: skill.name,
      ...(skill.description ? { description: skill.description } : {}),
      auth: skill.auth,
      actions: actions.map((a) => ({
        name: a.name,
        ...(a.description ? { description: a.description } : {}),
        method: a.method,
        path: a.path,
        kind: actionKind(a),
        // Pass-through actions document a route served elsewhere (or nowhere).
        served: served(a),
        ...(a.entity ? { entity: a.entity } : {}),
        ...(a.action ? { action: a.action } : {}),
        ...(a.workflow ? { workflow: a.workflow } : {}),
        risk: a.risk,
        scopes: a.scopes,
        ...(a.body && Object.keys(a.body).length ? { body: a.body } : {}),
        ...(a.requiredBody?.length ? { requiredBody: a.requiredBody } : {}),
        ...(a.query?.length ? { query: a.query } : {}),
        idempotencyKey: a.method === 'GET' ? 'none' : 'required for API keys',
        ...(a.workflow ? { answers: WORKFLOW_ANSWER } : {}),
      })),
    })),
  };
}

export type Run = (call: ActionCall) => Promise<ActionAnswer>;

const WORKFLOW_ANSWER = '202 { success, job: { id, workflow, status, url, createdAt, ... } }; poll GET /api/jobs/<id>';

/** A path or query parameter as the field it names: the text sent, and the value read from it. */
interface FieldValue {
  field: string;
  text: string;
  value: unknown;
}

function crudAction(skill: SkillSpec, action: SkillActionSpec, store: EntityStore, idempotency: IdempotencyStore): Run {
  const { spec } = store;
  const fields = new Map(spec.fields.map((f) => [f.name, f]));
  const operation = `skill:${skill.name}.${action.name}`;
  const paramNames = pathParams(action.path);
  const fieldOf = (param: string) => action.mapParams?.[param] ?? param;
  const idParam = paramNames.find((p) => fieldOf(p) === spec.primaryKey);

  /** The path parameters as field values (their JSON form), and the record id when one names it. */
  function pathValues({ params }: ActionCall): { id?: string; values: FieldValue[] } {
    const issues: ErrorDetail[] = [];
    const values = paramNames
      .filter((p) => p !== idParam)
      .map((p) => {
        const field = fields.get(fieldOf(p)) as FieldSpec;
        const text = params[p] ?? '';
        return { field: field.name, text, value: fieldValue(field, text, p, issues) };
      });
    if (issues.length) throw invalidParams(issues);
    return { id: idParam === undefined ? undefined : params[idParam], values };
  }

  const admit = (call: ActionCall) => admitCaller(skill, action, call.actor);

  /** The record of get, update or delete: 404 when another path parameter does not match it. */
  const notFound = (id: string) => new AppError('NOT_FOUND', `${spec.name} ${id} not found`);
  const matches = (record: Row, values: readonly FieldValue[]) =>
    values.every(({ field, text }) => record[field] !== null && String(record[field]) === text);

  switch (action.action) {
    case 'list':
      return async (call) => {
        admit(call);
        const { values } = pathValues(call);
        const q = listQuery(action, fields, call.query);
        // A path parameter filters over a query parameter on the same field.
        const byPath = new Set(values.map((v) => v.field));
        const where = [...q.where.filter((w) => !byPath.has(w.field)), ...values];
        const ctx = call.context({ mutation: false });
        return { status: 200, body: await store.db.read(store.list(ctx, { ...q, where }), ctx.trace), replayed: false };
      };
    case 'get':
      return async (call) => {
        admit(call);
        const { id, values } = pathValues(call);
        const ctx = call.context({ mutation: false });
        const record = await store.db.read(store.get(ctx, id as string), ctx.trace);
        if (!matches(record, values)) throw notFound(id as string);
        return { status: 200, body: record, replayed: false };
      };
    case 'create':
      return async (call) => {
        admit(call);
        const { values } = pathValues(call);
        const body: Row = { ...checkBody(call.body ?? {}) };
        for (const { field, value } of values) body[field] = value;
        const ctx = call.context({ mutation: true });
        const mayWrite = () => store.access.filter(ctx.actor, 'create');
        return runIdempotent(idempotency, ctx, operation, body, mayWrite, function* () {
          const record = yield* store.create(ctx, body);
          const location = `/api/${spec.collection}/${encodeURIComponent(String(record[spec.primaryKey]))}`;
          return { status: 201, body: record, location };
        });
      };
    case 'update':
    case 'delete': {
      const update = action.action === 'update';
      return async (call) => {
        admit(call);
        const { id, values } = pathValues(call);
        const ctx = call.context({ mutation: true });
        const request = { id, values, body: update ? (call.body ?? null) : undefined };
        const mayWrite = () => store.access.filter(ctx.actor, update ? 'update' : 'delete');
        return runIdempotent(idempotency, ctx, operation, request, mayWrite, function* (tail) {
          if (values.length && !matches(yield* store.get(ctx, id as string), values)) throw notFound(id as string);
          if (update) return { status: 200, body: yield* store.update(ctx, id as string, call.body, tail) };
          yield* store.delete(ctx, id as string);
          return { status: 204, body: undefined };
        });
      };
    }
    default:
      throw new Error(`skill ${skill.name}.${action.name}: not a CRUD action`);
  }
}

/** Refuses the caller before any work: the skill's auth (401), then the action's scopes (403). */
export function admitCaller(skill: SkillSpec, action: SkillActionSpec, actor: Actor): void {
  if (skill.auth === 'required' && !isAuthenticated(actor))
    throw new AppError('UNAUTHENTICATED', `skill ${skill.name} needs an API key or a session`);
  requireScopes(actor, action.scopes, `${skill.name}.${action.name}`);
}

function fieldValue(field: FieldSpec, text: string, name: string, issues: ErrorDetail[]): unknown {
  const parsed = valueFromText(field, text);
  if (parsed.ok) return parsed.value;
  issues.push({ field: name, code: 'INVALID_PARAMETER', message: parsed.message });
  return undefined;
}

function invalidParams(issues: ErrorDetail[]): AppError {
  return new AppError('INVALID_QUERY', issues.map((i) => i.message).join('; '), { details: issues });
}

/**
 * The list's query string: `limit` and `offset` as on /api/<entity>s, and the declared parameters,
 * each typed, checked against its `values`, required or defaulted. Anything else is a 400.
 */
function listQuery(
  action: SkillActionSpec,
  fields: ReadonlyMap<string, FieldSpec>,
  raw: unknown,
): { limit: number; offset: number; where: FieldValue[] } {
  const query = (raw ?? {}) as Record<string, unknown>;
  const issues: ErrorDetail[] = [];
  const declared = new Map((action.query ?? []).map((p) => [p.name, p]));
  for (const key of Object.keys(query)) {
    if (!declared.has(key) && key !== 'limit' && key !== 'offset')
      issues.push({ field: key, code: 'UNKNOWN_PARAMETER', message: `unknown query parameter "${key}"` });
  }
  const text = (name: string): string | undefined => {
    const value = query[name];
    if (value === undefined) return undefined;
    if (typeof value === 'string') return value;
    issues.push({ field: name, code: 'INVALID_PARAMETER', message: `${name} must be given once` });
    return undefined;
  };
  // As on /api/<entity>s, with the action's own defaults when it declares limit or offset.
  const page = (name: 'limit' | 'offset') =>
    pagingValue(name, text(name) ?? declared.get(name)?.default?.toString(), issues);
  const limit = page('limit');
  const offset = page('offset');
  const where: FieldValue[] = [];
  for (const param of action.query ?? []) {
    if (param.name === 'limit' || param.name === 'offset') continue;
    const given = text(param.name) ?? param.default?.toString();
    if (given === undefined) {
      if (param.required)
        issues.push({ field: param.name, code: 'REQUIRED', message: `query parameter ${param.name} is required` });
      continue;
    }
    if (param.values && !param.values.includes(given)) {
      const message = `${param.name} must be one of ${param.values.join(', ')}`;
      issues.push({ field: param.name, code: 'NOT_ALLOWED', message });
      continue;
    }
    const field = fields.get(param.field) as FieldSpec;
    const value = fieldValue({ ...field, name: param.name }, given, param.name, issues);
    where.push({ field: field.name, text: given, value });
  }
  if (issues.length) throw invalidParams(issues);
  return { limit, offset, where };
}
