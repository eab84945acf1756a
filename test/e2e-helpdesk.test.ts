// End to end on the reference blueprint: generate with the real CLI, typecheck the output, boot
// it like `npm start` does, and drive every CRUD rule over HTTP. Every response is checked
// against the generated OpenAPI document.

import { createHmac } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import {
  addUser,
  freshDir,
  freshKey,
  generate,
  login,
  request,
  ROOT,
  startApp,
  typecheck,
  type HttpResponse,
  type RunningApp,
  type Session,
} from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';
import { OpenApiChecker } from './support/openapi-check.ts';

type Rec = Record<string, unknown>;
type ErrorBody = {
  error: {
    code: string;
    message: string;
    retryable: boolean;
    details?: Array<{ field?: string; code: string }>;
    traceId: string;
  };
};

const ENV = {
  TRIAGE_API_KEY: 'triage-key-0123456789abcdef',
  REPORTER_API_KEY: 'reporter-key-0123456789abcdef',
  // Fixed so sessions survive the restart test.
  SESSION_SECRET: 'e2e-session-secret-0123456789abcdef0123',
  INBOUND_EMAIL_SECRET: 'inbound-email-secret-0123456789',
};

for (const database of DATABASES)
  describe(`generated helpdesk app (end to end, ${database})`, function () {
    this.timeout(120_000);
    const env: Record<string, string> = { ...ENV };
    let appDir: string;
    let app: RunningApp;
    let api: OpenApiChecker;
    let admin: Session;

    /** The triage agent by default; `as: 'admin'` is a person with the admin role (session + CSRF). */
    const call = async (
      method: string,
      template: string,
      urlPath: string,
      options: Parameters<typeof request>[3] & { as?: 'triage' | 'admin' } = {},
    ): Promise<HttpResponse> => {
      const headers: Record<string, string> =
        options.as === 'admin'
          ? { cookie: admin.cookie, 'x-csrf-token': admin.csrfToken }
          : { authorization: `Bearer ${ENV.TRIAGE_API_KEY}` };
      if (method !== 'GET' && options.as !== 'admin') headers['idempotency-key'] = freshKey();
      const res = await request(app.url, method, urlPath, { ...options, headers: { ...headers, ...options.headers } });
      api.check(method, template, res);
      expect(res.headers.get('x-trace-id'), 'X-Trace-ID').to.match(/^[0-9a-f]{32}$/);
      if (res.status >= 400) {
        const err = (res.body as ErrorBody).error;
        expect(err.traceId).to.equal(res.headers.get('x-trace-id'));
        expect(res.text).not.to.match(/\bat .+\.ts:\d+/);
      }
      return res;
    };
    const errorOf = (res: HttpResponse) => (res.body as ErrorBody).error;
    const count = async (collection: string) =>
      ((await call('GET', `/api/${collection}`, `/api/${collection}?limit=1000`)).body as { items: unknown[] }).items
        .length;

    before(async () => {
      appDir = path.join(freshDir(`e2e-helpdesk-${database}`), 'app');
      env.DATABASE_URL = await databaseUrl(database, 'e2e');
      await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
      api = new OpenApiChecker(path.join(appDir, 'openapi.json'));
      // The app first, so that it is the one to apply the migrations (the users command would).
      app = await startApp(appDir, env);
      addUser(appDir, env, 'admin@example.com', 'correct horse battery', ['admin']);
      admin = await login(app.url, 'admin@example.com', 'correct horse battery');
    });
    after(async () => app?.stop());

    it('typechecks in strict mode', () => {
      const r = typecheck(appDir);
      expect(r.stdout + r.stderr).to.equal('');
      expect(r.status).to.equal(0);
    });

    it('applies its migrations and serves its OpenAPI document', async () => {
      expect(app.output()).to.match(/^applied migrations: 0001_init$/m);
      if (database === 'sqlite') {
        const db = path.join(appDir, 'data', 'e2e.db');
        expect(fs.existsSync(db), db).to.equal(true);
      } else expect(app.output()).to.match(/^database: PostgreSQL/m);
      const res = await call('GET', '/api/openapi.json', '/api/openapi.json');
      expect(res.status).to.equal(200);
      expect((res.body as { openapi: string }).openapi).to.equal('3.1.0');
    });

    describe('create', () => {
      it('stores a record with a generated id and defaults, answering 201 and Location', async () => {
        const before = Date.now();
        const res = await call('POST', '/api/customers', '/api/customers', {
          json: { name: 'Ann', email: 'ann@example.com' },
        });
        expect(res.status).to.equal(201);
        const c = res.body as Rec;
        expect(c.id).to.match(/^[0-9a-f-]{36}$/);
        expect(res.headers.get('location')).to.equal(`/api/customers/${c.id}`);
        expect(Date.parse(c.createdAt as string)).to.be.within(before - 1000, Date.now() + 1000);
        expect(c).to.include({ name: 'Ann', email: 'ann@example.com' });
      });

      it('applies defaults to command-only fields it refuses to take from the body', async () => {
        const res = await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'Printer on fire' } });
        expect(res.status).to.equal(201);
        const t = res.body as Rec;
        expect(t.id).to.match(/^[0-9A-HJKMNP-TV-Z]{26}$/);
        expect(t).to.include({ status: 'open', priority: 'normal', body: null, customerId: null, resolution: null });
      });

      for (const [field, value] of [
        ['status', 'resolved'],
        ['resolution', 'done'],
      ] as const) {
        it(`refuses to write the command-only field ${field} and writes nothing`, async () => {
          const before = await count('tickets');
          const res = await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'x', [field]: value } });
          expect(res.status).to.equal(403);
          expect(errorOf(res)).to.include({ code: 'PROTECTED_FIELD_MUTATION', retryable: false });
          expect(errorOf(res).details?.[0]).to.include({ field });
          expect(await count('tickets')).to.equal(before);
        });
      }

      const invalid: Array<[string, unknown, string, string]> = [
        ['a missing required field', { email: 'a@b.co' }, 'name', 'REQUIRED'],
        ['a bad e-mail', { name: 'A', email: 'not-an-email' }, 'email', 'INVALID_TYPE'],
        ['a wrong type', { name: 42, email: 'a@b.co' }, 'name', 'INVALID_TYPE'],
        ['an unknown field', { name: 'A', email: 'a@b.co', nickname: 'x' }, 'nickname', 'UNKNOWN_FIELD'],
        [
          'a client-chosen id',
          { id: '00000000-0000-4000-8000-000000000000', name: 'A', email: 'a@b.co' },
          'id',
          'READ_ONLY',
        ],
        ['null for a required field', { name: null, email: 'a@b.co' }, 'name', 'REQUIRED'],
      ];
      for (const [label, body, field, code] of invalid) {
        it(`answers 400 VALIDATION_FAILED for ${label} and writes nothing`, async () => {
          const before = await count('customers');
          const res = await call('POST', '/api/customers', '/api/customers', { json: body });
          expect(res.status).to.equal(400);
          expect(errorOf(res)).to.include({ code: 'VALIDATION_FAILED', retryable: false });
          expect(errorOf(res).details?.map((d) => `${d.field}:${d.code}`)).to.include(`${field}:${code}`);
          expect(await count('customers')).to.equal(before);
        });
      }

      it('reports every invalid field at once', async () => {
        const res = await call('POST', '/api/customers', '/api/customers', { json: { name: 1, email: 2, extra: 3 } });
        expect(res.status).to.equal(400);
        expect(
          errorOf(res)
            .details?.map((d) => d.field)
            .sort(),
        ).to.deep.equal(['email', 'extra', 'name']);
      });

      for (const key of ['__proto__', 'constructor', 'prototype']) {
        it(`refuses the prototype key ${key}`, async () => {
          const res = await call('POST', '/api/customers', '/api/customers', {
            body: `{"name":"P","email":"p@example.com","${key}":{"polluted":true}}`,
            headers: { 'content-type': 'application/json' },
          });
          expect(res.status).to.equal(400);
          expect(errorOf(res).details?.[0]).to.include({ field: key, code: 'FORBIDDEN_KEY' });
          expect(({} as Rec).polluted).to.equal(undefined);
        });
      }

      it('checks that a Ref names an existing record (422) and accepts one that does', async () => {
        const missing = await call('POST', '/api/tickets', '/api/tickets', {
          json: { title: 't', customerId: '11111111-1111-4111-8111-111111111111' },
        });
        expect(missing.status).to.equal(422);
        expect(errorOf(missing)).to.include({ code: 'REFERENCE_NOT_FOUND', retryable: false });
        const malformed = await call('POST', '/api/tickets', '/api/tickets', {
          json: { title: 't', customerId: 'nope' },
        });
        expect(malformed.status).to.equal(400);
        const c = (
          await call('POST', '/api/customers', '/api/customers', { json: { name: 'Bo', email: 'bo@example.com' } })
        ).body as Rec;
        const ok = await call('POST', '/api/tickets', '/api/tickets', { json: { title: 't', customerId: c.id } });
        expect(ok.status).to.equal(201);
        expect((ok.body as Rec).customerId).to.equal(c.id);
      });

      it('refuses Enum values outside the declared list', async () => {
        const res = await call('POST', '/api/tickets', '/api/tickets', { json: { title: 't', priority: 'urgent' } });
        expect(res.status).to.equal(400);
        expect(errorOf(res).details?.[0]).to.include({ field: 'priority', code: 'INVALID_TYPE' });
      });

      it('answers 409 UNIQUE_CONFLICT for a taken unique value', async () => {
        await call('POST', '/api/customers', '/api/customers', { json: { name: 'U', email: 'unique@example.com' } });
        const res = await call('POST', '/api/customers', '/api/customers', {
          json: { name: 'U2', email: 'unique@example.com' },
        });
        expect(res.status).to.equal(409);
        expect(errorOf(res)).to.include({ code: 'UNIQUE_CONFLICT', retryable: false });
      });

      it('answers creates sent at once as it would answer each alone: one of each pair of e-mails wins', async () => {
        const before = await count('customers');
        // Six pairs of addresses that differ only in letter case, sent together: they reach the
        // server in a few turns of its event loop, whose writes commit together (the group commit),
        // where the later of a pair fails alone.
        const emails = Array.from({ length: 6 }, (_, i) => [`pair${i}@example.com`, `PAIR${i}@example.com`]).flat();
        const answers = await Promise.all(
          emails.map((email, i) =>
            call('POST', '/api/customers', '/api/customers', { json: { name: `P${i}`, email } }),
          ),
        );
        for (let pair = 0; pair < 6; pair++) {
          const [a, b] = [answers[2 * pair], answers[2 * pair + 1]];
          expect([a.status, b.status].sort(), `pair ${pair}`).to.deep.equal([201, 409]);
          const lost = a.status === 409 ? a : b;
          expect(errorOf(lost)).to.include({ code: 'UNIQUE_CONFLICT', retryable: false });
          expect(errorOf(lost).details?.[0]).to.include({ field: 'email' });
        }
        expect(await count('customers')).to.equal(before + 6);
        // Each customer created has its audit record: nothing of a refused create stayed.
        for (const res of answers.filter((r) => r.status === 201)) {
          const trail = await call('GET', '/api/audit', `/api/audit?entity=Customer&recordId=${(res.body as Rec).id}`);
          expect((trail.body as { items: Rec[] }).items.map((e) => e.operation)).to.deep.equal(['Customer.create']);
        }
      });
    });

    describe('bodies', () => {
      it('answers 400 INVALID_JSON for malformed JSON', async () => {
        const res = await call('POST', '/api/tickets', '/api/tickets', {
          body: '{"title": ',
          headers: { 'content-type': 'application/json' },
        });
        expect(res.status).to.equal(400);
        expect(errorOf(res).code).to.equal('INVALID_JSON');
      });

      it('answers 413 for a body over 1 MB', async () => {
        const res = await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'x'.repeat(1_100_000) } });
        expect(res.status).to.equal(413);
        expect(errorOf(res)).to.include({ code: 'PAYLOAD_TOO_LARGE', retryable: false });
      });

      it('answers 415 for a body that is not JSON', async () => {
        const res = await call('POST', '/api/tickets', '/api/tickets', {
          body: 'title=x',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        });
        expect(res.status).to.equal(415);
        expect(errorOf(res).code).to.equal('UNSUPPORTED_MEDIA_TYPE');
      });

      it('answers 400 for a JSON body that is not an object', async () => {
        for (const body of ['[1,2]', 'null', '"text"']) {
          const res = await call('POST', '/api/tickets', '/api/tickets', {
            body,
            headers: { 'content-type': 'application/json' },
          });
          expect(res.status, body).to.equal(400);
          expect(errorOf(res).code).to.equal('VALIDATION_FAILED');
        }
      });

      it("accepts a person's session with its CSRF token as well as an API key", async () => {
        const res = await call('POST', '/api/tickets', '/api/tickets', {
          json: { title: 'from a person' },
          as: 'admin',
        });
        expect(res.status).to.equal(201);
      });
    });

    // The front door serves /api/<collection> and /api/<collection>/<id> from its table; the other
    // forms Express accepts for the same routes reach the same route functions through Express.
    describe('URL forms', () => {
      const agent = { authorization: `Bearer ${ENV.TRIAGE_API_KEY}` };
      const get = (urlPath: string, method = 'GET') => request(app.url, method, urlPath, { headers: agent });

      it('answers a trailing slash and other letter case like the canonical path', async () => {
        const created = (await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'forms' } })).body as Rec;
        const list = await get('/api/tickets?limit=3&offset=1');
        expect(list.status).to.equal(200);
        for (const form of ['/api/tickets/?limit=3&offset=1', '/API/Tickets?limit=3&offset=1']) {
          const res = await get(form);
          expect(res.status, form).to.equal(200);
          expect(res.body, form).to.deep.equal(list.body);
        }
        for (const form of [
          `/api/tickets/${created.id}/`,
          `/api/TICKETS/${created.id}`,
          `/api/tickets/${encodeURIComponent(created.id as string)}?ignored=1`,
        ]) {
          const res = await get(form);
          expect(res.status, form).to.equal(200);
          expect(res.body, form).to.deep.equal(created);
        }
        const viaSlash = await request(app.url, 'POST', '/api/tickets/', {
          json: { title: 'slash' },
          headers: { ...agent, 'idempotency-key': freshKey() },
        });
        expect(viaSlash.status).to.equal(201);
        expect(viaSlash.headers.get('location')).to.equal(`/api/tickets/${(viaSlash.body as Rec).id}`);
        const head = await get(`/api/tickets/${created.id}`, 'HEAD');
        expect(head.status).to.equal(200);
        expect(head.text).to.equal('');
      });

      it('runs the pipeline on every form: no credential is no access, and errors are the envelope', async () => {
        for (const form of ['/api/tickets', '/api/tickets/', '/API/TICKETS']) {
          const res = await request(app.url, 'POST', form, { json: { title: 'anonymous' } });
          expect(res.status, form).to.equal(401);
          expect(errorOf(res).code, form).to.equal('UNAUTHENTICATED');
          expect(res.headers.get('x-trace-id'), form).to.match(/^[0-9a-f]{32}$/);
        }
        const patch = await get('/api/tickets/01J00000000000000000000000', 'PATCH');
        expect(patch.status).to.equal(405);
        expect(patch.headers.get('allow')).to.equal('GET, HEAD, PUT, DELETE');
        expect(errorOf(patch).code).to.equal('METHOD_NOT_ALLOWED');
      });

      it('answers 400 for an id that is not valid percent-encoding', async () => {
        for (const [method, json] of [
          ['GET', undefined],
          ['PUT', { title: 'x' }],
          ['DELETE', undefined],
        ] as const) {
          const res = await request(app.url, method, '/api/tickets/%E0%A4%A', {
            json,
            headers: { ...agent, 'idempotency-key': freshKey() },
          });
          expect(res.status, method).to.equal(400);
          expect(errorOf(res), method).to.include({ code: 'VALIDATION_FAILED', retryable: false });
          expect(errorOf(res).details?.[0]?.code, method).to.equal('INVALID_PATH');
        }
      });

      // PostgreSQL refuses a NUL byte in any text it is sent: these were 500s there, 404s on SQLite.
      it('answers 404 for an id with a NUL byte on every route that takes one', async () => {
        const routes: Array<[string, string, unknown]> = [
          ['GET', '/api/tickets/a%00b', undefined],
          ['PUT', '/api/tickets/a%00b', { title: 'x' }],
          ['DELETE', '/api/tickets/a%00b', undefined],
          ['POST', '/api/commands/start_ticket/a%00b', {}],
          ['GET', '/api/jobs/a%00b', undefined],
          ['GET', '/api/audit?entity=Ticket&recordId=a%00b', undefined],
        ];
        for (const [method, urlPath, json] of routes) {
          const res = await request(app.url, method, urlPath, {
            json,
            headers: { ...agent, 'idempotency-key': freshKey() },
          });
          expect(res.status, `${method} ${urlPath}: ${res.text}`).to.equal(404);
          expect(errorOf(res).code, `${method} ${urlPath}`).to.equal('NOT_FOUND');
        }
      });
    });

    describe('read and list', () => {
      it('gets a record, and 404s one that does not exist', async () => {
        const created = (await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'get me' } })).body as Rec;
        const res = await call('GET', '/api/tickets/{id}', `/api/tickets/${created.id}`);
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal(created);
        const missing = await call('GET', '/api/tickets/{id}', '/api/tickets/01J00000000000000000000000');
        expect(missing.status).to.equal(404);
        expect(errorOf(missing)).to.include({ code: 'NOT_FOUND', retryable: false });
      });

      it('lists with limit 100 by default, in a stable order, paging without gaps or repeats', async () => {
        for (let i = 0; i < 5; i++)
          await call('POST', '/api/comments', '/api/comments', {
            json: { ticketId: await someTicketId(), authorId: 'u', body: `c${i}` },
          });
        const all = (await call('GET', '/api/comments', '/api/comments')).body as {
          items: Rec[];
          limit: number;
          offset: number;
          hasMore: boolean;
        };
        expect(all).to.include({ limit: 100, offset: 0, hasMore: false });
        const ids = all.items.map((c) => c.id as string);
        expect(ids).to.deep.equal([...ids].sort());
        const paged: string[] = [];
        for (let offset = 0; ; offset += 2) {
          const page = (await call('GET', '/api/comments', `/api/comments?limit=2&offset=${offset}`)).body as {
            items: Rec[];
            hasMore: boolean;
          };
          paged.push(...page.items.map((c) => c.id as string));
          if (!page.hasMore) break;
        }
        expect(paged).to.deep.equal(ids);
      });

      it('caps limit at 1000 and refuses bad paging values with 400 INVALID_QUERY', async () => {
        expect((await call('GET', '/api/tickets', '/api/tickets?limit=1000')).status).to.equal(200);
        // offset goes up to 2^53-1, as openapi.json says; one past it is refused, not rounded.
        expect((await call('GET', '/api/tickets', '/api/tickets?offset=9007199254740991')).status).to.equal(200);
        const bad = [
          'limit=1001',
          'limit=0',
          'limit=-1',
          'limit=abc',
          'limit=1.5',
          'offset=-1',
          'offset=x',
          'sort=title',
          'limit=1&limit=2',
        ];
        for (const q of [...bad, 'offset=9007199254740992', 'offset=10000000000000000']) {
          const res = await call('GET', '/api/tickets', `/api/tickets?${q}`);
          expect(res.status, q).to.equal(400);
          expect(errorOf(res).code, q).to.equal('INVALID_QUERY');
        }
      });

      async function someTicketId(): Promise<string> {
        return ((await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'for comments' } })).body as Rec)
          .id as string;
      }
    });

    describe('update', () => {
      let ticket: Rec;
      beforeEach(async () => {
        ticket = (await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'before', body: 'text' } }))
          .body as Rec;
      });

      it('changes the given fields only', async () => {
        const res = await call('PUT', '/api/tickets/{id}', `/api/tickets/${ticket.id}`, {
          json: { title: 'after', priority: 'high' },
        });
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal({ ...ticket, title: 'after', priority: 'high' });
        expect((await call('GET', '/api/tickets/{id}', `/api/tickets/${ticket.id}`)).body).to.deep.equal(res.body);
      });

      it('sets a nullable field to null, refuses null for a required one', async () => {
        expect(
          ((await call('PUT', '/api/tickets/{id}', `/api/tickets/${ticket.id}`, { json: { body: null } })).body as Rec)
            .body,
        ).to.equal(null);
        const res = await call('PUT', '/api/tickets/{id}', `/api/tickets/${ticket.id}`, { json: { title: null } });
        expect(res.status).to.equal(400);
        expect(errorOf(res).details?.[0]).to.include({ field: 'title', code: 'REQUIRED' });
      });

      it('refuses to change a command-only field, and changes nothing', async () => {
        const res = await call('PUT', '/api/tickets/{id}', `/api/tickets/${ticket.id}`, {
          json: { title: 'sneaky', status: 'closed' },
        });
        expect(res.status).to.equal(403);
        expect(errorOf(res).code).to.equal('PROTECTED_FIELD_MUTATION');
        expect((await call('GET', '/api/tickets/{id}', `/api/tickets/${ticket.id}`)).body).to.deep.equal(ticket);
      });

      it('accepts a GET-then-PUT round trip that sends command-only fields unchanged', async () => {
        const res = await call('PUT', '/api/tickets/{id}', `/api/tickets/${ticket.id}`, {
          json: { ...ticket, title: 'round trip' },
        });
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal({ ...ticket, title: 'round trip' });
      });

      it('validates like create, and a rejected update changes nothing', async () => {
        const res = await call('PUT', '/api/tickets/{id}', `/api/tickets/${ticket.id}`, {
          json: { title: 'ok', priority: 'urgent', bogus: 1 },
        });
        expect(res.status).to.equal(400);
        expect(
          errorOf(res)
            .details?.map((d) => d.field)
            .sort(),
        ).to.deep.equal(['bogus', 'priority']);
        expect((await call('GET', '/api/tickets/{id}', `/api/tickets/${ticket.id}`)).body).to.deep.equal(ticket);
      });

      it('refuses to change the id', async () => {
        const res = await call('PUT', '/api/tickets/{id}', `/api/tickets/${ticket.id}`, {
          json: { id: '01J00000000000000000000000' },
        });
        expect(res.status).to.equal(400);
        expect(errorOf(res).details?.[0]).to.include({ field: 'id', code: 'READ_ONLY' });
      });

      it('refuses an update its rule forbids (403), changing nothing, though sent with the read', async () => {
        // The reporter key (role viewer) may read tickets but not update them: the rule is checked on
        // the record as locked, after the UPDATE that travelled with the lock, which rolls back.
        const headers = { authorization: `Bearer ${ENV.REPORTER_API_KEY}`, 'idempotency-key': freshKey() };
        const res = await request(app.url, 'PUT', `/api/tickets/${ticket.id}`, {
          json: { title: 'not yours' },
          headers,
        });
        api.check('PUT', '/api/tickets/{id}', res);
        expect(res.status, res.text).to.equal(403);
        expect((await call('GET', '/api/tickets/{id}', `/api/tickets/${ticket.id}`)).body).to.deep.equal(ticket);
      });

      it('answers 404 for a missing record', async () => {
        const res = await call('PUT', '/api/tickets/{id}', '/api/tickets/01J00000000000000000000000', {
          json: { title: 'x' },
        });
        expect(res.status).to.equal(404);
        expect(errorOf(res).code).to.equal('NOT_FOUND');
      });
    });

    describe('delete', () => {
      it('deletes, then the record is gone', async () => {
        const t = (await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'bye' } })).body as Rec;
        const res = await call('DELETE', '/api/tickets/{id}', `/api/tickets/${t.id}`, { as: 'admin' });
        expect(res.status).to.equal(204);
        expect((await call('GET', '/api/tickets/{id}', `/api/tickets/${t.id}`)).status).to.equal(404);
        expect((await call('DELETE', '/api/tickets/{id}', `/api/tickets/${t.id}`, { as: 'admin' })).status).to.equal(
          404,
        );
      });

      it('refuses to delete a record others still require (409), and clears optional references', async () => {
        const t = (await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'has comments' } })).body as Rec;
        await call('POST', '/api/comments', '/api/comments', { json: { ticketId: t.id, authorId: 'u', body: 'b' } });
        const res = await call('DELETE', '/api/tickets/{id}', `/api/tickets/${t.id}`, { as: 'admin' });
        expect(res.status).to.equal(409);
        expect(errorOf(res)).to.include({ code: 'REFERENCE_CONFLICT', retryable: false });
        expect((await call('GET', '/api/tickets/{id}', `/api/tickets/${t.id}`)).status).to.equal(200);

        const c = (
          await call('POST', '/api/customers', '/api/customers', { json: { name: 'Gone', email: 'gone@example.com' } })
        ).body as Rec;
        const owned = (
          await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'orphan', customerId: c.id } })
        ).body as Rec;
        expect(
          (await call('DELETE', '/api/customers/{id}', `/api/customers/${c.id}`, { as: 'admin' })).status,
        ).to.equal(204);
        expect(((await call('GET', '/api/tickets/{id}', `/api/tickets/${owned.id}`)).body as Rec).customerId).to.equal(
          null,
        );
      });
    });

    it('answers unknown routes with the envelope', async () => {
      const res = await request(app.url, 'GET', '/api/nothing-here');
      expect(res.status).to.equal(404);
      expect(errorOf(res)).to.include({ code: 'ROUTE_NOT_FOUND', retryable: false });
      expect(res.headers.get('x-trace-id')).to.match(/^[0-9a-f]{32}$/);
    });

    it('gives every request its own trace id', async () => {
      const ids = new Set<string | null>();
      for (let i = 0; i < 5; i++)
        ids.add((await call('GET', '/api/tickets', '/api/tickets?limit=1')).headers.get('x-trace-id'));
      expect(ids.size).to.equal(5);
    });

    it('opens a ticket from a signed inbound e-mail delivery, once', async () => {
      const body = JSON.stringify({ subject: `printer jam ${freshKey()}`, text: 'third floor' });
      const at = String(Math.floor(Date.now() / 1000));
      const signature = createHmac('sha256', ENV.INBOUND_EMAIL_SECRET).update(`${at}.${body}`).digest('hex');
      const headers = {
        'content-type': 'application/json',
        'x-webhook-timestamp': at,
        'x-webhook-signature': `sha256=${signature}`,
      };
      const delivered = await request(app.url, 'POST', '/webhooks/inbound-email', { body, headers });
      api.check('POST', '/webhooks/inbound-email', delivered);
      expect(delivered.status, delivered.text).to.equal(202);
      const replayed = await request(app.url, 'POST', '/webhooks/inbound-email', { body, headers });
      api.check('POST', '/webhooks/inbound-email', replayed);
      expect(errorOf(replayed).code).to.equal('WEBHOOK_REPLAYED');
      const unsigned = await request(app.url, 'POST', '/webhooks/inbound-email', {
        body,
        headers: { 'content-type': 'application/json' },
      });
      expect(unsigned.status).to.equal(401);
      const { subject } = JSON.parse(body) as { subject: string };
      for (let i = 0; i < 100; i++) {
        const tickets = ((await call('GET', '/api/tickets', '/api/tickets?limit=1000')).body as { items: Rec[] }).items;
        const opened = tickets.filter((t) => t.title === subject);
        if (opened.length) {
          expect(opened).to.have.length(1);
          expect(opened[0]).to.include({ body: 'third floor', status: 'open' });
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error('the delivery opened no ticket');
    });

    it('keeps its data across a restart without applying migrations again', async () => {
      const t = (await call('POST', '/api/tickets', '/api/tickets', { json: { title: 'durable' } })).body as Rec;
      await app.stop();
      app = await startApp(appDir, env);
      expect(app.output()).not.to.contain('applied migrations');
      expect((await call('GET', '/api/tickets/{id}', `/api/tickets/${t.id}`)).body).to.deep.equal(t);
    });
  });
