// Data integrity (issue 8), end to end on a small blueprint of our own (test/fixtures/valid/notes):
// generated with the real CLI, built in-process once on SQLite and once on PostgreSQL and driven
// over HTTP, every response checked against the app's openapi.json. Covered: bodies nested too
// deeply; row rules that hold for the record as it will be after a write (PostgreSQL's WITH
// CHECK), through the entity routes and through a command handler's ctx.db; date-times that do
// not exist; control characters and lone surrogates in text; e-mail addresses unique ignoring
// letter case (in the database, through the generated migrations of both); required text that is
// empty.

import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { applyMigrations } from '../runtime-lib/data/migrate.ts';
import { applyPostgresMigrations } from '../runtime-lib/data/postgres-migrate.ts';
import { addUser, bp, freshDir, generate, ROOT, type HttpResponse } from './support/apps.ts';
import {
  Api,
  type AppOnDatabase,
  bootOnDatabase,
  errorOf,
  type Rec,
  SessionClient,
} from './support/commands/harness.ts';
import { appRows } from './support/database-rows.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

const BLUEPRINT = path.join(ROOT, 'test/fixtures/valid/notes/app.toml');
const SERVICE = 'notes-service-key-0123456789';
const ENV = { NOTES_SERVICE_KEY: SERVICE, SESSION_SECRET: 'integrity-test-session-secret-0123456789' };
const PASSWORD = 'long-password-1';

let seq = 0;
const key = (label = 'k') => `${label}-${++seq}-${Date.now()}`;

/** `depth` nested arrays around nothing: `[[...]]`. */
const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

for (const database of DATABASES)
  describe(`data integrity (issue 8, in-process over HTTP, ${database})`, function () {
    this.timeout(120_000);
    let app: AppOnDatabase;
    let api: Api;
    let alice: SessionClient;
    let bob: SessionClient;
    let admin: SessionClient;
    const idOf = (who: SessionClient) => who.actor.id as string;

    const count = (table: string) => app.rows.count(table);
    const row = (table: string, id: string) => app.rows.get(`SELECT * FROM "${table}" WHERE "id" = ?`, [id]);
    const auditCount = (id: string) => app.rows.count('_bp_audit', '"recordId" = ?', [id]);
    const keyStored = async (idem: string): Promise<boolean> =>
      (await app.rows.get('SELECT 1 FROM "_bp_idempotency" WHERE "key" = ?', [idem])) !== undefined;
    const detailCodes = (res: HttpResponse) => (errorOf(res).details ?? []).map((d) => `${d.field ?? ''}:${d.code}`);

    const createNote = async (who: SessionClient, body: Rec): Promise<Rec> => {
      const res = await api.call('POST', '/api/notes', '/api/notes', { title: 'a note', ...body }, { session: who });
      expect(res.status, res.text).to.equal(201);
      return res.body as Rec;
    };
    const putNote = (who: SessionClient, id: string, body: Rec) =>
      api.call('PUT', '/api/notes/{id}', `/api/notes/${id}`, body, { session: who });
    const contact = (overrides: Rec = {}): Rec => ({
      name: 'Carol',
      email: `carol.${++seq}@example.com`,
      bio: 'writes things',
      kind: 'person',
      ...overrides,
    });
    const postContact = (body: Rec) =>
      api.call('POST', '/api/contacts', '/api/contacts', body, { idem: key('contact') });
    const putContact = (id: string, body: Rec) =>
      api.call('PUT', '/api/contacts/{id}', `/api/contacts/${id}`, body, { idem: key('contact') });

    /** A refused write leaves the row, the audit trail and the row count as they were. */
    const expectUntouched = async (
      table: string,
      id: string,
      run: () => Promise<HttpResponse>,
    ): Promise<HttpResponse> => {
      const before = await row(table, id);
      const audits = await auditCount(id);
      const rows = await count(table);
      const res = await run();
      expect(await row(table, id)).to.deep.equal(before);
      expect(await auditCount(id)).to.equal(audits);
      expect(await count(table)).to.equal(rows);
      return res;
    };
    const expectRowCheck = (res: HttpResponse, rule: 'update' | 'read') => {
      expect(res.status, res.text).to.equal(403);
      expect(errorOf(res)).to.include({ code: 'FORBIDDEN', retryable: false });
      const checks = (errorOf(res).details ?? []).filter((d) => d.code === 'ROW_CHECK');
      expect(checks.map((d) => d.message).join(' | '), res.text).to.include(`${rule} rule`);
    };

    before(async () => {
      const appDir = path.join(freshDir(`integrity-${database}`), 'app');
      await generate(BLUEPRINT, appDir);
      app = await bootOnDatabase(appDir, await databaseUrl(database, 'integrity'), ENV);
      api = new Api(() => app.url, appDir, SERVICE);
      // People sign in with the users the real CLI creates, against the same database.
      for (const [email, roles] of [
        ['alice@example.com', []],
        ['bob@example.com', []],
        ['admin@example.com', ['admin']],
      ] as const)
        addUser(appDir, { DATABASE_URL: app.databaseUrl }, email, PASSWORD, [...roles]);
      alice = await SessionClient.login(app.url, 'alice@example.com', PASSWORD);
      bob = await SessionClient.login(app.url, 'bob@example.com', PASSWORD);
      admin = await SessionClient.login(app.url, 'admin@example.com', PASSWORD);
    });
    after(async () => app?.close());

    describe('bodies nested too deeply (finding 3)', () => {
      const deepNote = (depth: number) => `{"title":"deep","authorId":"someone","data":${nested(depth)}}`;

      it('refuses a 3,100-deep body on a keyed create with 400 TOO_DEEP, not 500, and stores nothing', async () => {
        const idem = key('deep');
        const notes = await count('Note');
        const res = await api.call('POST', '/api/notes', '/api/notes', undefined, { raw: deepNote(3100), idem });
        expect(res.status, res.text).to.equal(400);
        expect(errorOf(res)).to.include({ code: 'VALIDATION_FAILED', retryable: false });
        expect(detailCodes(res)).to.deep.equal([':TOO_DEEP']);
        expect(await count('Note')).to.equal(notes);
        expect(await keyStored(idem), 'idempotency key stored').to.equal(false);
      });

      it('refuses it on a keyed update and a keyed command as well, changing nothing', async () => {
        const note = await createNote(alice, { authorId: idOf(alice) });
        for (const [template, url] of [
          ['/api/notes/{id}', `/api/notes/${note.id}`],
          ['/api/commands/schedule/{id}', `/api/commands/schedule/${note.id}`],
        ]) {
          const idem = key('deep');
          const method = template.startsWith('/api/notes') ? 'PUT' : 'POST';
          const res = await expectUntouched('Note', note.id as string, () =>
            api.call(method, template, url, undefined, { raw: `{"data":${nested(3100)}}`, idem }),
          );
          expect(res.status, `${url}: ${res.text}`).to.equal(400);
          expect(detailCodes(res)).to.deep.equal([':TOO_DEEP']);
          expect(await keyStored(idem)).to.equal(false);
        }
      });

      it('refuses it on the sign-in routes, whose JSON parser is their own', async () => {
        const res = await api.call('POST', '/api/auth/login', '/api/auth/login', undefined, {
          key: null,
          raw: `{"email":"alice@example.com","password":${nested(3100)}}`,
        });
        expect(res.status, res.text).to.equal(400);
        expect(detailCodes(res)).to.deep.equal([':TOO_DEEP']);
      });

      it('accepts a body 64 deep in a JSON field and stores it whole; 65 deep is refused', async () => {
        // The body object is level 1; 63 arrays inside it make 64.
        const ok = await api.call('POST', '/api/notes', '/api/notes', undefined, {
          raw: deepNote(63),
          idem: key('deep'),
        });
        expect(ok.status, ok.text).to.equal(201);
        expect(JSON.stringify((ok.body as Rec).data)).to.equal(nested(63));
        const stored = (await row('Note', (ok.body as Rec).id as string)) as Rec;
        // SQLite keeps a JSON value as its text; PostgreSQL's jsonb comes back parsed.
        expect(database === 'sqlite' ? stored.data : JSON.stringify(stored.data)).to.equal(nested(63));
        const notes = await count('Note');
        const tooDeep = await api.call('POST', '/api/notes', '/api/notes', undefined, {
          raw: deepNote(64),
          idem: key('deep'),
        });
        expect(tooDeep.status, tooDeep.text).to.equal(400);
        expect(detailCodes(tooDeep)).to.deep.equal([':TOO_DEEP']);
        expect(await count('Note')).to.equal(notes);
      });

      it('counts objects and arrays alike, wherever the deepest branch is', async () => {
        const objects = `{"title":"deep","authorId":"x","data":${'{"a":'.repeat(64)}1${'}'.repeat(64)}}`;
        const res = await api.call('POST', '/api/notes', '/api/notes', undefined, { raw: objects, idem: key('deep') });
        expect(res.status, res.text).to.equal(400);
        const late = `{"title":"deep","authorId":"x","data":[1,{"b":2},[3],${nested(64)}]}`;
        const res2 = await api.call('POST', '/api/notes', '/api/notes', undefined, { raw: late, idem: key('deep') });
        expect(res2.status, res2.text).to.equal(400);
      });
    });

    describe('row rules hold for the record as it will be (finding 4)', () => {
      it('refuses moving a note to another author (403 ROW_CHECK) and changes nothing', async () => {
        const note = await createNote(alice, { authorId: idOf(alice) });
        const res = await expectUntouched('Note', note.id as string, () =>
          putNote(alice, note.id as string, { authorId: idOf(bob) }),
        );
        expectRowCheck(res, 'update');
        expectRowCheck(res, 'read');
        // Still alice's, still out of bob's reach.
        expect((await api.get('notes', note.id as string, { session: alice })).authorId).to.equal(idOf(alice));
        const bobs = await api.call('GET', '/api/notes/{id}', `/api/notes/${note.id}`, undefined, { session: bob });
        expect(bobs.status).to.equal(404);
      });

      it('lets the author change other fields, and send the author back unchanged', async () => {
        const note = await createNote(alice, { authorId: idOf(alice) });
        const res = await putNote(alice, note.id as string, { title: 'renamed', body: 'more', authorId: idOf(alice) });
        expect(res.status, res.text).to.equal(200);
        expect(res.body).to.include({ title: 'renamed', body: 'more', authorId: idOf(alice) });
      });

      it('lets the author archive a note the read rule then hides (status is not an ownership field)', async () => {
        const note = await createNote(alice, { authorId: idOf(alice) });
        const res = await putNote(alice, note.id as string, { status: 'archived' });
        expect(res.status, res.text).to.equal(200);
        const after = await api.call('GET', '/api/notes/{id}', `/api/notes/${note.id}`, undefined, { session: alice });
        expect(after.status).to.equal(404);
      });

      it("lets an admin reassign a note, which then shows in the new author's list", async () => {
        const note = await createNote(alice, { authorId: idOf(alice) });
        const res = await putNote(admin, note.id as string, { authorId: idOf(bob) });
        expect(res.status, res.text).to.equal(200);
        expect((await api.get('notes', note.id as string, { session: bob })).authorId).to.equal(idOf(bob));
      });

      it(
        'refuses creating a note for someone else, ' +
          'unless another branch of the read rule lets the creator read it',
        async () => {
          const notes = await count('Note');
          const res = await api.call(
            'POST',
            '/api/notes',
            '/api/notes',
            { title: 'planted', authorId: idOf(bob) },
            { session: alice },
          );
          expectRowCheck(res, 'read');
          expect(await count('Note')).to.equal(notes);
          const byAdmin = await createNote(admin, { authorId: idOf(bob) });
          expect(byAdmin.authorId).to.equal(idOf(bob));
        },
      );

      it('holds the read rule where the update rule allows the change (a task handed to someone else)', async () => {
        const created = await api.call(
          'POST',
          '/api/tasks',
          '/api/tasks',
          { title: 'mine', assigneeId: idOf(alice) },
          { session: alice },
        );
        expect(created.status, created.text).to.equal(201);
        const id = (created.body as Rec).id as string;
        for (const assigneeId of [idOf(bob), null]) {
          const res = await expectUntouched('Task', id, () =>
            api.call('PUT', '/api/tasks/{id}', `/api/tasks/${id}`, { assigneeId }, { session: alice }),
          );
          expectRowCheck(res, 'read');
          expect((errorOf(res).details ?? []).find((d) => d.code === 'ROW_CHECK')?.field).to.equal('assigneeId');
        }
        const renamed = await api.call(
          'PUT',
          '/api/tasks/{id}',
          `/api/tasks/${id}`,
          { title: 'still mine' },
          { session: alice },
        );
        expect(renamed.status, renamed.text).to.equal(200);
      });

      it('lets a task be created unassigned (no ownership value is set)', async () => {
        const res = await api.call('POST', '/api/tasks', '/api/tasks', { title: "nobody's" }, { session: alice });
        expect(res.status, res.text).to.equal(201);
      });

      describe("through a command handler's ctx.db", () => {
        it("refuses ctx.db.update moving the command's own record away, and writes nothing", async () => {
          const note = await createNote(alice, { authorId: idOf(alice) });
          const res = await expectUntouched('Note', note.id as string, () =>
            api.command('hand_over', note.id as string, { to: idOf(bob) }, { session: alice }),
          );
          expectRowCheck(res, 'update');
        });

        it("allows ctx.db.update of other fields, and an admin's reassignment", async () => {
          const note = await createNote(alice, { authorId: idOf(alice) });
          const renamed = await api.command(
            'rename',
            note.id as string,
            { title: 'renamed by command' },
            { session: alice },
          );
          expect(renamed.status, renamed.text).to.equal(200);
          expect(renamed.body).to.include({ title: 'renamed by command', authorId: idOf(alice) });
          const moved = await api.command('hand_over', note.id as string, { to: idOf(bob) }, { session: admin });
          expect(moved.status, moved.text).to.equal(200);
          expect((await row('Note', note.id as string))?.authorId).to.equal(idOf(bob));
        });

        it('refuses ctx.db.update moving another record away, and writes nothing', async () => {
          const note = await createNote(alice, { authorId: idOf(alice) });
          const other = await createNote(alice, { authorId: idOf(alice) });
          const before = await row('Note', note.id as string);
          const res = await expectUntouched('Note', other.id as string, () =>
            api.command('hand_over_other', note.id as string, { otherId: other.id, to: idOf(bob) }, { session: alice }),
          );
          expectRowCheck(res, 'update');
          expect(await row('Note', note.id as string)).to.deep.equal(before);
        });

        it('refuses ctx.db.create of a note for someone else, and creates nothing', async () => {
          const note = await createNote(alice, { authorId: idOf(alice) });
          const notes = await count('Note');
          const res = await api.command('spawn', note.id as string, { authorId: idOf(bob) }, { session: alice });
          expectRowCheck(res, 'read');
          expect(await count('Note')).to.equal(notes);
          const own = await api.command('spawn', note.id as string, { authorId: idOf(alice) }, { session: alice });
          expect(own.status, own.text).to.equal(200);
          expect(await count('Note')).to.equal(notes + 1);
        });
      });
    });

    describe('date-times that do not exist (finding 5)', () => {
      for (const value of [
        '2023-02-29T12:00:00Z',
        '2023-04-31T00:00:00Z',
        '2024-01-01T24:00:00Z',
        '2024-01-01T12:60:00Z',
      ]) {
        it(`refuses ${value} in an entity DateTime field with 400 and stores nothing`, async () => {
          const contacts = await count('Contact');
          const res = await postContact(contact({ bornAt: value }));
          expect(res.status, res.text).to.equal(400);
          expect(detailCodes(res)).to.deep.equal(['bornAt:INVALID_TYPE']);
          expect(await count('Contact')).to.equal(contacts);
        });
      }

      it('refuses one in a command DateTime input with 400 and changes nothing', async () => {
        const note = await createNote(alice, { authorId: idOf(alice) });
        const res = await expectUntouched('Note', note.id as string, () =>
          api.command('schedule', note.id as string, { at: '2023-02-29T12:00:00Z', label: 'x' }, { session: alice }),
        );
        expect(res.status, res.text).to.equal(400);
        expect(detailCodes(res)).to.deep.equal(['at:INVALID_TYPE']);
      });

      it('accepts February 29th of a leap year and an offset, stored as the instant', async () => {
        const res = await postContact(contact({ bornAt: '2024-02-29T23:30:00-01:00' }));
        expect(res.status, res.text).to.equal(201);
        expect((res.body as Rec).bornAt).to.equal('2024-03-01T00:30:00.000Z');
        const note = await createNote(alice, { authorId: idOf(alice) });
        const scheduled = await api.command(
          'schedule',
          note.id as string,
          { at: '2024-02-29T12:00:00Z', label: 'leap' },
          { session: alice },
        );
        expect(scheduled.status, scheduled.text).to.equal(200);
        expect((scheduled.body as Rec).dueAt).to.equal('2024-02-29T12:00:00.000Z');
      });
    });

    describe('text values (finding 7)', () => {
      const TEXT_FIELDS: Array<[string, string]> = [
        ['name', 'Text'],
        ['nickname', 'Text'],
        ['bio', 'LongText'],
        ['email', 'Email'],
        ['kind', 'Enum'],
        ['photo', 'file'],
        ['noteId', 'Ref'],
      ];
      const valueFor = (field: string, bad: string) =>
        field === 'email'
          ? `ca${bad}rol@example.com`
          : field === 'kind'
            ? `person${bad}`
            : field === 'noteId'
              ? `01J${bad}`
              : `a${bad}b`;

      for (const [label, bad] of [
        ['NUL', '\u0000'],
        ['a C0 control (BEL)', '\u0007'],
        ['ESC', '\u001b'],
        ['DEL', '\u007f'],
        ['a C1 control (NEL)', '\u0085'],
        ['a C1 control (CSI)', '\u009b'],
      ]) {
        for (const [field, type] of TEXT_FIELDS) {
          it(`refuses ${label} in a ${type} field (${field}) with 400 CONTROL_CHARACTER, storing nothing`, async () => {
            const contacts = await count('Contact');
            const res = await postContact(contact({ [field]: valueFor(field, bad) }));
            expect(res.status, res.text).to.equal(400);
            expect(detailCodes(res)).to.deep.equal([`${field}:CONTROL_CHARACTER`]);
            expect(await count('Contact')).to.equal(contacts);
          });
        }
      }

      for (const [label, bad] of [
        ['a lone high surrogate', '\ud800'],
        ['a lone low surrogate', '\udc00'],
        ['swapped surrogates', '\ude00\ud83d'],
      ]) {
        for (const [field, type] of TEXT_FIELDS) {
          it(`refuses ${label} in a ${type} field (${field}) with 400 LONE_SURROGATE`, async () => {
            const contacts = await count('Contact');
            // JSON.stringify escapes lone surrogates (\ud800), so they arrive as the client wrote them.
            const res = await postContact(contact({ [field]: valueFor(field, bad) }));
            expect(res.status, res.text).to.equal(400);
            expect(detailCodes(res)).to.deep.equal([`${field}:LONE_SURROGATE`]);
            expect(await count('Contact')).to.equal(contacts);
          });
        }
      }

      it('refuses a lone surrogate at the very end of a value', async () => {
        const res = await postContact(contact({ name: 'Carol \ud83d' }));
        expect(detailCodes(res)).to.deep.equal(['name:LONE_SURROGATE']);
      });

      it('allows tab, newline and carriage return in LongText only', async () => {
        for (const ws of ['\t', '\n', '\r']) {
          const ok = await postContact(contact({ bio: `line one${ws}line two` }));
          expect(ok.status, ok.text).to.equal(201);
          expect((ok.body as Rec).bio).to.equal(`line one${ws}line two`);
          const refused = await postContact(contact({ name: `Carol${ws}Smith` }));
          expect(refused.status, refused.text).to.equal(400);
          expect(detailCodes(refused)).to.deep.equal(['name:CONTROL_CHARACTER']);
        }
      });

      it('stores other text exactly as given (no stripping, no normalisation)', async () => {
        const name = 'Zoë\u00a0😀 \u200b Ωmega \ufeff';
        const bio = ' leading and trailing \n\n ';
        const res = await postContact(contact({ name, bio }));
        expect(res.status, res.text).to.equal(201);
        const stored = (await row('Contact', (res.body as Rec).id as string)) as Rec;
        expect(stored).to.include({ name, bio });
      });

      it('checks updates the same way, changing nothing', async () => {
        const created = (await postContact(contact())).body as Rec;
        for (const [body, code] of [
          [{ name: 'a\u0000b' }, 'name:CONTROL_CHARACTER'],
          [{ bio: 'x\u0085' }, 'bio:CONTROL_CHARACTER'],
          [{ nickname: '\udfff' }, 'nickname:LONE_SURROGATE'],
        ] as const) {
          const res = await expectUntouched('Contact', created.id as string, () =>
            putContact(created.id as string, body),
          );
          expect(res.status, res.text).to.equal(400);
          expect(detailCodes(res)).to.deep.equal([code]);
        }
      });

      it('checks command inputs: control characters refused, line breaks in LongText allowed', async () => {
        const note = await createNote(alice, { authorId: idOf(alice) });
        for (const [input, code] of [
          [{ at: '2024-01-01T00:00:00Z', label: 'a\u0000' }, 'label:CONTROL_CHARACTER'],
          [{ at: '2024-01-01T00:00:00Z', label: 'two\nlines' }, 'label:CONTROL_CHARACTER'],
          [{ at: '2024-01-01T00:00:00Z', label: 'ok', details: 'bell\u0007' }, 'details:CONTROL_CHARACTER'],
          [{ at: '2024-01-01T00:00:00Z', label: 'ok', details: '\ud800' }, 'details:LONE_SURROGATE'],
        ] as const) {
          const res = await expectUntouched('Note', note.id as string, () =>
            api.command('schedule', note.id as string, input, { session: alice }),
          );
          expect(res.status, res.text).to.equal(400);
          expect(detailCodes(res)).to.deep.equal([code]);
        }
        const ok = await api.command(
          'schedule',
          note.id as string,
          { at: '2024-01-01T00:00:00Z', label: 'ok', details: 'two\r\nlines\tand a tab' },
          { session: alice },
        );
        expect(ok.status, ok.text).to.equal(200);
        expect((ok.body as Rec).body).to.equal('two\r\nlines\tand a tab');
      });
    });

    describe('e-mail addresses are unique ignoring letter case (finding 7)', () => {
      it('refuses CAROL@X.IO beside carol@x.io with 409 UNIQUE_CONFLICT naming the field', async () => {
        const first = await postContact(contact({ email: 'carol@x.io' }));
        expect(first.status, first.text).to.equal(201);
        const contacts = await count('Contact');
        for (const email of ['CAROL@X.IO', 'Carol@x.io', 'carol@X.io']) {
          const res = await postContact(contact({ email }));
          expect(res.status, res.text).to.equal(409);
          expect(errorOf(res)).to.include({ code: 'UNIQUE_CONFLICT', retryable: false });
          expect(detailCodes(res)).to.deep.equal(['email:UNIQUE']);
        }
        expect(await count('Contact')).to.equal(contacts);
      });

      it("refuses an update to another record's address in other letters, and changes nothing", async () => {
        await postContact(contact({ email: 'dave@x.io' }));
        const other = (await postContact(contact({ email: 'erin@x.io' }))).body as Rec;
        const res = await expectUntouched('Contact', other.id as string, () =>
          putContact(other.id as string, { email: 'DAVE@x.io' }),
        );
        expect(res.status, res.text).to.equal(409);
        expect(detailCodes(res)).to.deep.equal(['email:UNIQUE']);
      });

      it('stores addresses as given, and lets a record change the letter case of its own', async () => {
        const created = (await postContact(contact({ email: 'Frank.Smith@X.io' }))).body as Rec;
        expect(created.email).to.equal('Frank.Smith@X.io');
        const res = await putContact(created.id as string, { email: 'frank.smith@x.io' });
        expect(res.status, res.text).to.equal(200);
        expect((await row('Contact', created.id as string))?.email).to.equal('frank.smith@x.io');
      });

      it('leaves a field that is not unique alone', async () => {
        for (const backupEmail of ['shared@x.io', 'SHARED@x.io']) {
          const res = await postContact(contact({ backupEmail }));
          expect(res.status, res.text).to.equal(201);
        }
      });
    });

    describe('required text is not empty (finding 7)', () => {
      for (const [field, value] of [
        ['name', ''],
        ['name', '   '],
        ['bio', ''],
        ['bio', ' \n\t '],
        ['email', ''],
        ['kind', ''],
      ] as const) {
        it(`refuses ${JSON.stringify(value)} for required ${field}: 400 REQUIRED on create and update`, async () => {
          const contacts = await count('Contact');
          const res = await postContact(contact({ [field]: value }));
          expect(res.status, res.text).to.equal(400);
          expect(detailCodes(res)).to.deep.equal([`${field}:REQUIRED`]);
          expect(await count('Contact')).to.equal(contacts);
          const created = (await postContact(contact())).body as Rec;
          const update = await expectUntouched('Contact', created.id as string, () =>
            putContact(created.id as string, { [field]: value }),
          );
          expect(update.status, update.text).to.equal(400);
          expect(detailCodes(update)).to.deep.equal([`${field}:REQUIRED`]);
        });
      }

      it('accepts an empty string in a text field that is not required', async () => {
        const res = await postContact(contact({ nickname: '' }));
        expect(res.status, res.text).to.equal(201);
        expect((res.body as Rec).nickname).to.equal('');
      });

      it('refuses an empty required command input with 400 REQUIRED', async () => {
        const note = await createNote(alice, { authorId: idOf(alice) });
        for (const label of ['', '  ']) {
          const res = await expectUntouched('Note', note.id as string, () =>
            api.command('schedule', note.id as string, { at: '2024-01-01T00:00:00Z', label }, { session: alice }),
          );
          expect(res.status, res.text).to.equal(400);
          expect(detailCodes(res)).to.deep.equal(['label:REQUIRED']);
        }
      });
    });
  });

describe('blueprint DateTime defaults that do not exist (finding 5, bp validate)', () => {
  let dir: string;
  before(() => {
    dir = freshDir('integrity-defaults');
  });

  for (const written of [
    '2023-02-29T00:00:00Z',
    '2100-02-29T00:00:00Z',
    '2023-04-31T00:00:00Z',
    '2024-01-01T24:00:00Z',
  ]) {
    it(`reports the default "${written}" as INVALID_DEFAULT`, () => {
      const file = path.join(dir, `${written.replace(/\W+/g, '-')}.toml`);
      fs.writeFileSync(
        file,
        [
          '[entity.Event]',
          'fields = [',
          '  { name = "id", type = "ULID", primary_key = true },',
          `  { name = "at", type = "DateTime", default = "${written}" },`,
          ']',
          '',
        ].join('\n'),
      );
      const r = bp(['validate', file]);
      expect(r.status, r.stdout + r.stderr).to.equal(1);
      expect(r.stderr).to.include(
        `entity.Event.fields.1.default: default "${written}" does not fit DateTime: expected "now" or an ISO 8601 ` +
          'date-time [error INVALID_DEFAULT]',
      );
    });
  }

  it('accepts February 29th of a leap year', () => {
    const file = path.join(dir, 'leap.toml');
    fs.writeFileSync(
      file,
      '[entity.Event]\nfields = [\n  { name = "id", type = "ULID", primary_key = true },\n' +
        '  { name = "at", type = "DateTime", default = "2024-02-29T00:00:00Z" },\n]\n',
    );
    const r = bp(['validate', file]);
    expect(r.status, r.stderr).to.equal(0);
  });
});

describe('the case-insensitive e-mail index across migrations (finding 7)', function () {
  this.timeout(120_000);
  let dir: string;
  let appDir: string;
  let blueprint: string;

  const V1 = `[project]
name = "Migrating"

[entity.Person]
fields = [
  { name = "id", type = "ULID", primary_key = true },
  { name = "name", type = "Text", required = true },
  { name = "email", type = "Email", required = true, unique = true },
  { name = "other", type = "Email", nullable = true },
]
`;
  /** Each step rewrites the blueprint, regenerates, and says what the new migration must do. */
  const generateStep = async (toml: string): Promise<string> => {
    fs.writeFileSync(blueprint, toml);
    await generate(blueprint, appDir);
    const dirs = fs
      .readdirSync(path.join(appDir, 'prisma', 'migrations'))
      .filter((d) => d !== 'migration_lock.toml')
      .sort();
    return fs.readFileSync(path.join(appDir, 'prisma', 'migrations', dirs[dirs.length - 1], 'migration.sql'), 'utf8');
  };
  const migrate = (file: string) => {
    const db = new Database(file);
    db.pragma('foreign_keys = ON');
    applyMigrations(db, path.join(appDir, 'prisma', 'migrations'));
    return db;
  };
  const lowerIndexes = (db: Database.Database) =>
    db
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '%lower(%' ORDER BY name")
      .all() as Array<{ name: string; sql: string }>;
  let n = 0;
  const insert = (db: Database.Database, email: string, other: string | null = null) =>
    db
      .prepare('INSERT INTO "Person" ("id", "name", "email", "other") VALUES (?, ?, ?, ?)')
      .run(`id-${++n}`, 'P', email, other);

  before(() => {
    dir = freshDir('integrity-migrations');
    appDir = path.join(dir, 'app');
    blueprint = path.join(dir, 'app.toml');
  });

  it('creates the index with the table, and the database refuses case variants', async () => {
    const sql = await generateStep(V1);
    expect(sql).to.include('CREATE UNIQUE INDEX "Person.email_lower_key" ON "Person"(lower("email"));');
    expect(sql).not.to.include('"Person.other_lower_key"');
    const db = migrate(path.join(dir, 'v1.db'));
    insert(db, 'carol@x.io');
    expect(() => insert(db, 'CAROL@x.io')).to.throw(/UNIQUE constraint failed: index 'Person.email_lower_key'/);
    db.close();
  });

  it('re-creates it when Prisma rebuilds the table, so the index survives the rebuild', async () => {
    const sql = await generateStep(
      V1.replace(
        '{ name = "name", type = "Text", required = true }',
        '{ name = "name", type = "Text", nullable = true }',
      ),
    );
    expect(sql).to.include('ALTER TABLE "new_Person" RENAME TO "Person";');
    const renamed = sql.indexOf('ALTER TABLE "new_Person" RENAME TO "Person";');
    const created = sql.indexOf('CREATE UNIQUE INDEX "Person.email_lower_key" ON "Person"(lower("email"));');
    expect(created, sql).to.be.greaterThan(renamed);
    // Applied in order on a database with rows: the index is back after the rebuild.
    const file = path.join(dir, 'v2.db');
    const db = migrate(file);
    expect(lowerIndexes(db).map((i) => i.name)).to.deep.equal(['Person.email_lower_key']);
    insert(db, 'dave@x.io');
    expect(() => insert(db, 'Dave@X.IO')).to.throw(/UNIQUE constraint failed: index 'Person.email_lower_key'/);
    db.close();
  });

  it('applies to a database migrated step by step, rows kept', () => {
    // v1's migration alone, a row, then v2's migration: the row survives and the index holds.
    const file = path.join(dir, 'stepwise.db');
    const all = fs
      .readdirSync(path.join(appDir, 'prisma', 'migrations'))
      .filter((d) => d !== 'migration_lock.toml')
      .sort();
    const partial = path.join(dir, 'partial-migrations');
    fs.rmSync(partial, { recursive: true, force: true });
    fs.mkdirSync(path.join(partial, all[0]), { recursive: true });
    fs.copyFileSync(
      path.join(appDir, 'prisma', 'migrations', all[0], 'migration.sql'),
      path.join(partial, all[0], 'migration.sql'),
    );
    const db = new Database(file);
    applyMigrations(db, partial);
    insert(db, 'erin@x.io');
    applyMigrations(db, path.join(appDir, 'prisma', 'migrations'));
    expect(db.prepare('SELECT email FROM "Person"').pluck().all()).to.deep.equal(['erin@x.io']);
    expect(() => insert(db, 'ERIN@x.io')).to.throw(/UNIQUE constraint failed: index 'Person.email_lower_key'/);
    db.close();
  });

  it('drops it when the field is no longer unique, and adds one when another becomes unique', async () => {
    const v3 = V1.replace(
      '{ name = "name", type = "Text", required = true }',
      '{ name = "name", type = "Text", nullable = true }',
    )
      .replace('type = "Email", required = true, unique = true', 'type = "Email", required = true')
      .replace(
        '{ name = "other", type = "Email", nullable = true }',
        '{ name = "other", type = "Email", nullable = true, unique = true }',
      );
    const sql = await generateStep(v3);
    expect(sql).to.include('DROP INDEX "Person.email_lower_key";');
    expect(sql).to.include('CREATE UNIQUE INDEX "Person.other_lower_key" ON "Person"(lower("other"));');
    const db = migrate(path.join(dir, 'v3.db'));
    expect(lowerIndexes(db).map((i) => i.name)).to.deep.equal(['Person.other_lower_key']);
    insert(db, 'same@x.io', 'o@x.io');
    insert(db, 'SAME@x.io', 'p@x.io');
    expect(() => insert(db, 'q@x.io', 'O@X.IO')).to.throw(/Person.other_lower_key/);
    db.close();
  });

  it('drops it before the field is removed, and regenerating changes nothing', async () => {
    const v4 = V1.replace(
      '{ name = "name", type = "Text", required = true }',
      '{ name = "name", type = "Text", nullable = true }',
    )
      .replace('type = "Email", required = true, unique = true', 'type = "Email", required = true')
      .replace('  { name = "other", type = "Email", nullable = true },\n', '');
    const sql = await generateStep(v4);
    // SQLite refuses to drop a column an index uses: the index goes first.
    const dropped = sql.indexOf('DROP INDEX "Person.other_lower_key";');
    const prisma = sql.search(/PRAGMA|ALTER TABLE|CREATE TABLE|DROP TABLE/);
    expect(dropped, sql).to.be.at.least(0);
    expect(prisma, sql).to.be.greaterThan(dropped);
    const db = migrate(path.join(dir, 'v4.db'));
    expect(lowerIndexes(db)).to.deep.equal([]);
    db.close();
    const before = fs.readdirSync(path.join(appDir, 'prisma', 'migrations')).sort();
    await generate(blueprint, appDir);
    expect(fs.readdirSync(path.join(appDir, 'prisma', 'migrations')).sort()).to.deep.equal(before);
  });

  it("keeps PostgreSQL's index in step too, its migrations applied one by one to a database with rows", async () => {
    // PostgreSQL has migrations of its own (no table rebuilds there): the steps above, in its SQL.
    const migrations = path.join(appDir, 'prisma', 'postgres', 'migrations');
    const steps = fs
      .readdirSync(migrations)
      .filter((d) => d !== 'migration_lock.toml')
      .sort();
    expect(steps).to.have.length(4);
    const url = await databaseUrl('postgres', 'integrity-migrations');
    const rows = await appRows(url, appDir);
    const partial = path.join(dir, 'partial-postgres-migrations');
    fs.rmSync(partial, { recursive: true, force: true });
    const applyStep = async (step: number) => {
      fs.mkdirSync(path.join(partial, steps[step]), { recursive: true });
      fs.copyFileSync(
        path.join(migrations, steps[step], 'migration.sql'),
        path.join(partial, steps[step], 'migration.sql'),
      );
      await applyPostgresMigrations(url, partial);
    };
    const indexes = async () =>
      (
        await rows.all(
          "SELECT indexname FROM pg_indexes WHERE tablename = 'Person' AND indexdef LIKE '%lower(%' ORDER BY indexname",
        )
      ).map((r) => r.indexname);
    const add = (email: string, other: string | null = null) =>
      rows.run('INSERT INTO "Person" ("id", "name", "email", "other") VALUES (?, ?, ?, ?)', [
        `pg-${++n}`,
        'P',
        email,
        other,
      ]);
    const refusal = (write: Promise<unknown>) =>
      write.then(
        () => 'accepted',
        (err: Error) => err.message,
      );
    const conflict = (index: string) => `duplicate key value violates unique constraint "${index}"`;
    try {
      await applyStep(0);
      expect(await indexes()).to.deep.equal(['Person.email_lower_key']);
      await add('carol@x.io');
      expect(await refusal(add('CAROL@x.io'))).to.equal(conflict('Person.email_lower_key'));
      await applyStep(1);
      expect(await indexes()).to.deep.equal(['Person.email_lower_key']);
      expect(await refusal(add('Carol@X.IO'))).to.equal(conflict('Person.email_lower_key'));
      await applyStep(2);
      expect(await indexes()).to.deep.equal(['Person.other_lower_key']);
      await add('CAROL@X.IO', 'o@x.io');
      expect(await refusal(add('q@x.io', 'O@X.IO'))).to.equal(conflict('Person.other_lower_key'));
      await applyStep(3);
      expect(await indexes()).to.deep.equal([]);
      // Sorted here: PostgreSQL's ORDER BY follows the server's collation.
      expect((await rows.all('SELECT "email" FROM "Person"')).map((r) => r.email).sort()).to.deep.equal([
        'CAROL@X.IO',
        'carol@x.io',
      ]);
    } finally {
      await rows.close();
    }
  });
});
