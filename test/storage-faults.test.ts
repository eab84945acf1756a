// Storage faults, health and readiness, durability (issue 8, findings 6 and 11), on the generated
// helpdesk app over real HTTP.
//
// Real SQLite faults, each on the app's own connection or file: a full database
// (`max_page_count` pinned to the current size: SQLITE_FULL), a read-only connection
// (`query_only`: SQLITE_READONLY), another connection holding the write lock (SQLITE_BUSY), and
// a real I/O error (the app in its own process, its file-size limit lowered with prlimit: the
// WAL append fails with EFBIG, which SQLite reports as SQLITE_IOERR_WRITE). Under each, a create,
// an update, a delete and a command, all under an Idempotency-Key, answer 503 with
// `retryable: true` and Retry-After; afterwards the database holds exactly what it held before,
// and the same requests with the same keys succeed. A full disk met by each statement of a keyed
// create in turn (the venue app, API keys only) checks that the driver answers the storage fault
// even where SQLite rolled the whole transaction back under the write's savepoints.

import { execFileSync, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { AppError } from '../runtime-lib/core/errors.ts';
import { mapSqliteError, openSqlite } from '../runtime-lib/data/sqlite.ts';
import { freshDir, generate, request, ROOT, startApp, type HttpResponse, type RunningApp } from './support/apps.ts';
import {
  Api,
  bootInProcess,
  capturingConsoleError,
  errorOf,
  type InProcessApp,
  type Rec,
  type TraceLike,
  usersCli,
} from './support/commands/harness.ts';

const KEYS = {
  TRIAGE_API_KEY: 'triage-key-0123456789',
  REPORTER_API_KEY: 'reporter-key-0123456789',
  SESSION_SECRET: 'storage-faults-session-secret-0123456789',
};
const PASSWORD = 'long-password-1';
/**
 * A payload that needs new pages wherever it is stored, more than it frees: backslashes, which
 * JSON doubles in the audit row and the stored response.
 */
const BIG = '\\'.repeat(30_000);

let keySeq = 0;
const k = (label: string) => `${label}-${++keySeq}-${Date.now()}`;

type Db = Database.Database;

/** Every row of the tables a write touches, in storage order: equal snapshots mean nothing was stored. */
function snapshot(db: Db): Record<string, Rec[]> {
  const out: Record<string, Rec[]> = {};
  for (const table of ['Ticket', 'Comment', '_bp_audit', '_bp_idempotency']) {
    out[table] = db.prepare(`SELECT * FROM "${table}" ORDER BY rowid`).all() as Rec[];
  }
  return out;
}

/** Records without the audit row of their creation. */
function unaudited(db: Db): string[] {
  return db
    .prepare(
      `SELECT "id" FROM "Ticket"
         WHERE "id" NOT IN (SELECT "recordId" FROM "_bp_audit" WHERE "operation" = 'Ticket.create')
       UNION ALL
       SELECT "id" FROM "Comment"
         WHERE "id" NOT IN (SELECT "recordId" FROM "_bp_audit" WHERE "operation" = 'Comment.create')`,
    )
    .pluck()
    .all() as string[];
}

interface Write {
  label: string;
  key: string;
  ok: number;
  send(): Promise<HttpResponse>;
}

/** A create, an update, a delete and a command of the triage agent, each with its own key. */
async function preparedWrites(api: Api): Promise<Write[]> {
  const ticket = await api.create('tickets', { title: 'to update' }, { idem: k('prep') });
  const comment = await api.create('comments', { ticketId: ticket.id, authorId: 'a', body: BIG }, { idem: k('prep') });
  const started = await api.create('tickets', { title: 'to resolve' }, { idem: k('prep') });
  const start = await api.command('start_ticket', started.id as string, undefined, { idem: k('prep') });
  expect(start.status, start.text).to.equal(200);
  const keys = { create: k('create'), update: k('update'), delete: k('delete'), command: k('command') };
  return [
    {
      label: 'create',
      key: keys.create,
      ok: 201,
      send: () =>
        api.call(
          'POST',
          '/api/tickets',
          '/api/tickets',
          { title: 'made under a fault', body: BIG },
          { idem: keys.create },
        ),
    },
    {
      label: 'update',
      key: keys.update,
      ok: 200,
      send: () =>
        api.call('PUT', '/api/tickets/{id}', `/api/tickets/${ticket.id}`, { body: BIG }, { idem: keys.update }),
    },
    {
      label: 'delete',
      key: keys.delete,
      ok: 204,
      send: () =>
        api.call('DELETE', '/api/comments/{id}', `/api/comments/${comment.id}`, undefined, { idem: keys.delete }),
    },
    {
      label: 'command',
      key: keys.command,
      ok: 200,
      send: () => api.command('resolve_ticket', started.id as string, { resolution: BIG }, { idem: keys.command }),
    },
  ];
}

function expectRetryable(res: HttpResponse, code: string, label: string): void {
  expect(res.status, `${label}: ${res.text}`).to.equal(503);
  expect(errorOf(res), label).to.include({ code, retryable: true });
  expect(Number(res.headers.get('retry-after')), `${label}: Retry-After`).to.be.at.least(1);
}

async function readyz(base: string, method = 'GET'): Promise<HttpResponse> {
  const res = await request(base, method, '/readyz');
  expect(res.headers.get('x-trace-id'), 'X-Trace-ID').to.match(/^[0-9a-f]{32}$/);
  return res;
}

/** Sends every write (under the fault), then after the fault: nothing stored, and the same keyed requests succeed. */
async function sendThrough(
  db: () => Db,
  base: string,
  writes: Write[],
  fault: { code: string; apply(): void; remove(): void; readiness: boolean },
): Promise<string[]> {
  const before = snapshot(db());
  fault.apply();
  let lines: string[];
  try {
    ({ lines } = await capturingConsoleError(async () => {
      for (const write of writes) expectRetryable(await write.send(), fault.code, write.label);
      if (fault.readiness) expectRetryable(await readyz(base), fault.code, 'readyz');
    }));
  } finally {
    fault.remove();
  }
  expect(snapshot(db())).to.deep.equal(before);
  expect(unaudited(db())).to.deep.equal([]);
  for (const write of writes) {
    const res = await write.send();
    expect(res.status, `${write.label} after the fault: ${res.text}`).to.equal(write.ok);
    expect(res.headers.get('idempotent-replayed'), write.label).to.equal(null);
    const stored = db().prepare('SELECT "state", "status" FROM "_bp_idempotency" WHERE "key" = ?').get(write.key);
    expect(stored, write.label).to.deep.equal({ state: 'done', status: write.ok });
  }
  expect(unaudited(db())).to.deep.equal([]);
  const ready = await readyz(base);
  expect(ready.status, ready.text).to.equal(200);
  return lines;
}

describe('storage faults, health and readiness (generated helpdesk)', function () {
  this.timeout(120_000);
  let appDir: string;

  before(async () => {
    appDir = path.join(freshDir('storage-faults'), 'app');
    await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
  });

  describe("in process, faults on the app's own connection", () => {
    let hd: InProcessApp;
    let api: Api;

    before(async () => {
      // A short busy timeout, so a held lock fails a write in 100 ms rather than 5 s.
      hd = await bootInProcess(appDir, KEYS, { database: { busyTimeoutMs: 100 } });
      api = new Api(() => hd.url, appDir, KEYS.TRIAGE_API_KEY);
      const r = usersCli(appDir, `file:${hd.dbFile}`, ['add', '--email', 'person@example.com'], `${PASSWORD}\n`);
      expect(r.status, r.stderr).to.equal(0);
    });
    after(async () => hd?.close());

    it(
      'a full database (SQLITE_FULL): 503 STORAGE_UNAVAILABLE, nothing stored, ' +
        'the same keyed requests succeed after',
      async () => {
        const writes = await preparedWrites(api);
        const limit = hd.db.pragma('max_page_count', { simple: true }) as number;
        const lines = await sendThrough(() => hd.db, hd.url, writes, {
          code: 'STORAGE_UNAVAILABLE',
          // VACUUM first gives the free pages back, so the pinned size leaves no room at all.
          apply: () => {
            hd.db.exec('VACUUM');
            hd.db.pragma(`max_page_count = ${hd.db.pragma('page_count', { simple: true }) as number}`);
          },
          remove: () => void hd.db.pragma(`max_page_count = ${limit}`),
          // The probe rewrites its one row in place, which needs no new page: it stays ready.
          readiness: false,
        });
        expect(lines.length).to.equal(writes.length);
        for (const line of lines)
          expect(line).to.match(/^\[[0-9a-f]{32}\] (POST|PUT|DELETE) \/api\/\S+: storage unavailable: SQLITE_FULL: /);
      },
    );

    it('a read-only connection (SQLITE_READONLY): 503 STORAGE_UNAVAILABLE, readiness 503, and back after', async () => {
      const writes = await preparedWrites(api);
      const lines = await sendThrough(() => hd.db, hd.url, writes, {
        code: 'STORAGE_UNAVAILABLE',
        apply: () => void hd.db.pragma('query_only = ON'),
        remove: () => void hd.db.pragma('query_only = OFF'),
        readiness: true,
      });
      expect(lines.length).to.equal(writes.length + 1);
      for (const line of lines)
        expect(line).to.match(/storage unavailable: SQLITE_READONLY: attempt to write a readonly database$/);
    });

    it("another connection's write lock (SQLITE_BUSY): 503 DATABASE_BUSY, readiness 503, and back after", async () => {
      const writes = await preparedWrites(api);
      let other: Db | undefined;
      const lines = await sendThrough(() => hd.db, hd.url, writes, {
        code: 'DATABASE_BUSY',
        apply: () => {
          other = new Database(hd.dbFile);
          other.exec('BEGIN IMMEDIATE');
        },
        remove: () => {
          other?.exec('ROLLBACK');
          other?.close();
        },
        readiness: true,
      });
      // Every 503 is logged with its trace id: the writes and the probe.
      expect(lines.length).to.equal(writes.length + 1);
      for (const line of lines)
        expect(line).to.match(/^\[[0-9a-f]{32}\] \S+ \/\S+: database busy: SQLITE_BUSY: database is locked$/);
    });

    it('a session-store failure reaches the caller as 503 STORAGE_UNAVAILABLE, not 500', async () => {
      hd.db.pragma('query_only = ON');
      let res: HttpResponse;
      try {
        // Signing in regenerates the session: the store's delete fails on the read-only connection.
        ({ result: res } = await capturingConsoleError(() =>
          request(hd.url, 'POST', '/api/auth/login', { json: { email: 'person@example.com', password: PASSWORD } }),
        ));
      } finally {
        hd.db.pragma('query_only = OFF');
      }
      expectRetryable(res, 'STORAGE_UNAVAILABLE', 'login');
      const again = await request(hd.url, 'POST', '/api/auth/login', {
        json: { email: 'person@example.com', password: PASSWORD },
      });
      expect(again.status, again.text).to.equal(200);
    });

    describe('probes', () => {
      const sessions = () => hd.db.prepare('SELECT COUNT(*) FROM "_bp_sessions"').pluck().get() as number;

      for (const probe of ['/healthz', '/readyz']) {
        it(`GET and HEAD ${probe}: 200 {"status":"ok"}, with no credential, no session and no cookie`, async () => {
          const rows = sessions();
          const variants: Array<Record<string, string>> = [
            {},
            { authorization: 'Bearer not-a-key' },
            { cookie: 'helpdesk.sid=s%3Aforged.sig' },
          ];
          for (const headers of variants) {
            const res = await request(hd.url, 'GET', probe, { headers });
            expect(res.status, res.text).to.equal(200);
            expect(res.body).to.deep.equal({ status: 'ok' });
            expect(res.headers.get('x-trace-id')).to.match(/^[0-9a-f]{32}$/);
            expect(res.headers.get('cache-control')).to.equal('no-store');
            expect(res.headers.getSetCookie()).to.deep.equal([]);
            const head = await request(hd.url, 'HEAD', probe, { headers });
            expect(head.status).to.equal(200);
            expect(head.text).to.equal('');
          }
          expect(sessions()).to.equal(rows);
          // The same bad header anywhere else is refused: the probes do not read it at all.
          const other = await request(hd.url, 'GET', '/api/tickets', {
            headers: { authorization: 'Bearer not-a-key' },
          });
          expect(other.status).to.equal(401);
        });
      }

      it('/readyz commits a real write through the group commit, /healthz writes nothing', async () => {
        const checkedAt = () =>
          hd.db.prepare(`SELECT "checkedAt" FROM "_bp_ready" WHERE "id" = 'probe'`).pluck().get() as number | undefined;
        const start = Date.now();
        expect((await request(hd.url, 'GET', '/healthz')).status).to.equal(200);
        expect(checkedAt() ?? 0).to.be.below(start);
        expect((await request(hd.url, 'GET', '/readyz')).status).to.equal(200);
        expect(checkedAt()).to.be.within(start, Date.now());
        expect(hd.db.prepare('SELECT COUNT(*) FROM "_bp_ready"').pluck().get()).to.equal(1);
      });

      it('is not kept in the trace store, and only GET and HEAD of the exact paths are probes', async () => {
        const res = await request(hd.url, 'GET', '/healthz');
        expect(hd.traces.list().map((t) => t.traceId)).not.to.include(res.headers.get('x-trace-id'));
        for (const [method, url] of [
          ['POST', '/healthz'],
          ['GET', '/healthz/'],
          ['GET', '/readyz/x'],
        ]) {
          const other = await request(hd.url, method, url, { headers: { authorization: 'Bearer not-a-key' } });
          expect(other.status, `${method} ${url}`).to.equal(401);
        }
      });

      it('/readyz answers 503 STORAGE_UNAVAILABLE when the connection is closed', async () => {
        // A second app on its own connection, so closing it leaves the suite's app alone.
        const other = await bootInProcess(appDir, KEYS, { dbName: 'closed.db' });
        try {
          other.db.close();
          const { result: res, lines } = await capturingConsoleError(() => readyz(other.url));
          expectRetryable(res, 'STORAGE_UNAVAILABLE', 'readyz');
          expect(lines).to.have.length(1);
          expect(lines[0]).to.match(
            /^\[[0-9a-f]{32}\] GET \/readyz: storage unavailable: The database connection is not open$/,
          );
          expect((await request(other.url, 'GET', '/healthz')).status).to.equal(200);
        } finally {
          await other.close().catch(() => undefined);
        }
      });
    });
  });

  describe('a real I/O error (the app in its own process, its file-size limit lowered)', () => {
    let app: RunningApp;
    let api: Api;
    const dbFile = () => path.join(appDir, 'data', 'ioerr.db');
    let reader: Db;

    before(async () => {
      app = await startApp(appDir, { ...KEYS, DATABASE_URL: 'file:./data/ioerr.db' });
      api = new Api(() => app.url, appDir, KEYS.TRIAGE_API_KEY);
      reader = new Database(dbFile(), { readonly: true });
    });
    after(async () => {
      reader?.close();
      await app?.stop();
    });

    it('answers 503 STORAGE_UNAVAILABLE (SQLITE_IOERR_WRITE), readiness 503, nothing stored; recovers', async () => {
      const writes = await preparedWrites(api);
      const pid = String(app.process.pid);
      const soft = execFileSync('prlimit', ['--pid', pid, '--fsize', '--raw', '--noheadings', '--output', 'SOFT'], {
        encoding: 'utf8',
      }).trim();
      const logged = app.output().length;
      await sendThrough(() => reader, app.url, writes, {
        code: 'STORAGE_UNAVAILABLE',
        // Only the soft limit: it can be raised back without privileges. Node ignores SIGXFSZ, so
        // a write past the limit fails with EFBIG instead of killing the process.
        apply: () => void execFileSync('prlimit', ['--pid', pid, '--fsize=0:']),
        remove: () => void execFileSync('prlimit', ['--pid', pid, `--fsize=${soft}:`]),
        readiness: true,
      });
      const lines = app
        .output()
        .slice(logged)
        .split('\n')
        .filter((l) => l.includes('storage unavailable'));
      expect(lines.length).to.equal(writes.length + 1);
      for (const line of lines) expect(line).to.match(/storage unavailable: SQLITE_IOERR_WRITE: disk I\/O error$/);
    });

    it('logs the durability it runs with: synchronous normal by default', () => {
      expect(app.output()).to.match(/^database: SQLite, synchronous normal$/m);
    });
  });

  describe('durability (DATABASE_SYNC)', () => {
    it('openSqlite runs synchronous NORMAL by default and FULL when asked, and refuses anything else', async () => {
      const dir = freshDir('storage-sync');
      const levels: Array<[string | undefined, number, string]> = [
        [undefined, 1, 'normal'],
        ['normal', 1, 'normal'],
        ['full', 2, 'full'],
        ['FULL', 2, 'full'],
      ];
      for (const [synchronous, level, name] of levels) {
        const db = openSqlite(`file:${path.join(dir, 'sync.db')}`, dir, { synchronous, busyTimeoutMs: 250 });
        try {
          expect(db.connection.pragma('synchronous', { simple: true }), String(synchronous)).to.equal(level);
          expect(db.synchronous).to.equal(name);
          expect(db.connection.pragma('journal_mode', { simple: true })).to.equal('wal');
          // Locks are waited for on a timer (data/sqlite.ts), never inside SQLite.
          expect(db.connection.pragma('busy_timeout', { simple: true })).to.equal(0);
          expect(db.busyTimeoutMs).to.equal(250);
        } finally {
          await db.close();
        }
      }
      const plain = openSqlite(`file:${path.join(dir, 'sync.db')}`, dir);
      expect(plain.busyTimeoutMs).to.equal(5000);
      expect(plain.blocking((c) => c.pragma('busy_timeout', { simple: true }))).to.equal(5000);
      expect(plain.connection.pragma('busy_timeout', { simple: true })).to.equal(0);
      await plain.close();
      for (const bad of ['off', 'extra', '', 'full ']) {
        expect(() => openSqlite(`file:${path.join(dir, 'sync.db')}`, dir, { synchronous: bad }), bad).to.throw(
          `DATABASE_SYNC must be "normal" (the default) or "full" (got "${bad}")`,
        );
      }
    });

    it('an app started with DATABASE_SYNC=full runs synchronous FULL', async () => {
      const app = await startApp(appDir, { ...KEYS, DATABASE_URL: 'file:./data/full.db', DATABASE_SYNC: 'full' });
      try {
        expect(app.output()).to.match(/^database: SQLite, synchronous full$/m);
        const res = await readyz(app.url);
        expect(res.status, res.text).to.equal(200);
      } finally {
        await app.stop();
      }
    });

    it('an app started with another DATABASE_SYNC refuses to start, saying why', () => {
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
        cwd: appDir,
        encoding: 'utf8',
        env: { ...process.env, ...KEYS, PORT: '0', DATABASE_URL: 'file:./data/bad-sync.db', DATABASE_SYNC: 'fast' },
        timeout: 30_000,
      });
      expect(r.status, r.stdout + r.stderr).to.equal(1);
      expect(r.stderr).to.include('cannot start: DATABASE_SYNC must be "normal" (the default) or "full" (got "fast")');
      expect(r.stdout).not.to.include('listening');
    });
  });

  describe('mapping SQLite result codes', () => {
    const mapped = (code: string) => mapSqliteError(new Database.SqliteError(`a ${code} failure`, code));

    it('maps storage faults, extended codes included, to 503 STORAGE_UNAVAILABLE with Retry-After', () => {
      const codes = [
        'SQLITE_FULL',
        'SQLITE_IOERR',
        'SQLITE_IOERR_WRITE',
        'SQLITE_IOERR_FSYNC',
        'SQLITE_IOERR_SHORT_READ',
        'SQLITE_READONLY',
        'SQLITE_READONLY_DBMOVED',
        'SQLITE_READONLY_RECOVERY',
        'SQLITE_CANTOPEN',
        'SQLITE_CANTOPEN_ISDIR',
        'SQLITE_PROTOCOL',
        'SQLITE_NOMEM',
      ];
      for (const code of codes) {
        const err = mapped(code);
        expect(err, code).to.be.instanceOf(AppError);
        expect(err, code).to.include({ code: 'STORAGE_UNAVAILABLE', status: 503, retryable: true, retryAfter: 5 });
        expect((err as AppError).cause, code).to.include({ code });
      }
    });

    it('maps lock contention, extended codes included, to 503 DATABASE_BUSY', () => {
      for (const code of [
        'SQLITE_BUSY',
        'SQLITE_BUSY_SNAPSHOT',
        'SQLITE_BUSY_TIMEOUT',
        'SQLITE_LOCKED',
        'SQLITE_LOCKED_SHAREDCACHE',
      ]) {
        expect(mapped(code), code).to.include({ code: 'DATABASE_BUSY', status: 503, retryable: true, retryAfter: 1 });
      }
    });

    it('leaves corruption and other errors unmapped: they are internal errors, not retryable', () => {
      for (const code of [
        'SQLITE_CORRUPT',
        'SQLITE_CORRUPT_INDEX',
        'SQLITE_NOTADB',
        'SQLITE_ERROR',
        'SQLITE_MISMATCH',
      ]) {
        const err = mapped(code);
        expect(err, code).not.to.be.instanceOf(AppError);
        expect(err, code).to.include({ code });
      }
      const plain = new Error('not SQLite');
      expect(mapSqliteError(plain)).to.equal(plain);
      const node = Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
      expect(mapSqliteError(node)).to.equal(node);
    });
  });
});

// Where the disk fills decides how SQLite fails: a statement that keeps a statement journal (an
// INSERT ... RETURNING) is undone alone, a plain single-row INSERT (the audit row, the stored
// response) rolls the whole transaction back, savepoints and all. Whichever statement of a keyed
// create meets the full disk, the caller hears 503 STORAGE_UNAVAILABLE and nothing is stored. The
// venue app has API keys and no sign-in, so it boots without the e-mail sign-in runtime.
describe('a full disk at each statement of a keyed create (generated venue app)', function () {
  this.timeout(120_000);
  const KEY = 'boxoffice-key-0123456789';
  let hd: InProcessApp;
  let seq = 0;

  before(async () => {
    const appDir = path.join(freshDir('storage-full-venue'), 'app');
    await generate(path.join(ROOT, 'test/fixtures/zebric/indexes/app.toml'), appDir);
    hd = await bootInProcess(appDir, { VENUE_BOXOFFICE_KEY: KEY });
  });
  after(async () => hd?.close());

  const call = (method: string, url: string, json: Rec, key: string) =>
    request(hd.url, method, url, { json, headers: { authorization: `Bearer ${KEY}`, 'idempotency-key': key } });
  const seat = (notes: string) => ({ eventId: 'e', row: 'r', number: ++seq, code: `c${seq}`, notes });
  const rows = () => {
    const out: Record<string, Rec[]> = {};
    for (const table of ['Seat', '_bp_audit', '_bp_idempotency'])
      out[table] = hd.db.prepare(`SELECT * FROM "${table}" ORDER BY rowid`).all() as Rec[];
    return out;
  };
  /** The table of the last INSERT the request ran: the one that met the full disk. */
  const failedInsert = async (res: HttpResponse) => {
    let trace: TraceLike | undefined;
    // The trace is filed once the response is sent; it may lag the client's read.
    for (let i = 0; i < 100 && !trace; i++) {
      trace = hd.traces.list().find((t) => t.traceId === res.headers.get('x-trace-id'));
      if (!trace) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const inserts = (trace?.spans ?? [])
      .map((s) => String(s.attributes?.sql ?? ''))
      .filter((sql) => sql.startsWith('INSERT'));
    return /^INSERT INTO "(\w+)"/.exec(inserts[inserts.length - 1] ?? '')?.[1];
  };

  it('answers 503 STORAGE_UNAVAILABLE, storing nothing, whichever fails; the keyed request then succeeds', async () => {
    const failed: string[] = [];
    // Room left before the fault (the file otherwise full) moves the statement that meets the
    // full disk along the create of a record with 30,000 bytes of notes: the record's INSERT, its
    // audit row (which holds the notes too), its stored response (which does as well).
    for (const room of [0, 45_000, 80_000]) {
      const label = `${room} bytes of room`;
      hd.db.exec('VACUUM');
      hd.db.pragma('wal_checkpoint(TRUNCATE)');
      const limit = hd.db.pragma('max_page_count', { simple: true }) as number;
      const pages = Math.ceil(room / (hd.db.pragma('page_size', { simple: true }) as number));
      const key = k('full');
      const body = seat('z'.repeat(30_000));
      const before = rows();
      hd.db.pragma(`max_page_count = ${(hd.db.pragma('page_count', { simple: true }) as number) + pages}`);
      let res: HttpResponse;
      let lines: string[];
      try {
        ({ result: res, lines } = await capturingConsoleError(() => call('POST', '/api/seats', body, key)));
      } finally {
        hd.db.pragma(`max_page_count = ${limit}`);
      }
      expect(res.status, `${label}: ${res.text.slice(0, 300)}`).to.equal(503);
      expect(errorOf(res), label).to.include({ code: 'STORAGE_UNAVAILABLE', retryable: true });
      expect(lines, label).to.have.length(1);
      expect(lines[0], label).to.match(/storage unavailable: SQLITE_FULL: /);
      expect(rows(), label).to.deep.equal(before);
      failed.push(String(await failedInsert(res)));
      const again = await call('POST', '/api/seats', body, key);
      expect(again.status, `${label} after the fault: ${again.text.slice(0, 300)}`).to.equal(201);
      expect(again.headers.get('idempotent-replayed'), label).to.equal(null);
    }
    // Each statement met the full disk once: should the sizes stop reaching them, this says so.
    expect(failed).to.deep.equal(['Seat', '_bp_audit', '_bp_idempotency']);
  });
});
