// The round trips each write of the reference app takes to PostgreSQL, counted by a proxy in front
// of the server (one pooled connection, so every statement passes through it in order). A trip is
// what the app writes before it waits for an answer: statements sent together count once.

import * as path from 'node:path';
import { expect } from 'chai';
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
import { freshPostgresDatabase, tripCounter, type TripCounter } from './support/postgres.ts';

type Rec = Record<string, unknown>;

const AGENT_KEY = 'triage-key-0123456789abcdef';
const ENV = {
  TRIAGE_API_KEY: AGENT_KEY,
  SESSION_SECRET: 'round-trips-secret-0123456789abcdef0123456',
};

describe('round trips of each write on PostgreSQL (reference app)', function () {
  this.timeout(120_000);
  let app: RunningApp;
  let counter: TripCounter;

  const send = (method: string, urlPath: string, json: unknown): Promise<HttpResponse> =>
    request(app.url, method, urlPath, {
      json,
      headers: { authorization: `Bearer ${AGENT_KEY}`, 'idempotency-key': freshKey() },
    });
  /** The messages of each of the last `trips` call's writes: their type letters, trips apart. */
  let seen: string[] = [];
  /**
   * The trips a write takes (`write` makes a fresh one on each call, answered with `status`). The
   * app's job runner looks for due jobs every second on the same connection, and a look that
   * falls within a write counts as well: the fewest of five writes is the write's own count.
   */
  const trips = async (status: number, write: () => Promise<HttpResponse>): Promise<number> => {
    const counts: number[] = [];
    seen = [];
    for (let i = 0; i < 5; i++) {
      counter.reset();
      const res = await write();
      expect(res.status, res.text).to.equal(status);
      counts.push(counter.trips());
      seen.push(counter.messages().join(' '));
    }
    return Math.min(...counts);
  };
  const newTicket = async (): Promise<Rec> => {
    const res = await send('POST', '/api/tickets', { title: 'counted' });
    expect(res.status, res.text).to.equal(201);
    return res.body as Rec;
  };
  const command = (name: string, id: unknown, input: Rec = {}) => send('POST', `/api/commands/${name}/${id}`, input);

  before(async () => {
    const appDir = path.join(freshDir('round-trips'), 'app');
    await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
    counter = await tripCounter(await freshPostgresDatabase('trips'));
    app = await startApp(appDir, { ...ENV, DATABASE_URL: counter.url, DATABASE_POOL_MAX: '1' });
    await newTicket(); // the pool's connection is open, every statement prepared once
  });
  after(async () => {
    await app?.stop();
    await counter?.close();
  });

  it('a create: one, and one statement (the insert, its audit record and its key, no BEGIN or COMMIT)', async () => {
    expect(await trips(201, () => send('POST', '/api/tickets', { title: 'one trip' }))).to.equal(1);
    // Bind, Describe, Execute and Sync of one prepared statement: no BEGIN or COMMIT (Q).
    expect(seen).to.include('BDES');
  });

  it('an update: one, and one statement (the UPDATE with its checks, its audit record and its key)', async () => {
    const ticket = await newTicket();
    expect(await trips(200, () => send('PUT', `/api/tickets/${ticket.id}`, { title: 'renamed' }))).to.equal(1);
    expect(seen).to.include('BDES');
  });

  it('a declarative command: one statement, as an update (policy and availableWhen in its WHERE)', async () => {
    const tickets = await Promise.all([1, 2, 3, 4, 5].map(newTicket));
    expect(await trips(200, () => command('start_ticket', (tickets.pop() as Rec).id))).to.equal(1);
    expect(seen).to.include('BDES');
  });

  it(
    'a change a workflow may follow: three (the locking read with the UPDATE; the job; ' +
      'the audit record, the key and COMMIT)',
    async () => {
      const tickets: Rec[] = [];
      for (let i = 0; i < 5; i++) {
        const ticket = await newTicket();
        expect((await command('start_ticket', ticket.id)).status).to.equal(200);
        tickets.push(ticket);
      }
      // AnnounceResolution starts when a ticket goes from in_progress to resolved: one statement
      // cannot tell whether it does, so the change takes the plain way, which waits for the job's insert.
      const resolve = () => command('resolve_ticket', (tickets.pop() as Rec).id, { resolution: 'toner replaced' });
      expect(await trips(200, resolve)).to.equal(3);
    },
  );

  it("a command with a handler: the key's claim, the read the handler sees, and two for its change", async () => {
    const resolved: Rec[] = [];
    for (let i = 0; i < 5; i++) {
      const ticket = await newTicket();
      expect((await command('start_ticket', ticket.id)).status).to.equal(200);
      expect((await command('resolve_ticket', ticket.id, { resolution: 'toner replaced' })).status).to.equal(200);
      resolved.push(ticket);
    }
    // The claim commits on its own, without BEGIN or COMMIT (1); the record is read for the
    // handler (1), whose write to it needs no other read; then the key's hold, the row's lock and
    // the UPDATE go together (1), and the audit records, the stored response and COMMIT after the
    // checks (1).
    expect(await trips(200, () => command('close_ticket', (resolved.pop() as Rec).id))).to.equal(4);
  });
});
