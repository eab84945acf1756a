// The development admin server (spec 4.7): read-only inspection of the running app on a listener of
// its own (ADMIN_PORT, loopback only), never on the app's port. No authentication, so it answers
// only requests addressed to a loopback name (a foreign Host is a DNS-rebinding page: 403), and
// only GET (DELETE /traces clears the traces). docs/admin-server.md documents every body.

import * as fs from 'node:fs/promises';
import type * as http from 'node:http';
import * as path from 'node:path';
import { AppError, type ErrorCode } from '../core/errors.ts';
import type { Extension } from '../http/extension.ts';
import type { AppMetrics, JobCounts } from '../observe/metrics.ts';
import type { Span, Trace, TraceStore } from '../observe/tracing.ts';
import { isLoopbackHost } from '../core/loopback.ts';
import { escapeHtml } from '../pages/document.ts';

/** A workflow as the admin server lists it (the app's WorkflowSpec has these and more). */
export interface WorkflowSummary {
  name: string;
  trigger?: { kind: string };
  steps: readonly unknown[];
}

/** What createApp tells about itself (src/app.ts `App.inventory`). */
export interface AppInventory {
  /** Absent in an app without workflows. */
  workflows?: readonly WorkflowSummary[];
  /** src/extend.ts as checked at start. */
  extension: Extension;
  /** Jobs by state from the database; absent in an app without workflows (all zeros). */
  jobCounts?: () => Promise<JobCounts>;
  /** The HTML of /workflows/visualization (workflow-graph.ts); without it, a plain list of the workflows. */
  workflowGraph?: () => string;
  /** The enabled [[plugins]] as loaded (runtime/plugins/host.ts); absent in an app without plugins. */
  loadedPlugins?: ReadonlyArray<{
    name: string;
    version: string;
    trustLevel: string;
    capabilities: readonly string[];
    provides: Readonly<Record<string, unknown>>;
  }>;
}

/** Everything the admin server reads. `bp dev` may wrap it (its own schemaDiff, say). */
export interface AdminSource extends AppInventory {
  /** The app folder: blueprint.json (read at each request) and .bp-manifest.json. */
  appDir: string;
  /** Epoch ms when the app started. */
  startedAt: number;
  nodeEnv: string | undefined;
  dialect: string;
  traces: TraceStore;
  metrics: AppMetrics;
  /** The pending schema change (spec 2.10), or null when the database is in sync with the blueprint. */
  schemaDiff(): unknown | null;
}

const JOB_STATES = ['pending', 'running', 'completed', 'failed'] as const;

interface Endpoint {
  description: string;
  methods: readonly string[];
  answer(source: AdminSource, query: URLSearchParams, method: string): Promise<Answer> | Answer;
}

type Answer = { json: unknown } | { html: string } | { text: string; contentType: string } | { status: 204 };

const ENDPOINTS: Readonly<Record<string, Endpoint>> = {
  '/': { description: 'this list', methods: ['GET'], answer: () => ({ json: { endpoints: endpointList() } }) },
  '/health': {
    description: 'the admin server answers, with the app uptime',
    methods: ['GET'],
    answer: (s) => ({ json: { status: 'ok', uptimeSeconds: uptime(s) } }),
  },
  '/metrics': {
    description: 'Prometheus metrics (text exposition format)',
    methods: ['GET'],
    answer: async (s) => {
      const { contentType, body } = await s.metrics.scrape();
      return { text: body, contentType };
    },
  },
  '/blueprint': {
    description: 'the parsed blueprint the app was generated from (blueprint.json)',
    methods: ['GET'],
    answer: async (s) => ({ json: await readBlueprint(s.appDir) }),
  },
  '/state': {
    description: 'status, versions, uptime, environment, database dialect, pending schema diff',
    methods: ['GET'],
    answer: async (s) => {
      const blueprint = await readBlueprint(s.appDir);
      return {
        json: {
          status: 'running',
          bpVersion: await generatedBy(s.appDir),
          appVersion: stringAt(blueprint, 'project', 'version'),
          uptimeSeconds: uptime(s),
          nodeEnv: s.nodeEnv ?? null,
          dialect: s.dialect,
          schemaDiff: s.schemaDiff(),
        },
      };
    },
  },
  '/entities': {
    description: 'per entity: name, field count, relation count',
    methods: ['GET'],
    answer: async (s) => ({
      json: records(await readBlueprint(s.appDir), 'entities').map((e) => ({
        name: e.name,
        fieldCount: Array.isArray(e.fields) ? e.fields.length : 0,
        relationCount: Array.isArray(e.relations) ? e.relations.length : 0,
      })),
    }),
  },
  '/pages': {
    description: 'page routes with title, layout and auth requirement',
    methods: ['GET'],
    answer: async (s) => ({
      json: records(await readBlueprint(s.appDir), 'pages').map((p) => ({
        path: p.route,
        title: p.title ?? null,
        layout: p.layout,
        auth: p.auth,
      })),
    }),
  },
  '/schema-diff': {
    description: 'the pending schema change (spec 2.10), or null when in sync',
    methods: ['GET'],
    answer: (s) => ({ json: s.schemaDiff() }),
  },
  '/plugins': {
    description:
      'the loaded [[plugins]], and what src/extend.ts registers: plugin actions, senders, services, middleware',
    methods: ['GET'],
    answer: (s) => ({ json: { loaded: s.loadedPlugins ?? [], ...plugins(s.extension) } }),
  },
  '/workflows': {
    description: 'workflow definitions (trigger type, step count) and job counts by state',
    methods: ['GET'],
    answer: async (s) => ({
      json: {
        workflows: (s.workflows ?? []).map((w) => ({
          name: w.name,
          trigger: w.trigger?.kind ?? 'manual',
          stepCount: w.steps.length,
        })),
        jobs: await jobCounts(s),
      },
    }),
  },
  '/workflows/visualization': {
    description: 'HTML graph of the workflows',
    methods: ['GET'],
    answer: (s) => ({ html: s.workflowGraph ? s.workflowGraph() : workflowList(s.workflows ?? []) }),
  },
  '/traces': {
    description: 'recent traces, newest first (limit=N, 1 to 1000, default 100); DELETE clears them',
    methods: ['GET', 'DELETE'],
    answer: (s, query, method) => {
      if (method === 'DELETE') {
        s.traces.clear();
        return { status: 204 };
      }
      return { json: s.traces.list(positiveInt(query, 'limit', 100, 1000)) };
    },
  },
  '/traces/errors': {
    description: 'recent traces answered with a 4xx or 5xx status',
    methods: ['GET'],
    answer: (s, query) => ({
      json: s.traces
        .list()
        .filter((t) => t.metadata.statusCode >= 400)
        .slice(0, positiveInt(query, 'limit', 100, 1000)),
    }),
  },
  '/traces/slow': {
    description: 'recent traces that took threshold ms or more (threshold, default 1000)',
    methods: ['GET'],
    answer: (s, query) => {
      const threshold = positiveInt(query, 'threshold', 1000, 3_600_000);
      return { json: s.traces.list().filter((t) => t.duration >= threshold) };
    },
  },
  '/traces/stats': {
    description: 'count, p50/p95/p99 duration (ms) and error count of the kept traces',
    methods: ['GET'],
    answer: (s) => ({ json: stats(s.traces.list()) }),
  },
  '/traces/<id>': {
    description: 'one trace, its spans as a tree (children under their parent)',
    methods: ['GET'],
    // Answered by traceAnswer: the path carries the id.
    answer: () => ({ json: null }),
  },
};

function endpointList(): Array<{ method: string; path: string; description: string }> {
  return Object.entries(ENDPOINTS).flatMap(([p, e]) =>
    e.methods.map((method) => ({
      method,
      path: p,
      description: method === 'DELETE' ? 'clears the traces' : e.description,
    })),
  );
}

/** The request listener of the admin server. */
export function adminHandler(source: AdminSource): http.RequestListener {
  return (req, res) => {
    void answer(source, req).then(
      (a) => send(res, a),
      (err: unknown) => {
        const e = err instanceof AppError ? err : new AppError('INTERNAL_ERROR', 'the admin server failed');
        if (!(err instanceof AppError))
          console.error(`admin server: ${err instanceof Error ? err.stack : String(err)}`);
        sendError(res, e);
      },
    );
  };
}

/** The request listener of METRICS_PORT: GET /metrics and nothing else. */
export function metricsHandler(metrics: AppMetrics): http.RequestListener {
  return (req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://metrics').pathname;
    if (pathname !== '/metrics')
      return sendError(res, new AppError('ROUTE_NOT_FOUND', 'only GET /metrics is served here'));
    if (req.method !== 'GET') return sendError(res, new NotAllowed(['GET']));
    metrics.scrape().then(
      ({ contentType, body }) => send(res, { text: body, contentType }),
      () => sendError(res, new AppError('INTERNAL_ERROR', 'the metrics could not be collected')),
    );
  };
}

async function answer(source: AdminSource, req: http.IncomingMessage): Promise<Answer> {
  if (!isLoopbackHost(req.headers.host)) {
    throw new AppError(
      'FORBIDDEN',
      'the admin server answers only requests addressed to localhost, 127.0.0.1 or [::1] (Host header)',
    );
  }
  const url = new URL(req.url ?? '/', 'http://admin');
  const method = req.method ?? 'GET';
  const pathname = url.pathname.length > 1 && url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname;
  const fixed = Object.hasOwn(ENDPOINTS, pathname) && pathname !== '/traces/<id>' ? ENDPOINTS[pathname] : undefined;
  const traceId = !fixed && pathname.startsWith('/traces/') ? decodeURIComponent(pathname.slice(8)) : undefined;
  const methods = fixed?.methods ?? (traceId !== undefined ? ['GET'] : undefined);
  if (!methods) throw new AppError('ROUTE_NOT_FOUND', `no admin endpoint ${pathname}: GET / lists them`);
  if (!methods.includes(method)) throw new NotAllowed(methods);
  if (fixed) return fixed.answer(source, url.searchParams, method);
  const trace = source.traces.get(traceId as string);
  if (!trace) throw new AppError('NOT_FOUND', `no trace ${traceId} is kept (traces are kept 5 minutes, 1,000 at most)`);
  return { json: { ...trace, spans: spanTree(trace.spans) } };
}

/** 405, with the methods the endpoint takes for the Allow header. */
class NotAllowed extends AppError {
  constructor(readonly allow: readonly string[]) {
    super('METHOD_NOT_ALLOWED', `this admin endpoint takes ${allow.join(' or ')}`);
  }
}

function send(res: http.ServerResponse, answer: Answer): void {
  res.setHeader('Cache-Control', 'no-store');
  if ('status' in answer) {
    res.statusCode = answer.status;
    res.end();
  } else if ('json' in answer) {
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(answer.json, null, 2));
  } else if ('html' in answer) {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(answer.html);
  } else {
    res.setHeader('Content-Type', answer.contentType);
    res.end(answer.text);
  }
}

function sendError(res: http.ServerResponse, err: AppError): void {
  if (err instanceof NotAllowed) res.setHeader('Allow', err.allow.join(', '));
  res.statusCode = err.status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  const code: ErrorCode = err.code;
  res.end(JSON.stringify({ error: { code, message: err.message, retryable: err.retryable } }));
}

/** A query parameter that must be a whole number from 1 to `max`; `fallback` when absent. */
function positiveInt(query: URLSearchParams, name: string, fallback: number, max: number): number {
  const raw = query.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1 || value > max) {
    throw new AppError('INVALID_QUERY', `${name} must be a whole number from 1 to ${max} (got "${raw}")`, {
      details: [{ field: name, code: 'OUT_OF_RANGE', message: `a whole number from 1 to ${max}` }],
    });
  }
  return value;
}

type SpanNode = Span & { children: SpanNode[] };

/** The spans as a tree: each under its parent, roots (the http.request span) at the top, in start order. */
function spanTree(spans: readonly Span[]): SpanNode[] {
  const nodes = new Map<number, SpanNode>();
  for (const span of spans) {
    const { id, parentId, name, type, startTime, endTime, duration, attributes } = span;
    nodes.set(id, { id, parentId, name, type, startTime, endTime, duration, attributes, children: [] });
  }
  const roots: SpanNode[] = [];
  for (const node of nodes.values()) {
    const parent = node.parentId === undefined ? undefined : nodes.get(node.parentId);
    (parent ? parent.children : roots).push(node);
  }
  return roots;
}

/** Nearest-rank percentile of sorted durations. */
function percentile(sorted: readonly number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function stats(traces: readonly Trace[]): Record<string, number> {
  const durations = traces.map((t) => t.duration).sort((a, b) => a - b);
  return {
    count: traces.length,
    p50Duration: percentile(durations, 50),
    p95Duration: percentile(durations, 95),
    p99Duration: percentile(durations, 99),
    errorCount: traces.filter((t) => t.metadata.statusCode >= 400).length,
  };
}

function uptime(source: AdminSource): number {
  return Math.round((Date.now() - source.startedAt) / 1000);
}

async function jobCounts(source: AdminSource): Promise<Record<string, number>> {
  const counts = (await source.jobCounts?.()) ?? {};
  return Object.fromEntries(JOB_STATES.map((state) => [state, counts[state] ?? 0]));
}

function plugins(extension: Extension): Record<string, unknown> {
  const names = (table: Readonly<Record<string, unknown>> | undefined) => Object.keys(table ?? {}).sort();
  return {
    plugins: names(extension.plugins).map((name) => ({ name, actions: names(extension.plugins?.[name]) })),
    notificationSenders: names(extension.notifications),
    services: names(extension.services),
    // Functions have no other name to show: an anonymous one shows as "anonymous".
    middleware: (extension.middleware ?? []).map((m) => m.name || 'anonymous'),
    routes: extension.routes !== undefined,
    delegate: extension.delegate !== undefined,
  };
}

/**
 * Without workflowGraph (an app without workflows, which carries no workflow-graph.ts): the
 * workflows' names and triggers as a plain HTML list.
 */
function workflowList(workflows: readonly WorkflowSummary[]): string {
  const items = workflows
    .map((w) => `<li>${escapeHtml(w.name)} (${escapeHtml(w.trigger?.kind ?? 'manual')}, ${w.steps.length} steps)</li>`)
    .join('');
  return (
    '<!doctype html><html><head><meta charset="utf-8"><title>Workflows</title></head>' +
    `<body><h1>Workflows</h1>${items ? `<ul>${items}</ul>` : '<p>No workflows.</p>'}</body></html>`
  );
}

/** blueprint.json of the app folder, read at each request: the file bp wrote last. */
async function readBlueprint(appDir: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await fs.readFile(path.join(appDir, 'blueprint.json'), 'utf8');
  } catch {
    throw new AppError('NOT_FOUND', 'blueprint.json is missing from the app folder: run bp generate again');
  }
  // The file's "//" key says bp wrote it; it is not part of the blueprint.
  const { '//': _header, ...blueprint } = JSON.parse(text) as Record<string, unknown>;
  return blueprint;
}

/** The bp version that generated the app, from .bp-manifest.json ("bp 0.1.0"); null without one. */
async function generatedBy(appDir: string): Promise<string | null> {
  try {
    const manifest = JSON.parse(await fs.readFile(path.join(appDir, '.bp-manifest.json'), 'utf8')) as unknown;
    const by = (manifest as { generatedBy?: unknown }).generatedBy;
    return typeof by === 'string' ? by.replace(/^bp /, '') : null;
  } catch {
    return null;
  }
}

function records(blueprint: Record<string, unknown>, key: string): Array<Record<string, unknown>> {
  const list = blueprint[key];
  return Array.isArray(list) ? (list as Array<Record<string, unknown>>) : [];
}

function stringAt(blueprint: Record<string, unknown>, section: string, key: string): string | null {
  const value = (blueprint[section] as Record<string, unknown> | undefined)?.[key];
  return typeof value === 'string' ? value : null;
}
