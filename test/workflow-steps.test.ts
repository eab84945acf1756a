// The workflow step types beyond query, command and notify, in a generated app over HTTP: each
// job submitted by a skill action (202) and polled at /api/jobs/<id>, on a real SQLite file, its
// webhooks sent to real loopback HTTP servers. In development a webhook reaches them (one
// Idempotency-Key over every attempt and every run of a job); in production (NODE_ENV=production)
// the same targets are refused, whatever spelling of the address, and never receive a request.

import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { expect } from 'chai';
import {
  freshDir,
  freshKey,
  generate,
  jobFinished,
  request,
  ROOT,
  startApp,
  typecheck,
  type RunningApp,
} from './support/apps.ts';

type Rec = Record<string, unknown>;
type Job = { id: string; status: string; url: string; result: Rec | null; error: Rec | null; attempts: number };

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A loopback HTTP server answering with `answers` in turn (the last one from then on), recording each request. */
async function hookServer(answers: Array<{ status: number; json?: unknown; location?: string }>) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ method: String(req.method), url: String(req.url), headers: req.headers, body });
      const answer = answers[Math.min(received.length - 1, answers.length - 1)];
      const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' };
      if (answer.location) headers.location = answer.location;
      res.writeHead(answer.status, headers).end(JSON.stringify(answer.json ?? { status: answer.status }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    received,
    port,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const ENV = { PLANNER_API_KEY: 'planner-key-0123456789abcdef' };
const planner = { authorization: `Bearer ${ENV.PLANNER_API_KEY}` };

describe('workflow steps: webhook, condition, loop, delay, plugin, email (generated app, over HTTP)', function () {
  this.timeout(120_000);
  let appDir: string;
  let app: RunningApp;

  const newTask = async (title: string, fields: Rec = {}): Promise<Rec> => {
    const json = { title, projectId: 'p0', ...fields };
    const res = await request(app.url, 'POST', '/api/tasks', {
      json,
      headers: { ...planner, 'idempotency-key': freshKey() },
    });
    expect(res.status, res.text).to.equal(201);
    return res.body as Rec;
  };
  const task = async (id: unknown): Promise<Rec> =>
    (await request(app.url, 'GET', `/api/tasks/${String(id)}`, { headers: planner })).body as Rec;
  /** Submits the action's job and waits for its end. */
  const run = async (id: unknown, action: string, body: unknown = {}): Promise<Job> => {
    const res = await request(app.url, 'POST', `/api/skills/steps/tasks/${String(id)}/${action}`, {
      json: body,
      headers: { ...planner, 'idempotency-key': freshKey() },
    });
    expect(res.status, res.text).to.equal(202);
    return jobFinished<Job>(app.url, planner, (res.body as { job: Job }).job.url, 400);
  };

  before(async () => {
    appDir = path.join(freshDir('workflow-steps'), 'app');
    const r = await generate(path.join(ROOT, 'test/fixtures/workflow-steps/app.toml'), appDir);
    expect(r.status, r.stderr).to.equal(0);
    // The team's own file: the email adapter's sender and the crm plugin's one action.
    fs.writeFileSync(
      path.join(appDir, 'src', 'extend.ts'),
      `import { defineExtension } from './runtime/http/extension.ts';
export default defineExtension({
  notifications: {
    mailer: async (m, config) =>
      console.log(\`MAIL from \${String(config.from)} to \${m.to}: \${m.subject} / \${m.body} / \${m.template}\`),
  },
  plugins: {
    crm: {
      tag: async (params, ctx) => ({
        tag: \`T-\${(params as { title: string }).title}\`,
        by: ctx.actor.id,
        workflow: ctx.workflow,
      }),
    },
  },
});
`,
    );
  });

  it('typechecks in strict mode, with plugins in src/extend.ts', () => {
    const r = typecheck(appDir);
    expect(r.stdout + r.stderr).to.equal('');
  });

  describe('in development', () => {
    before(async () => {
      app = await startApp(appDir, ENV);
    });
    after(async () => app?.stop());

    it('sends a webhook step as JSON with its headers and an Idempotency-Key, and stores the answer', async () => {
      const hook = await hookServer([{ status: 200, json: { tag: 'from-crm' } }]);
      try {
        const t = await newTask('ship it', { priority: 4 });
        const job = await run(t.id, 'hook', { url: `${hook.url}/in?x=1` });
        expect(job.status, JSON.stringify(job.error)).to.equal('completed');
        expect(job.result).to.deep.equal({ reply: { tag: 'from-crm' } });
        expect((await task(t.id)).tag).to.equal('from-crm');
        expect(hook.received).to.have.length(1);
        const [got] = hook.received;
        expect(got).to.include({ method: 'POST', url: '/in?x=1' });
        expect(JSON.parse(got.body)).to.deep.equal({ title: 'ship it', priority: 4 });
        expect(got.headers).to.include({ 'x-task': t.id, 'content-type': 'application/json' });
        expect(got.headers['idempotency-key']).to.match(/^[0-9a-f]{32}$/);
      } finally {
        await hook.close();
      }
    });

    it('retries a 503 with the same Idempotency-Key, and a run of the job again reuses it', async () => {
      const flaky = await hookServer([{ status: 503 }, { status: 200, json: { tag: 'second time' } }]);
      const down = await hookServer([{ status: 500 }]);
      try {
        const t = await newTask('flaky');
        const job = await run(t.id, 'hook', { url: flaky.url });
        expect(job.status, JSON.stringify(job.error)).to.equal('completed');
        expect(flaky.received.map((r) => r.headers['idempotency-key'])).to.have.length(2);
        expect(new Set(flaky.received.map((r) => r.headers['idempotency-key'])).size).to.equal(1);
        // Always 500: 4 attempts per run, 2 runs (retries = 2); every request carries the one key.
        const failed = await run(t.id, 'hook', { url: down.url });
        expect(failed).to.include({ status: 'failed', attempts: 2 });
        expect(failed.error).to.include({ code: 'WEBHOOK_STEP_FAILED', retryable: true });
        expect(down.received).to.have.length(8);
        const keys = new Set(down.received.map((r) => r.headers['idempotency-key']));
        expect(keys.size).to.equal(1);
        expect([...keys][0]).to.not.equal(flaky.received[0].headers['idempotency-key']);
      } finally {
        await Promise.all([flaky.close(), down.close()]);
      }
    });

    it('fails a webhook step answered 4xx at once (WEBHOOK_STEP_REJECTED), and follows a 303 as a GET', async () => {
      const hook = await hookServer([{ status: 404, json: { error: 'no such hook' } }]);
      const moved = await hookServer([
        { status: 303, location: '/final' },
        { status: 200, json: { tag: 'moved' } },
      ]);
      try {
        const t = await newTask('rejected');
        const job = await run(t.id, 'hook', { url: hook.url });
        expect(job.error).to.include({ code: 'WEBHOOK_STEP_REJECTED', retryable: false });
        expect(String(job.error?.message)).to.include('answered 404').and.include('no such hook');
        expect(hook.received).to.have.length(1);
        const followed = await run(t.id, 'hook', { url: `${moved.url}/start` });
        expect(followed.status, JSON.stringify(followed.error)).to.equal('completed');
        expect(moved.received.map((r) => `${r.method} ${r.url}`)).to.deep.equal(['POST /start', 'GET /final']);
        expect(moved.received[1].headers['idempotency-key']).to.equal(moved.received[0].headers['idempotency-key']);
      } finally {
        await Promise.all([hook.close(), moved.close()]);
      }
    });

    it('sends the webhook of a transactional workflow after the commit, with the committed values', async () => {
      const hook = await hookServer([{ status: 200, json: { ok: true } }]);
      const refusing = await hookServer([{ status: 400 }]);
      try {
        const t = await newTask('after commit');
        const job = await run(t.id, 'hook-after-commit', { url: hook.url });
        expect(job.status, JSON.stringify(job.error)).to.equal('completed');
        expect(hook.received[0].method).to.equal('PUT');
        expect(JSON.parse(hook.received[0].body)).to.deep.equal({ priority: 8 });
        expect(app.output()).to.include('"body":"hook answered {\\"ok\\":true}"');
        // A webhook that fails cannot undo the committed update: the job fails, the change stays.
        const u = await newTask('committed anyway');
        const failed = await run(u.id, 'hook-after-commit', { url: refusing.url });
        expect(failed.error).to.include({ code: 'WEBHOOK_STEP_REJECTED' });
        expect((await task(u.id)).priority).to.equal(8);
      } finally {
        await Promise.all([hook.close(), refusing.close()]);
      }
    });

    it('refuses a webhook target that is not http(s), even in development', async () => {
      const t = await newTask('file');
      const job = await run(t.id, 'hook', { url: 'file:///etc/passwd' });
      expect(job.error).to.include({ code: 'WEBHOOK_TARGET_BLOCKED', retryable: false });
    });

    it('runs the then branch of a condition step when its if holds, else the else branch', async () => {
      const hot = await newTask('fire', { priority: 7, projectId: 'p1' });
      const done = await run(hot.id, 'triage');
      expect(done.status, JSON.stringify(done.error)).to.equal('completed');
      expect((done.result as { marked: Rec }).marked).to.include({ title: 'urgent: fire' });
      expect((await task(hot.id)).title).to.equal('urgent: fire');
      // priority holds ($gte 5) but neither branch of $or does.
      const calm = await newTask('breeze', { priority: 9, projectId: 'p2' });
      const other = await run(calm.id, 'triage');
      expect(other).to.include({ status: 'completed' });
      expect(other.result).to.deep.equal({});
      expect((await task(calm.id)).title).to.equal('breeze');
      expect(app.output()).to.include('"body":"calm: breeze"');
      const bad = await run(calm.id, 'bad-condition');
      expect(bad.error).to.include({ code: 'WORKFLOW_STEP_INVALID' });
      expect(String(bad.error?.message)).to.include('$and takes a list of conditions');
    });

    it('runs a loop step per item, with variables.item and variables.index, inside the transaction', async () => {
      const a = await newTask('first', { projectId: 'loop' });
      const b = await newTask('second', { projectId: 'loop' });
      const job = await run(a.id, 'renumber');
      expect(job.status, JSON.stringify(job.error)).to.equal('completed');
      const results = (job.result as { results: Rec[] }).results;
      // Two body steps per item: the update's record, then the notify (sent after the commit: null).
      expect(results).to.have.length(4);
      expect(results[0]).to.include({ id: a.id, priority: 0 });
      expect(results[2]).to.include({ id: b.id, priority: 1 });
      expect([results[1], results[3]]).to.deep.equal([null, null]);
      expect((await task(b.id)).priority).to.equal(1);
      expect(app.output()).to.include('"body":"renumbered second to 1"');
      const bad = await run(a.id, 'bad-loop');
      expect(bad.error).to.include({ code: 'WORKFLOW_STEP_INVALID' });
      expect(String(bad.error?.message)).to.include('loop items must be a list');
      expect(app.output()).to.not.include('never');
    });

    it('waits for a delay step before the next step, and refuses one over 5 minutes', async () => {
      const t = await newTask('patience');
      const started = Date.now();
      const job = await run(t.id, 'wait', { ms: '600' });
      expect(job.status, JSON.stringify(job.error)).to.equal('completed');
      expect(Date.now() - started).to.be.at.least(600);
      expect((await task(t.id)).priority).to.equal(3);
      const u = await newTask('too patient');
      const long = await run(u.id, 'wait', { ms: '10m' });
      expect(long.error).to.include({ code: 'WORKFLOW_LIMIT_EXCEEDED' });
      const junk = await run(u.id, 'wait', { ms: 'soon' });
      expect(junk.error).to.include({ code: 'WORKFLOW_STEP_INVALID' });
      expect((await task(u.id)).priority).to.equal(1);
    });

    it('runs a plugin step through the action src/extend.ts registers, and fails one it does not', async () => {
      const t = await newTask('lead');
      const job = await run(t.id, 'tag');
      expect(job.status, JSON.stringify(job.error)).to.equal('completed');
      expect(job.result).to.deep.equal({ tagged: { tag: 'T-lead', by: 'planner', workflow: 'Tag' } });
      expect((await task(t.id)).tag).to.equal('T-lead');
      const missing = await run(t.id, 'untag');
      expect(missing.error).to.include({ code: 'WORKFLOW_STEP_NOT_SUPPORTED' });
      expect(String(missing.error?.message)).to.include('plugin action crm.untag is not registered');
    });

    it('sends an email step through the email adapter, and refuses a request without a recipient', async () => {
      const t = await newTask('report', { priority: 2 });
      const job = await run(t.id, 'mail', { to: 'ops@example.com' });
      expect(job.status, JSON.stringify(job.error)).to.equal('completed');
      expect(app.output()).to.include(
        'MAIL from bot@example.com to ops@example.com: Task report / priority 2 / task-mail',
      );
      // The step reads `to`, so a blank one is refused before a job is stored (it once failed the job).
      const nobody = await request(app.url, 'POST', `/api/skills/steps/tasks/${String(t.id)}/mail`, {
        json: { to: '' },
        headers: { ...planner, 'idempotency-key': freshKey() },
      });
      expect(nobody.status, nobody.text).to.equal(400);
      expect((nobody.body as { error: { details: Rec[] } }).error.details).to.deep.include({
        field: 'to',
        code: 'REQUIRED',
        message: 'to must not be blank',
      });
    });
  });

  describe('in production', () => {
    before(async () => {
      app = await startApp(appDir, { ...ENV, NODE_ENV: 'production' });
    });
    after(async () => app?.stop());

    it('refuses webhook targets on loopback, however written, and the server never hears of them', async () => {
      const hook = await hookServer([{ status: 200 }]);
      try {
        const t = await newTask('blocked');
        const port = hook.port;
        for (const url of [
          hook.url,
          `http://localhost:${port}/`,
          `http://2130706433:${port}/`,
          `http://0x7f.1:${port}/`,
          `http://0177.0.0.1:${port}/`,
          `http://[::1]:${port}/`,
          `http://[::ffff:127.0.0.1]:${port}/`,
          `http://[::ffff:7f00:1]:${port}/`,
        ]) {
          const job = await run(t.id, 'hook', { url });
          expect(job.error, url).to.include({ code: 'WEBHOOK_TARGET_BLOCKED', retryable: false });
          expect(String(job.error?.message), url).to.include('refused in production');
          expect(job.attempts, url).to.equal(1);
        }
        expect(hook.received).to.deep.equal([]);
        expect((await task(t.id)).tag).to.equal(null);
      } finally {
        await hook.close();
      }
    });
  });
});
