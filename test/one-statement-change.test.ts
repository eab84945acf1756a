// On PostgreSQL an update, or a declarative command, whose checks the database can make is one
// statement committed on its own: the change, its audit record and its Idempotency-Key's record,
// whose JSON PostgreSQL writes (runtime data/json-sql.ts). What it answers, replays and audits must
// be what the plain path gives, byte for byte: SQLite's run of the same requests is the reference.
// What one statement cannot decide (a refusal, a workflow an entity event may start) goes the
// plain way, and says why as before.

import * as path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import {
  addUser,
  freshDir,
  freshKey,
  generate,
  login,
  request,
  ROOT,
  type Session,
  startApp,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { DATABASES, databaseUrl, type DatabaseKind } from './support/databases.ts';
import { freshPostgresDatabase, tripCounter } from './support/postgres.ts';

type Rec = Record<string, unknown>;

const ROWS_KEY = 'rows-writer-key-0123456789abcdef';
const AGENT_KEY = 'triage-key-0123456789abcdef';

/** Changes to a Sample, every field type at its edges but the unique one (whose change the database may refuse). */
const SAMPLE_CHANGES: Rec[] = [
  {
    title: 'Ünïcödé e\u0301 🎉 "quoted" \\ back',
    notes: 'line one\nline two\ttabbed \u2028 </script>',
    count: 2147483647,
  },
  { ratio: 0.1 + 0.2, flag: false, day: '2024-02-29', at: '2024-03-01T10:00:00.123+05:30', level: 'high' },
  { ratio: 5e-324, count: -2147483648, day: '0001-01-01', at: '0001-01-01T00:00:00Z', notes: null },
  {
    ratio: 1.7976931348623157e308,
    day: '9999-12-31',
    at: '9999-12-31T23:59:59.999Z',
    token: '3f2a6c1e-8b4d-4e2f-9a7c-0d1e2f3a4b5c',
  },
  { ratio: 1e21, flag: true },
  { ratio: -123456.789e-10, at: '1969-12-31T23:59:59.001-00:30', title: 'same title' },
  { title: 'same title' },
];

interface Trail {
  /** Each answer's text: the first, its replay, the read after it. */
  answers: Array<[string, string, string]>;
  /** The record's audit trail, oldest first: operation, changes and detail. */
  audit: Rec[];
}

describe('an update or a command in one statement on PostgreSQL', function () {
  this.timeout(180_000);

  describe('every field type: answers, replays and audit records as on SQLite', () => {
    const apps = new Map<DatabaseKind, RunningApp>();
    let postgresUrl: string;
    const headers = { authorization: `Bearer ${ROWS_KEY}` };

    const put = (app: RunningApp, urlPath: string, json: unknown, key: string): Promise<HttpResponse> =>
      request(app.url, 'PUT', urlPath, { json, headers: { ...headers, 'idempotency-key': key } });

    /** Creates a record, makes each change twice under one key, reads it after each; then its trail. */
    const run = async (app: RunningApp, collection: string, entity: string, created: Rec, changes: Rec[]) => {
      const res = await request(app.url, 'POST', `/api/${collection}`, {
        json: created,
        headers: { ...headers, 'idempotency-key': freshKey() },
      });
      expect(res.status, res.text).to.equal(201);
      const id = (res.body as Rec).id;
      const trail: Trail = { answers: [], audit: [] };
      for (const change of changes) {
        const key = freshKey();
        const first = await put(app, `/api/${collection}/${id}`, change, key);
        expect(first.status, `${JSON.stringify(change)}: ${first.text}`).to.equal(200);
        const again = await put(app, `/api/${collection}/${id}`, change, key);
        expect(again.status, again.text).to.equal(200);
        expect(again.headers.get('idempotent-replayed')).to.equal('true');
        const read = await request(app.url, 'GET', `/api/${collection}/${id}`, { headers });
        trail.answers.push([first.text, again.text, read.text]);
      }
      const audit = await request(app.url, 'GET', `/api/audit?entity=${entity}&recordId=${id}&limit=100`, { headers });
      expect(audit.status, audit.text).to.equal(200);
      trail.audit = ((audit.body as { items: Rec[] }).items as Rec[])
        .map((item) => ({ operation: item.operation, changes: item.changes, detail: item.detail }))
        .reverse();
      return { id, trail };
    };

    /** Answers with the record's id (which differs between the databases) left out. */
    const withoutIds = (trail: Trail, id: unknown): Trail => ({
      answers: trail.answers.map((texts) =>
        texts.map((text) => (typeof id === 'string' ? text.replaceAll(JSON.stringify(id), '"<id>"') : text)),
      ) as Trail['answers'],
      audit: trail.audit.map((item) => {
        const changes = item.changes as Record<string, Rec>;
        return changes.id ? { ...item, changes: { ...changes, id: { ...changes.id, after: '<id>' } } } : item;
      }),
    });

    before(async () => {
      const appDir = path.join(freshDir('one-statement-rows'), 'app');
      await generate(path.join(ROOT, 'test/fixtures/rows/app.toml'), appDir);
      for (const database of DATABASES) {
        const url = await databaseUrl(database, 'one-statement');
        if (database === 'postgres') postgresUrl = url;
        apps.set(database, await startApp(appDir, { ROWS_KEY, DATABASE_URL: url }));
      }
    });
    after(async () => {
      for (const app of apps.values()) await app.stop();
    });

    for (const [collection, entity, created, changes] of [
      ['samples', 'Sample', { title: 'one statement', at: '2020-01-01T00:00:00Z' }, SAMPLE_CHANGES],
      // jsonb: the row comes back from the UPDATE, and PostgreSQL writes the JSON field spaced its own way.
      [
        'docs',
        'Doc',
        { title: 'json', data: { b: 1, a: [1, 'two'] } },
        [{ title: 'renamed' }, { data: { zeta: 1.5, a: null } }],
      ],
      // An Integer key the database assigned.
      ['tallys', 'Tally', { label: 'one' }, [{ label: 'two' }, { label: 'two' }]],
    ] as const) {
      it(`${entity}: each answer is replayed byte for byte, read back the same and audited as on SQLite`, async () => {
        const trails = new Map<DatabaseKind, ReturnType<typeof withoutIds>>();
        for (const database of DATABASES) {
          const { id, trail } = await run(apps.get(database) as RunningApp, collection, entity, created, [...changes]);
          for (const [first, again, read] of trail.answers) {
            expect(again, `${database}: the replay`).to.equal(first);
            expect(read, `${database}: the read`).to.equal(first);
          }
          trails.set(database, withoutIds(trail, id));
        }
        const [sqlite, postgres] = DATABASES.map((database) => trails.get(database));
        if (entity === 'Doc') {
          // jsonb orders an object's keys its own way: the answers differ there, and only there.
          expect(postgres?.audit.map((a) => Object.keys(a.changes as Rec))).to.deep.equal(
            sqlite?.audit.map((a) => Object.keys(a.changes as Rec)),
          );
        } else {
          expect(postgres?.audit, 'the audit records').to.deep.equal(sqlite?.audit);
          expect(postgres?.answers, 'the answers').to.deep.equal(sqlite?.answers);
        }
      });
    }

    it('is one statement: no BEGIN, no COMMIT, one round trip', async () => {
      const counter = await tripCounter(postgresUrl);
      const appDir = path.join(freshDir('one-statement-rows'), '..', 'one-statement-rows-counted');
      await generate(path.join(ROOT, 'test/fixtures/rows/app.toml'), appDir);
      const counted = await startApp(appDir, { ROWS_KEY, DATABASE_URL: counter.url, DATABASE_POOL_MAX: '1' });
      try {
        const res = await request(counted.url, 'POST', '/api/samples', {
          json: { title: 'counted' },
          headers: { ...headers, 'idempotency-key': freshKey() },
        });
        const id = (res.body as Rec).id;
        for (const title of ['warm-up', 'counted']) {
          counter.reset();
          const changed = await put(counted, `/api/samples/${id}`, { title, count: 3 }, freshKey());
          expect(changed.status, changed.text).to.equal(200);
        }
        expect(counter.messages()).to.deep.equal(['BDES']);
      } finally {
        await counted.stop();
        await counter.close();
      }
    });

    it(
      'writes a Float another tool left NaN or infinite as JSON.stringify does: ' +
        'null, in the answer, its replay and its audit',
      async () => {
        const app = apps.get('postgres') as RunningApp;
        const res = await request(app.url, 'POST', '/api/samples', {
          json: { title: 'not a number' },
          headers: { ...headers, 'idempotency-key': freshKey() },
        });
        const id = (res.body as Rec).id as string;
        const client = new pg.Client({ connectionString: postgresUrl });
        await client.connect();
        try {
          await client.query(`UPDATE "Sample" SET "ratio" = 'NaN' WHERE "id" = $1`, [id]);
          const changed = await put(app, `/api/samples/${id}`, { ratio: 2.5, title: 'renamed' }, freshKey());
          expect(changed.status, changed.text).to.equal(200);
          const last = `SELECT "changes" FROM "_bp_audit" WHERE "recordId" = $1 ORDER BY "id" DESC LIMIT 1`;
          expect(JSON.parse((await client.query(last, [id])).rows[0].changes)).to.deep.equal({
            title: { before: 'not a number', after: 'renamed' },
            ratio: { before: null, after: 2.5 },
          });
          for (const value of ['Infinity', '-Infinity', 'NaN']) {
            await client.query(`UPDATE "Sample" SET "ratio" = $2 WHERE "id" = $1`, [id, value]);
            const key = freshKey();
            const answer = await put(app, `/api/samples/${id}`, { title: value }, key);
            expect(answer.status, answer.text).to.equal(200);
            expect((answer.body as Rec).ratio, value).to.equal(null);
            const kept = await client.query(`SELECT "body" FROM "_bp_idempotency" WHERE "key" = $1`, [key]);
            expect(JSON.parse(kept.rows[0].body)).to.deep.equal(answer.body);
            expect((await put(app, `/api/samples/${id}`, { title: value }, key)).text).to.equal(answer.text);
          }
        } finally {
          await client.end();
        }
      },
    );

    it('reads a Float back as written where the server asks for fewer digits (extra_float_digits = 0)', async () => {
      const url = await freshPostgresDatabase('fewer-digits');
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query(`ALTER DATABASE "${new URL(url).pathname.slice(1)}" SET extra_float_digits = 0`);
      await admin.end();
      const appDir = path.join(freshDir('one-statement-digits'), 'app');
      await generate(path.join(ROOT, 'test/fixtures/rows/app.toml'), appDir);
      const app = await startApp(appDir, { ROWS_KEY, DATABASE_URL: url });
      try {
        const created = await request(app.url, 'POST', '/api/samples', {
          json: { title: 'digits', ratio: 0.1 + 0.2 },
          headers: { ...headers, 'idempotency-key': freshKey() },
        });
        expect(created.status, created.text).to.equal(201);
        const id = (created.body as Rec).id;
        const key = freshKey();
        const changed = await put(app, `/api/samples/${id}`, { title: 'renamed' }, key);
        const read = await request(app.url, 'GET', `/api/samples/${id}`, { headers });
        for (const res of [changed, read, await put(app, `/api/samples/${id}`, { title: 'renamed' }, key)])
          expect((res.body as Rec).ratio, res.text).to.equal(0.30000000000000004);
      } finally {
        await app.stop();
      }
    });
  });

  describe('the reference app: refusals and workflows go the plain way', () => {
    let app: RunningApp;
    let client: pg.Client;
    const headers = { authorization: `Bearer ${AGENT_KEY}` };
    const send = (method: string, urlPath: string, json: unknown, key = freshKey()) =>
      request(app.url, method, urlPath, { json, headers: { ...headers, 'idempotency-key': key } });
    const newTicket = async (): Promise<Rec> => {
      const res = await send('POST', '/api/tickets', { title: 'printer' });
      expect(res.status, res.text).to.equal(201);
      return res.body as Rec;
    };
    const audit = async (id: unknown) =>
      (await client.query(`SELECT "operation", "changes" FROM "_bp_audit" WHERE "recordId" = $1 ORDER BY "id"`, [id]))
        .rows;
    const jobs = async (id: unknown) =>
      (await client.query(`SELECT "workflow" FROM "_bp_jobs" WHERE "data" LIKE $1`, [`%${String(id)}%`])).rows.map(
        (r) => r.workflow,
      );

    let person: Session;

    before(async () => {
      const appDir = path.join(freshDir('one-statement-helpdesk'), 'app');
      await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
      const url = await freshPostgresDatabase('one-statement-helpdesk');
      client = new pg.Client({ connectionString: url });
      await client.connect();
      const env = {
        TRIAGE_API_KEY: AGENT_KEY,
        SESSION_SECRET: 'one-statement-secret-0123456789abcdef0123',
        DATABASE_URL: url,
      };
      app = await startApp(appDir, env);
      addUser(appDir, env, 'agent@example.com', 'correct horse battery staple', ['agent']);
      person = await login(app.url, 'agent@example.com', 'correct horse battery staple');
    });
    after(async () => {
      await app?.stop();
      await client?.end();
    });

    it('a command its availableWhen refuses: 409, nothing written, the refusal replayed', async () => {
      const ticket = await newTicket();
      expect((await send('POST', `/api/commands/start_ticket/${ticket.id}`, {})).status).to.equal(200);
      const key = freshKey();
      const refused = await send('POST', `/api/commands/start_ticket/${ticket.id}`, {}, key);
      expect(refused.status, refused.text).to.equal(409);
      expect((refused.body as { error: Rec }).error).to.include({ code: 'COMMAND_UNAVAILABLE' });
      const again = await send('POST', `/api/commands/start_ticket/${ticket.id}`, {}, key);
      expect(again.text).to.equal(refused.text);
      expect((await audit(ticket.id)).map((r) => r.operation)).to.deep.equal(['Ticket.create', 'command:StartTicket']);
    });

    it('a command its policy refuses on this record: 403, nothing written', async () => {
      const ticket = await newTicket();
      expect((await send('POST', `/api/commands/start_ticket/${ticket.id}`, {})).status).to.equal(200);
      // ResolveTicket is for the ticket's assignee only.
      expect((await send('PUT', `/api/tickets/${ticket.id}`, { assigneeId: 'someone-else' })).status).to.equal(200);
      const refused = await send('POST', `/api/commands/resolve_ticket/${ticket.id}`, { resolution: 'done' });
      expect(refused.status, refused.text).to.equal(403);
      expect((refused.body as { error: Rec }).error).to.include({ code: 'FORBIDDEN' });
      const read = await request(app.url, 'GET', `/api/tickets/${ticket.id}`, { headers });
      expect(read.body).to.include({ status: 'in_progress', resolution: null });
      expect((await audit(ticket.id)).map((r) => r.operation)).to.deep.equal([
        'Ticket.create',
        'command:StartTicket',
        'Ticket.update',
      ]);
    });

    it('one key sent four times at once: the update, and the command, run once; every answer is that one', async () => {
      const ticket = await newTicket();
      for (const [urlPath, json, operation] of [
        [`/api/tickets/${ticket.id}`, { title: 'renamed once' }, 'Ticket.update'],
        [`/api/commands/start_ticket/${ticket.id}`, {}, 'command:StartTicket'],
      ] as const) {
        const key = freshKey();
        const method = operation === 'Ticket.update' ? 'PUT' : 'POST';
        const answers = await Promise.all([1, 2, 3, 4].map(() => send(method, urlPath, json, key)));
        const done = answers.filter((a) => a.status === 200);
        expect(done.length, answers.map((a) => a.text).join('\n')).to.be.greaterThan(0);
        for (const a of answers.filter((x) => x.status !== 200)) {
          expect(a.status, a.text).to.equal(409);
          expect((a.body as { error: Rec }).error).to.include({ code: 'IDEMPOTENCY_KEY_IN_PROGRESS' });
        }
        expect(new Set(done.map((a) => a.text)).size, 'one answer').to.equal(1);
        expect((await audit(ticket.id)).filter((r) => r.operation === operation)).to.have.length(1);
      }
    });

    it("a person's change without an Idempotency-Key: one statement, the change and its audit record", async () => {
      const ticket = await newTicket();
      const headers = { cookie: person.cookie, 'x-csrf-token': person.csrfToken };
      const renamed = await request(app.url, 'PUT', `/api/tickets/${ticket.id}`, {
        json: { title: 'by a person' },
        headers,
      });
      expect(renamed.status, renamed.text).to.equal(200);
      const started = await request(app.url, 'POST', `/api/commands/start_ticket/${ticket.id}`, { json: {}, headers });
      expect(started.status, started.text).to.equal(200);
      expect(started.body).to.include({ title: 'by a person', status: 'in_progress' });
      const entries = await client.query(
        `SELECT "operation", "idempotencyKey", "changes" FROM "_bp_audit" WHERE "recordId" = $1 ORDER BY "id"`,
        [ticket.id],
      );
      expect(entries.rows.slice(1).map((r) => [r.operation, r.idempotencyKey, JSON.parse(r.changes)])).to.deep.equal([
        ['Ticket.update', null, { title: { before: 'printer', after: 'by a person' } }],
        [
          'command:StartTicket',
          null,
          {
            status: { before: 'open', after: 'in_progress' },
            assigneeId: { before: null, after: (started.body as Rec).assigneeId },
          },
        ],
      ]);
      const keys = await client.query(`SELECT count(*)::int AS n FROM "_bp_idempotency" WHERE "body" LIKE $1`, [
        `%by a person%`,
      ]);
      expect(keys.rows[0].n, 'no key, no stored answer').to.equal(0);
    });

    it('a record that is not there: 404 for an update and a command', async () => {
      for (const [method, urlPath, json] of [
        ['PUT', '/api/tickets/01ARZ3NDEKTSV4RRFFQ69G5FAV', { title: 'nobody' }],
        ['POST', '/api/commands/start_ticket/01ARZ3NDEKTSV4RRFFQ69G5FAV', {}],
      ] as const) {
        const res = await send(method, urlPath, json);
        expect(res.status, `${method} ${urlPath}: ${res.text}`).to.equal(404);
      }
    });

    it('a change an entity event may start a workflow for stores its job; one that cannot, none', async () => {
      const ticket = await newTicket();
      expect((await send('POST', `/api/commands/start_ticket/${ticket.id}`, {})).status).to.equal(200);
      // AnnounceResolution starts when a ticket goes from in_progress to resolved.
      const resolved = await send('POST', `/api/commands/resolve_ticket/${ticket.id}`, {
        resolution: 'toner replaced',
      });
      expect(resolved.status, resolved.text).to.equal(200);
      expect(await jobs(ticket.id)).to.deep.equal(['AnnounceResolution']);
      const renamed = await send('PUT', `/api/tickets/${ticket.id}`, { title: 'renamed', priority: 'low' });
      expect(renamed.status, renamed.text).to.equal(200);
      expect(await jobs(ticket.id)).to.deep.equal(['AnnounceResolution']);
      expect((await audit(ticket.id)).slice(1).map((r) => JSON.parse(r.changes))).to.deep.equal([
        { status: { before: 'open', after: 'in_progress' }, assigneeId: { before: null, after: 'agent-triage' } },
        {
          status: { before: 'in_progress', after: 'resolved' },
          resolution: { before: null, after: 'toner replaced' },
          resolvedAt: { before: null, after: (resolved.body as Rec).resolvedAt },
        },
        { title: { before: 'printer', after: 'renamed' }, priority: { before: 'normal', after: 'low' } },
      ]);
    });
  });

  describe("a skill action's update, after the read that checks its path", () => {
    it('commits the change, its audit record and its key together; a retry replays the answer', async () => {
      const appDir = path.join(freshDir('one-statement-skills'), 'app');
      await generate(path.join(ROOT, 'test/fixtures/skills/app.toml'), appDir);
      const url = await freshPostgresDatabase('one-statement-skills');
      const planner = 'planner-key-0123456789abcdef';
      const secret = 'one-statement-skills-0123456789abcdef0123';
      const app = await startApp(appDir, { PLANNER_API_KEY: planner, SESSION_SECRET: secret, DATABASE_URL: url });
      const headers = { authorization: `Bearer ${planner}` };
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const added = await request(app.url, 'POST', '/api/skills/board/projects/p1/tasks', {
          json: { title: 'plan', priority: 2 },
          headers: { ...headers, 'idempotency-key': freshKey() },
        });
        expect(added.status, added.text).to.equal(201);
        const id = (added.body as Rec).id;
        const edit = (project: string, key: string) =>
          request(app.url, 'PUT', `/api/skills/board/projects/${project}/tasks/${id}`, {
            json: { title: 'planned', done: true },
            headers: { ...headers, 'idempotency-key': key },
          });
        const key = freshKey();
        const edited = await edit('p1', key);
        expect(edited.status, edited.text).to.equal(200);
        expect(edited.body).to.include({ title: 'planned', done: true, priority: 2 });
        const again = await edit('p1', key);
        expect(again.headers.get('idempotent-replayed')).to.equal('true');
        expect(again.text).to.equal(edited.text);
        // The task is not in project p2: nothing is written.
        expect((await edit('p2', freshKey())).status).to.equal(404);
        const audit = await client.query(
          `SELECT "operation", "changes" FROM "_bp_audit" WHERE "recordId" = $1 ORDER BY "id"`,
          [id],
        );
        expect(audit.rows.map((r) => [r.operation, JSON.parse(r.changes)]).slice(1)).to.deep.equal([
          ['Task.update', { title: { before: 'plan', after: 'planned' }, done: { before: false, after: true } }],
        ]);
        const kept = await client.query(`SELECT "body" FROM "_bp_idempotency" WHERE "key" = $1`, [key]);
        expect(kept.rows[0].body).to.equal(edited.text);
      } finally {
        await client.end();
        await app.stop();
      }
    });
  });
});
