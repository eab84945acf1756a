// Workflow skill actions as a client relies on them (test/fixtures/workflow-actions), over HTTP,
// once on SQLite and once on PostgreSQL: an Idempotency-Key answers before the body and the
// precondition are checked (the same request replays its 202 and job after that job changed the
// record, and 20 sent at once store one job), a body key the workflow reads is required (400
// before anything is stored, and so in openapi.json), the 202's job fits the documented
// WorkflowJob, and GET /api/skills lists only what its caller may call.

import * as path from 'node:path';
import { expect } from 'chai';
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
import { withAppRows } from './support/database-rows.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';
import { OpenApiChecker } from './support/openapi-check.ts';

type Rec = Record<string, unknown>;
type Job = Rec & { id: string; url: string; status: string };
const errorOf = (res: HttpResponse) => (res.body as { error: { code: string; details?: Rec[] } }).error;
const PIN = '/api/skills/notebook/notes/{id}/pin';
/** The schema of a required Text key: not blank, no control characters. */
const REQUIRED_TEXT = { type: 'string', minLength: 1, pattern: '^(?!\\s*$)[^\\x00-\\x1f\\x7f-\\x9f]*$' };

describe('workflow actions: keys, required body keys, the 202 job, skill index (generated app over HTTP)', function () {
  this.timeout(120_000);

  for (const database of DATABASES)
    describe(`test/fixtures/workflow-actions (${database})`, () => {
      const env: Record<string, string> = {
        PINNER_API_KEY: 'pinner-key-0123456789abcdef',
        READER_API_KEY: 'reader-key-0123456789abcdef',
        SESSION_SECRET: 'workflow-actions-secret-0123456789abcdef0123',
      };
      const pinner = { authorization: `Bearer ${env.PINNER_API_KEY}` };
      const reader = { authorization: `Bearer ${env.READER_API_KEY}` };
      let appDir: string;
      let app: RunningApp;
      let openapi: OpenApiChecker;

      const newNote = async (title: string): Promise<Rec> => {
        const res = await request(app.url, 'POST', '/api/notes', {
          json: { title },
          headers: { ...pinner, 'idempotency-key': freshKey() },
        });
        expect(res.status, res.text).to.equal(201);
        return res.body as Rec;
      };
      const note = async (id: unknown) =>
        (await request(app.url, 'GET', `/api/notes/${String(id)}`, { headers: pinner })).body as Rec;
      const pin = (id: unknown, key: string, body?: unknown) =>
        request(app.url, 'POST', `/api/skills/notebook/notes/${String(id)}/pin`, {
          ...(body === undefined ? {} : { json: body }),
          headers: { ...pinner, 'idempotency-key': key },
        });
      const jobs = (workflow: string) =>
        withAppRows(env.DATABASE_URL, appDir, (db) => db.count('_bp_jobs', `"workflow" = ?`, [workflow]));

      before(async () => {
        appDir = path.join(freshDir(`workflow-actions-${database}`), 'app');
        const r = await generate(path.join(ROOT, 'test/fixtures/workflow-actions/app.toml'), appDir);
        expect(r.status, r.stderr).to.equal(0);
        env.DATABASE_URL = await databaseUrl(database, 'workflow_actions');
        openapi = new OpenApiChecker(path.join(appDir, 'openapi.json'));
        addUser(appDir, env, 'person@example.com', 'a long enough password');
        app = await startApp(appDir, env);
      });
      after(async () => app?.stop());

      it(
        'replays the same 202 and job for the same key and body after the job changed the record; ' +
          'another body is IDEMPOTENCY_KEY_REUSE',
        async () => {
          const n = await newNote('replayed');
          const before = await jobs('Pin');
          const key = freshKey();
          const first = await pin(n.id, key, { reason: 'on top' });
          expect(first.status, first.text).to.equal(202);
          const { job } = first.body as { job: Job };
          expect((await jobFinished<Job>(app.url, pinner, job.url)).status).to.equal('completed');
          expect(await note(n.id)).to.include({ pinned: true, pinNote: 'pinned: on top' });

          // The precondition no longer holds (the note is pinned), yet the key answers first.
          for (let i = 0; i < 2; i++) {
            const again = await pin(n.id, key, { reason: 'on top' });
            expect(again.status, again.text).to.equal(202);
            expect(again.body).to.deep.equal(first.body);
            expect(again.headers.get('location')).to.equal(job.url);
          }
          for (const other of [{ reason: 'elsewhere' }, {}, { reason: null }, { reason: 5 }, { nope: 1 }, undefined]) {
            const res = await pin(n.id, key, other);
            expect(res.status, `${JSON.stringify(other)}: ${res.text}`).to.equal(409);
            expect(errorOf(res).code).to.equal('IDEMPOTENCY_KEY_REUSE');
          }
          // Another key is another request: it meets the precondition.
          const fresh = await pin(n.id, freshKey(), { reason: 'on top' });
          expect(fresh.status, fresh.text).to.equal(409);
          expect(errorOf(fresh).code).to.equal('WORKFLOW_PRECONDITION_FAILED');
          expect(await jobs('Pin')).to.equal(before + 1);
        },
      );

      it('answers 20 concurrent requests with one key: 20 identical 202s, one job; the same once it ran', async () => {
        const n = await newNote('concurrent');
        const before = await jobs('Pin');
        const key = freshKey();
        const burst = () => Promise.all(Array.from({ length: 20 }, () => pin(n.id, key, { reason: 'crowded' })));
        const answers = await burst();
        expect(
          answers.map((r) => r.status),
          answers.map((r) => r.text).join('\n'),
        ).to.deep.equal(Array(20).fill(202));
        for (const res of answers) expect(res.body).to.deep.equal(answers[0].body);
        const { job } = answers[0].body as { job: Job };
        expect((await jobFinished<Job>(app.url, pinner, job.url)).status).to.equal('completed');
        const later = await burst();
        expect(
          later.map((r) => r.status),
          later.map((r) => r.text).join('\n'),
        ).to.deep.equal(Array(20).fill(202));
        for (const res of later) expect(res.body).to.deep.equal(answers[0].body);
        expect(await jobs('Pin')).to.equal(before + 1);
      });

      it('refuses a request without a body key the workflow reads (400 naming it) and stores nothing', async () => {
        const n = await newNote('needs a reason');
        const before = await jobs('Pin');
        for (const body of [{}, { reason: null }, undefined]) {
          const res = await pin(n.id, freshKey(), body);
          expect(res.status, `${JSON.stringify(body)}: ${res.text}`).to.equal(400);
          expect(errorOf(res).code).to.equal('VALIDATION_FAILED');
          expect(errorOf(res).details).to.deep.include({
            field: 'reason',
            code: 'REQUIRED',
            message: 'reason is required: Pin reads it',
          });
          openapi.check('POST', PIN, res);
        }
        // Blank text is no reason either, as openapi.json's pattern for it says.
        const blank = await pin(n.id, freshKey(), { reason: '   ' });
        expect(blank.status, blank.text).to.equal(400);
        expect(errorOf(blank).details).to.deep.include({
          field: 'reason',
          code: 'REQUIRED',
          message: 'reason must not be blank',
        });
        openapi.check('POST', PIN, blank);
        expect(await jobs('Pin')).to.equal(before);
        expect(await note(n.id)).to.include({ pinned: false, pinNote: null });

        // Tag reads `label` (through trigger.data.body in one branch), and `loud` only in a condition.
        const tag = (body: unknown) =>
          request(app.url, 'POST', `/api/skills/notebook/notes/${String(n.id)}/tag`, {
            json: body,
            headers: { ...pinner, 'idempotency-key': freshKey() },
          });
        const unlabelled = await tag({ loud: true });
        expect(unlabelled.status, unlabelled.text).to.equal(400);
        expect(errorOf(unlabelled).details?.map((d) => d.field)).to.deep.equal(['label']);
        const labelled = await tag({ label: 'work', loud: true });
        expect(labelled.status, labelled.text).to.equal(202);
        expect((await jobFinished<Job>(app.url, pinner, (labelled.body as { job: Job }).job.url)).status).to.equal(
          'completed',
        );

        // Sweep loops over `titles`, named by a bare path: a JSON key, so null is refused as well.
        const sweep = (body: unknown) =>
          request(app.url, 'POST', '/api/skills/notebook/sweep', {
            json: body,
            headers: { ...pinner, 'idempotency-key': freshKey() },
          });
        for (const body of [{}, { titles: null }]) {
          const res = await sweep(body);
          expect(res.status, res.text).to.equal(400);
          expect(errorOf(res).details?.map((d) => d.field)).to.deep.equal(['titles']);
        }
        const swept = await sweep({ titles: ['a', 'b'] });
        expect(swept.status, swept.text).to.equal(202);
        expect((await jobFinished<Job>(app.url, pinner, (swept.body as { job: Job }).job.url)).status).to.equal(
          'completed',
        );
      });

      it('describes those keys as required in openapi.json, and not null', () => {
        const body = (p: string) => {
          const op = (
            openapi.doc.paths[p] as unknown as Record<
              string,
              { requestBody: { required: boolean; content: Record<string, { schema: Rec }> } }
            >
          ).post;
          return { required: op.requestBody.required, schema: op.requestBody.content['application/json'].schema };
        };
        expect(body(PIN)).to.deep.equal({
          required: true,
          schema: {
            type: 'object',
            properties: { reason: REQUIRED_TEXT },
            required: ['reason'],
            additionalProperties: false,
          },
        });
        const tag = body('/api/skills/notebook/notes/{id}/tag');
        expect(tag.schema.required).to.deep.equal(['label']);
        expect(tag.schema.properties).to.deep.equal({ label: REQUIRED_TEXT, loud: { type: ['boolean', 'null'] } });
        expect(body('/api/skills/notebook/sweep').schema).to.deep.include({
          required: ['titles'],
          properties: { titles: { not: { type: 'null' } } },
        });
        // A workflow its webhook starts is served to its skill action too, so the document has it.
        expect(body('/api/skills/notebook/inbox').schema).to.deep.include({ required: ['subject'] });
      });

      it(
        'serves and documents the skill action of a webhook-started workflow: ' +
          '202 as documented, 400 without the key it reads',
        async () => {
          const send = (json: unknown) =>
            request(app.url, 'POST', '/api/skills/notebook/inbox', {
              json,
              headers: { ...pinner, 'idempotency-key': freshKey() },
            });
          const filed = await send({ subject: 'invoice' });
          expect(filed.status, filed.text).to.equal(202);
          openapi.check('POST', '/api/skills/notebook/inbox', filed);
          expect((await jobFinished<Job>(app.url, pinner, (filed.body as { job: Job }).job.url)).status).to.equal(
            'completed',
          );
          const missing = await send({});
          expect(missing.status, missing.text).to.equal(400);
          openapi.check('POST', '/api/skills/notebook/inbox', missing);
        },
      );

      it('answers 202 with the job as its documented WorkflowJob, as GET /api/jobs/<id> shows it', async () => {
        const n = await newNote('documented');
        const res = await pin(n.id, freshKey(), { reason: 'schema' });
        expect(res.status, res.text).to.equal(202);
        openapi.check('POST', PIN, res);
        const { job } = res.body as { job: Job };
        expect(job).to.include({
          workflow: 'Pin',
          status: 'pending',
          url: `/api/jobs/${job.id}`,
          attempts: 0,
          startedAt: null,
          completedAt: null,
        });
        expect(new Date(job.createdAt as string).toISOString()).to.equal(job.createdAt);
        const polled = await request(app.url, 'GET', job.url, { headers: pinner });
        expect((polled.body as Rec).createdAt).to.equal(job.createdAt);
        expect(Object.keys(polled.body as Rec).sort()).to.deep.equal(Object.keys(job).sort());
      });

      it('lists at GET /api/skills only what the caller may call', async () => {
        const listed = async (headers: Record<string, string> = {}) => {
          const res = await request(app.url, 'GET', '/api/skills', { headers });
          expect(res.status, res.text).to.equal(200);
          const { skills } = res.body as { skills: Array<{ name: string; actions: Array<{ name: string }> }> };
          return Object.fromEntries(skills.map((s) => [s.name, s.actions.map((a) => a.name)]));
        };
        // Anonymous: the skill with auth = "none" only.
        expect(await listed()).to.deep.equal({ lobby: ['all_notes'] });
        // An API key: the actions whose every scope it holds.
        expect(await listed(reader)).to.deep.equal({ lobby: ['all_notes'], notebook: ['read_note'] });
        expect(await listed(pinner)).to.deep.equal({
          lobby: ['all_notes'],
          notebook: ['pin', 'tag', 'sweep', 'file', 'read_note'],
        });
        // A person is not held to scopes: every action.
        const session = await login(app.url, 'person@example.com', 'a long enough password');
        expect(await listed({ cookie: session.cookie })).to.deep.equal({
          lobby: ['all_notes'],
          notebook: ['pin', 'tag', 'sweep', 'file', 'read_note'],
        });
        // Asked again (the index kept per kind of caller), the same.
        expect(await listed()).to.deep.equal({ lobby: ['all_notes'] });
        expect(await listed(reader)).to.deep.equal({ lobby: ['all_notes'], notebook: ['read_note'] });
      });
    });
});
