// Workflows as jobs, over HTTP: a skill action submits a job (202), GET /api/jobs/<id> answers its
// submitter only, and the job's steps run as that submitter through the entity and command code:
// a transactional update with its notify sent after the commit, a conditional update that finds
// the record changed (STATE_CONFLICT), a transaction rolled back by its second step, a template
// that does not resolve, and a command step. Then the reference helpdesk's escalate_ticket. Each
// app runs once on SQLite and once on PostgreSQL (support/databases.ts).

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { JOB_LEASE_MS } from '../runtime-lib/workflows/jobs.ts';
import {
  bp,
  freshDir,
  freshKey,
  generate,
  jobFinished,
  request,
  ROOT,
  startApp,
  typecheck,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { withAppRows } from './support/database-rows.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

type Rec = Record<string, unknown>;
type Job = {
  id: string;
  workflow: string;
  status: string;
  url: string;
  result: unknown;
  error: Rec | null;
  attempts: number;
};
const errorCode = (res: HttpResponse) => (res.body as { error: { code: string } }).error.code;

describe('workflows as jobs (generated app, over HTTP)', function () {
  this.timeout(120_000);

  for (const database of DATABASES)
    describe(`test/fixtures/workflows (${database})`, () => {
      const env: Record<string, string> = {
        PLANNER_API_KEY: 'planner-key-0123456789abcdef',
        VIEWER_API_KEY: 'viewer-key-0123456789abcdef',
        // Shared by the app's instances before and after each restart (required on PostgreSQL).
        SESSION_SECRET: 'workflows-fixture-secret-0123456789abcdef0123',
      };
      const planner = { authorization: `Bearer ${env.PLANNER_API_KEY}` };
      const viewer = { authorization: `Bearer ${env.VIEWER_API_KEY}` };
      let appDir: string;
      let app: RunningApp;

      const newTask = async (title: string, projectId = 'p1'): Promise<Rec> => {
        const res = await request(app.url, 'POST', '/api/tasks', {
          json: { title, projectId },
          headers: { ...planner, 'idempotency-key': freshKey() },
        });
        expect(res.status, res.text).to.equal(201);
        return res.body as Rec;
      };
      const task = async (id: unknown): Promise<Rec> =>
        (await request(app.url, 'GET', `/api/tasks/${String(id)}`, { headers: planner })).body as Rec;
      const submit = (id: unknown, action: string, body: unknown = {}, headers: Record<string, string> = {}) =>
        request(app.url, 'POST', `/api/skills/flow/tasks/${String(id)}/${action}`, {
          json: body,
          headers: { ...planner, 'idempotency-key': freshKey(), ...headers },
        });

      before(async () => {
        appDir = path.join(freshDir(`workflows-${database}`), 'app');
        const r = await generate(path.join(ROOT, 'test/fixtures/workflows/app.toml'), appDir);
        expect(r.status, r.stderr).to.equal(0);
        env.DATABASE_URL = await databaseUrl(database, 'workflows');
        // The team's own file: a sender for the "team" adapter, which wins over the built-in slack type.
        fs.writeFileSync(
          path.join(appDir, 'src', 'extend.ts'),
          `import { defineExtension } from './runtime/http/extension.ts';
export default defineExtension({
  notifications: {
    team: async (message, config) =>
      console.log(\`TEAM \${String(config.defaultChannel)} (\${message.workflow}): \${message.body}\`),
  },
});
`,
        );
        app = await startApp(appDir, env);
      });
      after(async () => app?.stop());

      it('typechecks in strict mode', () => {
        const r = typecheck(appDir);
        expect(r.stdout + r.stderr).to.equal('');
      });

      it('answers 202 with the job, runs it as the submitter, and sends the notify after the commit', async () => {
        const t = await newTask('write docs');
        const res = await submit(t.id, 'bump', { priority: 5 }, { 'x-agent-run-id': 'run-7' });
        expect(res.status, res.text).to.equal(202);
        const { success, job } = res.body as { success: boolean; job: Job };
        expect(success).to.equal(true);
        expect(job).to.include({ workflow: 'Bump', status: 'pending', url: `/api/jobs/${job.id}` });
        expect(job.id).to.match(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
        expect(res.headers.get('location')).to.equal(job.url);
        const done = await jobFinished<Job>(app.url, planner, job.url);
        expect(done.status, JSON.stringify(done.error)).to.equal('completed');
        expect((done.result as { bumped: Rec }).bumped).to.include({ id: t.id, priority: 5 });
        expect((await task(t.id)).priority).to.equal(5);
        expect(app.output()).to.include(
          `notify log: {"body":"task ${String(t.id)} bumped to 5 by planner (run run-7)"`,
        );
        // The step's write is audited as the submitter's, with the agent run id.
        const trail = await request(app.url, 'GET', `/api/audit?entity=Task&recordId=${String(t.id)}`, {
          headers: planner,
        });
        const update = (trail.body as { items: Rec[] }).items.find((e) => e.operation === 'Task.update');
        expect(update).to.include({ actorId: 'planner', agentRunId: 'run-7' });
      });

      it('returns the same job for the same Idempotency-Key, and shows it to its submitter only', async () => {
        const t = await newTask('one job');
        const key = freshKey();
        const first = await submit(t.id, 'bump', { priority: 2 }, { 'idempotency-key': key });
        const again = await submit(t.id, 'bump', { priority: 2 }, { 'idempotency-key': key });
        expect(first.status).to.equal(202);
        expect(again.status).to.equal(202);
        const id = (first.body as { job: Job }).job.id;
        expect((again.body as { job: Job }).job.id).to.equal(id);
        await jobFinished<Job>(app.url, planner, `/api/jobs/${id}`);
        for (const headers of [viewer, {}]) {
          const other = await request(app.url, 'GET', `/api/jobs/${id}`, { headers });
          expect(other.status).to.equal(404);
        }
        expect(
          (await request(app.url, 'GET', '/api/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV', { headers: planner })).status,
        ).to.equal(404);
      });

      it(
        'refuses before any job: scopes (403), a body that does not fit (400), an unreadable record (404), ' +
          'the precondition (409)',
        async () => {
          const t = await newTask('refusals');
          const scoped = await submit(t.id, 'bump', { priority: 2 }, viewer);
          expect(scoped.status).to.equal(403);
          expect(errorCode(scoped)).to.equal('INSUFFICIENT_SCOPE');
          for (const body of [{ priority: 'high' }, { priority: 2, extra: true }]) {
            const bad = await submit(t.id, 'bump', body);
            expect(bad.status, JSON.stringify(body)).to.equal(400);
          }
          const missing = await submit('01ARZ3NDEKTSV4RRFFQ69G5FAV', 'bump', { priority: 2 });
          expect(missing.status).to.equal(404);
          const finish = await submit(t.id, 'finish');
          await jobFinished<Job>(app.url, planner, (finish.body as { job: Job }).job.url);
          const late = await submit(t.id, 'bump', { priority: 3 });
          expect(late.status, late.text).to.equal(409);
          expect(errorCode(late)).to.equal('WORKFLOW_PRECONDITION_FAILED');
          expect((await task(t.id)).priority).to.equal(1);
        },
      );

      it('fails a conditional update whose record changed with STATE_CONFLICT, changing nothing', async () => {
        const t = await newTask('original title');
        const res = await submit(t.id, 'guarded', { expected: 'another title' });
        const done = await jobFinished<Job>(app.url, planner, (res.body as { job: Job }).job.url);
        expect(done.status).to.equal('failed');
        expect(done.error).to.include({ code: 'STATE_CONFLICT', retryable: false });
        expect(String(done.error?.message)).to.include('title = "another title"');
        expect((await task(t.id)).priority).to.equal(1);
        const ok = await submit(t.id, 'guarded', { expected: 'original title' });
        expect((await jobFinished<Job>(app.url, planner, (ok.body as { job: Job }).job.url)).status).to.equal(
          'completed',
        );
        expect((await task(t.id)).priority).to.equal(7);
      });

      it('rolls a transactional workflow back entirely when a later step fails', async () => {
        const t = await newTask('atomic');
        const res = await submit(t.id, 'broken');
        const done = await jobFinished<Job>(app.url, planner, (res.body as { job: Job }).job.url);
        expect(done.status).to.equal('failed');
        expect(done.error).to.include({ code: 'PROTECTED_FIELD_MUTATION' });
        const after = await task(t.id);
        expect(after).to.include({ priority: 1, state: 'open' });
      });

      it('fails a step whose template does not resolve, naming the path', async () => {
        const t = await newTask('templates');
        const res = await submit(t.id, 'unresolved');
        const done = await jobFinished<Job>(app.url, planner, (res.body as { job: Job }).job.url);
        expect(done.status).to.equal('failed');
        expect(done.error).to.include({ code: 'WORKFLOW_TEMPLATE_UNRESOLVED' });
        expect(String(done.error?.message)).to.include('{{ variables.data.payload.nothing }}');
        expect(app.output()).to.not.include('about {{');
      });

      it('runs a command step through the command executor and stores step results with assignTo', async () => {
        const a = await newTask('first', 'p9');
        await newTask('second', 'p9');
        const res = await submit(a.id, 'finish');
        const done = await jobFinished<Job>(app.url, planner, (res.body as { job: Job }).job.url);
        expect(done.status, JSON.stringify(done.error)).to.equal('completed');
        const result = done.result as { completed: Rec; stillOpen: Rec[] };
        expect(result.completed).to.include({ id: a.id, state: 'done' });
        expect(result.stillOpen.map((r) => r.title)).to.deep.equal(['second']);
        const trail = await request(app.url, 'GET', `/api/audit?entity=Task&recordId=${String(a.id)}`, {
          headers: planner,
        });
        expect((trail.body as { items: Rec[] }).items.map((e) => e.operation)).to.include('command:CompleteTask');
        // The command's availableWhen holds inside the job too: a second run fails, and says why.
        const again = await submit(a.id, 'finish');
        const refused = await jobFinished<Job>(app.url, planner, (again.body as { job: Job }).job.url);
        expect(refused.error).to.include({ code: 'COMMAND_UNAVAILABLE' });
      });

      it('runs at most maxConcurrent jobs of a workflow at once under a burst', async () => {
        const tasks = await Promise.all(Array.from({ length: 6 }, (_, i) => newTask(`burst ${i}`)));
        const submitted = await Promise.all(tasks.map((t) => submit(t.id, 'ponder', { waitMs: 200 })));
        const jobs = await Promise.all(
          submitted.map((r) => jobFinished<Job>(app.url, planner, (r.body as { job: Job }).job.url)),
        );
        expect(jobs.map((j) => j.status)).to.deep.equal(Array(6).fill('completed'));
        // The most jobs running at one moment, from their start and end times.
        const edges = jobs.flatMap((j) => {
          const { startedAt, completedAt } = j as unknown as { startedAt: string; completedAt: string };
          return [
            { at: Date.parse(startedAt), step: 1 },
            { at: Date.parse(completedAt), step: -1 },
          ];
        });
        edges.sort((a, b) => a.at - b.at || a.step - b.step);
        let now = 0;
        let most = 0;
        for (const e of edges) most = Math.max(most, (now += e.step));
        expect(most).to.equal(2);
        for (const t of tasks) expect((await task(t.id)).priority).to.equal(2);
      });

      it('fails a job running when its app stopped with JOB_INTERRUPTED (retryable), committing nothing', async () => {
        const t = await newTask('interrupted');
        const res = await submit(t.id, 'ponder', { waitMs: 60_000 });
        const url = (res.body as { job: Job }).job.url;
        for (let i = 0; i < 100; i++) {
          const now = (await request(app.url, 'GET', url, { headers: planner })).body as Job;
          if (now.status === 'running') break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        app.process.kill('SIGKILL');
        await new Promise((resolve) => app.process.once('exit', resolve));
        app = await startApp(appDir, env);
        // SQLite has one instance, so the new one fails the job at start. On PostgreSQL another
        // instance could still be running it: it fails once its lease lapses, at the check made every
        // lease, so the poll waits two leases there (polling every 50 ms).
        const done = await jobFinished<Job>(
          app.url,
          planner,
          url,
          database === 'sqlite' ? 100 : (2 * JOB_LEASE_MS) / 50,
        );
        expect(done.status).to.equal('failed');
        expect(done.error).to.include({ code: 'JOB_INTERRUPTED', retryable: true });
        expect((await task(t.id)).priority).to.equal(1);
      });

      it('starts a workflow when a change of an entity meets its trigger condition, once per change', async () => {
        const before = app.output().split('urgent task').length;
        await request(app.url, 'POST', '/api/tasks', {
          json: { title: 'calm', projectId: 'p5', priority: 2 },
          headers: { ...planner, 'idempotency-key': freshKey() },
        });
        await request(app.url, 'POST', '/api/tasks', {
          json: { title: 'fire', projectId: 'p5', priority: 9 },
          headers: { ...planner, 'idempotency-key': freshKey() },
        });
        for (let i = 0; i < 100 && !app.output().includes('urgent task fire in p5'); i++)
          await new Promise((resolve) => setTimeout(resolve, 50));
        expect(app.output()).to.include('notify log: {"body":"urgent task fire in p5"');
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(
          app.output().split('urgent task').length - before,
          'one announcement, for the matching task only',
        ).to.equal(1);
      });

      it('stops entity-triggered workflows that start each other at the depth limit, naming the chain', async () => {
        const t = await newTask('loop');
        const moved = await request(app.url, 'PUT', `/api/tasks/${String(t.id)}`, {
          json: { projectId: 'echo' },
          headers: { ...planner, 'idempotency-key': freshKey() },
        });
        expect(moved.status, moved.text).to.equal(200);
        // Echo renames the task, which starts Echo again: four runs add "!", the fifth would start
        // a sixth and is refused.
        const rows = await withAppRows(env.DATABASE_URL, appDir, async (db) => {
          const jobs = async () =>
            (await db.all(
              `SELECT "status", "error" FROM "_bp_jobs" WHERE "workflow" = 'Echo' ORDER BY "createdAt", "id"`,
            )) as Array<{ status: string; error: string | null }>;
          let found = await jobs();
          for (let i = 0; i < 100 && !(found.length === 5 && found[4].status === 'failed'); i++) {
            await new Promise((resolve) => setTimeout(resolve, 100));
            found = await jobs();
          }
          return found;
        });
        expect(rows.map((r) => r.status)).to.deep.equal(['completed', 'completed', 'completed', 'completed', 'failed']);
        expect((await task(t.id)).title).to.equal('loop!!!!');
        expect(JSON.parse(rows[4].error as string)).to.include({ code: 'WORKFLOW_DEPTH_EXCEEDED' });
        expect(JSON.parse(rows[4].error as string).message).to.include('Echo -> Echo -> Echo -> Echo -> Echo -> Echo');
      });

      it("sends through an adapter's sender from src/extend.ts; fails a job whose adapter has none", async () => {
        const t = await newTask('loud');
        const shout = await submit(t.id, 'shout');
        expect((await jobFinished<Job>(app.url, planner, (shout.body as { job: Job }).job.url)).status).to.equal(
          'completed',
        );
        expect(app.output()).to.include('TEAM #ops (Shout): look at loud');
        const page = await submit(t.id, 'page');
        const paged = await jobFinished<Job>(app.url, planner, (page.body as { job: Job }).job.url);
        expect(paged.error).to.include({ code: 'WORKFLOW_STEP_NOT_SUPPORTED' });
        expect(String(paged.error?.message)).to.include('"pager" (pagerduty) has no sender');
      });

      it('lets a running job finish when the app is stopped (SIGTERM) before it exits', async () => {
        const t = await newTask('drained');
        const res = await submit(t.id, 'ponder', { waitMs: 800 });
        const url = (res.body as { job: Job }).job.url;
        for (let i = 0; i < 100; i++) {
          if (((await request(app.url, 'GET', url, { headers: planner })).body as Job).status === 'running') break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await app.stop();
        app = await startApp(appDir, env);
        const done = (await request(app.url, 'GET', url, { headers: planner })).body as Job;
        expect(done, JSON.stringify(done)).to.include({ status: 'completed', attempts: 1 });
        expect((await task(t.id)).priority).to.equal(2);
      });

      it('keeps jobs across a restart: a client polling after it gets the answer', async () => {
        const t = await newTask('durable');
        const res = await submit(t.id, 'bump', { priority: 4 });
        const url = (res.body as { job: Job }).job.url;
        await jobFinished<Job>(app.url, planner, url);
        await app.stop();
        app = await startApp(appDir, env);
        const again = await request(app.url, 'GET', url, { headers: planner });
        expect(again.status).to.equal(200);
        expect((again.body as Job).status).to.equal('completed');
      });

      it('lists workflow actions as served, with how they answer', async () => {
        // The skill needs a credential: it is listed to one that may call it.
        const res = await request(app.url, 'GET', '/api/skills', { headers: planner });
        const flow = (res.body as { skills: Array<{ actions: Rec[] }> }).skills[0];
        expect(flow.actions.find((a) => a.name === 'bump')).to.include({
          kind: 'workflow',
          served: true,
          workflow: 'Bump',
        });
        const doc = JSON.parse(fs.readFileSync(path.join(appDir, 'openapi.json'), 'utf8')) as {
          paths: Record<string, Record<string, Rec>>;
        };
        const op = doc.paths['/api/skills/flow/tasks/{id}/bump'].post;
        expect(op).to.include({ operationId: 'flow_bump' });
        expect(Object.keys(op.responses as Rec)).to.include('202');
        expect(doc.paths['/api/jobs/{id}'].get).to.include({ operationId: 'getJob' });
      });
    });

  it('refuses an entity served at /api/jobs when skill actions start jobs there', () => {
    const dir = freshDir('workflows-jobs-entity');
    const blueprint = path.join(dir, 'app.toml');
    const source = fs.readFileSync(path.join(ROOT, 'test/fixtures/workflows/app.toml'), 'utf8');
    fs.cpSync(path.join(ROOT, 'test/fixtures/workflows/handlers'), path.join(dir, 'handlers'), { recursive: true });
    fs.writeFileSync(
      blueprint,
      `${source}\n[entity.Job]\nfields = [{ name = "id", type = "ULID", primary_key = true }]\n`,
    );
    const r = bp(['validate', blueprint]);
    expect(r.status).to.equal(1);
    expect(r.stdout + r.stderr).to.match(
      /entity\.Job: entity "Job" is served at \/api\/jobs, where workflow jobs are polled .*DUPLICATE_ROUTE/,
    );
  });

  for (const database of DATABASES)
    describe(`the reference helpdesk: escalate_ticket (${database})`, () => {
      const env: Record<string, string> = {
        TRIAGE_API_KEY: 'triage-key-0123456789abcdef',
        REPORTER_API_KEY: 'reporter-key-0123456789abcdef',
        SESSION_SECRET: 'workflows-secret-0123456789abcdef0123456789',
      };
      const triage = { authorization: `Bearer ${env.TRIAGE_API_KEY}` };
      let app: RunningApp;

      before(async () => {
        const appDir = path.join(freshDir(`workflows-helpdesk-${database}`), 'app');
        const r = await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
        expect(r.status, r.stderr).to.equal(0);
        env.DATABASE_URL = await databaseUrl(database, 'helpdesk');
        app = await startApp(appDir, env);
      });
      after(async () => app?.stop());

      it('raises an open ticket to high priority and announces it; refuses a ticket no longer open', async () => {
        const created = await request(app.url, 'POST', '/api/tickets', {
          json: { title: 'Server down' },
          headers: { ...triage, 'idempotency-key': freshKey() },
        });
        const ticket = created.body as Rec;
        const res = await request(app.url, 'POST', `/api/skills/triage/tickets/${String(ticket.id)}/escalate`, {
          json: { reason: 'customers affected' },
          headers: { ...triage, 'idempotency-key': freshKey() },
        });
        expect(res.status, res.text).to.equal(202);
        const done = await jobFinished<Job>(app.url, triage, (res.body as { job: Job }).job.url);
        expect(done.status, JSON.stringify(done.error)).to.equal('completed');
        const after = await request(app.url, 'GET', `/api/tickets/${String(ticket.id)}`, { headers: triage });
        expect((after.body as Rec).priority).to.equal('high');
        expect(app.output(), app.output()).to.include(`escalated by agent-triage: customers affected`);

        const started = await request(app.url, 'POST', `/api/commands/start_ticket/${String(ticket.id)}`, {
          json: {},
          headers: { ...triage, 'idempotency-key': freshKey() },
        });
        expect(started.status, started.text).to.equal(200);
        // AnnounceResolution: resolving the ticket (the ResolveTicket command's update) announces it.
        const resolved = await request(app.url, 'POST', `/api/commands/resolve_ticket/${String(ticket.id)}`, {
          json: { resolution: 'rebooted' },
          headers: { ...triage, 'idempotency-key': freshKey() },
        });
        expect(resolved.status, resolved.text).to.equal(200);
        for (let i = 0; i < 100 && !app.output().includes('resolved: rebooted'); i++)
          await new Promise((resolve) => setTimeout(resolve, 50));
        expect(app.output()).to.include(`"body":"Ticket ${String(ticket.id)} resolved: rebooted"`);
        const late = await request(app.url, 'POST', `/api/skills/triage/tickets/${String(ticket.id)}/escalate`, {
          json: { reason: 'again' },
          headers: { ...triage, 'idempotency-key': freshKey() },
        });
        expect(late.status).to.equal(409);
        expect(errorCode(late)).to.equal('WORKFLOW_PRECONDITION_FAILED');
      });
    });
});
