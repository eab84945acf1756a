// POST /mcp of a generated app (test/fixtures/mcp), driven by the MCP SDK's own Client over
// Streamable HTTP, against the app on a real port, once on SQLite and once on PostgreSQL: the tools and their schemas
// (the same as openapi.json's), calls that run exactly what the REST routes run (scopes, access,
// command policy and availableWhen, audit with the run id, one idempotency store), and the checks
// before any MCP (API keys only, trusted origins, POST only).

import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import { validateBlueprint } from '../generator/compile.ts';
import { mcpTools } from '../generator/contract/mcp-tools.ts';
import type { Blueprint } from '../generator/model/types.ts';
import { nodeSourceHost } from '../generator/source.ts';
import {
  addUser,
  freshDir,
  freshKey,
  generate,
  login,
  request,
  ROOT,
  startApp,
  type RunningApp,
} from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

type Rec = Record<string, unknown>;
interface ToolResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Rec;
  _meta?: Rec;
}

const env = {
  PLANNER_API_KEY: 'planner-key-0123456789abcdef',
  VIEWER_API_KEY: 'viewer-key-0123456789abcdef',
  SESSION_SECRET: 'mcp-secret-0123456789abcdef0123456789abcd',
};
const planner = { authorization: `Bearer ${env.PLANNER_API_KEY}` };
const errorOf = (body: unknown) => (body as { error: Rec }).error;
/** The app's error JSON a refused tool call carries in its text content. */
const toolError = (result: ToolResult) => {
  expect(result.isError, JSON.stringify(result)).to.equal(true);
  return errorOf(JSON.parse(result.content[0].text as string));
};

for (const database of DATABASES)
  describe(`MCP endpoint (generated app, /mcp, ${database})`, function () {
    this.timeout(120_000);
    let appDir: string;
    let app: RunningApp;
    const clients: Client[] = [];

    async function connect(key: string, headers: Record<string, string> = {}): Promise<Client> {
      const client = new Client({ name: 'bp-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } },
      });
      await client.connect(transport);
      clients.push(client);
      return client;
    }
    const call = async (client: Client, name: string, args: Rec) =>
      (await client.callTool({ name, arguments: args })) as unknown as ToolResult;
    /** A raw JSON-RPC POST, as a client that is not the SDK's sends it. */
    const rpc = (headers: Record<string, string>, body: unknown = { jsonrpc: '2.0', id: 1, method: 'tools/list' }) =>
      request(app.url, 'POST', '/mcp', {
        json: body,
        headers: { accept: 'application/json, text/event-stream', ...headers },
      });
    const tasks = async (projectId: string) => {
      const res = await request(app.url, 'GET', `/api/skills/board/projects/${projectId}/tasks`, { headers: planner });
      expect(res.status, res.text).to.equal(200);
      return (res.body as { items: Rec[] }).items;
    };
    const createTask = async (projectId: string, title: string) => {
      const res = await request(app.url, 'POST', '/api/tasks', {
        json: { projectId, title },
        headers: { ...planner, 'idempotency-key': freshKey() },
      });
      expect(res.status, res.text).to.equal(201);
      return res.body as Rec;
    };

    before(async () => {
      appDir = path.join(freshDir(`mcp-${database}`), 'app');
      const r = await generate(path.join(ROOT, 'test/fixtures/mcp/app.toml'), appDir);
      expect(r.status, r.stderr).to.equal(0);
      const appEnv = { ...env, DATABASE_URL: await databaseUrl(database, 'mcp') };
      addUser(appDir, appEnv, 'lead@example.com', 'correct horse battery', ['lead']);
      app = await startApp(appDir, appEnv);
    });
    after(async () => {
      for (const client of clients) await client.close();
      await app?.stop();
    });

    it('lists one tool per skill action and command, with the input schemas of openapi.json', async () => {
      const client = await connect(env.VIEWER_API_KEY);
      expect(client.getServerVersion()).to.include({ name: 'planner', version: '2.1.0' });
      const { tools } = await client.listTools();
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
      expect(tools.map((t) => t.name)).to.deep.equal([
        'board_list_tasks',
        'board_get_task',
        'board_add_task',
        'board_drop_task',
        'archive_task',
        'start_task',
      ]);
      const doc = JSON.parse(fs.readFileSync(path.join(appDir, 'openapi.json'), 'utf8')) as {
        paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: Rec }> } }>>;
      };
      const bodyOf = (p: string, method: string) => doc.paths[p][method].requestBody.content['application/json'].schema;
      const add = byName.board_add_task;
      expect(add.description).to.equal(
        'Adds a task to a project. Same as POST /api/skills/board/projects/{projectId}/tasks.',
      );
      // One flat object of named arguments: the path parameter, the body's keys, the idempotency key.
      const addProps = add.inputSchema.properties as Record<string, Rec>;
      const addBody = bodyOf('/api/skills/board/projects/{projectId}/tasks', 'post') as {
        properties: Rec;
        required: string[];
      };
      expect(Object.keys(addProps)).to.deep.equal(['projectId', ...Object.keys(addBody.properties), 'idempotencyKey']);
      for (const [key, schema] of Object.entries(addBody.properties)) expect(addProps[key], key).to.deep.equal(schema);
      expect(add.inputSchema.required).to.deep.equal(['projectId', ...addBody.required, 'idempotencyKey']);
      expect(add.inputSchema).to.include({ type: 'object', additionalProperties: false });
      expect(add.annotations).to.deep.include({ readOnlyHint: false, destructiveHint: false });
      expect(byName.board_drop_task.annotations).to.deep.include({ destructiveHint: true });
      expect(byName.board_list_tasks.annotations).to.deep.include({ readOnlyHint: true });
      expect(Object.keys(byName.board_list_tasks.inputSchema.properties as Rec)).to.include.members([
        'projectId',
        'level',
        'limit',
        'offset',
      ]);
      const start = byName.start_task;
      const startInput = bodyOf('/api/commands/start_task/{id}', 'post') as { properties: Rec; required: string[] };
      expect(start.inputSchema.required).to.deep.equal(['recordId', ...startInput.required, 'idempotencyKey']);
      expect(Object.keys(start.inputSchema.properties as Rec)).to.deep.equal([
        'recordId',
        ...Object.keys(startInput.properties),
        'idempotencyKey',
      ]);
      expect(start.annotations).to.deep.include({ title: 'Start', readOnlyHint: false });
    });

    it('runs a skill action as its REST route does: the record is stored, audited with the run id', async () => {
      const client = await connect(env.PLANNER_API_KEY, { 'x-agent-run-id': 'run-mcp-1' });
      const key = freshKey();
      const result = await call(client, 'board_add_task', {
        projectId: 'alpha',
        title: 'Write the plan',
        priority: 3,
        idempotencyKey: key,
      });
      expect(result.isError, JSON.stringify(result)).to.not.equal(true);
      expect(result._meta).to.include({ 'bp/status': 201, 'bp/replayed': false });
      const task = result.structuredContent as Rec;
      expect(task).to.include({ projectId: 'alpha', title: 'Write the plan', priority: 3, status: 'open' });
      expect(JSON.parse(result.content[0].text as string)).to.deep.equal(task);
      const stored = await request(app.url, 'GET', `/api/tasks/${task.id}`, { headers: planner });
      expect(stored.body).to.deep.equal(task);
      const trail = await request(app.url, 'GET', `/api/audit?entity=Task&recordId=${task.id}`, { headers: planner });
      const entries = (trail.body as { items: Rec[] }).items;
      expect(entries).to.have.length(1);
      expect(entries[0]).to.include({ operation: 'Task.create', agentRunId: 'run-mcp-1', idempotencyKey: key });

      const got = await call(client, 'board_get_task', { projectId: 'alpha', taskId: task.id });
      expect(got.structuredContent).to.deep.equal(task);
      const listed = await call(client, 'board_list_tasks', { projectId: 'alpha', level: 3 });
      expect((listed.structuredContent as { items: Rec[] }).items.map((t) => t.id)).to.deep.equal([task.id]);
    });

    it('runs a retried change once: the same idempotencyKey returns the stored result, over MCP and REST', async () => {
      const client = await connect(env.PLANNER_API_KEY);
      const key = freshKey();
      const args = { projectId: 'retry', title: 'Only once', idempotencyKey: key };
      const first = await call(client, 'board_add_task', args);
      const again = await call(client, 'board_add_task', args);
      expect(again._meta).to.include({ 'bp/status': 201, 'bp/replayed': true });
      expect(again.structuredContent).to.deep.equal(first.structuredContent);
      const viaRest = await request(app.url, 'POST', '/api/skills/board/projects/retry/tasks', {
        json: { title: 'Only once' },
        headers: { ...planner, 'idempotency-key': key },
      });
      expect(viaRest.headers.get('idempotent-replayed')).to.equal('true');
      expect(viaRest.body).to.deep.equal(first.structuredContent);
      expect(await tasks('retry')).to.have.length(1);
      const changed = await call(client, 'board_add_task', { ...args, title: 'Something else' });
      expect(toolError(changed).code).to.equal('IDEMPOTENCY_KEY_REUSE');
    });

    it('refuses a key without the action scope (INSUFFICIENT_SCOPE), writing nothing', async () => {
      const client = await connect(env.VIEWER_API_KEY);
      const result = await call(client, 'board_add_task', {
        projectId: 'scoped',
        title: 'Not allowed',
        idempotencyKey: freshKey(),
      });
      const error = toolError(result);
      expect(error).to.include({ code: 'INSUFFICIENT_SCOPE', retryable: false });
      expect(error.message).to.match(/tasks\.write/);
      expect(result._meta).to.include({ 'bp/status': 403 });
      expect(await tasks('scoped')).to.have.length(0);
    });

    it('runs commands through the executor: availableWhen, policy (FORBIDDEN), no change when refused', async () => {
      const client = await connect(env.PLANNER_API_KEY);
      const task = await createTask('cmd', 'Commanded');
      const started = await call(client, 'start_task', {
        recordId: task.id,
        note: 'on it',
        idempotencyKey: freshKey(),
      });
      expect(started.structuredContent).to.include({ id: task.id, status: 'started', note: 'on it' });
      const again = await call(client, 'start_task', {
        recordId: task.id,
        note: 'twice',
        idempotencyKey: freshKey(),
      });
      expect(toolError(again).code).to.equal('COMMAND_UNAVAILABLE');

      const archived = await call(client, 'archive_task', { recordId: task.id, idempotencyKey: freshKey() });
      expect(toolError(archived)).to.include({ code: 'FORBIDDEN', retryable: false });
      const after = await request(app.url, 'GET', `/api/tasks/${task.id}`, { headers: planner });
      expect(after.body).to.include({ status: 'started', note: 'on it' });
    });

    it('answers bad arguments with the error envelope: no idempotencyKey, unknown arguments, __proto__', async () => {
      const client = await connect(env.PLANNER_API_KEY);
      const task = await createTask('args', 'Argued');
      const unkeyed = await call(client, 'start_task', { recordId: task.id, note: 'x' });
      expect(toolError(unkeyed).code).to.equal('IDEMPOTENCY_KEY_REQUIRED');
      const unknown = await call(client, 'board_get_task', { projectId: 'args', taskId: task.id, title: 'x' });
      expect(toolError(unknown)).to.deep.include({
        code: 'VALIDATION_FAILED',
        details: [{ field: 'title', code: 'UNKNOWN_ARGUMENT', message: 'unknown argument "title"' }],
      });
      const missing = await call(client, 'board_get_task', { projectId: 'args' });
      expect((toolError(missing).details as Rec[])[0]).to.include({ field: 'taskId', code: 'REQUIRED' });
      // A body key the body does not take is refused by the body's own check, as over REST.
      const extra = await call(client, 'board_add_task', {
        projectId: 'args',
        title: 't',
        colour: 'red',
        idempotencyKey: freshKey(),
      });
      expect(toolError(extra).code).to.equal('VALIDATION_FAILED');
      expect(JSON.stringify(toolError(extra).details)).to.include('colour');
      const proto = await call(client, 'board_add_task', {
        ...(JSON.parse('{"projectId":"args","title":"p","__proto__":{"admin":true}}') as Rec),
        idempotencyKey: freshKey(),
      });
      expect((toolError(proto).details as Rec[])[0]).to.include({ code: 'FORBIDDEN_KEY' });
      expect((await tasks('args')).map((t) => t.title)).to.deep.equal(['Argued']);
      let refused: unknown;
      await client.callTool({ name: 'no_such_tool', arguments: {} }).catch((err: unknown) => (refused = err));
      expect(String(refused)).to.match(/no tool no_such_tool/);
    });

    it('answers within the trace of the POST (X-Trace-ID), with the tool result in plain JSON', async () => {
      const res = await rpc(planner, {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'board_list_tasks', arguments: { projectId: 'alpha' } },
      });
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      const { result } = res.body as { result: ToolResult };
      expect(result._meta?.['bp/traceId']).to.equal(res.headers.get('x-trace-id'));
    });

    it('answers a malformed tools/call with JSON-RPC -32602 (invalid params) and a short message', async () => {
      const cases: Array<[unknown, RegExp]> = [
        [{ name: 'board_list_tasks', arguments: [1, 2] }, /"arguments" must be an object/],
        [{ name: null, arguments: {} }, /"name" must be a tool name/],
        [{ arguments: {} }, /"name" must be a tool name/],
        [{ name: 'board_list_tasks', arguments: 'projectId=alpha' }, /"arguments" must be an object/],
      ];
      for (const [params, message] of cases) {
        const res = await rpc(planner, { jsonrpc: '2.0', id: 9, method: 'tools/call', params });
        expect(res.status, res.text).to.equal(200);
        const { error } = res.body as { error: { code: number; message: string; data?: unknown } };
        expect(error, JSON.stringify(params)).to.include({ code: -32602 });
        expect(error.message).to.match(message);
        // No dump of the schema library's issues.
        expect(error.message.length, error.message).to.be.below(100);
      }
    });

    it('refuses callers without an API key (401), even signed-in people with their CSRF token', async () => {
      const anonymous = await rpc({});
      expect(anonymous.status).to.equal(401);
      expect(errorOf(anonymous.body)).to.include({ code: 'UNAUTHENTICATED' });
      const wrongKey = await rpc({ authorization: 'Bearer not-a-key-0123456789' });
      expect(wrongKey.status).to.equal(401);
      const session = await login(app.url, 'lead@example.com', 'correct horse battery');
      const person = await rpc({ cookie: session.cookie, 'x-csrf-token': session.csrfToken });
      expect(person.status, person.text).to.equal(401);
      expect(errorOf(person.body)).to.include({ code: 'UNAUTHENTICATED' });
      expect(person.headers.get('www-authenticate')).to.equal('Bearer');
    });

    it('refuses an Origin that is not one of auth.trustedOrigins (403) and takes a trusted one', async () => {
      const foreign = await rpc({ ...planner, origin: 'http://evil.example' });
      expect(foreign.status).to.equal(403);
      expect(errorOf(foreign.body)).to.include({ code: 'ORIGIN_NOT_ALLOWED' });
      // DNS rebinding: the attacker's name for this server is its own origin, and proves nothing.
      const rebound = await rpc({ ...planner, origin: app.url.replace('127.0.0.1', 'localhost') });
      expect(rebound.status).to.equal(403);
      const trusted = await rpc({ ...planner, origin: 'https://agents.example.com' });
      expect(trusted.status, trusted.text).to.equal(200);
      expect((trusted.body as { result: { tools: Rec[] } }).result.tools).to.have.length(6);
    });

    it('serves POST only: GET and DELETE answer 405 with Allow', async () => {
      for (const method of ['GET', 'DELETE']) {
        const res = await request(app.url, method, '/mcp', { headers: { ...planner, accept: 'text/event-stream' } });
        expect(res.status, method).to.equal(405);
        expect(res.headers.get('allow')).to.equal('POST');
        expect(errorOf(res.body)).to.include({ code: 'METHOD_NOT_ALLOWED' });
      }
    });
  });

describe('MCP tools (generator)', () => {
  const model = (blueprint: string) =>
    validateBlueprint(path.join(ROOT, blueprint), nodeSourceHost()).model as Blueprint;

  it('makes one tool per served skill action and per command of the helpdesk, named as their operations', () => {
    const bp = model('fixtures/helpdesk/helpdesk.toml');
    const tools = mcpTools(bp);
    expect(tools.map((t) => t.name)).to.deep.equal([
      ...bp.skills.flatMap((s) => s.actions.map((a) => `${s.name}_${a.name}`)),
      ...bp.commands.map((c) => c.operationId),
    ]);
    const escalate = tools.find((t) => t.name === 'triage_escalate_ticket');
    // A job is a change whatever its method: it takes an idempotency key, and may reach the world outside.
    expect(escalate?.inputSchema.required).to.include('idempotencyKey');
    expect(escalate?.annotations).to.include({ openWorldHint: true });
    expect(JSON.stringify(tools)).to.not.include('$ref');
  });

  it('leaves out pass-through actions, and /mcp out of an app without skills or commands', async () => {
    const skills = mcpTools(model('test/fixtures/skills/app.toml')).map((t) => t.name);
    expect(skills).to.not.include('board_docs');
    expect(skills).to.include.members(['board_list_tasks', 'public_open_tasks']);
    expect(mcpTools(model('test/fixtures/valid/presentational/app.toml'))).to.deep.equal([]);
    const appDir = path.join(freshDir('mcp-none'), 'app');
    const r = await generate(path.join(ROOT, 'test/fixtures/valid/presentational/app.toml'), appDir);
    expect(r.status, r.stderr).to.equal(0);
    expect(fs.existsSync(path.join(appDir, 'src/mcp.ts'))).to.equal(false);
    expect(fs.readFileSync(path.join(appDir, 'src/app.ts'), 'utf8')).to.not.include('mcp');
  });
});
