// The generated app when its PostgreSQL goes away and comes back. The app reaches the server
// through a TCP relay the test controls: cutting the relay drops every open connection and refuses
// new ones, as a server restart or a network partition does. Meanwhile the app must answer 503 with
// `retryable: true` (readiness included), store nothing, and serve again once the server is back,
// without a restart.

import * as net from 'node:net';
import * as path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { freshDir, freshKey, generate, request, ROOT, startApp, type RunningApp } from './support/apps.ts';
import { freshPostgresDatabase } from './support/postgres.ts';

type Rec = Record<string, unknown>;

/** A TCP relay to `target` that can be cut (connections dropped, new ones refused) and restored. */
class Relay {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async open(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.resetAndDestroy();
    if (server) await new Promise((resolve) => server.close(resolve));
  }
}

describe('the app on PostgreSQL through an outage', function () {
  this.timeout(120_000);
  const env: Record<string, string> = {
    TRIAGE_API_KEY: 'triage-key-0123456789abcdef',
    REPORTER_API_KEY: 'reporter-key-0123456789abcdef',
    SESSION_SECRET: 'outage-secret-0123456789abcdef0123456789',
    DATABASE_CONNECT_TIMEOUT_MS: '1000',
  };
  const agent = { authorization: `Bearer ${env.TRIAGE_API_KEY}` };
  let directUrl: string;
  let relay: Relay;
  let app: RunningApp;

  const create = (title: string, key = freshKey()) =>
    request(app.url, 'POST', '/api/tickets', { json: { title }, headers: { ...agent, 'idempotency-key': key } });
  const titles = async (): Promise<string[]> => {
    const client = new pg.Client({ connectionString: directUrl });
    await client.connect();
    try {
      return (await client.query<{ title: string }>('SELECT "title" FROM "Ticket" ORDER BY "title"')).rows.map(
        (r) => r.title,
      );
    } finally {
      await client.end();
    }
  };

  before(async () => {
    const appDir = path.join(freshDir('pg-outage'), 'app');
    await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
    directUrl = await freshPostgresDatabase('outage');
    const url = new URL(directUrl);
    relay = new Relay({ host: url.hostname, port: Number(url.port) });
    await relay.open();
    url.port = String(relay.port);
    app = await startApp(appDir, { ...env, DATABASE_URL: url.toString() });
  });
  after(async () => {
    await app?.stop();
    await relay?.cut();
  });

  it('answers 503 retryable while the server is gone, stores nothing, and serves again once it is back', async () => {
    expect((await create('before')).status).to.equal(201);
    expect((await request(app.url, 'GET', '/readyz')).status).to.equal(200);

    await relay.cut();
    const ready = await request(app.url, 'GET', '/readyz');
    expect(ready.status, ready.text).to.equal(503);
    expect((ready.body as { error: Rec }).error).to.include({ code: 'STORAGE_UNAVAILABLE', retryable: true });
    expect((await request(app.url, 'GET', '/healthz')).status, 'the process itself is fine').to.equal(200);
    const key = freshKey();
    for (const res of [
      await create('during', key),
      await request(app.url, 'GET', '/api/tickets', { headers: agent }),
      await request(app.url, 'POST', '/api/commands/start_ticket/01ARZ3NDEKTSV4RRFFQ69G5FAV', {
        json: {},
        headers: { ...agent, 'idempotency-key': freshKey() },
      }),
    ]) {
      expect(res.status, res.text).to.equal(503);
      expect((res.body as { error: Rec }).error).to.include({ code: 'STORAGE_UNAVAILABLE', retryable: true });
      expect(Number(res.headers.get('retry-after'))).to.be.above(0);
    }

    await relay.open();
    let back = await request(app.url, 'GET', '/readyz');
    for (let i = 0; i < 20 && back.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      back = await request(app.url, 'GET', '/readyz');
    }
    expect(back.status, back.text).to.equal(200);
    // The same keyed request, retried as the 503 invited: it runs now, once.
    expect((await create('during', key)).status).to.equal(201);
    expect((await create('during', key)).status).to.equal(201);
    expect(await titles()).to.deep.equal(['before', 'during']);
    expect(app.process.exitCode, app.output()).to.equal(null);
  });
});
