// Two instances of the generated reference app on one PostgreSQL database, with requests
// alternating between them: nothing that must be shared lives in one process. Sessions, CSRF
// tokens, Idempotency-Keys, sign-in throttling and audit records are all in the database; so are
// jobs, a schedule's ticks and the signatures of webhook deliveries.

import { createHmac } from 'node:crypto';
import * as path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import {
  addUser,
  freshDir,
  freshKey,
  generate,
  jobFinished,
  login,
  request,
  ROOT,
  startApp,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { freshPostgresDatabase } from './support/postgres.ts';

type Rec = Record<string, unknown>;

const ENV = {
  TRIAGE_API_KEY: 'triage-key-0123456789abcdef',
  REPORTER_API_KEY: 'reporter-key-0123456789abcdef',
  SESSION_SECRET: 'multi-instance-secret-0123456789abcdef0123',
};

describe('two app instances on one PostgreSQL', function () {
  this.timeout(180_000);
  let appDir: string;
  const env: Record<string, string> = { ...ENV };
  let apps: RunningApp[] = [];
  const agent = { authorization: `Bearer ${ENV.TRIAGE_API_KEY}` };

  const on = (i: number) => apps[i % apps.length].url;
  const newTicket = async (title: string): Promise<Rec> => {
    const res = await request(on(0), 'POST', '/api/tickets', {
      json: { title },
      headers: { ...agent, 'idempotency-key': freshKey() },
    });
    expect(res.status, res.text).to.equal(201);
    return res.body as Rec;
  };

  before(async () => {
    appDir = path.join(freshDir('multi-instance'), 'app');
    await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
    env.DATABASE_URL = await freshPostgresDatabase('multi');
    addUser(appDir, env, 'ada@example.com', 'correct horse battery', ['admin']);
    apps = await Promise.all([startApp(appDir, env), startApp(appDir, env)]);
  });
  after(async () => {
    await Promise.all(apps.map((a) => a.stop()));
  });

  it('migrates once: the second instance finds the migrations applied', () => {
    const applied = apps.filter((a) => /applied migrations: 0001_init/.test(a.output()));
    expect(applied, apps.map((a) => a.output()).join('\n---\n')).to.have.length.at.most(1);
  });

  it('serves a session started on one instance on the other; logout on one ends it on both', async () => {
    const session = await login(on(0), 'ada@example.com', 'correct horse battery');
    const headers = { cookie: session.cookie };
    for (const i of [0, 1]) {
      const res = await request(on(i), 'GET', '/api/auth/session', { headers });
      expect(res.status, `instance ${i}`).to.equal(200);
      const actor = (res.body as { actor: { kind: string; email?: string } }).actor;
      expect(actor, `instance ${i}`).to.include({ kind: 'user', email: 'ada@example.com' });
    }
    // A write on instance 1 with the CSRF token instance 0 handed out.
    const created = await request(on(1), 'POST', '/api/customers', {
      json: { name: 'Grace', email: `grace-${Date.now()}@example.com` },
      headers: { ...headers, 'x-csrf-token': session.csrfToken },
    });
    expect(created.status, created.text).to.equal(201);
    const out = await request(on(1), 'POST', '/api/auth/logout', {
      headers: { ...headers, 'x-csrf-token': session.csrfToken },
    });
    expect(out.status, out.text).to.be.oneOf([200, 204]);
    for (const i of [0, 1]) {
      const res = await request(on(i), 'GET', '/api/tickets', { headers });
      expect(res.status, `instance ${i} after logout`).to.equal(401);
    }
  });

  it('executes one Idempotency-Key once when it reaches both instances at the same moment', async () => {
    const key = freshKey();
    const title = `once-${key}`;
    const send = (i: number) =>
      request(on(i), 'POST', '/api/tickets', { json: { title }, headers: { ...agent, 'idempotency-key': key } });
    const answers: HttpResponse[] = await Promise.all([send(0), send(1), send(0), send(1)]);
    const created = answers.filter((r) => r.status === 201);
    // Each is either the one execution (or its replay) or told the key is still in flight.
    for (const r of answers) expect([201, 409], r.text).to.include(r.status);
    for (const r of answers.filter((a) => a.status === 409))
      expect((r.body as { error: { code: string } }).error.code).to.equal('IDEMPOTENCY_KEY_IN_PROGRESS');
    expect(new Set(created.map((r) => (r.body as Rec).id)).size).to.equal(1);
    const list = await request(on(1), 'GET', '/api/tickets?limit=1000', { headers: agent });
    const same = (list.body as { items: Rec[] }).items.filter((t) => t.title === title);
    expect(same).to.have.length(1);
    // Once the first has finished, both instances replay it.
    for (const i of [0, 1]) {
      const replay = await send(i);
      expect(replay.status).to.equal(201);
      expect((replay.body as Rec).id).to.equal(same[0].id);
    }
  });

  it('answers a used key first on either instance: another input is 409 IDEMPOTENCY_KEY_REUSE, no write', async () => {
    const key = freshKey();
    const first = await request(on(0), 'POST', '/api/tickets', {
      json: { title: `reuse-${key}` },
      headers: { ...agent, 'idempotency-key': key },
    });
    expect(first.status, first.text).to.equal(201);
    // The write is recorded before its key is checked, and rolled back when the key is taken.
    const other = await request(on(1), 'POST', '/api/tickets', {
      json: { title: `other-${key}` },
      headers: { ...agent, 'idempotency-key': key },
    });
    expect(other.status, other.text).to.equal(409);
    expect((other.body as { error: { code: string } }).error.code).to.equal('IDEMPOTENCY_KEY_REUSE');
    // Even when this attempt fails on its own (here, validation): the key's answer comes first.
    const invalid = await request(on(1), 'POST', '/api/tickets', {
      json: { priority: 'urgent!' },
      headers: { ...agent, 'idempotency-key': key },
    });
    expect((invalid.body as { error: { code: string } }).error.code, invalid.text).to.equal('IDEMPOTENCY_KEY_REUSE');
    const replay = await request(on(1), 'POST', '/api/tickets', {
      json: { title: `reuse-${key}` },
      headers: { ...agent, 'idempotency-key': key },
    });
    expect(replay.status, replay.text).to.equal(201);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect((replay.body as Rec).id).to.equal((first.body as Rec).id);
    const list = await request(on(1), 'GET', '/api/tickets?limit=1000', { headers: agent });
    expect((list.body as { items: Rec[] }).items.filter((t) => t.title === `other-${key}`)).to.have.length(0);
  });

  it('runs a command with a handler once for one key sent to both instances, and replays it on either', async () => {
    const ticket = await newTicket('handled');
    const step = (i: number, command: string, json: Rec = {}) =>
      request(on(i), 'POST', `/api/commands/${command}/${ticket.id}`, {
        json,
        headers: { ...agent, 'idempotency-key': freshKey() },
      });
    expect((await step(0, 'start_ticket')).status).to.equal(200);
    expect((await step(1, 'resolve_ticket', { resolution: 'fixed' })).status).to.equal(200);
    const key = freshKey();
    const close = (i: number) =>
      request(on(i), 'POST', `/api/commands/close_ticket/${ticket.id}`, {
        json: {},
        headers: { ...agent, 'idempotency-key': key },
      });
    const answers = await Promise.all([close(0), close(1)]);
    for (const r of answers) expect([200, 409], r.text).to.include(r.status);
    for (const r of answers.filter((a) => a.status === 409))
      expect((r.body as { error: { code: string } }).error.code).to.equal('IDEMPOTENCY_KEY_IN_PROGRESS');
    for (const i of [0, 1]) {
      const replay = await close(i);
      expect(replay.status, replay.text).to.equal(200);
      expect(replay.headers.get('idempotent-replayed')).to.equal('true');
      expect((replay.body as Rec).status).to.equal('closed');
    }
    const audit = await request(on(0), 'GET', `/api/audit?entity=Ticket&recordId=${ticket.id}&limit=100`, {
      headers: agent,
    });
    expect(audit.status, audit.text).to.equal(200);
    const closes = (audit.body as { items: Rec[] }).items.filter((e) => e.operation === 'command:CloseTicket');
    expect(closes).to.have.length(1);
  });

  it('runs a write again under a key whose record expired, replacing the record', async () => {
    const key = freshKey();
    const send = (title: string) =>
      request(on(1), 'POST', '/api/tickets', { json: { title }, headers: { ...agent, 'idempotency-key': key } });
    const first = await send(`expiring-${key}`);
    expect(first.status, first.text).to.equal(201);
    const db = new pg.Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    try {
      const aged = await db.query('UPDATE "_bp_idempotency" SET "expiresAt" = $1 WHERE "key" = $2', [
        Date.now() - 1000,
        key,
      ]);
      expect(aged.rowCount).to.equal(1);
      const again = await send(`renewed-${key}`);
      expect(again.status, again.text).to.equal(201);
      expect(again.headers.get('idempotent-replayed')).to.equal(null);
      expect((again.body as Rec).id).to.not.equal((first.body as Rec).id);
      const row = await db.query('SELECT "body", "expiresAt" FROM "_bp_idempotency" WHERE "key" = $1', [key]);
      expect(row.rows).to.have.length(1);
      expect(JSON.parse(row.rows[0].body as string).title).to.equal(`renewed-${key}`);
      expect(Number(row.rows[0].expiresAt)).to.be.greaterThan(Date.now());
    } finally {
      await db.end();
    }
  });

  it('lets exactly one of 20 concurrent runs of a command spread over both instances win', async () => {
    const ticket = await newTicket('race');
    const runs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        request(on(i), 'POST', `/api/commands/start_ticket/${ticket.id}`, {
          json: {},
          headers: { ...agent, 'idempotency-key': freshKey() },
        }),
      ),
    );
    const won = runs.filter((r) => r.status === 200);
    expect(won, runs.map((r) => `${r.status} ${r.text}`).join('\n')).to.have.length(1);
    for (const r of runs.filter((x) => x.status !== 200)) {
      expect(r.status, r.text).to.equal(409);
      expect((r.body as { error: { code: string } }).error.code).to.be.oneOf(['STATE_CONFLICT', 'COMMAND_UNAVAILABLE']);
    }
    const after = await request(on(1), 'GET', `/api/tickets/${ticket.id}`, { headers: agent });
    expect((after.body as Rec).status).to.equal('in_progress');
    const audit = await request(on(0), 'GET', `/api/audit?entity=Ticket&recordId=${ticket.id}`, { headers: agent });
    const starts = (audit.body as { items: Rec[] }).items.filter((a) => a.operation === 'command:StartTicket');
    expect(starts).to.have.length(1);
  });

  it(
    'shares workflow jobs: submitted on one instance, polled on the other, each run once; ' +
      'an entity event starts one job',
    async () => {
      const tickets = await Promise.all(Array.from({ length: 6 }, (_, i) => newTicket(`escalate ${i}`)));
      const submitted = await Promise.all(
        tickets.map((t, i) =>
          request(on(i), 'POST', `/api/skills/triage/tickets/${String(t.id)}/escalate`, {
            json: { reason: `r${i}` },
            headers: { ...agent, 'idempotency-key': freshKey() },
          }),
        ),
      );
      for (const r of submitted) expect(r.status, r.text).to.equal(202);
      const urls = submitted.map((r) => (r.body as { job: { url: string } }).job.url);
      for (const [i, url] of urls.entries()) {
        const job = await jobFinished(on(i + 1), agent, url);
        expect(job, JSON.stringify(job)).to.include({ status: 'completed', attempts: 1 });
        // The same owner rule on both instances: another credential hears 404.
        const other = await request(on(i), 'GET', url, {
          headers: { authorization: `Bearer ${ENV.REPORTER_API_KEY}` },
        });
        expect(other.status).to.equal(404);
      }
      // Each job's notify was sent once, by whichever instance ran it.
      const sent = (t: Rec) =>
        apps.map((a) => a.output().split(`Ticket ${String(t.id)} escalated`).length - 1).reduce((x, y) => x + y);
      for (const t of tickets) expect(sent(t), String(t.id)).to.equal(1);

      // AnnounceResolution: a resolved ticket is announced once across both instances.
      const [t] = tickets;
      const started = await request(on(1), 'POST', `/api/commands/start_ticket/${String(t.id)}`, {
        json: {},
        headers: { ...agent, 'idempotency-key': freshKey() },
      });
      expect(started.status, started.text).to.equal(200);
      const resolved = await request(on(0), 'POST', `/api/commands/resolve_ticket/${String(t.id)}`, {
        json: { resolution: 'fixed everywhere' },
        headers: { ...agent, 'idempotency-key': freshKey() },
      });
      expect(resolved.status, resolved.text).to.equal(200);
      const announced = () =>
        apps
          .map((a) => a.output().split(`Ticket ${String(t.id)} resolved: fixed everywhere`).length - 1)
          .reduce((x, y) => x + y);
      for (let n = 0; n < 100 && announced() === 0; n++) await new Promise((resolve) => setTimeout(resolve, 50));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(announced()).to.equal(1);
    },
  );

  it('counts failed sign-ins made on either instance', async () => {
    const email = 'ada@example.com';
    const attempt = (i: number, password: string) =>
      request(on(i), 'POST', '/api/auth/login', { json: { email, password } });
    // Five failures, alternating instances: the e-mail's threshold is 5.
    for (let i = 0; i < 5; i++) expect((await attempt(i, 'wrong password!')).status).to.equal(401);
    for (const i of [0, 1]) {
      const blocked = await attempt(i, 'correct horse battery');
      expect(blocked.status, `instance ${i}: ${blocked.text}`).to.equal(429);
      expect(blocked.headers.get('retry-after')).to.match(/^\d+$/);
    }
  });

  it('keeps every acknowledged write when one instance is killed (kill -9) during a write burst', async () => {
    const acknowledged: string[] = [];
    let stop = false;
    const writer = async (i: number) => {
      for (let n = 0; !stop && n < 400; n++) {
        try {
          const res = await request(on(i), 'POST', '/api/tickets', {
            json: { title: `burst-${i}-${n}` },
            headers: { ...agent, 'idempotency-key': freshKey() },
          });
          if (res.status === 201) acknowledged.push((res.body as Rec).id as string);
        } catch {
          // the killed instance's connections fail; only answered writes count
        }
      }
    };
    const writers = [0, 1, 0, 1].map(writer);
    await new Promise((resolve) => setTimeout(resolve, 400));
    apps[1].process.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 300));
    stop = true;
    await Promise.all(writers);
    expect(acknowledged.length).to.be.greaterThan(20);
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    try {
      const { rows } = await client.query('SELECT "id" FROM "Ticket" WHERE "id" = ANY($1)', [acknowledged]);
      expect(rows.length).to.equal(acknowledged.length);
    } finally {
      await client.end();
    }
    // The surviving instance still answers, and a new one joins without migrating again.
    const replacement = await startApp(appDir, env);
    apps[1] = replacement;
    expect(replacement.output()).not.to.contain('applied migrations');
    const res = await request(on(1), 'GET', `/api/tickets/${acknowledged[0]}`, { headers: agent });
    expect(res.status).to.equal(200);
  });
});

describe('two instances of an app with webhook and schedule triggers on one PostgreSQL', function () {
  this.timeout(180_000);
  const env: Record<string, string> = {
    OPS_API_KEY: 'ops-key-0123456789abcdef0123',
    INBOUND_SECRET: 'inbound-secret-0123456789',
  };
  let apps: RunningApp[] = [];
  const query = async (sql: string): Promise<Rec[]> => {
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    try {
      return (await client.query(sql)).rows as Rec[];
    } finally {
      await client.end();
    }
  };

  before(async () => {
    const appDir = path.join(freshDir('multi-triggers'), 'app');
    await generate(path.join(ROOT, 'test/fixtures/triggers/app.toml'), appDir);
    env.DATABASE_URL = await freshPostgresDatabase('triggers');
    env.SESSION_SECRET = 'multi-triggers-secret-0123456789abcdef';
    apps = [await startApp(appDir, env)];
    apps.push(await startApp(appDir, env));
  });
  after(async () => {
    await Promise.all(apps.map((a) => a.stop()));
  });

  it('runs each tick of a schedule once, though both instances keep its timer', async () => {
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    // One job per tick, and one beat per job.
    const jobTicks = (await query(`SELECT "data" FROM "_bp_jobs" WHERE "workflow" = 'Heartbeat'`)).map(
      (r) => (JSON.parse(String(r.data)) as { tick: string }).tick,
    );
    expect(jobTicks.length).to.be.at.least(2);
    expect(new Set(jobTicks).size, jobTicks.join(', ')).to.equal(jobTicks.length);
    const beats = (await query('SELECT "tick" FROM "Beat"')).map((r) => String(r.tick));
    expect(new Set(beats).size, beats.join(', ')).to.equal(beats.length);
  });

  it('refuses a signed delivery replayed to the other instance', async () => {
    const body = JSON.stringify({ kind: 'mail', subject: 'sent to both' });
    const at = String(Math.floor(Date.now() / 1000));
    const signature = createHmac('sha256', env.INBOUND_SECRET).update(`${at}.${body}`).digest('hex');
    const headers = {
      'content-type': 'application/json',
      'x-sender': 'a@example.com',
      'x-webhook-timestamp': at,
      'x-webhook-signature': `sha256=${signature}`,
    };
    const answers = await Promise.all(apps.map((a) => request(a.url, 'POST', '/webhooks/inbound', { body, headers })));
    expect(answers.map((a) => a.status).sort()).to.deep.equal([202, 409]);
    const jobs = await query(`SELECT "id" FROM "_bp_jobs" WHERE "workflow" = 'Inbound'`);
    expect(jobs).to.have.length(1);
  });
});
