// A command with a handler on PostgreSQL: its change is sent with the key's hold and the row's
// lock, planned from the record the handler saw, and checked on the row as locked. A record that
// changed while the handler ran refuses the command and keeps the other change; a key another
// request took over refuses it too.

import * as path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import {
  freshDir,
  freshKey,
  generate,
  request,
  ROOT,
  startApp,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { freshPostgresDatabase } from './support/postgres.ts';

type Rec = Record<string, unknown>;

const KEYS = {
  LAB_WORKER_KEY: 'worker-key-0123456789',
  LAB_HELPER_KEY: 'helper-key-0123456789',
  LAB_OUTSIDER_KEY: 'outsider-key-0123456789',
  SESSION_SECRET: 'lab-session-secret-0123456789abcdef',
};

describe('command handlers on PostgreSQL (lab fixture)', function () {
  this.timeout(120_000);
  let app: RunningApp;
  let url: string;

  const send = (method: string, urlPath: string, json: unknown, key = freshKey()): Promise<HttpResponse> =>
    request(app.url, method, urlPath, {
      json,
      headers: { authorization: `Bearer ${KEYS.LAB_WORKER_KEY}`, 'idempotency-key': key },
    });
  const newJob = async (): Promise<Rec> => {
    const res = await send('POST', '/api/jobs', { title: 'Nightly build' });
    expect(res.status, res.text).to.equal(201);
    return res.body as Rec;
  };
  const query = async (sql: string, params: unknown[]): Promise<Rec[]> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as Rec[];
    } finally {
      await client.end();
    }
  };

  before(async () => {
    const appDir = path.join(freshDir('handler-commands-postgres'), 'app');
    await generate(path.join(ROOT, 'test/fixtures/commands/lab/app.toml'), appDir);
    url = await freshPostgresDatabase('lab');
    app = await startApp(appDir, { ...KEYS, DATABASE_URL: url });
  });
  after(async () => app?.stop());

  it('20 parallel runs of a handler that waits while others commit: one success, the rest STATE_CONFLICT', async () => {
    const job = await newJob();
    const results = await Promise.all(
      Array.from({ length: 20 }, () => send('POST', `/api/commands/bump/${job.id}`, { waitMs: 500 })),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(ok, results.map((r) => r.text).join('\n')).to.have.length(1);
    expect((ok[0].body as Rec).counter).to.equal(1);
    for (const r of results.filter((x) => x.status !== 200)) {
      expect(r.status, r.text).to.equal(409);
      expect((r.body as { error: Rec }).error).to.include({ code: 'STATE_CONFLICT', retryable: false });
    }
    expect((await query('SELECT counter FROM "Job" WHERE id = $1', [job.id]))[0]).to.deep.equal({ counter: 1 });
    const trail = await query('SELECT operation FROM "_bp_audit" WHERE "recordId" = $1 ORDER BY id', [job.id]);
    expect(trail.map((r) => r.operation)).to.deep.equal(['Job.create', 'command:Bump']);
  });

  it('keeps a change made while the handler ran, and refuses the command (nothing of it written)', async () => {
    const job = await newJob();
    const key = freshKey();
    // The handler waits 2 s; the rename commits well within it, after the handler read the record.
    const running = send('POST', `/api/commands/bump/${job.id}`, { waitMs: 2000 }, key);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const renamed = await send('PUT', `/api/jobs/${job.id}`, { title: 'Renamed meanwhile' });
    expect(renamed.status, renamed.text).to.equal(200);
    const refused = await running;
    expect(refused.status, refused.text).to.equal(409);
    expect((refused.body as { error: Rec }).error).to.include({ code: 'STATE_CONFLICT' });
    const [row] = await query('SELECT title, counter FROM "Job" WHERE id = $1', [job.id]);
    expect(row).to.deep.equal({ title: 'Renamed meanwhile', counter: 0 });
    const trail = await query('SELECT operation FROM "_bp_audit" WHERE "recordId" = $1 ORDER BY id', [job.id]);
    expect(trail.map((r) => r.operation)).to.deep.equal(['Job.create', 'Job.update']);
    // The refusal is the key's answer: the same request again hears it, and changes nothing.
    const again = await send('POST', `/api/commands/bump/${job.id}`, { waitMs: 2000 }, key);
    expect(again.status, again.text).to.equal(409);
    expect((again.body as { error: Rec }).error).to.include({ code: 'STATE_CONFLICT' });
    expect(again.headers.get('idempotent-replayed'), 'replayed').to.equal('true');
    expect((await query('SELECT counter FROM "Job" WHERE id = $1', [job.id]))[0]).to.deep.equal({ counter: 0 });
  });
});
