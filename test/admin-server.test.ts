// The admin server (spec 4.7) of a generated app, its Prometheus metrics and W3C traceparent: the
// reference blueprint generated once, run as a real process with ADMIN_PORT=0 and METRICS_PORT=0,
// driven over HTTP after real traffic (a create, failures, a workflow); then production mode,
// where only METRICS_PORT serves. promtool (Debian's prometheus package) checks the metrics text.

import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { expect } from 'chai';
import { adminHandler } from '../runtime-lib/admin/admin-server.ts';
import { isLoopbackHost, isLoopbackName } from '../runtime-lib/core/loopback.ts';
import { AppMetrics } from '../runtime-lib/observe/metrics.ts';
import { isTraceparent, TraceStore, type Trace } from '../runtime-lib/observe/tracing.ts';
import {
  DEV_COMMAND,
  freshDir,
  freshKey,
  generate,
  jobFinished,
  request,
  ROOT,
  START_COMMAND,
  startApp,
  type RunningApp,
} from './support/apps.ts';

type Rec = Record<string, unknown>;
type SpanNode = { name: string; type: string; duration: number; attributes?: Rec; children: SpanNode[] };

const KEY = 'triage-key-0123456789abcdef';
const ENV = { TRIAGE_API_KEY: KEY, SESSION_SECRET: 'admin-test-session-secret-0123456789abcdef' };
const agent = () => ({ authorization: `Bearer ${KEY}`, 'idempotency-key': freshKey() });
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

/** Waits for `pattern` in the app's output and returns its first group. */
async function printed(app: RunningApp, pattern: RegExp): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const m = pattern.exec(app.output());
    if (m) return m[1];
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`not printed: ${pattern}\n${app.output()}`);
}

/** A GET with a Host header of our choosing (fetch does not let a caller set Host). */
function getWithHost(base: string, urlPath: string, host: string): Promise<{ status: number; body: Rec }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${urlPath}`, { headers: { host } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as Rec) : {} }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('admin server, metrics and traceparent (generated helpdesk)', function () {
  this.timeout(120_000);
  let appDir: string;
  let app: RunningApp;
  let admin: string;
  let metricsBase: string;
  const get = async (urlPath: string) => request(admin, 'GET', urlPath);
  const traces = async (query = '') => (await get(`/traces${query}`)).body as Trace[];

  before(async () => {
    appDir = path.join(freshDir('admin-server'), 'helpdesk');
    await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
    app = await startApp(appDir, { ...ENV, ADMIN_PORT: '0', METRICS_PORT: '0' });
    admin = await printed(app, /admin server on (http:\/\/127\.0\.0\.1:\d+)/);
    metricsBase = await printed(app, /metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/);
  });

  after(async () => {
    await app?.stop();
  });

  it('serves nothing of the admin server on the app port', async () => {
    for (const p of ['/traces', '/metrics', '/state', '/traces/stats', '/blueprint', '/workflows/visualization']) {
      expect((await request(app.url, 'GET', p)).status, p).to.equal(404);
    }
  });

  it('lists every endpoint of spec 4.7 at /, each with a description', async () => {
    const { endpoints } = (await get('/')).body as {
      endpoints: Array<{ method: string; path: string; description: string }>;
    };
    const listed = endpoints.map((e) => `${e.method} ${e.path}`);
    for (const p of ['/', '/health', '/metrics', '/blueprint', '/state', '/entities', '/pages', '/schema-diff']) {
      expect(listed).to.include(`GET ${p}`);
    }
    for (const p of ['/plugins', '/workflows', '/workflows/visualization', '/traces', '/traces/<id>']) {
      expect(listed).to.include(`GET ${p}`);
    }
    for (const p of ['/traces/errors', '/traces/slow', '/traces/stats']) expect(listed).to.include(`GET ${p}`);
    expect(listed).to.include('DELETE /traces');
    for (const e of endpoints) expect(e.description, e.path).to.be.a('string').and.not.equal('');
  });

  it('keeps traces of real traffic: span trees, errors, slow, stats, a workflow in its request, DELETE', async () => {
    await request(admin, 'DELETE', '/traces');
    const created = await request(app.url, 'POST', '/api/tickets', { json: { title: 'traced' }, headers: agent() });
    expect(created.status, created.text).to.equal(201);
    const ticketId = String((created.body as Rec).id);
    const missing = await request(app.url, 'GET', '/api/tickets/nope', { headers: agent() });
    expect(missing.status).to.equal(404);
    const denied = await request(app.url, 'GET', '/api/tickets');
    expect(denied.status).to.equal(401);
    const escalated = await request(app.url, 'POST', `/api/skills/triage/tickets/${ticketId}/escalate`, {
      json: { reason: 'traced' },
      headers: agent(),
    });
    expect(escalated.status, escalated.text).to.equal(202);
    const job = await jobFinished(
      app.url,
      { authorization: `Bearer ${KEY}` },
      String((escalated.body as { job: Rec }).job.url),
    );
    expect(job).to.include({ status: 'completed' });

    const all = await traces();
    // Newest first: the job polls came last, the create first.
    expect(all.at(-1)?.traceId).to.equal(created.headers.get('x-trace-id'));
    expect((await traces('?limit=2')).map((t) => t.traceId)).to.deep.equal(all.slice(0, 2).map((t) => t.traceId));
    for (const t of all) {
      expect(t).to.have.keys('traceId', 'startTime', 'duration', 'metadata', 'spans');
      expect(t.metadata.path).to.be.a('string');
      expect(t.metadata.statusCode).to.be.a('number');
    }

    const one = (await get(`/traces/${String(created.headers.get('x-trace-id'))}`)).body as Rec & { spans: SpanNode[] };
    expect(one.metadata).to.include({ path: '/api/tickets', statusCode: 201, method: 'POST' });
    expect(one.spans).to.have.length(1);
    const [root] = one.spans;
    expect(root).to.include({ name: 'http.request', type: 'http' });
    for (const key of ['startTime', 'endTime', 'duration']) expect(root).to.have.property(key).that.is.a('number');
    const children = root.children.map((s) => s.name);
    expect(children).to.include.members(['route.match', 'auth.check']);
    expect(children.some((n) => n.startsWith('database.'))).to.equal(true);

    const withWorkflow = (await get(`/traces/${String(escalated.headers.get('x-trace-id'))}`)).body as {
      spans: SpanNode[];
    };
    const workflowSpans = withWorkflow.spans[0].children.filter((s) => s.type === 'workflow');
    expect(workflowSpans.map((s) => s.name)).to.include('workflow.EscalateTicket');

    const errors = await traces('/errors');
    expect(errors.map((t) => t.traceId)).to.include.members([
      missing.headers.get('x-trace-id'),
      denied.headers.get('x-trace-id'),
    ]);
    for (const t of errors) expect(t.metadata.statusCode).to.be.at.least(400);
    expect(errors.map((t) => t.traceId)).not.to.include(created.headers.get('x-trace-id'));

    const ids = (list: Trace[]) => list.map((t) => t.traceId);
    const slow = await traces('/slow?threshold=1');
    expect(ids(slow)).to.deep.equal(ids(all.filter((t) => t.duration >= 1)));
    // The default threshold is 1000 ms.
    expect(ids(await traces('/slow'))).to.deep.equal(ids(all.filter((t) => t.duration >= 1000)));

    const stats = (await get('/traces/stats')).body as Record<string, number>;
    expect(stats).to.have.keys('count', 'p50Duration', 'p95Duration', 'p99Duration', 'errorCount');
    expect(stats.count).to.be.at.least(all.length);
    expect(stats.errorCount).to.be.at.least(2);
    expect(stats.p50Duration).to.be.at.most(stats.p95Duration);
    expect(stats.p95Duration).to.be.at.most(stats.p99Duration);

    const cleared = await request(admin, 'DELETE', '/traces');
    expect(cleared.status).to.equal(204);
    expect(await traces()).to.deep.equal([]);
    expect(((await get('/traces/stats')).body as Rec).count).to.equal(0);
  });

  it('answers an unknown trace, a bad limit or threshold with coded errors', async () => {
    const unknown = await get('/traces/0123456789abcdef0123456789abcdef');
    expect(unknown.status).to.equal(404);
    expect((unknown.body as { error: Rec }).error.code).to.equal('NOT_FOUND');
    for (const query of ['/traces?limit=0', '/traces?limit=-1', '/traces?limit=1001', '/traces?limit=abc']) {
      const res = await get(query);
      expect(res.status, query).to.equal(400);
      expect((res.body as { error: Rec }).error.code, query).to.equal('INVALID_QUERY');
    }
    for (const query of ['/traces?limit=1.5', '/traces/slow?threshold=abc', '/traces/slow?threshold=-5']) {
      const res = await get(query);
      expect(res.status, query).to.equal(400);
      expect((res.body as { error: Rec }).error.code, query).to.equal('INVALID_QUERY');
    }
    expect((await get('/traces?limit=1000')).status).to.equal(200);
    const nowhere = await get('/nowhere');
    expect(nowhere.status).to.equal(404);
    expect((nowhere.body as { error: Rec }).error.code).to.equal('ROUTE_NOT_FOUND');
  });

  it('refuses a Host that is not loopback (DNS rebinding) and methods other than GET and DELETE /traces', async () => {
    const port = new URL(admin).port;
    for (const host of ['evil.example', `evil.example:${port}`, 'localhost.evil.example', '10.0.0.1', '[::2]']) {
      const res = await getWithHost(admin, '/state', host);
      expect(res.status, host).to.equal(403);
      expect((res.body as { error: Rec }).error.code, host).to.equal('FORBIDDEN');
    }
    for (const host of [`localhost:${port}`, 'localhost', `127.0.0.1:${port}`, '127.1.2.3', `[::1]:${port}`]) {
      expect((await getWithHost(admin, '/health', host)).status, host).to.equal(200);
    }
    const post = await request(admin, 'POST', '/traces');
    expect(post.status).to.equal(405);
    expect(post.headers.get('allow')).to.equal('GET, DELETE');
    expect((post.body as { error: Rec }).error.code).to.equal('METHOD_NOT_ALLOWED');
    const del = await request(admin, 'DELETE', '/state');
    expect(del.status).to.equal(405);
    expect(del.headers.get('allow')).to.equal('GET');
    expect((await request(admin, 'PUT', '/traces/x')).status).to.equal(405);
  });

  it('tells the blueprint, state, entities, pages, schema diff, plugins and workflows', async () => {
    const health = (await get('/health')).body as Rec;
    expect(health.status).to.equal('ok');
    const onDisk = JSON.parse(fs.readFileSync(path.join(appDir, 'blueprint.json'), 'utf8')) as Rec & {
      entities: Array<{ name: string; fields: unknown[]; relations: unknown[] }>;
    };
    const blueprint = (await get('/blueprint')).body as Rec;
    // The file's first key says bp wrote it; the endpoint answers the blueprint alone.
    const { '//': header, ...parsed } = onDisk;
    expect(header).to.match(/^generated by bp/);
    expect(blueprint).to.deep.equal(parsed);
    expect(blueprint.project).to.include({ name: 'Helpdesk' });

    const state = (await get('/state')).body as Rec;
    const bpVersion = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Rec).version;
    expect(state).to.include({ status: 'running', bpVersion, dialect: 'sqlite', schemaDiff: null, nodeEnv: null });
    expect(state.appVersion).to.equal((onDisk.project as Rec).version);
    expect(state.uptimeSeconds).to.be.a('number');

    expect((await get('/entities')).body).to.deep.equal(
      onDisk.entities.map((e) => ({ name: e.name, fieldCount: e.fields.length, relationCount: e.relations.length })),
    );
    expect((await get('/pages')).body).to.deep.equal([
      { path: '/tickets', title: 'Open tickets', layout: 'list', auth: 'required' },
      { path: '/tickets/:id', title: 'Ticket', layout: 'detail', auth: 'required' },
    ]);
    const diff = await get('/schema-diff');
    expect(diff.status).to.equal(200);
    expect(diff.body).to.equal(null);
    expect((await get('/plugins')).body).to.deep.equal({
      loaded: [],
      plugins: [],
      notificationSenders: [],
      services: [],
      middleware: [],
      routes: false,
      delegate: false,
    });
    const workflows = (await get('/workflows')).body as { workflows: Rec[]; jobs: Record<string, number> };
    expect(workflows.workflows).to.deep.equal([
      { name: 'AnnounceResolution', trigger: 'entity', stepCount: 1 },
      { name: 'EscalateTicket', trigger: 'manual', stepCount: 2 },
      { name: 'InboundEmail', trigger: 'webhook', stepCount: 1 },
    ]);
    expect(workflows.jobs).to.have.keys('pending', 'running', 'completed', 'failed');
    expect(workflows.jobs.completed).to.be.at.least(1);
    const page = await get('/workflows/visualization');
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    // The graph of runtime/admin/workflow-graph.ts (its own test draws it in Chromium).
    expect(page.text).to.include('Workflows of Helpdesk');
    for (const name of ['AnnounceResolution', 'EscalateTicket', 'InboundEmail']) {
      expect(page.text).to.include(`id="workflow-${name}"`);
    }
  });

  it('continues the trace of a valid traceparent and ignores an invalid one', async () => {
    const continued = await request(app.url, 'GET', '/api/tickets', {
      headers: { ...agent(), traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    });
    expect(continued.headers.get('x-trace-id')).to.equal(TRACE_ID);
    const trace = (await get(`/traces/${TRACE_ID}`)).body as { spans: SpanNode[] };
    expect(trace.spans[0].attributes).to.include({ parentSpanId: PARENT_ID });
    for (const bad of [
      `00-${'0'.repeat(32)}-${PARENT_ID}-01`,
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
      `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`,
      `ff-${TRACE_ID}-${PARENT_ID}-01`,
      `00-${TRACE_ID}-${PARENT_ID}-01-extra`,
      `00-${TRACE_ID.slice(1)}-${PARENT_ID}-01`,
    ]) {
      const res = await request(app.url, 'GET', '/api/tickets', { headers: { ...agent(), traceparent: bad } });
      const id = res.headers.get('x-trace-id');
      expect(id, bad).to.match(/^[0-9a-f]{32}$/);
      expect(id, bad).not.to.equal(TRACE_ID);
      expect(id, bad).not.to.equal('0'.repeat(32));
    }
  });

  it('exposes Prometheus metrics by route that promtool accepts, on the admin server and METRICS_PORT', async () => {
    const created = await request(app.url, 'POST', '/api/tickets', { json: { title: 'counted' }, headers: agent() });
    expect(created.status).to.equal(201);
    expect((await request(app.url, 'GET', '/no/such/path')).status).to.equal(404);
    const scraped = await request(metricsBase, 'GET', '/metrics');
    expect(scraped.status).to.equal(200);
    expect(scraped.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
    const text = scraped.text;
    expect(text).to.match(/^bp_http_requests_total\{route="Ticket\.create",status_code="201"\} \d+$/m);
    expect(text).to.match(/^bp_http_requests_total\{route="unmatched",status_code="404"\} \d+$/m);
    // The raw path never becomes a label value.
    expect(text).not.to.include('/no/such/path');
    expect(text).to.match(
      /^bp_http_request_duration_seconds_bucket\{le="0\.1",route="Ticket\.create",status_code="201"\}/m,
    );
    expect(text).to.match(/^bp_database_query_duration_seconds_count\{span="database\.\w+",dialect="sqlite"\} \d+$/m);
    expect(text).to.match(/^bp_jobs\{state="completed"\} [1-9]\d*$/m);
    expect(text).to.match(/^bp_jobs\{state="pending"\} \d+$/m);
    expect(text).to.match(/^process_cpu_user_seconds_total \d/m);
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(check.status, `${check.stdout}${check.stderr}`).to.equal(0);

    const viaAdmin = await get('/metrics');
    expect(viaAdmin.status).to.equal(200);
    expect(viaAdmin.text).to.include('bp_http_requests_total{route="Ticket.create",status_code="201"}');
    // METRICS_PORT serves /metrics alone.
    for (const p of ['/', '/state', '/traces', '/health'])
      expect((await request(metricsBase, 'GET', p)).status, p).to.equal(404);
    const post = await request(metricsBase, 'POST', '/metrics');
    expect(post.status).to.equal(405);
    expect(post.headers.get('allow')).to.equal('GET');
  });

  it('refuses to start with an ADMIN_HOST that is not loopback, or a port that is not one', () => {
    for (const [env, message] of [
      [{ ADMIN_PORT: '0', ADMIN_HOST: '0.0.0.0' }, 'ADMIN_HOST must be a loopback address'],
      [{ ADMIN_PORT: 'abc' }, 'ADMIN_PORT must be a number from 0 to 65535'],
      [{ METRICS_PORT: '70000' }, 'METRICS_PORT must be a number from 0 to 65535'],
    ] as const) {
      const r = spawnSync(process.execPath, DEV_COMMAND, {
        cwd: appDir,
        encoding: 'utf8',
        env: { ...process.env, ...ENV, PORT: '0', ...env },
        timeout: 60_000,
      });
      expect(r.status, r.stdout + r.stderr).to.equal(1);
      expect(r.stderr).to.include(message);
    }
  });

  it('in production: no admin server (a warning says ADMIN_PORT is ignored), METRICS_PORT still serves', async () => {
    // As `npm start` runs it: the build in dist/, where prom-client is loaded by import() from node_modules.
    const prod = await startApp(
      appDir,
      { ...ENV, NODE_ENV: 'production', ADMIN_PORT: '0', METRICS_PORT: '0' },
      START_COMMAND,
    );
    try {
      const scrape = await printed(prod, /metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/);
      expect(prod.output()).to.include('warning: ADMIN_PORT is ignored in production');
      expect(prod.output()).not.to.include('admin server on');
      expect((await request(prod.url, 'GET', '/api/tickets', { headers: agent() })).status).to.equal(200);
      const metrics = await request(scrape, 'GET', '/metrics');
      expect(metrics.status).to.equal(200);
      expect(metrics.text).to.include('bp_http_requests_total{route="Ticket.list",status_code="200"} 1');
      for (const p of ['/traces', '/metrics', '/state'])
        expect((await request(prod.url, 'GET', p)).status, p).to.equal(404);
    } finally {
      await prod.stop();
    }
  });
});

describe('admin server checks (units)', () => {
  it('recognises loopback Host headers only', () => {
    for (const host of ['localhost', 'LOCALHOST:3030', '127.0.0.1', '127.255.0.9:80', '[::1]', '[::1]:3030']) {
      expect(isLoopbackHost(host), host).to.equal(true);
    }
    for (const host of [
      undefined,
      '',
      'evil.example',
      'localhost.evil.example',
      '127.0.0.1.evil.example',
      '128.0.0.1',
      '[::2]:80',
      '::1',
      'localhost:abc',
      'localhost:3030:1',
      '[::1]x',
    ]) {
      expect(isLoopbackHost(host), String(host)).to.equal(false);
    }
    for (const name of ['localhost', '127.0.0.1', '127.9.9.9', '::1'])
      expect(isLoopbackName(name), name).to.equal(true);
    for (const name of ['0.0.0.0', '::', '10.0.0.1', 'example.com']) expect(isLoopbackName(name), name).to.equal(false);
  });

  it('accepts W3C traceparent headers as the recommendation defines them', () => {
    expect(isTraceparent(`00-${TRACE_ID}-${PARENT_ID}-01`)).to.equal(true);
    expect(isTraceparent(`00-${TRACE_ID}-${PARENT_ID}-00`)).to.equal(true);
    // A later version may carry more fields after a dash.
    expect(isTraceparent(`01-${TRACE_ID}-${PARENT_ID}-01-more`)).to.equal(true);
    for (const bad of [
      '',
      `00-${TRACE_ID}-${PARENT_ID}-0`,
      `00-${TRACE_ID}-${PARENT_ID}-0g`,
      `00-${TRACE_ID}-${PARENT_ID}-01x`,
      `01-${TRACE_ID}-${PARENT_ID}-01x`,
      `0x-${TRACE_ID}-${PARENT_ID}-01`,
      `ff-${TRACE_ID}-${PARENT_ID}-01`,
      `00_${TRACE_ID}-${PARENT_ID}-01`,
      `00-${'0'.repeat(32)}-${PARENT_ID}-01`,
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
      `00-${TRACE_ID.replace('4', 'G')}-${PARENT_ID}-01`,
    ]) {
      expect(isTraceparent(bad), bad).to.equal(false);
    }
  });

  it('keeps one trace per id, the newest, in the order traces arrived', () => {
    const store = new TraceStore();
    const trace = (traceId: string, path: string): Trace => ({
      traceId,
      startTime: Date.now(),
      duration: 1,
      metadata: { method: 'GET', path, statusCode: 200 },
      spans: [],
    });
    store.add(trace('a', '/first'));
    store.add(trace('b', '/second'));
    store.add(trace('a', '/third'));
    expect(store.list().map((t) => `${t.traceId} ${t.metadata.path}`)).to.deep.equal(['a /third', 'b /second']);
  });

  it('answers for an app without workflows: no workflow, every job count 0, a page saying so', async () => {
    const server = http.createServer(
      adminHandler({
        extension: {},
        appDir: freshDir('admin-no-workflows'),
        startedAt: Date.now(),
        nodeEnv: undefined,
        dialect: 'sqlite',
        traces: new TraceStore(),
        metrics: new AppMetrics('sqlite'),
        schemaDiff: () => null,
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      expect((await request(base, 'GET', '/workflows')).body).to.deep.equal({
        workflows: [],
        jobs: { pending: 0, running: 0, completed: 0, failed: 0 },
      });
      expect((await request(base, 'GET', '/workflows/visualization')).text).to.include('No workflows.');
      const metrics = await request(base, 'GET', '/metrics');
      expect(metrics.text).to.match(/^bp_jobs\{state="failed"\} 0$/m);
      // No blueprint.json in that folder: a coded 404, not a crash.
      const blueprint = await request(base, 'GET', '/blueprint');
      expect(blueprint.status).to.equal(404);
      expect((blueprint.body as { error: Rec }).error.code).to.equal('NOT_FOUND');
    } finally {
      server.close();
    }
  });
});
