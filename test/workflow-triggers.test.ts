// Workflows their triggers start, over HTTP on a generated app: webhook deliveries proved by a
// bearer secret or an HMAC signature (with its timestamp window and replay refusal), a webhook
// whose secret is not configured, an open webhook whose steps meet the access rules as an
// anonymous caller, and a schedule that runs each tick once and skips the ticks of a restart. Then
// the trace of a request whose change starts a workflow: the queued job, and its run. On SQLite and
// on PostgreSQL.

import { createHmac } from 'node:crypto';
import * as path from 'node:path';
import { expect } from 'chai';
import {
  bp,
  freshDir,
  generate,
  request,
  ROOT,
  startApp,
  typecheck,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { type AppOnDatabase, bootOnDatabase } from './support/commands/harness.ts';
import { plain, withAppRows } from './support/database-rows.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

type Rec = Record<string, unknown>;
const errorCode = (res: HttpResponse) => (res.body as { error: { code: string } }).error.code;
const BLUEPRINT = path.join(ROOT, 'test/fixtures/triggers/app.toml');

const KEYS = { OPS_API_KEY: 'ops-key-0123456789abcdef0123', INBOUND_SECRET: 'inbound-secret-0123456789' };
const ops = { authorization: `Bearer ${KEYS.OPS_API_KEY}` };
/** PostgreSQL wants a SESSION_SECRET even in development: every instance must share it. */
const SESSION_SECRET = 'workflow-triggers-session-secret-0123456789';

/** The signature headers of `body`, signed at `at` (unix seconds) with `secret`. */
function signed(
  body: string,
  secret = KEYS.INBOUND_SECRET,
  at = Math.floor(Date.now() / 1000),
): Record<string, string> {
  const signature = createHmac('sha256', secret).update(`${at}.${body}`).digest('hex');
  return { 'x-webhook-timestamp': String(at), 'x-webhook-signature': `sha256=${signature}` };
}

for (const database of DATABASES)
  describe(`workflow triggers: webhooks and schedules (generated app, over HTTP, ${database})`, function () {
    this.timeout(120_000);
    let appDir: string;
    let app: RunningApp;
    let env: Record<string, string>;
    /** Rows through a connection of the test's own, opened for the read: it sees what was committed. */
    const rows = (sql: string, ...params: unknown[]): Promise<Rec[]> =>
      withAppRows(env.DATABASE_URL, appDir, async (db) => (await db.all(sql, params)).map(plain));
    const jobs = (workflow: string) =>
      rows(
        'SELECT "id", "status", "owner", "actor", "error" FROM "_bp_jobs" ' +
          'WHERE "workflow" = ? ORDER BY "createdAt", "id"',
        workflow,
      );
    /** Waits until every job of `workflow` has finished, and returns them. */
    const settled = async (workflow: string, count: number): Promise<Rec[]> => {
      for (let i = 0; i < 100; i++) {
        const all = await jobs(workflow);
        if (all.length >= count && all.every((j) => j.status === 'completed' || j.status === 'failed')) return all;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`the jobs of ${workflow} did not finish: ${JSON.stringify(await jobs(workflow))}`);
    };
    const messages = async (): Promise<Rec[]> => {
      const res = await request(app.url, 'GET', '/api/messages?limit=100', { headers: ops });
      expect(res.status, res.text).to.equal(200);
      return (res.body as { items: Rec[] }).items;
    };
    const deliver = (body: string, headers: Record<string, string>, url = '/webhooks/inbound?source=crm') =>
      request(app.url, 'POST', url, {
        body,
        headers: { 'content-type': 'application/json', 'x-sender': 'crm@example.com', ...headers },
      });

    before(async () => {
      appDir = path.join(freshDir(`triggers-${database}`), 'app');
      const r = await generate(BLUEPRINT, appDir);
      expect(r.status, r.stderr).to.equal(0);
      env = { ...KEYS, SESSION_SECRET, DATABASE_URL: await databaseUrl(database, 'triggers') };
      app = await startApp(appDir, env);
    });
    after(async () => app?.stop());

    it('generates without NOT_GENERATED warnings, warns about the open webhook, and typechecks', () => {
      const r = bp(['validate', BLUEPRINT]);
      expect(r.stderr).to.not.include('NOT_GENERATED');
      expect(r.stderr).to.include('workflow.OpenDoor.trigger.webhook: anyone may POST to /webhooks/open');
      expect(r.stderr).to.include('UNSIGNED_WEBHOOK');
      const t = typecheck(appDir);
      expect(t.stdout + t.stderr).to.equal('');
    });

    it('warns at start that a webhook whose secret is unset refuses every delivery; refuses them (401)', async () => {
      expect(app.output()).to.include(
        'webhook /webhooks/unconfigured refuses every delivery (401) until NEVER_SET_SECRET holds its secret',
      );
      const body = JSON.stringify({ subject: 'x' });
      for (const headers of [{ authorization: 'Bearer ' }, { authorization: 'Bearer undefined' }, signed(body, '')]) {
        const res = await deliver(body, headers, '/webhooks/unconfigured');
        expect(res.status, res.text).to.equal(401);
      }
      expect(await jobs('Unconfigured')).to.have.length(0);
    });

    it('starts its workflow for a signed delivery; steps read its body, headers, query as the app does', async () => {
      const body = JSON.stringify({ kind: 'mail', subject: 'printer on fire' });
      const res = await deliver(body, { ...signed(body), 'x-sender': 'ops@example.com' });
      expect(res.status, res.text).to.equal(202);
      const { success, job } = res.body as { success: boolean; job: Rec };
      expect(success).to.equal(true);
      expect(job).to.have.keys('id', 'workflow', 'status');
      expect(job).to.include({ workflow: 'Inbound', status: 'pending' });
      const [done] = (await settled('Inbound', 1)).filter((j) => j.id === job.id);
      expect(done.status, String(done.error)).to.equal('completed');
      expect(JSON.parse(String(done.actor))).to.include({ kind: 'system', id: 'webhook:Inbound' });
      const message = (await messages()).find((m) => m.subject === 'printer on fire') as Rec;
      expect(message).to.include({ sender: 'ops@example.com', source: 'crm' });
      // The credential headers never reach the steps.
      expect(String(message.headers)).to.include('x-webhook-timestamp').and.not.include('x-webhook-signature');
      const audit = await rows(
        'SELECT "actorId", "operation" FROM "_bp_audit" WHERE "entity" = \'Message\' AND "recordId" = ?',
        message.id,
      );
      expect(audit).to.have.length(1);
      expect(audit[0].actorId).to.equal('webhook:Inbound');
    });

    it('accepts a bearer secret, and a form body', async () => {
      const form = 'kind=note&subject=form+delivery';
      const res = await request(app.url, 'POST', '/webhooks/inbound?source=form', {
        body: form,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Bearer ${env.INBOUND_SECRET}`,
          'x-sender': 'forms@example.com',
        },
      });
      expect(res.status, res.text).to.equal(202);
      const done = (await settled('Inbound', 2)).find((j) => j.id === (res.body as { job: Rec }).job.id) as Rec;
      expect(done.status, String(done.error)).to.equal('completed');
      expect((await messages()).map((m) => m.subject)).to.include('form delivery');
    });

    it(
      'refuses (401) a wrong secret, a wrong or tampered signature, an old timestamp and no proof, ' +
        'storing nothing',
      async () => {
        const body = JSON.stringify({ kind: 'mail', subject: 'forged' });
        const before = (await jobs('Inbound')).length;
        const old = Math.floor(Date.now() / 1000) - 6 * 60;
        const attempts: Array<[string, Record<string, string>]> = [
          [body, { authorization: 'Bearer not-the-secret' }],
          [body, signed(body, 'another-secret')],
          [JSON.stringify({ kind: 'mail', subject: 'tampered' }), signed(body)],
          [body, signed(body, env.INBOUND_SECRET, old)],
          [body, { ...signed(body), 'x-webhook-timestamp': 'soon' }],
          [body, { ...signed(body), 'x-webhook-signature': 'md5=abc' }],
          [body, {}],
        ];
        for (const [sent, headers] of attempts) {
          const res = await deliver(sent, headers);
          expect(res.status, `${JSON.stringify(headers)}: ${res.text}`).to.equal(401);
          expect(errorCode(res)).to.equal('UNAUTHENTICATED');
        }
        expect(await jobs('Inbound')).to.have.length(before);
        expect((await messages()).map((m) => m.subject)).to.not.include.members(['forged', 'tampered']);
      },
    );

    it('refuses a replayed signed delivery (409 WEBHOOK_REPLAYED): it starts its workflow once', async () => {
      const body = JSON.stringify({ kind: 'mail', subject: 'once only' });
      const headers = signed(body);
      expect((await deliver(body, headers)).status).to.equal(202);
      const replay = await deliver(body, headers);
      expect(replay.status, replay.text).to.equal(409);
      expect(errorCode(replay)).to.equal('WEBHOOK_REPLAYED');
      await settled('Inbound', 3);
      expect((await messages()).filter((m) => m.subject === 'once only')).to.have.length(1);
    });

    it('checks the precondition on the delivery (409), and takes POST only (405 with Allow)', async () => {
      const body = JSON.stringify({ kind: 'spam', subject: 'buy now' });
      const res = await deliver(body, signed(body));
      expect(res.status, res.text).to.equal(409);
      expect(errorCode(res)).to.equal('WORKFLOW_PRECONDITION_FAILED');
      const get = await request(app.url, 'GET', '/webhooks/inbound');
      expect(get.status).to.equal(405);
      expect(get.headers.get('allow')).to.equal('POST');
      expect(errorCode(get)).to.equal('METHOD_NOT_ALLOWED');
    });

    it('refuses bodies it cannot read: malformed JSON (400), another media type (415)', async () => {
      const bad = '{"kind": "mail",';
      expect(errorCode(await deliver(bad, signed(bad)))).to.equal('INVALID_JSON');
      const xml = '<mail/>';
      const res = await request(app.url, 'POST', '/webhooks/inbound', {
        body: xml,
        headers: { 'content-type': 'application/xml', ...signed(xml) },
      });
      expect(res.status).to.equal(415);
    });

    it('runs the steps of an open webhook as an anonymous caller: the access rules refuse its write', async () => {
      const res = await request(app.url, 'POST', '/webhooks/open', { json: { subject: 'from anyone' } });
      expect(res.status, res.text).to.equal(202);
      const [job] = await settled('OpenDoor', 1);
      expect(job.status).to.equal('failed');
      expect(JSON.parse(String(job.error)).code).to.equal('UNAUTHENTICATED');
      expect((await messages()).map((m) => m.subject)).to.not.include('from anyone');
    });

    it('runs a schedule once per tick, as the app itself, past access rules no caller passes', async () => {
      // Nobody may create beats through the API...
      const refused = await request(app.url, 'POST', '/api/beats', {
        json: { tick: 'x' },
        headers: { ...ops, 'idempotency-key': 'beat-1' },
      });
      expect(refused.status).to.equal(403);
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const beats = (await rows('SELECT "tick" FROM "Beat" ORDER BY "tick"')).map((r) => String(r.tick));
      expect(beats.length).to.be.at.least(2);
      for (const tick of beats) expect(tick).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
      expect(new Set(beats).size).to.equal(beats.length);
      const heartbeats = await jobs('Heartbeat');
      expect(heartbeats.every((j) => j.owner === 'schedule:Heartbeat')).to.equal(true);
      expect(JSON.parse(String(heartbeats[0].actor))).to.include({ kind: 'system', id: 'schedule:Heartbeat' });
    });

    it('skips the ticks that passed while the app was stopped: no burst after a restart', async () => {
      await app.stop();
      const stoppedAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const restartedAt = Date.now();
      app = await startApp(appDir, env);
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const ticks = (await rows('SELECT "tick" FROM "Beat"')).map((r) => Date.parse(String(r.tick)));
      const missed = ticks.filter((t) => t > stoppedAt + 1_000 && t < restartedAt);
      expect(missed, 'ticks run for the time the app was stopped').to.deep.equal([]);
      expect(ticks.filter((t) => t >= restartedAt).length).to.be.at.least(1);
    });
  });

for (const database of DATABASES)
  describe(`the trace of a request that starts a workflow (generated app, in process, ${database})`, function () {
    this.timeout(120_000);
    let app: AppOnDatabase;
    const env = {
      PLANNER_API_KEY: 'planner-key-0123456789abcdef',
      VIEWER_API_KEY: 'viewer-key-0123456789abcdef',
      SESSION_SECRET,
    };

    before(async () => {
      const appDir = path.join(freshDir(`workflow-traces-${database}`), 'app');
      const r = await generate(path.join(ROOT, 'test/fixtures/workflows/app.toml'), appDir);
      expect(r.status, r.stderr).to.equal(0);
      app = await bootOnDatabase(appDir, await databaseUrl(database, 'workflow_traces'), env);
    });
    after(async () => app?.close());

    it("shows the job an entity event queued, then its run with a link to the run's own trace", async () => {
      const res = await request(app.url, 'POST', '/api/tasks', {
        json: { title: 'fire drill', projectId: 'p1', priority: 9 },
        headers: { authorization: `Bearer ${env.PLANNER_API_KEY}`, 'idempotency-key': 'urgent-1' },
      });
      expect(res.status, res.text).to.equal(201);
      const traceId = res.headers.get('x-trace-id') as string;
      const trace = () => app.traces.list().find((t) => t.traceId === traceId);
      const workflowSpans = () => (trace()?.spans ?? []).filter((s) => s.type === 'workflow');
      for (let i = 0; i < 100 && workflowSpans().length < 2; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const [queued, ran] = workflowSpans();
      expect(queued).to.include({ name: 'workflow.AnnounceUrgent' });
      expect(queued.attributes).to.include({ status: 'pending' });
      expect(ran, 'the run, attached to the causing trace').to.include({
        name: 'workflow.AnnounceUrgent',
        parentId: 1,
      });
      expect(ran.attributes).to.include({
        jobId: queued.attributes?.jobId,
        status: 'completed',
        causeTraceId: traceId,
      });
      const run = app.traces.list().find((t) => t.traceId === ran.attributes?.runTraceId);
      expect(run?.metadata).to.include({ method: 'JOB', route: 'workflow.AnnounceUrgent' });
    });
  });
