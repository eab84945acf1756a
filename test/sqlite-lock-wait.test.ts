// Waiting for another connection's SQLite write lock (issue 26, finding 5). The reference app runs
// in its own process on SQLite; this test holds `BEGIN IMMEDIATE` on the same file from a
// connection of its own, as another process (an operator's shell, the users command) would.
// While a create waits for that lock, /healthz, a list and a read answer at once: the wait must
// not block the app's event loop. The create commits once the lock is released within its
// deadline (5 s), or answers 503 DATABASE_BUSY at the deadline, logged with its trace id, having
// stored nothing; the same request with the same key then succeeds.

import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
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

type Rec = Record<string, unknown>;

const AGENT_KEY = 'triage-key-0123456789abcdef';
const AUTH = { authorization: `Bearer ${AGENT_KEY}` };
/**
 * The bound on a read's answer while a write waits: far below the lock's seconds, far above a
 * read's usual milliseconds.
 */
const PROMPT_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("SQLite: a write waiting for another connection's lock does not stop the app", function () {
  this.timeout(120_000);
  let app: RunningApp;
  let dbFile: string;
  let ticketId: string;

  const create = (title: string, key = freshKey()) =>
    request(app.url, 'POST', '/api/tickets', { json: { title }, headers: { ...AUTH, 'idempotency-key': key } });

  /** Times a request. */
  async function timed(send: () => Promise<HttpResponse>): Promise<{ res: HttpResponse; ms: number }> {
    const start = performance.now();
    const res = await send();
    return { res, ms: performance.now() - start };
  }

  /** /healthz, the list and one record, each `rounds` times, `gap` ms apart: each answers 200 within PROMPT_MS. */
  async function readsStayPrompt(rounds: number, gap: number): Promise<void> {
    for (let i = 0; i < rounds; i++) {
      await sleep(gap);
      for (const send of [
        () => request(app.url, 'GET', '/healthz'),
        () => request(app.url, 'GET', '/api/tickets', { headers: AUTH }),
        () => request(app.url, 'GET', `/api/tickets/${ticketId}`, { headers: AUTH }),
      ]) {
        const { res, ms } = await timed(send);
        expect(res.status, res.text).to.equal(200);
        expect(ms, `a read while the write waits (${res.text.slice(0, 60)})`).to.be.below(PROMPT_MS);
      }
    }
  }

  /** Holds the write lock from another connection until the returned function releases it. */
  function holdLock(): () => void {
    const other = new Database(dbFile);
    other.exec('BEGIN IMMEDIATE');
    return () => {
      other.exec('ROLLBACK');
      other.close();
    };
  }

  const titles = () => {
    const db = new Database(dbFile, { readonly: true });
    try {
      return db.prepare('SELECT "title" FROM "Ticket" ORDER BY "title"').pluck().all() as string[];
    } finally {
      db.close();
    }
  };

  before(async () => {
    const appDir = path.join(freshDir('sqlite-lock-wait'), 'app');
    await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
    dbFile = path.join(appDir, 'data', 'lock.db');
    app = await startApp(appDir, {
      TRIAGE_API_KEY: AGENT_KEY,
      SESSION_SECRET: 'sqlite-lock-wait-secret-0123456789abcdef',
      DATABASE_URL: `file:${dbFile}`,
    });
    const first = await create('before the lock');
    expect(first.status, first.text).to.equal(201);
    ticketId = (first.body as Rec).id as string;
  });
  after(async () => app?.stop());

  it('answers reads and /healthz promptly while a create waits 3 s for the lock, then commits the create', async () => {
    const release = holdLock();
    let released = false;
    try {
      const start = performance.now();
      let answeredAt: number | undefined;
      const pending = create('waited for the lock').then((res) => ((answeredAt = performance.now() - start), res));
      await readsStayPrompt(5, 400);
      // The create is still waiting: nothing of it is visible, no answer yet.
      expect(answeredAt, 'the create answered while the lock was held').to.equal(undefined);
      expect(titles()).to.deep.equal(['before the lock']);
      await sleep(Math.max(0, 3000 - (performance.now() - start)));
      release();
      released = true;
      const res = await pending;
      expect(res.status, res.text).to.equal(201);
      expect(answeredAt).to.be.within(3000, 3000 + 1000);
      expect(titles()).to.deep.equal(['before the lock', 'waited for the lock']);
    } finally {
      if (!released) release();
    }
  });

  it(
    'answers 503 DATABASE_BUSY at the 5 s deadline, logged with its trace id, stores nothing, ' +
      'and the same request succeeds after',
    async () => {
      const release = holdLock();
      const key = freshKey();
      try {
        const start = performance.now();
        let answeredAt: number | undefined;
        const pending = create('past the deadline', key).then((res) => ((answeredAt = performance.now() - start), res));
        await readsStayPrompt(4, 500);
        const res = await pending;
        expect(res.status, res.text).to.equal(503);
        expect(res.headers.get('retry-after')).to.equal('1');
        const error = (res.body as { error: Rec }).error;
        expect(error).to.include({ code: 'DATABASE_BUSY', retryable: true });
        // The lock was still held: the answer came at the write's deadline, not at its release.
        expect(answeredAt).to.be.within(4900, 5000 + 1000);
        await sleep(100);
        expect(app.output()).to.include(`[${String(error.traceId)}] POST /api/tickets: database busy: SQLITE_BUSY`);
        expect(titles()).to.not.include('past the deadline');
        await readsStayPrompt(1, 0);
      } finally {
        release();
      }
      const again = await create('past the deadline', key);
      expect(again.status, again.text).to.equal(201);
      expect(again.headers.get('idempotent-replayed')).to.equal(null);
      expect(titles()).to.include('past the deadline');
    },
  );
});
