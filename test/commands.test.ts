// Domain commands end to end (issue 4): the reference helpdesk and a small "lab" blueprint
// (test/fixtures/commands/lab) are generated with the real CLI and built in-process, once on
// SQLite and once on PostgreSQL, so a test can subscribe to the app's EventBus and read its
// database through a connection of its own, while every request still goes over real HTTP and
// every response is checked against the generated openapi.json.
//
// Covered: operation ids and routes; the order of checks with their codes; mutation values;
// sessions; the CloseTicket handler (ctx.db, audit, events after commit); the audit trail and
// GET /api/audit; parallel executions; handler faults and field protection on handler writes;
// relations read by a policy; optional inputs; the OpenAPI operations; the collision check.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { addUser, bp, freshDir, generate, request, ROOT, type HttpResponse } from './support/apps.ts';
import {
  Api,
  type AppEvent,
  type AppOnDatabase,
  type AuditRecord,
  bootOnDatabase,
  capturingConsoleError,
  errorOf,
  type Rec,
  SessionClient,
} from './support/commands/harness.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

const HELPDESK_KEYS = {
  TRIAGE_API_KEY: 'triage-key-0123456789',
  REPORTER_API_KEY: 'reporter-key-0123456789',
  SESSION_SECRET: 'commands-test-session-secret-0123456789',
};
const TRIAGE = HELPDESK_KEYS.TRIAGE_API_KEY;
const REPORTER = HELPDESK_KEYS.REPORTER_API_KEY;
const MISSING_ULID = '01J00000000000000000000000';
const PASSWORD = 'long-password-1';
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let keySeq = 0;
/** A fresh Idempotency-Key: API-key actors must send one on every mutation. */
const k = (label = 'k') => `${label}-${++keySeq}-${Date.now()}`;

for (const database of DATABASES)
  describe(`domain commands on the reference helpdesk (in-process, over HTTP, ${database})`, function () {
    this.timeout(60_000);
    let hd: AppOnDatabase;
    let api: Api;
    let admin: SessionClient;
    let person: SessionClient;

    const newTicket = async (body: Rec = {}) =>
      api.create('tickets', { title: 'Printer on fire', ...body }, { idem: k('create') });
    const started = async () => {
      const t = await newTicket();
      const res = await api.command('start_ticket', t.id as string, undefined, { idem: k('start') });
      expect(res.status, res.text).to.equal(200);
      return res.body as Rec;
    };
    const resolved = async () => {
      const t = await started();
      const res = await api.command(
        'resolve_ticket',
        t.id as string,
        { resolution: 'replaced the toner' },
        { idem: k('resolve') },
      );
      expect(res.status, res.text).to.equal(200);
      return res.body as Rec;
    };
    const ticketRow = (id: string) => hd.rows.get('SELECT * FROM "Ticket" WHERE "id" = ?', [id]);
    const auditCount = (id: string) => hd.rows.count('_bp_audit', '"recordId" = ?', [id]);

    /** A refused command leaves the stored row and the trail exactly as they were, and publishes nothing. */
    const expectUntouched = async (id: string, run: () => Promise<HttpResponse>): Promise<HttpResponse> => {
      const row = await ticketRow(id);
      const audits = await auditCount(id);
      const events = hd.delivered.length;
      const res = await run();
      expect(await ticketRow(id)).to.deep.equal(row);
      expect(await auditCount(id)).to.equal(audits);
      expect(hd.delivered.length).to.equal(events);
      return res;
    };

    before(async () => {
      const appDir = path.join(freshDir(`commands-helpdesk-${database}`), 'app');
      await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
      hd = await bootOnDatabase(appDir, await databaseUrl(database, 'commands'), HELPDESK_KEYS);
      api = new Api(() => hd.url, appDir, TRIAGE);
      // People sign in with the users the real CLI creates, against the same database.
      for (const [email, role] of [
        ['admin@example.com', 'admin'],
        ['agent.person@example.com', 'agent'],
      ])
        addUser(appDir, { DATABASE_URL: hd.databaseUrl }, email, PASSWORD, [role]);
      admin = await SessionClient.login(hd.url, 'admin@example.com', PASSWORD);
      person = await SessionClient.login(hd.url, 'agent.person@example.com', PASSWORD);
    });
    after(async () => hd?.close());

    describe('operation ids', () => {
      it('serves each command at the snake_case form of its name, and regenerating keeps them', async () => {
        const { COMMANDS } = await hd.load<{ COMMANDS: Array<{ name: string; operationId: string }> }>(
          'src/commands.ts',
        );
        expect(COMMANDS.map((c) => [c.name, c.operationId])).to.deep.equal([
          ['CloseTicket', 'close_ticket'],
          ['ResolveTicket', 'resolve_ticket'],
          ['StartTicket', 'start_ticket'],
        ]);
        // Regenerating the same blueprint rewrites nothing: the ids (and routes) are stable.
        const again = bp(['generate', 'fixtures/helpdesk/helpdesk.toml', '-o', hd.appDir]);
        expect(again.status, again.stderr).to.equal(0);
        expect(again.stdout).to.match(/: 0 written, \d+ unchanged\n$/);
      });

      it('answers 404 ROUTE_NOT_FOUND to other spellings and unknown ids, 405 with Allow to other verbs', async () => {
        const t = await newTicket();
        // Not in openapi.json (there is no such operation), so a plain request rather than api.call.
        const auth = { authorization: `Bearer ${TRIAGE}` };
        for (const op of ['StartTicket', 'startTicket', 'start-ticket', 'startticket', 'reopen_ticket']) {
          const res = await request(hd.url, 'POST', `/api/commands/${op}/${t.id}`, {
            json: {},
            headers: { ...auth, 'idempotency-key': k() },
          });
          expect(res.status, op).to.equal(404);
          expect(errorOf(res)).to.include({ code: 'ROUTE_NOT_FOUND', retryable: false });
        }
        const get = await request(hd.url, 'GET', `/api/commands/start_ticket/${t.id}`, { headers: auth });
        expect(get.status).to.equal(405);
        expect(get.headers.get('allow')).to.equal('POST');
        expect(errorOf(get).code).to.equal('METHOD_NOT_ALLOWED');
        expect((await ticketRow(t.id as string))?.status).to.equal('open');
      });

      it('runs a command the same through the front door and through the forms Express serves', async () => {
        const auth = { authorization: `Bearer ${TRIAGE}` };
        const [a, b] = [await newTicket(), await newTicket()];
        const direct = await request(hd.url, 'POST', `/api/commands/start_ticket/${a.id}`, {
          json: {},
          headers: { ...auth, 'idempotency-key': k() },
        });
        const slash = await request(hd.url, 'POST', `/api/commands/start_ticket/${b.id}/`, {
          json: {},
          headers: { ...auth, 'idempotency-key': k() },
        });
        for (const [res, t] of [
          [direct, a],
          [slash, b],
        ] as const) {
          expect(res.status).to.equal(200);
          expect(res.body).to.include({ id: t.id, status: 'in_progress', assigneeId: 'agent-triage' });
          expect((await ticketRow(t.id as string))?.status).to.equal('in_progress');
        }
        const malformed = await request(hd.url, 'POST', '/api/commands/start_ticket/%E0%A4%A', {
          json: {},
          headers: { ...auth, 'idempotency-key': k() },
        });
        expect(malformed.status).to.equal(400);
        expect(errorOf(malformed).code).to.equal('VALIDATION_FAILED');
      });
    });

    describe('order of checks', () => {
      it('401 UNAUTHENTICATED for an anonymous caller, before input and record are looked at', async () => {
        const res = await api.command('resolve_ticket', MISSING_ULID, { bogus: 1 }, { key: null });
        expect(res.status).to.equal(401);
        expect(errorOf(res)).to.include({ code: 'UNAUTHENTICATED', retryable: false });
      });

      it('403 INSUFFICIENT_SCOPE for an API key without the command scope, before input and record', async () => {
        const t = await newTicket();
        const res = await expectUntouched(t.id as string, () =>
          api.command('start_ticket', t.id as string, undefined, { key: REPORTER, idem: k() }),
        );
        expect(res.status).to.equal(403);
        expect(errorOf(res)).to.include({ code: 'INSUFFICIENT_SCOPE', retryable: false });
        expect(errorOf(res).message).to.contain('tickets.write');
        const invalid = await api.command('resolve_ticket', MISSING_ULID, { bogus: 1 }, { key: REPORTER, idem: k() });
        expect(errorOf(invalid).code).to.equal('INSUFFICIENT_SCOPE');
      });

      // Every case targets a missing record: input is validated before the record is loaded.
      const invalid: Array<[string, string | unknown, string[]]> = [
        ['a missing required input', {}, ['resolution:REQUIRED']],
        ['no body at all', undefined, ['resolution:REQUIRED']],
        ['null for a required input', { resolution: null }, ['resolution:REQUIRED']],
        ['a wrong type', { resolution: 42 }, ['resolution:INVALID_TYPE']],
        ['an unknown input key', { resolution: 'ok', priority: 'high' }, ['priority:UNKNOWN_FIELD']],
        ['every problem at once', { resolution: false, extra: 1 }, ['extra:UNKNOWN_FIELD', 'resolution:INVALID_TYPE']],
      ];
      for (const [label, body, expected] of invalid) {
        it(`400 VALIDATION_FAILED for ${label}`, async () => {
          const res = await api.command('resolve_ticket', MISSING_ULID, body, { idem: k() });
          expect(res.status, res.text).to.equal(400);
          expect(errorOf(res)).to.include({ code: 'VALIDATION_FAILED', retryable: false });
          expect(
            errorOf(res)
              .details?.map((d) => `${d.field}:${d.code}`)
              .sort(),
          ).to.deep.equal(expected);
        });
      }

      it('400 VALIDATION_FAILED for a __proto__ key or a body that is not an object, polluting nothing', async () => {
        const proto = await api.command('resolve_ticket', MISSING_ULID, undefined, {
          raw: '{"resolution":"x","__proto__":{"polluted":true}}',
          idem: k(),
        });
        expect(proto.status).to.equal(400);
        expect(errorOf(proto).code).to.equal('VALIDATION_FAILED');
        expect(errorOf(proto).details?.map((d) => d.field)).to.deep.equal(['__proto__']);
        expect(({} as Rec).polluted).to.equal(undefined);
        for (const raw of ['[1,2]', '"text"', 'null']) {
          const res = await api.command('start_ticket', MISSING_ULID, undefined, { raw, idem: k() });
          expect(res.status, raw).to.equal(400);
          expect(errorOf(res).details?.[0]).to.include({ code: 'NOT_AN_OBJECT' });
        }
      });

      it('404 NOT_FOUND for a record that does not exist, before policy and availableWhen', async () => {
        const res = await api.command('resolve_ticket', MISSING_ULID, { resolution: 'x' }, { idem: k() });
        expect(res.status).to.equal(404);
        expect(errorOf(res)).to.include({ code: 'NOT_FOUND', retryable: false });
      });

      it(
        '403 FORBIDDEN when the policy fails (ResolveTicket needs record.assigneeId == actor.id), ' +
          'before availableWhen',
        async () => {
          // Open and unassigned: both the policy and availableWhen fail; the policy is reported.
          const open = await newTicket();
          const res = await expectUntouched(open.id as string, () =>
            api.command('resolve_ticket', open.id as string, { resolution: 'x' }, { idem: k() }),
          );
          expect(res.status).to.equal(403);
          expect(errorOf(res)).to.include({ code: 'FORBIDDEN', retryable: false });
          // Started by the triage agent: another agent (a person with the agent role) is not the assignee.
          const mine = await started();
          const other = await expectUntouched(mine.id as string, () =>
            api.command('resolve_ticket', mine.id as string, { resolution: 'x' }, { session: person }),
          );
          expect(errorOf(other).code).to.equal('FORBIDDEN');
          // The admin is no agent: StartTicket's policy refuses, though the ticket is open.
          const fresh = await newTicket();
          const byAdmin = await expectUntouched(fresh.id as string, () =>
            api.command('start_ticket', fresh.id as string, undefined, { session: admin }),
          );
          expect(byAdmin.status).to.equal(403);
          expect(errorOf(byAdmin).code).to.equal('FORBIDDEN');
        },
      );

      it('409 COMMAND_UNAVAILABLE when availableWhen does not hold for the current state', async () => {
        const t = await started();
        const again = await expectUntouched(t.id as string, () =>
          api.command('start_ticket', t.id as string, undefined, { idem: k() }),
        );
        expect(again.status).to.equal(409);
        expect(errorOf(again)).to.include({ code: 'COMMAND_UNAVAILABLE', retryable: false });
        const close = await expectUntouched(t.id as string, () =>
          api.command('close_ticket', t.id as string, undefined, { idem: k() }),
        );
        expect(errorOf(close).code).to.equal('COMMAND_UNAVAILABLE');
      });
    });

    describe('success and mutation values', () => {
      it('StartTicket answers 200 with the updated record: a literal and actor.id', async () => {
        const t = await newTicket({ body: 'smoke', priority: 'high' });
        const res = await api.command('start_ticket', t.id as string, undefined, { idem: k() });
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal({ ...t, status: 'in_progress', assigneeId: 'agent-triage' });
        expect(await api.get('tickets', t.id as string)).to.deep.equal(res.body);
      });

      it('ResolveTicket writes input.resolution, now, and the literal status', async () => {
        const t = await started();
        const before = Date.now();
        const res = await api.command(
          'resolve_ticket',
          t.id as string,
          { resolution: 'replaced the toner' },
          { idem: k() },
        );
        const after = Date.now();
        expect(res.status).to.equal(200);
        const body = res.body as Rec;
        expect(body).to.deep.equal({
          ...t,
          status: 'resolved',
          resolution: 'replaced the toner',
          resolvedAt: body.resolvedAt,
        });
        expect(body.resolvedAt).to.match(ISO_MS);
        expect(Date.parse(body.resolvedAt as string)).to.be.within(before, after);
      });

      it('takes the actor from a session: no Idempotency-Key needed, assigneeId is the user id', async () => {
        const t = await newTicket();
        const res = await api.command('start_ticket', t.id as string, undefined, { session: person });
        expect(res.status, res.text).to.equal(200);
        expect((res.body as Rec).assigneeId).to.equal(person.actor.id);
        const [entry] = await api.trail('Ticket', t.id as string);
        expect(entry).to.include({
          operation: 'command:StartTicket',
          actorId: person.actor.id,
          credentialId: `session:${person.actor.id}`,
          idempotencyKey: null,
        });
      });

      it('refuses a session mutation without the CSRF token (403 CSRF_FAILED)', async () => {
        const t = await newTicket();
        person.withoutCsrf = true;
        try {
          const res = await expectUntouched(t.id as string, () =>
            api.command('start_ticket', t.id as string, undefined, { session: person }),
          );
          expect(res.status).to.equal(403);
          expect(errorOf(res).code).to.equal('CSRF_FAILED');
        } finally {
          person.withoutCsrf = false;
        }
      });
    });

    describe('the CloseTicket handler', () => {
      it('closes through ctx.db, records its audit entry, and its event is delivered after the commit', async () => {
        const t = await resolved();
        const seenAtDelivery: Array<Promise<unknown>> = [];
        // The test's own connection sees only committed data, read as the event is delivered: the
        // row must already be closed.
        const off = hd.events.subscribe(
          (e) => void seenAtDelivery.push(ticketRow(e.payload.ticketId as string).then((row) => row?.status)),
        );
        const before = hd.delivered.length;
        const res = await api.command('close_ticket', t.id as string, undefined, { session: admin });
        off();
        expect(res.status, res.text).to.equal(200);
        expect(res.body).to.deep.equal({ ...t, status: 'closed' });
        expect((await ticketRow(t.id as string))?.status).to.equal('closed');

        const events = hd.delivered.slice(before);
        expect(events).to.deep.equal([
          {
            name: 'ticket.closed',
            payload: { ticketId: t.id, customerId: null, closedBy: admin.actor.id, status: 'closed' },
            source: { command: 'CloseTicket', traceId: res.headers.get('x-trace-id') ?? undefined },
          } satisfies AppEvent,
        ]);
        expect(await Promise.all(seenAtDelivery)).to.deep.equal(['closed']);

        const [handlerEntry, commandEntry] = await api.trail('Ticket', t.id as string);
        expect(handlerEntry).to.include({
          operation: 'command:CloseTicket:ticket.closed',
          actorId: admin.actor.id,
          traceId: res.headers.get('x-trace-id'),
        });
        expect(handlerEntry.detail).to.deep.equal({ previousStatus: 'resolved' });
        expect(commandEntry.operation).to.equal('command:CloseTicket');
        expect(commandEntry.changes).to.deep.equal({ status: { before: 'resolved', after: 'closed' } });
      });

      it('publishes nothing again when the command is replayed', async () => {
        const t = await resolved();
        const key = k('close');
        const first = await api.command('close_ticket', t.id as string, undefined, { idem: key });
        expect(first.status).to.equal(200);
        const events = hd.delivered.length;
        const audits = await auditCount(t.id as string);
        const again = await api.command('close_ticket', t.id as string, undefined, { idem: key });
        expect(again.status).to.equal(200);
        expect(again.headers.get('idempotent-replayed')).to.equal('true');
        expect(again.body).to.deep.equal(first.body);
        expect(hd.delivered.length).to.equal(events);
        expect(await auditCount(t.id as string)).to.equal(audits);
      });
    });

    describe('audit', () => {
      it('leaves one record per command and entity write with every correlation field, newest first', async () => {
        const run = `run-${Date.now()}`;
        const t = await newTicket();
        const steps: Array<{ op: string; input?: Rec; res?: HttpResponse; key: string }> = [
          { op: 'start_ticket', key: k('start') },
          { op: 'resolve_ticket', input: { resolution: 'rebooted' }, key: k('resolve') },
        ];
        const before = Date.now();
        for (const s of steps) {
          s.res = await api.command(s.op, t.id as string, s.input, { idem: s.key, headers: { 'x-agent-run-id': run } });
          expect(s.res.status).to.equal(200);
        }
        const renameKey = k('rename');
        const rename = await api.call(
          'PUT',
          '/api/tickets/{id}',
          `/api/tickets/${t.id}`,
          { title: 'Printer fixed' },
          { idem: renameKey },
        );
        expect(rename.status).to.equal(200);

        const trail = await api.trail('Ticket', t.id as string);
        expect(trail.map((a) => a.operation)).to.deep.equal([
          'Ticket.update',
          'command:ResolveTicket',
          'command:StartTicket',
          'Ticket.create',
        ]);
        const [update, resolve, start, create] = trail;
        for (const a of trail) {
          expect(a).to.include({
            entity: 'Ticket',
            recordId: t.id,
            actorId: 'agent-triage',
            credentialId: 'cred-triage-1',
            delegatedBy: null,
          });
          expect(a.id).to.match(/^[0-9A-HJKMNP-TV-Z]{26}$/);
          expect(a.at).to.match(ISO_MS);
          expect(Date.parse(a.at)).to.be.within(before - 5000, Date.now());
        }
        expect(trail.map((a) => a.at)).to.deep.equal(
          trail
            .map((a) => a.at)
            .sort()
            .reverse(),
        );
        expect(start).to.include({
          agentRunId: run,
          idempotencyKey: steps[0].key,
          traceId: steps[0].res?.headers.get('x-trace-id'),
        });
        expect(start.changes).to.deep.equal({
          status: { before: 'open', after: 'in_progress' },
          assigneeId: { before: null, after: 'agent-triage' },
        });
        expect(start.detail).to.deep.equal({ command: 'StartTicket', input: {} });
        const resolvedAt = (steps[1].res?.body as Rec).resolvedAt;
        expect(resolve).to.include({
          agentRunId: run,
          idempotencyKey: steps[1].key,
          traceId: steps[1].res?.headers.get('x-trace-id'),
        });
        expect(resolve.changes).to.deep.equal({
          status: { before: 'in_progress', after: 'resolved' },
          resolution: { before: null, after: 'rebooted' },
          resolvedAt: { before: null, after: resolvedAt },
        });
        expect(update).to.include({
          agentRunId: null,
          idempotencyKey: renameKey,
          traceId: rename.headers.get('x-trace-id'),
        });
        expect(update.changes).to.deep.equal({ title: { before: 'Printer on fire', after: 'Printer fixed' } });
        expect(create.changes.title).to.deep.equal({ before: null, after: 'Printer on fire' });
      });

      it('records a delete too (the trail of a deleted record stays in the database)', async () => {
        const t = await newTicket();
        const key = k('delete');
        const res = await api.call('DELETE', '/api/tickets/{id}', `/api/tickets/${t.id}`, undefined, {
          key: null,
          session: admin,
          idem: key,
        });
        expect(res.status, res.text).to.equal(204);
        const row = (await hd.rows.get(
          'SELECT "operation", "actorId", "idempotencyKey", "changes" FROM "_bp_audit" ' +
            'WHERE "recordId" = ? ORDER BY "id" DESC LIMIT 1',
          [t.id],
        )) as Rec;
        expect(row).to.include({ operation: 'Ticket.delete', actorId: admin.actor.id, idempotencyKey: key });
        expect(JSON.parse(row.changes as string).title).to.deep.equal({ before: 'Printer on fire', after: null });
      });

      it('pages the trail with limit and offset, newest first', async () => {
        const t = await resolved();
        const all = await api.trail('Ticket', t.id as string);
        expect(all.map((a) => a.operation)).to.deep.equal([
          'command:ResolveTicket',
          'command:StartTicket',
          'Ticket.create',
        ]);
        const first = await api.audit('Ticket', t.id as string, 'limit=2');
        expect(first.body).to.deep.include({ limit: 2, offset: 0, hasMore: true });
        expect((first.body as { items: AuditRecord[] }).items).to.deep.equal(all.slice(0, 2));
        const last = await api.audit('Ticket', t.id as string, 'limit=2&offset=2');
        expect(last.body).to.deep.equal({ items: all.slice(2), limit: 2, offset: 2, hasMore: false });
      });

      it('answers 400 INVALID_QUERY for missing parameters, an unknown entity or bad paging', async () => {
        const t = await newTicket();
        for (const q of [
          `recordId=${t.id}`,
          'entity=Ticket',
          '',
          `entity=Nope&recordId=${t.id}`,
          `entity=Ticket&recordId=${t.id}&limit=0`,
          `entity=Ticket&recordId=${t.id}&sort=at`,
        ]) {
          const res = await api.call('GET', '/api/audit', `/api/audit?${q}`);
          expect(res.status, q).to.equal(400);
          expect(errorOf(res).code, q).to.equal('INVALID_QUERY');
        }
      });

      it('answers 404 for a record the actor cannot see, 401 for anonymous callers', async () => {
        const missing = await api.audit('Ticket', MISSING_ULID);
        expect(missing.status).to.equal(404);
        expect(errorOf(missing).code).to.equal('NOT_FOUND');
        const t = await newTicket();
        const anonymous = await api.audit('Ticket', t.id as string, '', { key: null });
        expect(anonymous.status).to.equal(401);
      });

      it('refuses a malformed X-Agent-Run-ID with 400', async () => {
        const t = await newTicket();
        for (const id of ['has space', 'x'.repeat(256)]) {
          const res = await expectUntouched(t.id as string, () =>
            api.command('start_ticket', t.id as string, undefined, { idem: k(), headers: { 'x-agent-run-id': id } }),
          );
          expect(res.status).to.equal(400);
          expect(errorOf(res).details?.[0]).to.include({ field: 'X-Agent-Run-ID', code: 'INVALID_HEADER' });
        }
      });

      it('records delegatedBy for an actor trusted code marks delegated (the executor needs no HTTP)', async () => {
        type Mod = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
        const [
          { executeCommand },
          { EntityStore },
          { AuditLog },
          { IdempotencyStore },
          { EventBus },
          actorMod,
          commands,
        ] = await Promise.all(
          [
            'src/runtime/commands/executor.ts',
            'src/runtime/data/entity-store.ts',
            'src/runtime/data/audit.ts',
            'src/runtime/data/idempotency-store.ts',
            'src/runtime/commands/events.ts',
            'src/runtime/core/actor.ts',
            'src/commands.ts',
          ].map((f) => hd.load<Mod>(f)),
        );
        const specs = await Promise.all(
          ['ticket', 'customer', 'comment'].map((e) => hd.load<Mod>(`src/entities/${e}.ts`)),
        );
        const audit = new AuditLog();
        const stores = new Map(
          specs
            .map((m) => Object.values(m).find((v) => v && typeof v === 'object' && 'collection' in v))
            .map((spec) => [spec.name, new EntityStore(hd.database, spec, audit)]),
        );
        const rt = {
          stores,
          audit,
          idempotency: new IdempotencyStore(hd.database),
          events: new EventBus(),
          services: {},
          reportEventFailure: () => undefined,
        };
        const agent = {
          kind: 'agent',
          id: 'agent-triage',
          credentialId: 'cred-triage-1',
          roles: ['agent'],
          role: 'agent',
          scopes: ['tickets.read', 'tickets.write'],
        };
        const t = await newTicket();

        let refused: unknown;
        await executeCommand(rt, commands.startTicket, {
          actor: actorMod.ANONYMOUS,
          recordId: t.id,
          input: {},
        }).catch((e: unknown) => (refused = e));
        expect(refused).to.include({ code: 'UNAUTHENTICATED', status: 401 });

        const result = await executeCommand(rt, commands.startTicket, {
          actor: actorMod.withDelegation(agent, 'user-42'),
          recordId: t.id,
          input: {},
          idempotencyKey: 'delegated-1',
          agentRunId: 'run-d',
        });
        expect(result).to.deep.include({ status: 200, replayed: false });
        const [entry] = await api.trail('Ticket', t.id as string);
        expect(entry).to.include({
          operation: 'command:StartTicket',
          actorId: 'agent-triage',
          credentialId: 'cred-triage-1',
          delegatedBy: 'user-42',
          agentRunId: 'run-d',
          idempotencyKey: 'delegated-1',
          traceId: null,
        });
      });
    });

    describe('concurrency', () => {
      const fire = (op: string, id: string, n: number) =>
        Promise.all(Array.from({ length: n }, (_, i) => api.command(op, id, undefined, { idem: k(`par${i}`) })));
      const codes = (results: HttpResponse[]) =>
        results.filter((r) => r.status !== 200).map((r) => `${r.status} ${errorOf(r).code}`);

      it('20 parallel StartTicket on one record: exactly one succeeds, the rest are refused with a code', async () => {
        const t = await newTicket();
        const results = await fire('start_ticket', t.id as string, 20);
        expect(results.filter((r) => r.status === 200)).to.have.length(1);
        for (const c of codes(results)) expect(c).to.be.oneOf(['409 COMMAND_UNAVAILABLE', '409 STATE_CONFLICT']);
        expect(await ticketRow(t.id as string)).to.include({ status: 'in_progress', assigneeId: 'agent-triage' });
        const trail = await api.trail('Ticket', t.id as string);
        expect(trail.map((a) => a.operation)).to.deep.equal(['command:StartTicket', 'Ticket.create']);
      });

      it('20 parallel CloseTicket (with its handler): one success, one event, one audit pair', async () => {
        const t = await resolved();
        const before = hd.delivered.length;
        const results = await fire('close_ticket', t.id as string, 20);
        expect(results.filter((r) => r.status === 200)).to.have.length(1);
        for (const c of codes(results)) expect(c).to.be.oneOf(['409 COMMAND_UNAVAILABLE', '409 STATE_CONFLICT']);
        expect((await ticketRow(t.id as string))?.status).to.equal('closed');
        expect(hd.delivered.slice(before).map((e) => e.name)).to.deep.equal(['ticket.closed']);
        const trail = await api.trail('Ticket', t.id as string);
        expect(trail.map((a) => a.operation).filter((o) => o.startsWith('command:CloseTicket'))).to.deep.equal([
          'command:CloseTicket:ticket.closed',
          'command:CloseTicket',
        ]);
      });
    });

    describe('OpenAPI', () => {
      type Op = {
        operationId: string;
        requestBody?: { content: Record<string, { schema: Rec }> };
        responses: Record<string, unknown>;
        security?: unknown[];
      };
      const op = (id: string) =>
        (api.openapi.doc.paths as unknown as Record<string, { post: Op }>)[`/api/commands/${id}/{id}`]?.post;

      it('describes each command as an operation with its id, input schema, responses and scopes', () => {
        for (const id of ['start_ticket', 'resolve_ticket', 'close_ticket']) {
          const o = op(id);
          expect(o, id).to.be.an('object');
          expect(o.operationId).to.equal(id);
          expect(Object.keys(o.responses)).to.include.members(['200', '400', '401', '403', '404', '409']);
          expect(o.security).to.deep.equal([{ apiKey: ['tickets.write'] }, { session: [] }]);
        }
        const resolve = op('resolve_ticket').requestBody?.content['application/json'].schema as {
          properties: Record<string, { type: string }>;
          required: string[];
        };
        expect(resolve.properties.resolution.type).to.equal('string');
        expect(resolve.required).to.deep.equal(['resolution']);
        const close = op('close_ticket').requestBody?.content['application/json'].schema as {
          properties: Rec;
          required?: string[];
        };
        expect(close.properties).to.deep.equal({});
        expect(close.required ?? []).to.deep.equal([]);
      });
    });
  });

for (const database of DATABASES)
  describe(`command handlers, faults and field protection (lab fixture, ${database})`, function () {
    this.timeout(60_000);
    const KEYS = {
      LAB_WORKER_KEY: 'worker-key-0123456789',
      LAB_HELPER_KEY: 'helper-key-0123456789',
      LAB_OUTSIDER_KEY: 'outsider-key-0123456789',
      SESSION_SECRET: 'lab-session-secret-0123456789abcdef',
    };
    let lab: AppOnDatabase;
    let api: Api;

    const newJob = (body: Rec = {}, key?: string) =>
      api.create('jobs', { title: 'Nightly build', ...body }, key ? { key } : {});
    const jobRow = (id: string) => lab.rows.get('SELECT * FROM "Job" WHERE "id" = ?', [id]);
    const trailOf = async (id: string) => (await api.trail('Job', id)).map((a) => a.operation);

    /** Snapshot of everything a failed command must leave alone. */
    const snapshot = async (id: string) => ({
      row: await jobRow(id),
      audit: await lab.rows.all('SELECT * FROM "_bp_audit" WHERE "recordId" = ? ORDER BY "id"', [id]),
      events: lab.delivered.length,
    });

    before(async () => {
      const appDir = path.join(freshDir(`commands-lab-${database}`), 'app');
      await generate(path.join(ROOT, 'test/fixtures/commands/lab/app.toml'), appDir);
      lab = await bootOnDatabase(appDir, await databaseUrl(database, 'commands'), KEYS, {
        services: { stamper: { stamp: (id: string) => `stamped ${id}` } },
      });
      api = new Api(() => lab.url, appDir, KEYS.LAB_WORKER_KEY);
    });
    after(async () => lab?.close());

    it('a handler that throws after writing leaves record, audit and events as they were (500, no stack)', async () => {
      const job = await newJob();
      const before = await snapshot(job.id as string);
      const { result: res, lines } = await capturingConsoleError(() =>
        api.command('boom', job.id as string, undefined, { idem: k('boom') }),
      );
      expect(res.status).to.equal(500);
      expect(res.body).to.deep.equal({
        error: {
          code: 'INTERNAL_ERROR',
          message: 'internal error',
          retryable: false,
          traceId: res.headers.get('x-trace-id'),
        },
      });
      expect(res.text).not.to.contain('boom after writing');
      expect(await snapshot(job.id as string)).to.deep.equal(before);
      expect(await jobRow(job.id as string)).to.include({ state: 'queued', note: null });
      // The operator sees the cause in the log, tied to the response by its trace id.
      expect(lines.join('\n'))
        .to.contain(`[${res.headers.get('x-trace-id')}]`)
        .and.to.contain('boom after writing');
    });

    it('refuses a handler write to a command-only field the command may not write (ctx.db.update)', async () => {
      const job = await newJob();
      const before = await snapshot(job.id as string);
      const res = await api.command('sneak', job.id as string, undefined, { idem: k() });
      expect(res.status).to.equal(403);
      expect(errorOf(res)).to.include({ code: 'PROTECTED_FIELD_MUTATION', retryable: false });
      expect(errorOf(res).details?.map((d) => `${d.field}:${d.code}`)).to.deep.equal(['seal:COMMAND_ONLY']);
      // Nothing of the handler's work survives: not the allowed note, not its event.
      expect(await snapshot(job.id as string)).to.deep.equal(before);
    });

    it('refuses the same write returned by a handler as changes to merge', async () => {
      const job = await newJob();
      const before = await snapshot(job.id as string);
      const res = await api.command('sneak_back', job.id as string, undefined, { idem: k() });
      expect(res.status).to.equal(403);
      expect(errorOf(res).code).to.equal('PROTECTED_FIELD_MUTATION');
      expect(await snapshot(job.id as string)).to.deep.equal(before);
    });

    it('refuses handler changes that carry a __proto__ key, writing nothing through the prototype', async () => {
      // Changes parsed from JSON keep "__proto__" as an own key; merged with Object.assign it would
      // become the prototype of the change set, and fields read through `in` would be written.
      const job = await newJob({ title: 'Original' });
      const before = await snapshot(job.id as string);
      const res = await api.command('smuggle', job.id as string, undefined, { idem: k() });
      expect(res.status, res.text).to.equal(400);
      expect(errorOf(res).code).to.equal('VALIDATION_FAILED');
      expect(errorOf(res).details?.map((d) => `${d.field}:${d.code}`)).to.deep.equal(['__proto__:FORBIDDEN_KEY']);
      expect(await snapshot(job.id as string)).to.deep.equal(before);
      expect((await jobRow(job.id as string))?.title).to.equal('Original');
    });

    it('accepts the write from a command on the allowlist, and nowhere else (entity write)', async () => {
      const job = await newJob();
      const key = k('seal');
      const res = await api.command('seal', job.id as string, undefined, {
        idem: key,
        headers: { 'x-agent-run-id': 'run-seal' },
      });
      expect(res.status, res.text).to.equal(200);
      expect((res.body as Rec).seal).to.equal('sealed by agent-worker');
      const [handlerEntry, commandEntry] = await api.trail('Job', job.id as string);
      expect(commandEntry.changes).to.deep.equal({ seal: { before: null, after: 'sealed by agent-worker' } });
      // The handler was handed the correlation ids of this request and the registered services.
      expect(handlerEntry.operation).to.equal('command:Seal:job.sealed');
      expect(handlerEntry.detail).to.deep.equal({
        correlation: { traceId: res.headers.get('x-trace-id'), idempotencyKey: key, agentRunId: 'run-seal' },
        stamp: `stamped ${job.id}`,
      });
      const put = await api.call(
        'PUT',
        '/api/jobs/{id}',
        `/api/jobs/${job.id}`,
        { seal: 'overwritten' },
        { idem: k() },
      );
      expect(put.status).to.equal(403);
      expect(errorOf(put).code).to.equal('PROTECTED_FIELD_MUTATION');
      expect((await jobRow(job.id as string))?.seal).to.equal('sealed by agent-worker');
    });

    it("applies the entity's update rule to a handler's write of the command's own record", async () => {
      // Seal has no policy, so the outsider (role viewer) may run it on a job it can read; its
      // handler's ctx.db.update is an actor-scoped write, and Job's update rule wants an agent.
      const job = await newJob({ ownerId: 'agent-outsider' });
      const before = await snapshot(job.id as string);
      const res = await api.command('seal', job.id as string, undefined, { key: KEYS.LAB_OUTSIDER_KEY, idem: k() });
      expect(res.status, res.text).to.equal(403);
      expect(errorOf(res).code).to.equal('FORBIDDEN');
      expect(await snapshot(job.id as string)).to.deep.equal(before);
    });

    it('loads the relation a policy reads through record.customer.*', async () => {
      const free = await api.create('customers', { name: 'Free Co' });
      const gold = await api.create('customers', { name: 'Gold Co', plan: 'gold' });
      for (const [label, body] of [
        ['no customer', {}],
        ['a free customer', { customerId: free.id }],
      ] as const) {
        const job = await newJob(body);
        const res = await api.command('gold_boost', job.id as string, undefined, { idem: k() });
        expect(res.status, label).to.equal(403);
        expect(errorOf(res).code, label).to.equal('FORBIDDEN');
        expect((await jobRow(job.id as string))?.priority, label).to.equal(0);
      }
      const job = await newJob({ customerId: gold.id });
      const res = await api.command('gold_boost', job.id as string, undefined, { idem: k() });
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.deep.equal({ ...job, priority: 10 });
      // The relation is read as it is now: upgrading the free customer lets its job through.
      const freeJob = await newJob({ customerId: free.id });
      expect(
        (await api.call('PUT', '/api/customers/{id}', `/api/customers/${free.id}`, { plan: 'gold' }, { idem: k() }))
          .status,
      ).to.equal(200);
      expect((await api.command('gold_boost', freeJob.id as string, undefined, { idem: k() })).status).to.equal(200);
    });

    it('leaves the field of an unset optional input unchanged', async () => {
      const job = await newJob({ note: 'keep me', priority: 2, mood: 'calm' });
      const onlyPriority = await api.command('annotate', job.id as string, { priority: 3 }, { idem: k() });
      expect(onlyPriority.status).to.equal(200);
      expect(onlyPriority.body).to.deep.equal({ ...job, priority: 3 });
      const nothing = await api.command('annotate', job.id as string, {}, { idem: k() });
      expect(nothing.body).to.deep.equal({ ...job, priority: 3 });
      const both = await api.command('annotate', job.id as string, { note: 'new', mood: 'urgent' }, { idem: k() });
      expect(both.body).to.deep.equal({ ...job, priority: 3, note: 'new', mood: 'urgent' });
      const trail = await api.trail('Job', job.id as string);
      expect(trail.slice(0, 3).map((a) => a.changes)).to.deep.equal([
        { note: { before: 'keep me', after: 'new' }, mood: { before: 'calm', after: 'urgent' } },
        {},
        { priority: { before: 2, after: 3 } },
      ]);
    });

    it('checks input types: Integer and Enum values', async () => {
      const job = await newJob();
      for (const [input, expected] of [
        [{ priority: '3' }, 'priority:INVALID_TYPE'],
        [{ priority: 1.5 }, 'priority:INVALID_TYPE'],
        [{ mood: 'angry' }, 'mood:INVALID_TYPE'],
        [{ note: ['a'] }, 'note:INVALID_TYPE'],
      ] as const) {
        const res = await api.command('annotate', job.id as string, input, { idem: k() });
        expect(res.status, JSON.stringify(input)).to.equal(400);
        expect(errorOf(res).details?.map((d) => `${d.field}:${d.code}`)).to.deep.equal([expected]);
      }
      expect(await jobRow(job.id as string)).to.include({ priority: 0, mood: null, note: null });
    });

    it('resolves record.*, actor.*, now and literal mutation values', async () => {
      const job = await newJob({ title: 'Copy me' });
      const before = Date.now();
      const res = await api.command('stamp', job.id as string, undefined, { key: KEYS.LAB_HELPER_KEY, idem: k() });
      expect(res.status).to.equal(200);
      const body = res.body as Rec;
      expect(body).to.deep.equal({
        ...job,
        note: 'Copy me',
        stampedBy: 'agent-helper',
        priority: 7,
        stampedAt: body.stampedAt,
      });
      expect(Date.parse(body.stampedAt as string)).to.be.within(before, Date.now());
    });

    it('20 parallel runs of a handler yielding while others commit: one success, the rest STATE_CONFLICT', async () => {
      // Bump waits 500 ms in its handler, far longer than the 20 requests take to arrive, so all
      // of them load counter 0 before the first commits; the conditional write must then refuse
      // the other 19 instead of losing or doubling an increment.
      const job = await newJob();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          api.command('bump', job.id as string, { waitMs: 500 }, { idem: k(`bump${i}`) }),
        ),
      );
      const ok = results.filter((r) => r.status === 200);
      expect(ok).to.have.length(1);
      expect((ok[0].body as Rec).counter).to.equal(1);
      for (const r of results.filter((x) => x.status !== 200)) {
        expect(r.status).to.equal(409);
        expect(errorOf(r)).to.include({ code: 'STATE_CONFLICT', retryable: false });
      }
      expect((await jobRow(job.id as string))?.counter).to.equal(1);
      expect(await trailOf(job.id as string)).to.deep.equal(['command:Bump', 'Job.create']);
    });

    it(
      'answers 422 REFERENCE_NOT_FOUND for a Ref written from input that names no record, ' +
        'as openapi.json declares',
      async () => {
        const job = await newJob();
        const before = await snapshot(job.id as string);
        const res = await api.command(
          'assign',
          job.id as string,
          { customerId: '11111111-1111-4111-8111-111111111111' },
          { idem: k() },
        );
        expect(res.status).to.equal(422);
        expect(errorOf(res)).to.include({ code: 'REFERENCE_NOT_FOUND', retryable: false });
        expect(await snapshot(job.id as string)).to.deep.equal(before);
        const customer = await api.create('customers', { name: 'Real Co' });
        const ok = await api.command('assign', job.id as string, { customerId: customer.id }, { idem: k() });
        expect(ok.status).to.equal(200);
        expect((ok.body as Rec).customerId).to.equal(customer.id);
      },
    );

    it('answers 415 for a body that is not JSON and 413 for one over 1 MB, as openapi.json declares', async () => {
      const job = await newJob();
      const form = await api.call(
        'POST',
        '/api/commands/annotate/{id}',
        `/api/commands/annotate/${job.id}`,
        undefined,
        {
          idem: k(),
          raw: 'note=x',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        },
      );
      expect(form.status).to.equal(415);
      expect(errorOf(form).code).to.equal('UNSUPPORTED_MEDIA_TYPE');
      const big = await api.command('annotate', job.id as string, { note: 'x'.repeat(1_100_000) }, { idem: k() });
      expect(big.status).to.equal(413);
      expect(errorOf(big).code).to.equal('PAYLOAD_TOO_LARGE');
      expect((await jobRow(job.id as string))?.note).to.equal(null);
    });

    it('answers 404 to actors who may not read the record, for commands and for its audit trail', async () => {
      const hidden = await newJob();
      const owned = await newJob({ ownerId: 'agent-outsider' });
      const run = await api.command(
        'annotate',
        hidden.id as string,
        { note: 'x' },
        { key: KEYS.LAB_OUTSIDER_KEY, idem: k() },
      );
      expect(run.status).to.equal(404);
      expect(errorOf(run).code).to.equal('NOT_FOUND');
      const audit = await api.audit('Job', hidden.id as string, '', { key: KEYS.LAB_OUTSIDER_KEY });
      expect(audit.status).to.equal(404);
      expect(errorOf(audit).code).to.equal('NOT_FOUND');
      const own = await api.audit('Job', owned.id as string, '', { key: KEYS.LAB_OUTSIDER_KEY });
      expect(own.status).to.equal(200);
      expect((own.body as { items: AuditRecord[] }).items.map((a) => a.operation)).to.deep.equal(['Job.create']);
      expect(await trailOf(hidden.id as string)).to.deep.equal(['Job.create']);
    });
  });

describe('operation id collisions', () => {
  const file = 'test/fixtures/commands/operation-id-collision/app.toml';

  it('are a validation error naming both commands and the shared id', () => {
    const run = bp(['validate', file]);
    expect(run.status).to.equal(1);
    expect(run.stdout).to.equal('');
    expect(run.stderr).to.contain(
      'commands "REOPENTicket" and "ReopenTicket" share the operation id "reopen_ticket" ' +
        '[error OPERATION_ID_COLLISION]',
    );
    expect(run.stderr).to.contain(
      'hint: an operation id is the snake_case form of the command name; rename one of them',
    );
  });

  it('stop generation before anything is written', () => {
    const out = path.join(freshDir('commands-collision'), 'app');
    const run = bp(['generate', file, '-o', out]);
    expect(run.status).to.equal(1);
    expect(run.stderr).to.contain('OPERATION_ID_COLLISION');
    expect(fs.existsSync(out)).to.equal(false);
  });
});
