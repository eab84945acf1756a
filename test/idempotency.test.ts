// Idempotency-Key end to end (issue 4; spec 4.2, 7): the lab blueprint
// (test/fixtures/commands/lab) generated with the real CLI and booted as its own process, like
// `npm start`, so the restart test stops and starts the very same app folder and database; once
// on SQLite and once on PostgreSQL (support/databases.ts).
//
// Covered: required from API keys on every mutation (commands and entity writes), optional for
// sessions; key format; replay (stored status and body, `Idempotent-Replayed: true`, nothing runs
// again); reuse with different input; a duplicate while the first is still running; scoping per
// credential and per operation; which failures consume a key; expiry and abandoned entries; and
// survival across a restart.

import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import {
  addUser,
  freshDir,
  generate,
  request,
  ROOT,
  startApp,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { CookieClient } from './support/access/client.ts';
import { Api, bootOnDatabase, errorOf, type Rec, SessionClient, type TraceLike } from './support/commands/harness.ts';
import { appRows, type AppRows, withAppRows } from './support/database-rows.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

const KEYS = {
  LAB_WORKER_KEY: 'worker-key-0123456789',
  LAB_HELPER_KEY: 'helper-key-0123456789',
  LAB_OUTSIDER_KEY: 'outsider-key-0123456789',
  SESSION_SECRET: 'idempotency-session-secret-0123456789',
};
const WORKER = KEYS.LAB_WORKER_KEY;
const HELPER = KEYS.LAB_HELPER_KEY;
const PASSWORD = 'long-password-1';

let seq = 0;
const k = (label = 'k') => `${label}-${++seq}-${Date.now()}`;

for (const kind of DATABASES)
  describe(`Idempotency-Key (lab app as its own process, ${kind})`, function () {
    this.timeout(60_000);
    let appDir: string;
    let app: RunningApp;
    let api: Api;
    const env: Record<string, string> = { ...KEYS };

    const newJob = (body: Rec = {}) => api.create('jobs', { title: 'Nightly build', ...body });
    const job = (id: string) => api.get('jobs', id);
    const auditCount = async (id: string) => (await api.trail('Job', id)).length;
    const bump = (id: string, idem: string | undefined, input: Rec = {}, key = WORKER) =>
      api.command('bump', id, input, { key, idem });
    const replayed = (res: HttpResponse) => res.headers.get('idempotent-replayed');
    const jobCount = async () =>
      ((await api.call('GET', '/api/jobs', '/api/jobs?limit=1000')).body as { items: unknown[] }).items.length;

    before(async () => {
      appDir = path.join(freshDir(`idempotency-lab-${kind}`), 'app');
      await generate(path.join(ROOT, 'test/fixtures/commands/lab/app.toml'), appDir);
      env.DATABASE_URL = await databaseUrl(kind, 'idempotency');
      // The users CLI applies the migrations itself, so the person exists before the app starts.
      addUser(appDir, env, 'person@example.com', PASSWORD, ['agent']);
      app = await startApp(appDir, env);
      api = new Api(() => app.url, appDir, WORKER);
    });
    after(async () => app?.stop());

    describe('when a key is needed', () => {
      it('is required from API-key actors on commands: 400 IDEMPOTENCY_KEY_REQUIRED, nothing runs', async () => {
        const j = await newJob();
        const res = await bump(j.id as string, undefined);
        expect(res.status).to.equal(400);
        expect(errorOf(res)).to.include({ code: 'IDEMPOTENCY_KEY_REQUIRED', retryable: false });
        expect((await job(j.id as string)).counter).to.equal(0);
        expect(await auditCount(j.id as string)).to.equal(1);
      });

      it('is required from API-key actors on entity writes (create, update, delete)', async () => {
        const j = await newJob();
        const before = await jobCount();
        const attempts: Array<[string, string, string, unknown]> = [
          ['POST', '/api/jobs', '/api/jobs', { title: 'no key' }],
          ['PUT', '/api/jobs/{id}', `/api/jobs/${j.id}`, { title: 'no key' }],
          ['DELETE', '/api/jobs/{id}', `/api/jobs/${j.id}`, undefined],
        ];
        for (const [method, , url, body] of attempts) {
          // Plain request: openapi.json of DELETE lacks 400 (checked on its own below).
          const res = await request(app.url, method, url, {
            json: body,
            headers: { authorization: `Bearer ${WORKER}` },
          });
          expect(res.status, method).to.equal(400);
          expect(errorOf(res).code, method).to.equal('IDEMPOTENCY_KEY_REQUIRED');
        }
        expect(await jobCount()).to.equal(before);
        expect(await job(j.id as string)).to.deep.equal(j);
      });

      it('is described in openapi.json: every mutation declares the 400 it answers without a key', () => {
        // Each entity write and command can answer 400 (IDEMPOTENCY_KEY_REQUIRED, a malformed
        // Idempotency-Key or X-Agent-Run-ID), so each must declare it.
        const paths = api.openapi.doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
        const missing: string[] = [];
        for (const [p, ops] of Object.entries(paths)) {
          for (const method of ['post', 'put', 'delete']) {
            if (!ops[method] || p.startsWith('/api/auth/')) continue;
            if (!ops[method].responses['400']) missing.push(`${method.toUpperCase()} ${p}`);
          }
        }
        expect(missing).to.deep.equal([]);
      });

      it('is optional for sessions, and honoured when a session sends one', async () => {
        const person = await SessionClient.login(app.url, 'person@example.com', PASSWORD);
        const j = await newJob();
        const plain = await api.command('bump', j.id as string, {}, { session: person });
        expect(plain.status, plain.text).to.equal(200);
        const created = await api.call('POST', '/api/jobs', '/api/jobs', { title: 'by a person' }, { session: person });
        expect(created.status).to.equal(201);

        const key = k('session');
        const first = await api.command('bump', j.id as string, {}, { session: person, idem: key });
        const again = await api.command('bump', j.id as string, {}, { session: person, idem: key });
        expect(first.body).to.deep.include({ counter: 2 });
        expect(again.status).to.equal(200);
        expect(replayed(again)).to.equal('true');
        expect(again.body).to.deep.equal(first.body);
        expect((await job(j.id as string)).counter).to.equal(2);
      });

      it('must be 1 to 255 visible ASCII characters (400 otherwise)', async () => {
        const j = await newJob();
        expect((await bump(j.id as string, 'x'.repeat(255))).status).to.equal(200);
        // Latin-1 bytes travel in a header as they are; the server must still refuse them.
        for (const bad of ['x'.repeat(256), 'clé-1', 'has space', '']) {
          const res = await bump(j.id as string, bad);
          expect(res.status, JSON.stringify(bad)).to.equal(400);
          expect(errorOf(res).code).to.equal('VALIDATION_FAILED');
          expect(errorOf(res).details?.[0]).to.include({ field: 'Idempotency-Key', code: 'INVALID_HEADER' });
        }
        const created = await api.call('POST', '/api/jobs', '/api/jobs', { title: 't' }, { idem: 'y'.repeat(256) });
        expect(created.status).to.equal(400);
        expect((await job(j.id as string)).counter).to.equal(1);
      });
    });

    describe('replay and reuse', () => {
      it('replays a command: same status and body, Idempotent-Replayed: true, nothing runs again', async () => {
        const j = await newJob();
        const key = k('replay');
        const first = await bump(j.id as string, key);
        expect(first.status).to.equal(200);
        expect(replayed(first)).to.equal(null);
        const audits = await auditCount(j.id as string);
        for (let i = 0; i < 3; i++) {
          const again = await bump(j.id as string, key);
          expect(again.status).to.equal(200);
          expect(replayed(again)).to.equal('true');
          expect(again.body).to.deep.equal(first.body);
          // A replay is a new request with its own trace, answered from the store.
          expect(again.headers.get('x-trace-id')).not.to.equal(first.headers.get('x-trace-id'));
        }
        expect(await job(j.id as string)).to.deep.equal(first.body);
        expect((first.body as Rec).counter).to.equal(1);
        expect(await auditCount(j.id as string)).to.equal(audits);
      });

      it('replays a refusal a retry cannot fix (403 FORBIDDEN from the policy) the same way', async () => {
        // GoldBoost's policy reads record.customer.plan: a job without a customer never passes.
        const j = await newJob();
        const key = k('refused');
        const first = await api.command('gold_boost', j.id as string, undefined, { idem: key });
        expect(first.status).to.equal(403);
        expect(errorOf(first).code).to.equal('FORBIDDEN');
        const again = await api.command('gold_boost', j.id as string, undefined, { idem: key });
        expect(again.status).to.equal(403);
        expect(replayed(again)).to.equal('true');
        expect(again.body).to.deep.equal(first.body);
      });

      it('keeps the key after an internal error: the 500 is replayed, as its retryable: false says', async () => {
        // The handler may have had effects outside the database: the same key must not run it again.
        const j = await newJob();
        const key = k('boom');
        const first = await api.command('boom', j.id as string, undefined, { idem: key });
        const second = await api.command('boom', j.id as string, undefined, { idem: key });
        expect([first.status, second.status]).to.deep.equal([500, 500]);
        expect(errorOf(first)).to.include({ code: 'INTERNAL_ERROR', retryable: false });
        expect(errorOf(first).traceId).to.equal(first.headers.get('x-trace-id'));
        expect(replayed(second)).to.equal('true');
        expect(second.body).to.deep.equal(first.body);
      });

      it('does not consume a key on input that fails validation: corrected input runs with it', async () => {
        const j = await newJob();
        const key = k('fixme');
        const bad = await bump(j.id as string, key, { waitMs: 'soon' });
        expect(bad.status).to.equal(400);
        const good = await bump(j.id as string, key, { waitMs: 0 });
        expect(good.status).to.equal(200);
        expect(replayed(good)).to.equal(null);
        expect((good.body as Rec).counter).to.equal(1);
      });

      it('does not consume a key on an entity write that fails validation either (same rule as commands)', async () => {
        // A request refused before anything ran leaves no record to protect; keeping its key would
        // turn the corrected retry into IDEMPOTENCY_KEY_REUSE on entity writes but not on commands.
        const key = k('fixme-create');
        const bad = await api.call('POST', '/api/jobs', '/api/jobs', { title: 5 }, { idem: key });
        expect(bad.status).to.equal(400);
        const good = await api.call('POST', '/api/jobs', '/api/jobs', { title: 'fixed' }, { idem: key });
        expect(good.status, good.text).to.equal(201);
        expect(replayed(good)).to.equal(null);
      });

      it('refuses the same key with different input: 409 IDEMPOTENCY_KEY_REUSE, not retryable', async () => {
        const j = await newJob();
        const other = await newJob();
        const key = k('reuse');
        expect((await bump(j.id as string, key, { waitMs: 0 })).status).to.equal(200);
        for (const [id, input] of [
          [j.id, { waitMs: 1 }],
          [j.id, {}],
          [other.id, { waitMs: 0 }],
        ] as const) {
          const res = await bump(id as string, key, input);
          expect(res.status, JSON.stringify(input)).to.equal(409);
          expect(errorOf(res)).to.include({ code: 'IDEMPOTENCY_KEY_REUSE', retryable: false });
          expect(replayed(res)).to.equal(null);
        }
        expect((await job(j.id as string)).counter).to.equal(1);
        expect((await job(other.id as string)).counter).to.equal(0);
      });

      it('replays entity writes: create (with Location), update and delete', async () => {
        const key = k('create');
        const before = await jobCount();
        const first = await api.call('POST', '/api/jobs', '/api/jobs', { title: 'once' }, { idem: key });
        const again = await api.call('POST', '/api/jobs', '/api/jobs', { title: 'once' }, { idem: key });
        expect(first.status).to.equal(201);
        expect(again.status).to.equal(201);
        expect(replayed(again)).to.equal('true');
        expect(again.body).to.deep.equal(first.body);
        expect(again.headers.get('location')).to.equal(first.headers.get('location'));
        expect(await jobCount()).to.equal(before + 1);
        const id = (first.body as Rec).id as string;

        const reuse = await api.call('POST', '/api/jobs', '/api/jobs', { title: 'twice' }, { idem: key });
        expect(reuse.status).to.equal(409);
        expect(errorOf(reuse).code).to.equal('IDEMPOTENCY_KEY_REUSE');

        const putKey = k('put');
        const put = await api.call('PUT', '/api/jobs/{id}', `/api/jobs/${id}`, { title: 'renamed' }, { idem: putKey });
        expect(
          (await api.call('PUT', '/api/jobs/{id}', `/api/jobs/${id}`, { title: 'renamed' }, { idem: putKey })).body,
        ).to.deep.equal(put.body);

        const delKey = k('delete');
        expect(
          (await api.call('DELETE', '/api/jobs/{id}', `/api/jobs/${id}`, undefined, { idem: delKey })).status,
        ).to.equal(204);
        const delAgain = await api.call('DELETE', '/api/jobs/{id}', `/api/jobs/${id}`, undefined, { idem: delKey });
        expect(delAgain.status).to.equal(204);
        expect(replayed(delAgain)).to.equal('true');
        // Exactly one create, one update and one delete reached the audit trail.
        const ops = await withAppRows(env.DATABASE_URL, appDir, async (rows) =>
          (await rows.all('SELECT "operation" FROM "_bp_audit" WHERE "recordId" = ? ORDER BY "id"', [id])).map(
            (r) => r.operation,
          ),
        );
        expect(ops).to.deep.equal(['Job.create', 'Job.update', 'Job.delete']);
      });
    });

    describe('in flight', () => {
      it(
        'answers a duplicate while the first still runs with 409 IDEMPOTENCY_KEY_IN_PROGRESS, ' +
          'retryable, Retry-After',
        async () => {
          const j = await newJob();
          const key = k('slow');
          // Bump's handler waits 500 ms: the second request arrives while the first holds the key.
          const results = await Promise.all([
            bump(j.id as string, key, { waitMs: 500 }),
            bump(j.id as string, key, { waitMs: 500 }),
          ]);
          const ok = results.filter((r) => r.status === 200);
          const busy = results.filter((r) => r.status === 409);
          expect(ok).to.have.length(1);
          expect(busy).to.have.length(1);
          expect(errorOf(busy[0])).to.include({ code: 'IDEMPOTENCY_KEY_IN_PROGRESS', retryable: true });
          expect(busy[0].headers.get('retry-after')).to.equal('1');
          // Retrying as told gets the first request's answer; the handler ran once.
          const retry = await bump(j.id as string, key, { waitMs: 500 });
          expect(retry.status).to.equal(200);
          expect(replayed(retry)).to.equal('true');
          expect(retry.body).to.deep.equal(ok[0].body);
          expect((await job(j.id as string)).counter).to.equal(1);
        },
      );

      it('runs an entity write once when copies with one key arrive together (one group commit)', async () => {
        const before = await jobCount();
        const key = k('burst');
        // Sent at once, the copies reach the server in the same few event-loop turns: whichever
        // runs first creates, the others (in its group or a later one) replay what it stored.
        const copies = await Promise.all(
          Array.from({ length: 12 }, () =>
            api.call('POST', '/api/jobs', '/api/jobs', { title: 'burst' }, { idem: key }),
          ),
        );
        for (const res of copies) {
          expect(res.status).to.equal(201);
          expect(res.body).to.deep.equal(copies[0].body);
        }
        expect(copies.filter((r) => replayed(r) === 'true')).to.have.length(11);
        expect(await jobCount()).to.equal(before + 1);
        // And distinct keys sent together each create their own record.
        const distinct = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            api.call('POST', '/api/jobs', '/api/jobs', { title: `burst ${i}` }, { idem: k('burst-each') }),
          ),
        );
        expect(distinct.map((r) => r.status)).to.deep.equal(Array(12).fill(201));
        expect(new Set(distinct.map((r) => (r.body as Rec).id)).size).to.equal(12);
        expect(await jobCount()).to.equal(before + 13);
      });

      it('a different input for a key in flight is reuse, not "in progress"', async () => {
        const j = await newJob();
        const key = k('slow-reuse');
        const slow = bump(j.id as string, key, { waitMs: 400 });
        await new Promise((r) => setTimeout(r, 100));
        const other = await bump(j.id as string, key, { waitMs: 1 });
        expect((await slow).status).to.equal(200);
        expect(other.status).to.equal(409);
        expect(errorOf(other)).to.include({ code: 'IDEMPOTENCY_KEY_REUSE', retryable: false });
      });
    });

    describe('scope', () => {
      it('is per credential: the same key from two API keys runs twice', async () => {
        const j = await newJob();
        const key = k('shared');
        const a = await bump(j.id as string, key, {}, WORKER);
        const b = await bump(j.id as string, key, {}, HELPER);
        expect([a.status, b.status]).to.deep.equal([200, 200]);
        expect([replayed(a), replayed(b)]).to.deep.equal([null, null]);
        expect([(a.body as Rec).counter, (b.body as Rec).counter]).to.deep.equal([1, 2]);
        const trail = await api.trail('Job', j.id as string);
        expect(
          trail.filter((e) => e.operation === 'command:Bump').map((e) => [e.credentialId, e.idempotencyKey]),
        ).to.deep.equal([
          ['cred-helper', key],
          ['cred-worker', key],
        ]);
      });

      it('is per operation: one key on two commands and an entity write runs each', async () => {
        const j = await newJob();
        const key = k('everywhere');
        expect((await bump(j.id as string, key)).status).to.equal(200);
        const annotate = await api.command('annotate', j.id as string, { note: 'same key' }, { idem: key });
        expect(annotate.status).to.equal(200);
        expect(replayed(annotate)).to.equal(null);
        const put = await api.call('PUT', '/api/jobs/{id}', `/api/jobs/${j.id}`, { title: 'same key' }, { idem: key });
        expect(put.status).to.equal(200);
        expect(replayed(put)).to.equal(null);
        expect(await job(j.id as string)).to.include({ counter: 1, note: 'same key', title: 'same key' });
      });
    });

    describe('lifetime', () => {
      /** Writes a stored entry straight into the app's database (another connection). */
      const plant = (entry: {
        scope: string;
        operation: string;
        key: string;
        state: 'running' | 'done';
        createdAt: number;
        expiresAt: number;
      }) =>
        withAppRows(env.DATABASE_URL, appDir, (rows) =>
          rows.run(
            'INSERT INTO "_bp_idempotency" ' +
              '("scope", "operation", "key", "requestHash", "state", "status", ' +
              '"body", "location", "createdAt", "expiresAt") ' +
              `VALUES (?, ?, ?, 'other-input', ?, 200, '{"stale":true}', NULL, ?, ?)`,
            [entry.scope, entry.operation, entry.key, entry.state, entry.createdAt, entry.expiresAt],
          ),
        );

      it('forgets a key after 24 hours: an expired entry neither replays nor counts as reuse', async () => {
        const j = await newJob();
        const key = k('expired');
        const day = 24 * 60 * 60 * 1000;
        await plant({
          scope: 'cred-worker',
          operation: 'command:bump',
          key,
          state: 'done',
          createdAt: Date.now() - day - 1000,
          expiresAt: Date.now() - 1000,
        });
        const res = await bump(j.id as string, key);
        expect(res.status).to.equal(200);
        expect(replayed(res)).to.equal(null);
        expect((res.body as Rec).counter).to.equal(1);
      });

      it('lets a retry take over an entry left "running" by a crashed process', async () => {
        const j = await newJob();
        const key = k('abandoned');
        await plant({
          scope: 'cred-worker',
          operation: 'command:bump',
          key,
          state: 'running',
          createdAt: Date.now() - 10 * 60 * 1000,
          expiresAt: Date.now() + 60_000,
        });
        const res = await bump(j.id as string, key);
        expect(res.status).to.equal(200);
        expect((res.body as Rec).counter).to.equal(1);
      });

      it('survives a restart: the same app folder and database still replay and still refuse reuse', async () => {
        const j = await newJob();
        const key = k('durable');
        const createKey = k('durable-create');
        const first = await bump(j.id as string, key);
        const created = await api.call('POST', '/api/jobs', '/api/jobs', { title: 'durable' }, { idem: createKey });
        const audits = await auditCount(j.id as string);
        const jobs = await jobCount();

        await app.stop();
        app = await startApp(appDir, env);
        expect(app.output()).not.to.contain('applied migrations');

        const again = await bump(j.id as string, key);
        expect(again.status).to.equal(200);
        expect(replayed(again)).to.equal('true');
        expect(again.body).to.deep.equal(first.body);
        const createdAgain = await api.call(
          'POST',
          '/api/jobs',
          '/api/jobs',
          { title: 'durable' },
          { idem: createKey },
        );
        expect(replayed(createdAgain)).to.equal('true');
        expect(createdAgain.body).to.deep.equal(created.body);
        const reuse = await bump(j.id as string, key, { waitMs: 5 });
        expect(errorOf(reuse).code).to.equal('IDEMPOTENCY_KEY_REUSE');
        expect(await job(j.id as string)).to.deep.equal(first.body);
        expect(await auditCount(j.id as string)).to.equal(audits);
        expect(await jobCount()).to.equal(jobs);
        // Plain HTTP too, outside the helpers: the header is what a client sees.
        const raw = await request(app.url, 'POST', `/api/commands/bump/${j.id}`, {
          json: {},
          headers: { authorization: `Bearer ${WORKER}`, 'idempotency-key': key },
        });
        expect(raw.headers.get('idempotent-replayed')).to.equal('true');
      });
    });

    // The command executor of the generated app, called in this process on a database of its own,
    // so that the test holds the IdempotencyStore's clock and a gate the Hold handler waits at.
    describe('leases: a running command keeps its key, a dead one loses it', () => {
      type Mod = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      /** The app's database (src/runtime/data/open.ts), and a connection of the test's own, for looking. */
      let database: Mod;
      let db: AppRows;
      let mods: Record<'executor' | 'store' | 'audit' | 'idempotency' | 'events' | 'errors' | 'commands', Mod>;
      let stores: Map<string, Mod>;
      /** How far the store's clock is ahead of the real one. */
      let skew = 0;
      const agent = {
        kind: 'agent',
        id: 'agent-worker',
        credentialId: 'cred-worker',
        roles: ['agent'],
        role: 'agent',
        scopes: ['jobs.write'],
      };

      /** Hold's handler waits here: the first `holds` calls wait for open() or fail(), later ones pass. */
      class Gate {
        holds = 0;
        readonly waiting: Array<{ resolve: () => void; reject: (err: unknown) => void }> = [];
        pass(): Promise<void> {
          if (this.holds === 0) return Promise.resolve();
          this.holds--;
          return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
        }
        async reached(): Promise<void> {
          for (let i = 0; i < 500 && this.waiting.length === 0; i++) await sleep(5);
          expect(this.waiting, 'a command waiting at the gate').to.have.length(1);
        }
        open(): void {
          for (const w of this.waiting.splice(0)) w.resolve();
        }
        fail(err: unknown): void {
          for (const w of this.waiting.splice(0)) w.reject(err);
        }
      }

      const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      const settle = <T>(p: Promise<T>) =>
        p.then(
          (value) => ({ ok: true as const, value }),
          (error: Mod) => ({ ok: false as const, error }),
        );
      const runtime = (gate: Gate, lease: { leaseMs?: number; renewEveryMs?: number } = {}) => {
        const audit = new mods.audit.AuditLog();
        return {
          stores,
          audit,
          idempotency: new mods.idempotency.IdempotencyStore(database, { now: () => Date.now() + skew, ...lease }),
          events: new mods.events.EventBus(),
          services: { gate },
          reportEventFailure: () => undefined,
        };
      };
      const hold = (rt: Mod, jobId: string, key: string) =>
        settle(
          mods.executor.executeCommand(rt, mods.commands.hold, {
            actor: agent,
            recordId: jobId,
            input: {},
            idempotencyKey: key,
          }) as Promise<Mod>,
        );
      const newJob = async () =>
        (await database.write(() => (stores.get('Job') as Mod).create({ actor: agent }, { title: 'held' }))) as Rec;
      const trail = async (jobId: string) =>
        (await db.all('SELECT "operation" FROM "_bp_audit" WHERE "recordId" = ? ORDER BY "id"', [jobId]))
          .map((r) => r.operation as string)
          .filter((o) => o.startsWith('command:Hold'));
      const keyRow = async (key: string) => {
        const row = await db.get(
          'SELECT "state", "claimId", "leaseExpiresAt", "body" FROM "_bp_idempotency" WHERE "key" = ?',
          [key],
        );
        // pg reads a BIGINT as text: the lease's end as the number the store wrote, on both databases.
        return (row && {
          ...row,
          leaseExpiresAt: row.leaseExpiresAt === null ? null : Number(row.leaseExpiresAt),
        }) as Rec;
      };

      before(async () => {
        const load = (file: string) => import(pathToFileURL(path.join(appDir, file)).href) as Promise<Mod>;
        const [executor, store, audit, idempotency, events, errors, commands, open] = await Promise.all(
          [
            'src/runtime/commands/executor.ts',
            'src/runtime/data/entity-store.ts',
            'src/runtime/data/audit.ts',
            'src/runtime/data/idempotency-store.ts',
            'src/runtime/commands/events.ts',
            'src/runtime/core/errors.ts',
            'src/commands.ts',
            'src/runtime/data/open.ts',
          ].map(load),
        );
        mods = { executor, store, audit, idempotency, events, errors, commands };
        const url = await databaseUrl(kind, 'leases');
        ({ db: database } = await open.openDatabase(appDir, { DATABASE_URL: url }));
        db = await appRows(url, appDir);
        const specs = await Promise.all(
          ['job', 'customer'].map(async (e) =>
            Object.values(await load(`src/entities/${e}.ts`)).find(
              (v) => v && typeof v === 'object' && 'collection' in v,
            ),
          ),
        );
        const auditLog = new audit.AuditLog();
        stores = new Map(specs.map((spec: Mod) => [spec.name, new store.EntityStore(database, spec, auditLog)]));
      });
      beforeEach(() => (skew = 0));
      after(async () => {
        await db?.close();
        await database?.close();
      });

      it('keeps the key while the command runs, renewing its lease: a late retry is 409; it runs once', async () => {
        const gate = new Gate();
        // Renewed every 20 ms of real time, while the clock moves 10 s at a time: a lapse would show.
        const rt = runtime(gate, { renewEveryMs: 20 });
        const job = await newJob();
        const key = k('long-runner');
        gate.holds = 1;
        const first = hold(rt, job.id as string, key);
        await gate.reached();
        // Three minutes pass, past the two minutes after which a "running" key used to count as
        // abandoned (its age judged by createdAt, moved back here as a clock of that kind would see it).
        await db.run('UPDATE "_bp_idempotency" SET "createdAt" = "createdAt" - 180000 WHERE "key" = ?', [key]);
        for (let i = 0; i < 18; i++) {
          skew += 10_000;
          // Each step waits for the renewal that follows it (a lease of 30 s from the new time).
          for (
            let tries = 0;
            tries < 500 && ((await keyRow(key)).leaseExpiresAt as number) < Date.now() + skew + 25_000;
            tries++
          )
            await sleep(5);
        }
        const retry = await hold(rt, job.id as string, key);
        expect(retry.ok).to.equal(false);
        expect(retry.ok ? undefined : retry.error).to.include({
          code: 'IDEMPOTENCY_KEY_IN_PROGRESS',
          retryable: true,
        });
        gate.open();
        const done = await first;
        expect(done.ok && done.value).to.deep.include({ status: 200, replayed: false });
        const later = await hold(rt, job.id as string, key);
        expect(later.ok && later.value).to.deep.include({ status: 200, replayed: true });
        expect(later.ok && later.value.body).to.deep.equal(done.ok && done.value.body);
        expect(await trail(job.id as string)).to.deep.equal(['command:Hold', 'command:Hold:job.held']);
        expect(await keyRow(key)).to.include({ state: 'done', claimId: null, leaseExpiresAt: null });
      });

      it(
        'lets a retry take the key over once the lease lapsed, and fences the first runner out: ' +
          'it commits nothing',
        async () => {
          const gate = new Gate();
          const rt = runtime(gate);
          const job = await newJob();
          const key = k('taken-over');
          gate.holds = 1;
          const first = hold(rt, job.id as string, key);
          await gate.reached();
          // 31 s pass without a renewal (due every 10 s of real time): to everyone else, the first
          // runner's process died. The retry takes the key over and runs.
          skew += 31_000;
          const retry = await hold(rt, job.id as string, key);
          expect(retry.ok && retry.value).to.deep.include({ status: 200, replayed: false });
          // The first runner comes back: its claim is no longer the key's, so its work is refused.
          gate.open();
          const fenced = await first;
          expect(fenced.ok).to.equal(false);
          expect(fenced.ok ? undefined : fenced.error).to.include({
            code: 'IDEMPOTENCY_KEY_IN_PROGRESS',
            retryable: true,
          });
          expect(await trail(job.id as string)).to.deep.equal(['command:Hold', 'command:Hold:job.held']);
          // The key keeps the retry's answer: the fenced-out failure recorded nothing over it.
          const again = await hold(rt, job.id as string, key);
          expect(again.ok && again.value).to.deep.include({ status: 200, replayed: true });
          expect(again.ok && again.value.body).to.deep.equal(retry.ok && retry.value.body);
        },
      );

      it('frees the key after a retryable failure, so the same request with the same key runs again', async () => {
        const gate = new Gate();
        const rt = runtime(gate);
        const job = await newJob();
        const key = k('busy');
        gate.holds = 1;
        const first = hold(rt, job.id as string, key);
        await gate.reached();
        gate.fail(new mods.errors.AppError('DATABASE_BUSY', 'the database is busy', { retryAfter: 1 }));
        const failed = await first;
        expect(failed.ok ? undefined : failed.error).to.include({ code: 'DATABASE_BUSY', retryable: true });
        expect(await keyRow(key)).to.equal(undefined);
        const retry = await hold(rt, job.id as string, key);
        expect(retry.ok && retry.value).to.deep.include({ status: 200, replayed: false });
        expect(await trail(job.id as string)).to.deep.equal(['command:Hold', 'command:Hold:job.held']);
      });
    });
  });

// Callers without a credential are all the same anonymous actor, so their keys cannot share one
// scope: a key is scoped to the caller's signed anonymous nonce (the `<app>.csrf` cookie, proven by
// its token), and refused without one. No session row is stored for such callers.
for (const kind of DATABASES)
  describe(`Idempotency-Key from callers without a credential (public form app, ${kind})`, function () {
    this.timeout(60_000);
    let app: RunningApp;
    const env: Record<string, string> = { SESSION_SECRET: KEYS.SESSION_SECRET };

    /** The rows of `table` in the database of `url` (by default the app's). */
    const count = (table: string, url = env.DATABASE_URL) => withAppRows(url, appDir, (rows) => rows.count(table));
    const feedbackCount = () => count('Feedback');
    /** An anonymous browser: the nonce cookie and the token the sign-in page would carry. */
    const anonymousSession = async () => {
      const client = new CookieClient(app.url);
      const session = await client.send('GET', '/api/auth/session');
      expect(session.body.actor.kind).to.equal('anonymous');
      const token = session.body.csrfToken as string;
      const post = (json: Rec, key: string, csrfToken = token) =>
        client.send('POST', '/api/feedbacks', { json, headers: { 'x-csrf-token': csrfToken, 'idempotency-key': key } });
      return { post, token };
    };

    let appDir: string;

    before(async () => {
      appDir = path.join(freshDir(`idempotency-public-${kind}`), 'app');
      await generate(path.join(ROOT, 'test/fixtures/valid/public-form/app.toml'), appDir);
      env.DATABASE_URL = await databaseUrl(kind, 'public_form');
      app = await startApp(appDir, env);
    });
    after(async () => app?.stop());

    it('refuses a key without a session (400), after the access rules had their say (401)', async () => {
      const before = await feedbackCount();
      const plain = await request(app.url, 'POST', '/api/feedbacks', { json: { message: 'no key' } });
      expect(plain.status).to.equal(201);
      const keyed = await request(app.url, 'POST', '/api/feedbacks', {
        json: { message: 'with a key' },
        headers: { 'idempotency-key': k('anon') },
      });
      expect(keyed.status).to.equal(400);
      expect(errorOf(keyed).details?.[0]).to.include({ field: 'Idempotency-Key', code: 'NO_CALLER_SCOPE' });
      expect(await feedbackCount()).to.equal(before + 1);
      // A malformed key is refused the same way, after the access rules.
      const malformed = await request(app.url, 'POST', '/api/feedbacks', {
        json: { message: 'bad key' },
        headers: { 'idempotency-key': 'has space' },
      });
      expect(malformed.status).to.equal(400);
      expect(errorOf(malformed).details?.[0]).to.include({ field: 'Idempotency-Key', code: 'INVALID_HEADER' });
      expect(await feedbackCount()).to.equal(before + 1);
      // Where anonymous callers may not write at all, that is what they hear, whatever the key.
      for (const key of [k('anon-note'), 'has space']) {
        const note = await request(app.url, 'POST', '/api/notes', {
          json: { text: 'x' },
          headers: { 'idempotency-key': key },
        });
        expect(note.status, key).to.equal(401);
        expect(errorOf(note).code, key).to.equal('UNAUTHENTICATED');
      }
    });

    it('refuses such a key without running the write: no write statement, no commit', async () => {
      // The same app built in this process, so that its traces (every database.query and
      // database.commit span of a request) can be read.
      const url = await databaseUrl(kind, 'no_writes');
      const local = await bootOnDatabase(appDir, url, { SESSION_SECRET: KEYS.SESSION_SECRET });
      try {
        const writesOf = async (res: HttpResponse) => {
          let trace: TraceLike | undefined;
          // The trace is filed when the response has been sent; it may lag the client's read.
          for (let i = 0; i < 100 && !trace; i++) {
            trace = local.traces.list().find((t) => t.traceId === res.headers.get('x-trace-id'));
            if (!trace) await new Promise((resolve) => setTimeout(resolve, 10));
          }
          expect(trace, 'the request is traced').to.not.equal(undefined);
          return (trace as TraceLike).spans
            .filter(
              (s) =>
                s.name === 'database.commit' ||
                (s.name === 'database.query' && !/^\s*SELECT\b/i.test(String(s.attributes?.sql))),
            )
            .map((s) => `${s.name} ${String(s.attributes?.sql ?? '')}`.trim());
        };
        const send = (key?: string) =>
          request(local.url, 'POST', '/api/feedbacks', {
            json: { message: 'traced' },
            headers: key === undefined ? {} : { 'idempotency-key': key },
          });
        for (const key of [k('anon-traced'), 'has space']) {
          const refused = await send(key);
          expect(refused.status, key).to.equal(400);
          expect(await writesOf(refused), key).to.deep.equal([]);
        }
        // Without a key the same request writes, and its trace shows it: the check above can fail.
        const plain = await send();
        expect(plain.status).to.equal(201);
        expect((await writesOf(plain)).some((w) => /INSERT INTO "Feedback"/.test(w))).to.equal(true);
        expect(await count('Feedback', url)).to.equal(1);
      } finally {
        await local.close();
      }
    });

    it('scopes a key to the anonymous session: replayed there, never to another session', async () => {
      const before = await feedbackCount();
      const key = k('anon-session');
      const [alice, bob] = [await anonymousSession(), await anonymousSession()];
      const first = await alice.post({ message: 'same words' }, key);
      expect(first.status).to.equal(201);
      const again = await alice.post({ message: 'same words' }, key);
      expect(again.status).to.equal(201);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.body).to.deep.equal(first.body);
      // Another caller with the same key and input gets a record of its own, not the first's.
      const other = await bob.post({ message: 'same words' }, key);
      expect(other.status).to.equal(201);
      expect(other.headers.get('idempotent-replayed')).to.equal(null);
      expect(other.body.id).to.not.equal(first.body.id);
      expect(await feedbackCount()).to.equal(before + 2);
      // Alice's token with Bob's cookie proves no scope: not hers, and not his either.
      const borrowed = await bob.post({ message: 'same words' }, key, alice.token);
      expect(borrowed.status).to.equal(400);
      expect(errorOf(borrowed).details?.[0]).to.include({ field: 'Idempotency-Key', code: 'NO_CALLER_SCOPE' });
      expect(await feedbackCount()).to.equal(before + 2);
      expect(await count('_bp_sessions'), 'anonymous callers store no session').to.equal(0);
    });
  });
