// Skill actions of generated apps, over HTTP: each CRUD kind at its own method and path through
// the entity's pipeline, path parameters through mapParams, typed query parameters, the skill's
// auth and the action's scopes, Idempotency-Key and X-Agent-Run-ID, the index at GET /api/skills,
// and the OpenAPI operations. The reference helpdesk's skill first, then a fixture of every kind,
// each once on SQLite and once on PostgreSQL.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import {
  bp,
  freshDir,
  freshKey,
  generate,
  request,
  ROOT,
  startApp,
  typecheck,
  type RunningApp,
} from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

type Rec = Record<string, unknown>;
const errorCode = (body: unknown) => (body as { error: { code: string } }).error.code;

describe('skill actions (generated app, over HTTP)', function () {
  this.timeout(120_000);

  for (const database of DATABASES)
    describe(`the reference helpdesk (skill triage, ${database})`, () => {
      const env = {
        TRIAGE_API_KEY: 'triage-key-0123456789abcdef',
        REPORTER_API_KEY: 'reporter-key-0123456789abcdef',
        SESSION_SECRET: 'skills-secret-0123456789abcdef0123456789',
      };
      const triage = { authorization: `Bearer ${env.TRIAGE_API_KEY}` };
      const reporter = { authorization: `Bearer ${env.REPORTER_API_KEY}` };
      let appDir: string;
      let app: RunningApp;
      let ticket: Rec;

      before(async () => {
        appDir = path.join(freshDir(`skills-helpdesk-${database}`), 'app');
        const r = await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
        expect(r.status, r.stderr).to.equal(0);
        app = await startApp(appDir, { ...env, DATABASE_URL: await databaseUrl(database, 'skills') });
        const created = await request(app.url, 'POST', '/api/tickets', {
          json: { title: 'Printer on fire' },
          headers: { ...triage, 'idempotency-key': freshKey() },
        });
        expect(created.status, created.text).to.equal(201);
        ticket = created.body as Rec;
      });
      after(async () => app?.stop());

      it('lists the skills and actions a caller may call at GET /api/skills, saying which are served', async () => {
        // The skill needs a credential: an anonymous caller is told of none of it.
        const anonymous = await request(app.url, 'GET', '/api/skills');
        expect(anonymous.status).to.equal(200);
        expect(anonymous.body).to.deep.equal({ skills: [] });
        const res = await request(app.url, 'GET', '/api/skills', { headers: triage });
        expect(res.status).to.equal(200);
        const [skill] = (res.body as { skills: Array<Rec & { actions: Rec[] }> }).skills;
        expect(skill).to.include({ name: 'triage', auth: 'required' });
        const byName = Object.fromEntries(skill.actions.map((a) => [a.name, a]));
        expect(byName.get_ticket).to.include({
          method: 'GET',
          path: '/api/skills/triage/tickets/{ticketId}',
          kind: 'crud',
          served: true,
          risk: 'read',
          entity: 'Ticket',
        });
        expect(byName.add_comment).to.include({ kind: 'crud', served: true, risk: 'write' });
        expect(byName.add_comment.scopes).to.deep.equal(['tickets.write']);
        expect(byName.escalate_ticket).to.include({ kind: 'workflow', served: true, workflow: 'EscalateTicket' });
        expect(byName.escalate_ticket.requiredBody).to.deep.equal(['reason']);
      });

      it('runs list and get (the {ticketId} of the path is the record id) as the entity routes do', async () => {
        const list = await request(app.url, 'GET', '/api/skills/triage/tickets', { headers: reporter });
        expect(list.status, list.text).to.equal(200);
        expect((list.body as { items: Rec[] }).items.map((t) => t.id)).to.include(ticket.id);
        const one = await request(app.url, 'GET', `/api/skills/triage/tickets/${ticket.id}`, { headers: reporter });
        expect(one.status, one.text).to.equal(200);
        const direct = await request(app.url, 'GET', `/api/tickets/${ticket.id}`, { headers: reporter });
        expect(one.body).to.deep.equal(direct.body);
        const missing = await request(app.url, 'GET', '/api/skills/triage/tickets/01ARZ3NDEKTSV4RRFFQ69G5FAV', {
          headers: reporter,
        });
        expect(missing.status).to.equal(404);
        expect(errorCode(missing.body)).to.equal('NOT_FOUND');
      });

      it(
        'refuses callers without a credential (401) and keys without every scope of the action (403), ' +
          'writing nothing',
        async () => {
          const anonymous = await request(app.url, 'GET', '/api/skills/triage/tickets');
          expect(anonymous.status).to.equal(401);
          const refused = await request(app.url, 'POST', `/api/skills/triage/tickets/${ticket.id}/comments`, {
            json: { authorId: 'reporter', body: 'me too' },
            headers: { ...reporter, 'idempotency-key': freshKey() },
          });
          expect(refused.status, refused.text).to.equal(403);
          expect(errorCode(refused.body)).to.equal('INSUFFICIENT_SCOPE');
          const comments = await request(app.url, 'GET', '/api/comments', { headers: triage });
          expect((comments.body as { items: Rec[] }).items.filter((c) => c.body === 'me too')).to.have.length(0);
        },
      );

      it(
        'creates with the path parameter written into the record, once per Idempotency-Key, ' +
          'audited with the run id',
        async () => {
          const key = freshKey();
          const send = () =>
            request(app.url, 'POST', `/api/skills/triage/tickets/${ticket.id}/comments`, {
              // The path names the ticket: a ticketId in the body does not move the comment elsewhere.
              json: { authorId: 'agent-7', body: 'Looking into it', ticketId: '01ARZ3NDEKTSV4RRFFQ69G5FAV' },
              headers: { ...triage, 'idempotency-key': key, 'x-agent-run-id': 'run-42' },
            });
          const first = await send();
          expect(first.status, first.text).to.equal(201);
          const comment = first.body as Rec;
          expect(comment).to.include({ ticketId: ticket.id, authorId: 'agent-7', body: 'Looking into it' });
          expect(first.headers.get('location')).to.equal(`/api/comments/${comment.id}`);
          const again = await send();
          expect(again.status).to.equal(201);
          expect((again.body as Rec).id).to.equal(comment.id);
          const trail = await request(app.url, 'GET', `/api/audit?entity=Comment&recordId=${comment.id}`, {
            headers: triage,
          });
          const entries = (trail.body as { items: Rec[] }).items;
          expect(entries).to.have.length(1);
          expect(entries[0]).to.include({ operation: 'Comment.create', agentRunId: 'run-42', idempotencyKey: key });
          const unkeyed = await request(app.url, 'POST', `/api/skills/triage/tickets/${ticket.id}/comments`, {
            json: { authorId: 'agent-7', body: 'no key' },
            headers: triage,
          });
          expect(unkeyed.status).to.equal(400);
          expect(errorCode(unkeyed.body)).to.equal('IDEMPOTENCY_KEY_REQUIRED');
        },
      );

      it('describes each served action in openapi.json: <skill>_<action>, its parameters, scopes and risk', () => {
        const doc = JSON.parse(fs.readFileSync(path.join(appDir, 'openapi.json'), 'utf8')) as {
          paths: Record<string, Record<string, Rec>>;
        };
        const add = doc.paths['/api/skills/triage/tickets/{ticketId}/comments'].post;
        expect(add).to.include({ operationId: 'triage_add_comment', 'x-risk': 'write' });
        expect(add['x-scopes']).to.deep.equal(['tickets.write']);
        const bodySchema = (
          add.requestBody as { content: Record<string, { schema: { properties: Rec; required: string[] } }> }
        ).content['application/json'].schema;
        expect(Object.keys(bodySchema.properties)).to.not.include('ticketId');
        expect(bodySchema.required).to.deep.equal(['authorId', 'body']);
        expect(doc.paths['/api/skills/triage/tickets/{ticketId}'].get).to.include({ operationId: 'triage_get_ticket' });
        expect(doc.paths['/api/skills/triage/tickets/{id}/escalate'].post).to.include({
          operationId: 'triage_escalate_ticket',
          'x-workflow': 'EscalateTicket',
        });
        expect(doc.paths['/api/skills'].get).to.include({ operationId: 'listSkills' });
      });
    });

  for (const database of DATABASES)
    describe(`every kind of action (test/fixtures/skills, ${database})`, () => {
      const env = {
        PLANNER_API_KEY: 'planner-key-0123456789abcdef',
        VIEWER_API_KEY: 'viewer-key-0123456789abcdef',
        // An app with sign-in refuses to start on PostgreSQL without one (its instances share it).
        SESSION_SECRET: 'skills-board-secret-0123456789abcdef0123456789',
      };
      const planner = { authorization: `Bearer ${env.PLANNER_API_KEY}` };
      const viewer = { authorization: `Bearer ${env.VIEWER_API_KEY}` };
      const write = (extra: Record<string, string> = {}) => ({ ...planner, 'idempotency-key': freshKey(), ...extra });
      let appDir: string;
      let app: RunningApp;
      const tasks: Rec[] = [];
      const base = (project: string) => `/api/skills/board/projects/${project}/tasks`;

      before(async () => {
        appDir = path.join(freshDir(`skills-board-${database}`), 'app');
        const r = await generate(path.join(ROOT, 'test/fixtures/skills/app.toml'), appDir);
        expect(r.status, r.stderr).to.equal(0);
        app = await startApp(appDir, { ...env, DATABASE_URL: await databaseUrl(database, 'skills_board') });
        for (const [project, title, done, priority] of [
          ['p1', 'a', false, 1],
          ['p1', 'b', true, 2],
          ['p1', 'c', false, 2],
          ['p2', 'd', false, 2],
        ] as const) {
          const res = await request(app.url, 'POST', base(project), {
            json: { title, done, priority },
            headers: write(),
          });
          expect(res.status, res.text).to.equal(201);
          tasks.push(res.body as Rec);
        }
      });
      after(async () => app?.stop());

      it('typechecks in strict mode', () => {
        const r = typecheck(appDir);
        expect(r.stdout + r.stderr).to.equal('');
      });

      it('creates with the path parameter as the field it names', () => {
        expect(tasks.map((t) => [t.projectId, t.title])).to.deep.equal([
          ['p1', 'a'],
          ['p1', 'b'],
          ['p1', 'c'],
          ['p2', 'd'],
        ]);
      });

      it(
        'lists with the path parameter and typed query parameters as filters, ' +
          'paged with the declared default limit',
        async () => {
          const titles = async (query: string) => {
            const res = await request(app.url, 'GET', `${base('p1')}${query}`, { headers: viewer });
            expect(res.status, res.text).to.equal(200);
            return res.body as { items: Rec[]; limit: number; hasMore: boolean };
          };
          const page = await titles('');
          expect(page.limit).to.equal(2);
          expect(page.items.map((t) => t.title)).to.deep.equal(['a', 'b']);
          expect(page.hasMore).to.equal(true);
          expect((await titles('?limit=10')).items.map((t) => t.title)).to.deep.equal(['a', 'b', 'c']);
          expect((await titles('?done=false&limit=10')).items.map((t) => t.title)).to.deep.equal(['a', 'c']);
          expect((await titles('?level=2&limit=10')).items.map((t) => t.title)).to.deep.equal(['b', 'c']);
          expect((await titles('?level=2&done=false')).items.map((t) => t.title)).to.deep.equal(['c']);
          for (const bad of ['?done=maybe', '?level=high', '?color=red', '?limit=0']) {
            const res = await request(app.url, 'GET', `${base('p1')}${bad}`, { headers: viewer });
            expect(res.status, `${bad}: ${res.text}`).to.equal(400);
          }
        },
      );

      it('gets, updates and deletes the record its {taskId} names, only under its own project (else 404)', async () => {
        const [a] = tasks;
        const got = await request(app.url, 'GET', `${base('p1')}/${a.id}`, { headers: viewer });
        expect(got.status, got.text).to.equal(200);
        expect((got.body as Rec).title).to.equal('a');
        const elsewhere = await request(app.url, 'GET', `${base('p2')}/${a.id}`, { headers: viewer });
        expect(elsewhere.status).to.equal(404);

        const moved = await request(app.url, 'PUT', `${base('p2')}/${a.id}`, {
          json: { title: 'hijacked' },
          headers: write(),
        });
        expect(moved.status).to.equal(404);
        const edited = await request(app.url, 'PUT', `${base('p1')}/${a.id}`, {
          json: { title: 'a2' },
          headers: write(),
        });
        expect(edited.status, edited.text).to.equal(200);
        expect((edited.body as Rec).title).to.equal('a2');

        const refused = await request(app.url, 'DELETE', `${base('p1')}/${a.id}`, {
          headers: { ...viewer, 'idempotency-key': freshKey() },
        });
        expect(refused.status).to.equal(403);
        expect(errorCode(refused.body)).to.equal('INSUFFICIENT_SCOPE');
        const dropped = await request(app.url, 'DELETE', `${base('p1')}/${a.id}`, { headers: write() });
        expect(dropped.status, dropped.text).to.equal(204);
        const gone = await request(app.url, 'GET', `/api/tasks/${a.id}`, { headers: viewer });
        expect(gone.status).to.equal(404);
      });

      it('lets anonymous callers use a skill with auth = "none", under the entity rules', async () => {
        const open = await request(app.url, 'GET', '/api/skills/public/tasks');
        expect(open.status, open.text).to.equal(200);
        expect((open.body as { items: Rec[] }).items.map((t) => t.title)).to.deep.equal(['c', 'd']);
        // The board skill has the default auth: a credential is required.
        expect((await request(app.url, 'GET', base('p1'))).status).to.equal(401);
      });

      it('serves nothing for a pass-through action, and lists it as such', async () => {
        const res = await request(app.url, 'GET', '/api/skills', { headers: planner });
        const board = (res.body as { skills: Array<{ name: string; actions: Rec[] }> }).skills.find(
          (s) => s.name === 'board',
        );
        expect(board?.actions.find((a) => a.name === 'docs')).to.include({
          kind: 'pass-through',
          served: false,
          risk: 'read',
        });
      });
    });

  it('refuses a get, update or delete action whose path names no parameter for the record id', () => {
    const dir = freshDir('skills-invalid');
    const blueprint = path.join(dir, 'app.toml');
    fs.writeFileSync(
      blueprint,
      fs
        .readFileSync(path.join(ROOT, 'test/fixtures/skills/app.toml'), 'utf8')
        .replace(
          'mapParams = { project = "projectId", taskId = "id" }\nscopes = ["tasks.read"]',
          'mapParams = { project = "projectId" }\nscopes = ["tasks.read"]',
        ),
    );
    const r = bp(['validate', blueprint]);
    expect(r.status).to.equal(1);
    expect(r.stdout + r.stderr).to.match(
      /skill\.board\.actions\.1\.path: no path parameter of .*\{taskId\} names Task's id \(id\).*MISSING_PATH_PARAM/,
    );
  });
});
