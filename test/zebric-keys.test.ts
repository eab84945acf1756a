// Zebric 0.6 keys end to end (issue 9): primary keys of every type (Text, Integer, UUID; ULID
// elsewhere), Refs to them with their defaults, polymorphic hasMany/hasOne relations read by
// command policies, and entity indexes. Each fixture of test/fixtures/zebric/ validates with
// exactly the warnings it should, generates, type-checks, migrates and boots, once on SQLite and
// once on PostgreSQL, and every entity is created, listed, read, updated and deleted over HTTP
// under the rules and Refs it declares.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import type { HttpResponse } from './support/apps.ts';
import { type Api, type AppOnDatabase, type Rec } from './support/commands/harness.ts';
import { DATABASES, type DatabaseKind } from './support/databases.ts';
import { bootFixture, diagnosticsOf, expectValidOpenApi, idem, problems } from './support/zebric.ts';

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The Prisma folder of the database the app runs on (its schema and migrations). */
const prismaDir = (appDir: string, database: DatabaseKind): string =>
  database === 'sqlite' ? path.join(appDir, 'prisma') : path.join(appDir, 'prisma', 'postgres');

/** The {id} path parameter's schema in openapi.json. */
function idSchema(appDir: string, template: string): unknown {
  const doc = JSON.parse(fs.readFileSync(path.join(appDir, 'openapi.json'), 'utf8')) as {
    paths: Record<
      string,
      {
        parameters?: Array<{ name: string; schema: unknown }>;
        post?: { parameters: Array<{ name: string; schema: unknown }> };
      }
    >;
  };
  const item = doc.paths[template];
  return [...(item.parameters ?? []), ...(item.post?.parameters ?? [])].find((p) => p.name === 'id')?.schema;
}

for (const database of DATABASES)
  describe(`Zebric keys: Text primary keys (test/fixtures/zebric/text-keys, ${database})`, function () {
    this.timeout(120_000);
    const PLANNER = 'planner-key-0123456789abcdef';
    const VIEWER = 'viewer-key-0123456789abcdef';
    let app: AppOnDatabase;
    let api: Api;
    let appDir: string;

    const createColumn = (body: Rec, key = PLANNER) =>
      api.call('POST', '/api/columns', '/api/columns', body, { key, idem: idem('col') });
    const columnPath = (id: string) => `/api/columns/${encodeURIComponent(id)}`;

    before(async () => {
      ({ app, api, appDir } = await bootFixture(
        database,
        'text-keys',
        { BOARD_PLANNER_KEY: PLANNER, BOARD_VIEWER_KEY: VIEWER },
        PLANNER,
      ));
    });
    after(async () => app?.close());

    it('validates without a diagnostic', () => {
      expect(diagnosticsOf('text-keys')).to.deep.equal([]);
    });

    it('describes itself in a valid OpenAPI 3.1 document', async () => {
      await expectValidOpenApi(appDir);
    });

    it('takes the id the client sends, or generates a ULID when it sends none', async () => {
      const sent = await createColumn({ id: 'backlog', title: 'Backlog' });
      expect(sent.status, sent.text).to.equal(201);
      expect(sent.body).to.deep.equal({ id: 'backlog', title: 'Backlog', position: 0, locked: false });
      expect(sent.headers.get('location')).to.equal('/api/columns/backlog');
      const generated = await createColumn({ title: 'Someday' });
      expect(generated.status, generated.text).to.equal(201);
      expect((generated.body as Rec).id).to.match(ULID);
      expect(await api.get('columns', 'backlog')).to.deep.equal(sent.body);
      const list = await api.call('GET', '/api/columns', '/api/columns');
      expect((list.body as { items: Rec[] }).items.map((c) => c.id)).to.include.members([
        'backlog',
        (generated.body as Rec).id,
      ]);
    });

    it('answers 409 UNIQUE_CONFLICT naming the id when it is taken, and stores nothing', async () => {
      await createColumn({ id: 'doing', title: 'Doing' });
      const before = await app.rows.count('Column');
      const res = await createColumn({ id: 'doing', title: 'Doing again' });
      expect(res.status, res.text).to.equal(409);
      expect(problems(res)).to.deep.equal({ code: 'UNIQUE_CONFLICT', details: ['id:UNIQUE'] });
      expect(await app.rows.count('Column')).to.equal(before);
      expect((await api.get('columns', 'doing')).title).to.equal('Doing');
    });

    it('refuses (400) empty, too long, control-character, lone-surrogate, space-padded, "." and ".." ids', async () => {
      const before = await app.rows.count('Column');
      const cases: Array<[unknown, string]> = [
        ['', 'id:INVALID_TYPE'],
        ['x'.repeat(256), 'id:TOO_LONG'],
        ['to\u0007do', 'id:CONTROL_CHARACTER'],
        ['line\nbreak', 'id:CONTROL_CHARACTER'],
        ['half \ud800', 'id:LONE_SURROGATE'],
        [' padded', 'id:INVALID_TYPE'],
        ['padded ', 'id:INVALID_TYPE'],
        ['.', 'id:INVALID_TYPE'],
        ['..', 'id:INVALID_TYPE'],
        [42, 'id:INVALID_TYPE'],
        [null, 'id:INVALID_TYPE'],
      ];
      for (const [id, detail] of cases) {
        const res = await createColumn({ id, title: 'Bad' });
        expect(res.status, `${JSON.stringify(id)}: ${res.text}`).to.equal(400);
        expect(problems(res), JSON.stringify(id)).to.deep.equal({ code: 'VALIDATION_FAILED', details: [detail] });
      }
      expect(await app.rows.count('Column')).to.equal(before);
      const longest = await createColumn({ id: 'y'.repeat(255), title: 'Longest' });
      expect(longest.status, longest.text).to.equal(201);
    });

    it('serves ids holding "/", "?", "%", "#" and spaces percent-encoded, and encodes them in Location', async () => {
      const id = 'to do/now? 100% #1 ü';
      const created = await createColumn({ id, title: 'Odd' });
      expect(created.status, created.text).to.equal(201);
      expect(created.headers.get('location')).to.equal(columnPath(id));
      const got = await api.call('GET', '/api/columns/{id}', created.headers.get('location') as string);
      expect(got.status, got.text).to.equal(200);
      expect((got.body as Rec).id).to.equal(id);
      const put = await api.call('PUT', '/api/columns/{id}', columnPath(id), { title: 'Odder' }, { idem: idem('put') });
      expect(put.status, put.text).to.equal(200);
      expect(put.body).to.include({ id, title: 'Odder' });
      const trail = await api.trail('Column', id);
      expect(trail.map((a) => a.operation)).to.deep.equal(['Column.update', 'Column.create']);
      const del = await api.call('DELETE', '/api/columns/{id}', columnPath(id), undefined, { idem: idem('del') });
      expect(del.status, del.text).to.equal(204);
      expect((await api.call('GET', '/api/columns/{id}', columnPath(id))).status).to.equal(404);
    });

    it('never changes an id by update: another id is 400 READ_ONLY, the same one is accepted', async () => {
      await createColumn({ id: 'review', title: 'Review' });
      const moved = await api.call(
        'PUT',
        '/api/columns/{id}',
        '/api/columns/review',
        { id: 'reviewed', title: 'X' },
        { idem: idem('put') },
      );
      expect(moved.status, moved.text).to.equal(400);
      expect(problems(moved)).to.deep.equal({ code: 'VALIDATION_FAILED', details: ['id:READ_ONLY'] });
      const same = await api.call(
        'PUT',
        '/api/columns/{id}',
        '/api/columns/review',
        { id: 'review', position: 3 },
        { idem: idem('put') },
      );
      expect(same.status, same.text).to.equal(200);
      expect(same.body).to.deep.equal({ id: 'review', title: 'Review', position: 3, locked: false });
    });

    it('keeps the rules: a viewer reads columns but may not create one', async () => {
      expect((await api.get('columns', 'backlog', { key: VIEWER })).id).to.equal('backlog');
      const res = await createColumn({ id: 'viewer-made', title: 'Nope' }, VIEWER);
      expect(res.status, res.text).to.equal(403);
      expect((await api.call('GET', '/api/columns/{id}', '/api/columns/viewer-made')).status).to.equal(404);
    });

    it('applies the Ref default "backlog"; checks Refs against the Text key (400) and its records (422)', async () => {
      const card = await api.create('cards', { title: 'Write docs' });
      expect(card).to.include({ title: 'Write docs', columnId: 'backlog', reviewColumnId: null });
      expect(card.id).to.match(ULID);
      const before = await app.rows.count('Card');
      const missing = await api.call(
        'POST',
        '/api/cards',
        '/api/cards',
        { title: 'Lost', columnId: 'nowhere' },
        { idem: idem('card') },
      );
      expect(missing.status, missing.text).to.equal(422);
      expect(problems(missing)).to.deep.equal({
        code: 'REFERENCE_NOT_FOUND',
        details: ['columnId:REFERENCE_NOT_FOUND'],
      });
      for (const [columnId, detail] of [
        ['', 'columnId:INVALID_TYPE'],
        [' backlog', 'columnId:INVALID_TYPE'],
        [7, 'columnId:INVALID_TYPE'],
      ] as const) {
        const res = await api.call(
          'POST',
          '/api/cards',
          '/api/cards',
          { title: 'Bad', columnId },
          { idem: idem('card') },
        );
        expect(res.status, res.text).to.equal(400);
        expect(problems(res)).to.deep.equal({ code: 'VALIDATION_FAILED', details: [detail] });
      }
      expect(await app.rows.count('Card')).to.equal(before);
    });

    it('lists, reads and updates cards, and MoveCard moves one to a Text id unless its column is locked', async () => {
      const card = await api.create('cards', { title: 'Ship it', columnId: 'doing', reviewColumnId: 'review' });
      const list = await api.call('GET', '/api/cards', '/api/cards');
      expect((list.body as { items: Rec[] }).items.map((c) => c.id)).to.include(card.id);
      const put = await api.call(
        'PUT',
        '/api/cards/{id}',
        `/api/cards/${card.id}`,
        { columnId: 'backlog' },
        { idem: idem('put') },
      );
      expect(put.status, put.text).to.equal(200);
      expect(put.body).to.include({ columnId: 'backlog', reviewColumnId: 'review' });
      const moved = await api.command('move_card', card.id as string, { to: 'doing' }, { idem: idem('move') });
      expect(moved.status, moved.text).to.equal(200);
      expect(moved.body).to.include({ columnId: 'doing' });
      const nowhere = await api.command('move_card', card.id as string, { to: 'nowhere' }, { idem: idem('move') });
      expect(nowhere.status, nowhere.text).to.equal(422);
      const notAnId = await api.command('move_card', card.id as string, { to: '' }, { idem: idem('move') });
      expect(notAnId.status, notAnId.text).to.equal(400);
      expect(problems(notAnId)).to.deep.equal({ code: 'VALIDATION_FAILED', details: ['to:INVALID_TYPE'] });
      // The policy reads the card's column through its Text id.
      await api.call('PUT', '/api/columns/{id}', '/api/columns/doing', { locked: true }, { idem: idem('lock') });
      const locked = await api.command('move_card', card.id as string, { to: 'backlog' }, { idem: idem('move') });
      expect(locked.status, locked.text).to.equal(403);
      expect((await api.get('cards', card.id as string)).columnId).to.equal('doing');
    });

    it('deletes a column no card needs, and refuses one a card needs (409 REFERENCE_CONFLICT)', async () => {
      await createColumn({ id: 'spare', title: 'Spare' });
      const del = await api.call('DELETE', '/api/columns/{id}', '/api/columns/spare', undefined, { idem: idem('del') });
      expect(del.status, del.text).to.equal(204);
      const needed = await api.call('DELETE', '/api/columns/{id}', '/api/columns/backlog', undefined, {
        idem: idem('del'),
      });
      expect(needed.status, needed.text).to.equal(409);
      expect(problems(needed).code).to.equal('REFERENCE_CONFLICT');
    });

    it('describes Text ids in openapi.json: path parameters, records, the create body', () => {
      const text = { type: 'string', minLength: 1, maxLength: 255 };
      expect(idSchema(appDir, '/api/columns/{id}')).to.deep.equal(text);
      const doc = JSON.parse(fs.readFileSync(path.join(appDir, 'openapi.json'), 'utf8')) as {
        components: { schemas: Record<string, { properties: Record<string, Rec> }> };
      };
      expect(doc.components.schemas.ColumnCreate.properties.id).to.include(text);
      expect(doc.components.schemas.Column.properties.id).to.not.have.property('readOnly');
      expect(doc.components.schemas.CardCreate.properties.columnId).to.include({ ...text, default: 'backlog' });
      expect(doc.components.schemas.CardUpdate.properties).to.not.have.property('id');
    });
  });

for (const database of DATABASES)
  describe(`Zebric keys: Integer primary keys (test/fixtures/zebric/integer-keys, ${database})`, function () {
    this.timeout(120_000);
    const CLERK = 'clerk-key-0123456789abcdef';
    let app: AppOnDatabase;
    let api: Api;
    let appDir: string;

    const post = (collection: string, body: Rec, key = idem(collection)) =>
      api.call('POST', `/api/${collection}`, `/api/${collection}`, body, { idem: key });
    const statusOf = async (method: string, template: string, urlPath: string, body?: unknown): Promise<number> =>
      (await api.call(method, template, urlPath, body, method === 'GET' ? {} : { idem: idem('x') })).status;

    before(async () => {
      ({ app, api, appDir } = await bootFixture(database, 'integer-keys', { LEDGER_CLERK_KEY: CLERK }, CLERK));
    });
    after(async () => app?.close());

    it('validates without a diagnostic', () => {
      expect(diagnosticsOf('integer-keys')).to.deep.equal([]);
    });

    it('describes itself in a valid OpenAPI 3.1 document', async () => {
      await expectValidOpenApi(appDir);
    });

    it('assigns 1, 2, 3... from the database, and never reuses the id of a deleted record', async () => {
      const ids: unknown[] = [];
      for (const name of ['Ada', 'Grace', 'Edsger']) {
        const res = await post('customers', { name });
        expect(res.status, res.text).to.equal(201);
        expect(res.headers.get('location')).to.equal(`/api/customers/${(res.body as Rec).id}`);
        ids.push((res.body as Rec).id);
      }
      expect(ids).to.deep.equal([1, 2, 3]);
      expect(await statusOf('DELETE', '/api/customers/{id}', '/api/customers/3')).to.equal(204);
      const next = await post('customers', { name: 'Barbara' });
      expect((next.body as Rec).id).to.equal(4);
      const list = await api.call('GET', '/api/customers', '/api/customers');
      expect((list.body as { items: Rec[] }).items.map((c) => c.id)).to.deep.equal([1, 2, 4]);
      expect(await api.get('customers', '2')).to.deep.equal({ id: 2, name: 'Grace', blocked: false });
    });

    it('refuses an id sent by the client (400 READ_ONLY), storing nothing', async () => {
      const before = await app.rows.count('Customer');
      for (const id of [99, 5, '5']) {
        const res = await post('customers', { id, name: 'Mallory' });
        expect(res.status, res.text).to.equal(400);
        expect(problems(res)).to.deep.equal({ code: 'VALIDATION_FAILED', details: ['id:READ_ONLY'] });
      }
      expect(await app.rows.count('Customer')).to.equal(before);
    });

    it('answers 404 for a path id that is not a decimal integer in the safe range, on every route', async () => {
      const bad = ['abc', '01', '1.0', '1e0', '+1', '-0', ' 1', '0x1', '9007199254740993', '99999999999999999999'];
      for (const id of bad) {
        const encoded = encodeURIComponent(id);
        expect(await statusOf('GET', '/api/customers/{id}', `/api/customers/${encoded}`), id).to.equal(404);
        expect(await statusOf('PUT', '/api/customers/{id}', `/api/customers/${encoded}`, { name: 'X' }), id).to.equal(
          404,
        );
        expect(await statusOf('DELETE', '/api/customers/{id}', `/api/customers/${encoded}`), id).to.equal(404);
        const cmd = await api.command('pay_invoice', encoded, undefined, { idem: idem('pay') });
        expect(cmd.status, id).to.equal(404);
        expect((await api.audit('Customer', id)).status, id).to.equal(404);
      }
      expect(await statusOf('GET', '/api/customers/{id}', '/api/customers/12345')).to.equal(404);
      expect((await api.get('customers', '1')).name).to.equal('Ada');
    });

    it(
      'checks Refs to Integer keys: numbers only (400), existing records (422), ' +
        'the default 1 (422 until Currency 1 exists)',
      async () => {
        const noCurrency = await post('invoices', { customerId: 1, amountCents: 500 });
        expect(noCurrency.status, noCurrency.text).to.equal(422);
        expect(problems(noCurrency)).to.deep.equal({
          code: 'REFERENCE_NOT_FOUND',
          details: ['currencyId:REFERENCE_NOT_FOUND'],
        });
        expect((await post('currencys', { code: 'EUR' })).body).to.deep.equal({ id: 1, code: 'EUR' });
        const before = await app.rows.count('Invoice');
        for (const [customerId, detail] of [
          ['1', 'customerId:INVALID_TYPE'],
          [1.5, 'customerId:INVALID_TYPE'],
          [null, 'customerId:REQUIRED'],
        ] as const) {
          const res = await post('invoices', { customerId, amountCents: 500 });
          expect(res.status, res.text).to.equal(400);
          expect(problems(res)).to.deep.equal({ code: 'VALIDATION_FAILED', details: [detail] });
        }
        const missing = await post('invoices', { customerId: 3, amountCents: 500 });
        expect(missing.status, missing.text).to.equal(422);
        expect(problems(missing)).to.deep.equal({
          code: 'REFERENCE_NOT_FOUND',
          details: ['customerId:REFERENCE_NOT_FOUND'],
        });
        expect(await app.rows.count('Invoice')).to.equal(before);
        const invoice = await post('invoices', { customerId: 1, amountCents: 500 });
        expect(invoice.status, invoice.text).to.equal(201);
        expect(invoice.body).to.deep.equal({
          invoiceNo: 1,
          customerId: 1,
          currencyId: 1,
          amountCents: 500,
          status: 'open',
        });
        expect(invoice.headers.get('location')).to.equal('/api/invoices/1');
      },
    );

    it('reads, updates and deletes by Integer id, with the audit trail under the id as text', async () => {
      const created = (await post('invoices', { customerId: 2, amountCents: 700 })).body as Rec;
      expect(created.invoiceNo).to.equal(2);
      const put = await api.call(
        'PUT',
        '/api/invoices/{id}',
        '/api/invoices/2',
        { amountCents: 750, invoiceNo: 2 },
        { idem: idem('put') },
      );
      expect(put.status, put.text).to.equal(200);
      expect(put.body).to.include({ invoiceNo: 2, amountCents: 750 });
      const renumber = await api.call(
        'PUT',
        '/api/invoices/{id}',
        '/api/invoices/2',
        { invoiceNo: 9 },
        { idem: idem('put') },
      );
      expect(problems(renumber)).to.deep.equal({ code: 'VALIDATION_FAILED', details: ['invoiceNo:READ_ONLY'] });
      const trail = await api.trail('Invoice', '2');
      expect(trail.map((a) => [a.operation, a.recordId])).to.deep.equal([
        ['Invoice.update', '2'],
        ['Invoice.create', '2'],
      ]);
      expect(await statusOf('DELETE', '/api/invoices/{id}', '/api/invoices/2')).to.equal(204);
      expect(await statusOf('GET', '/api/invoices/{id}', '/api/invoices/2')).to.equal(404);
      expect((await api.trail('Invoice', '1')).length).to.equal(1);
    });

    it('replays an idempotent create with the id it assigned, creating nothing more', async () => {
      const key = idem('replay');
      const before = await app.rows.count('Customer');
      const first = await post('customers', { name: 'Alan' }, key);
      const again = await post('customers', { name: 'Alan' }, key);
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(first.body);
      expect(again.headers.get('location')).to.equal(first.headers.get('location'));
      expect(await app.rows.count('Customer')).to.equal(before + 1);
      const list = await api.call('GET', '/api/customers', '/api/customers');
      expect((list.body as { items: Rec[] }).items.filter((c) => c.name === 'Alan')).to.have.length(1);
    });

    it('commands run on Integer ids: the policy loads the customer by its Ref; Ref inputs are numbers', async () => {
      const paid = await api.command('pay_invoice', '1', undefined, { idem: idem('pay') });
      expect(paid.status, paid.text).to.equal(200);
      expect(paid.body).to.include({ invoiceNo: 1, status: 'paid' });
      const blocked = (await post('invoices', { customerId: 4, amountCents: 900 })).body as Rec;
      await api.call('PUT', '/api/customers/{id}', '/api/customers/4', { blocked: true }, { idem: idem('block') });
      const refused = await api.command('pay_invoice', String(blocked.invoiceNo), undefined, { idem: idem('pay') });
      expect(refused.status, refused.text).to.equal(403);
      const reassigned = await api.command(
        'reassign_invoice',
        String(blocked.invoiceNo),
        { customer: 2 },
        { idem: idem('re') },
      );
      expect(reassigned.status, reassigned.text).to.equal(200);
      expect(reassigned.body).to.include({ customerId: 2 });
      const asText = await api.command(
        'reassign_invoice',
        String(blocked.invoiceNo),
        { customer: '1' },
        { idem: idem('re') },
      );
      expect(problems(asText)).to.deep.equal({ code: 'VALIDATION_FAILED', details: ['customer:INVALID_TYPE'] });
      const nobody = await api.command(
        'reassign_invoice',
        String(blocked.invoiceNo),
        { customer: 77 },
        { idem: idem('re') },
      );
      expect(nobody.status, nobody.text).to.equal(422);
      const trail = await api.trail('Invoice', String(blocked.invoiceNo));
      expect(trail.map((a) => a.operation)).to.deep.equal(['command:ReassignInvoice', 'Invoice.create']);
      expect(await statusOf('GET', '/api/invoices/{id}', `/api/invoices/${blocked.invoiceNo}`)).to.equal(200);
    });

    it('matches notes to a customer by a plain Integer field (hasMany) for VerifyCustomer; serves them', async () => {
      const unverified = await api.command('verify_customer', '4', undefined, { idem: idem('verify') });
      expect(unverified.status, unverified.text).to.equal(403);
      const note = await post('notes', { customerNo: 4, text: 'verified' });
      expect(note.status, note.text).to.equal(201);
      expect(note.body).to.deep.equal({ id: 1, customerNo: 4, text: 'verified' });
      // A note about another customer does not count.
      await post('notes', { customerNo: 2, text: 'verified' });
      expect((await api.command('verify_customer', '1', undefined, { idem: idem('verify') })).status).to.equal(403);
      const verified = await api.command('verify_customer', '4', undefined, { idem: idem('verify') });
      expect(verified.status, verified.text).to.equal(200);
      expect(verified.body).to.include({ id: 4, blocked: false });
      const put = await api.call(
        'PUT',
        '/api/notes/{id}',
        '/api/notes/1',
        { text: 'verified twice' },
        { idem: idem('put') },
      );
      expect(put.body).to.deep.equal({ id: 1, customerNo: 4, text: 'verified twice' });
      const list = await api.call('GET', '/api/notes', '/api/notes');
      expect((list.body as { items: Rec[] }).items.map((n) => n.id)).to.deep.equal([1, 2]);
      expect(await statusOf('DELETE', '/api/notes/{id}', '/api/notes/2')).to.equal(204);
    });

    it('describes Integer ids in openapi.json: path parameters, records and Refs are integers', () => {
      // Prisma's Int: 32 bits on PostgreSQL, so one range on both databases.
      const integer = { type: 'integer', format: 'int32', minimum: -2147483648, maximum: 2147483647 };
      expect(idSchema(appDir, '/api/invoices/{id}')).to.deep.equal(integer);
      expect(idSchema(appDir, '/api/commands/pay_invoice/{id}')).to.deep.equal(integer);
      const doc = JSON.parse(fs.readFileSync(path.join(appDir, 'openapi.json'), 'utf8')) as {
        components: { schemas: Record<string, { properties: Record<string, Rec> }> };
      };
      expect(doc.components.schemas.Invoice.properties.invoiceNo).to.include({ type: 'integer', readOnly: true });
      expect(doc.components.schemas.InvoiceCreate.properties).to.not.have.property('invoiceNo');
      expect(doc.components.schemas.InvoiceCreate.properties.currencyId).to.include({ type: 'integer', default: 1 });
    });

    const keyColumn = database === 'sqlite' ? 'INTEGER PRIMARY KEY AUTOINCREMENT' : 'SERIAL';
    it(`writes Int columns for Integer keys and the Refs to them, ${keyColumn} in SQL`, () => {
      const prisma = prismaDir(appDir, database);
      const schema = fs.readFileSync(path.join(prisma, 'schema.prisma'), 'utf8');
      expect(schema).to.include('invoiceNo   Int      @id @default(autoincrement())');
      expect(schema).to.include('customerId  Int\n');
      const [migration] = fs.readdirSync(path.join(prisma, 'migrations')).filter((d) => /^\d/.test(d));
      const sql = fs.readFileSync(path.join(prisma, 'migrations', migration, 'migration.sql'), 'utf8');
      if (database === 'sqlite') {
        expect(sql).to.include('"invoiceNo" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT');
      } else {
        expect(sql).to.include('"invoiceNo" SERIAL NOT NULL');
        expect(sql).to.include('CONSTRAINT "Invoice_pkey" PRIMARY KEY ("invoiceNo")');
      }
      expect(sql).to.include('"currencyId" INTEGER NOT NULL DEFAULT 1');
    });
  });

for (const database of DATABASES)
  describe(`Zebric keys: UUID primary keys (test/fixtures/zebric/uuid-keys, ${database})`, function () {
    this.timeout(120_000);
    const DISPATCHER = 'dispatcher-key-0123456789abcdef';
    let app: AppOnDatabase;
    let api: Api;
    let appDir: string;

    const post = (collection: string, body: Rec) =>
      api.call('POST', `/api/${collection}`, `/api/${collection}`, body, { idem: idem(collection) });

    before(async () => {
      ({ app, api, appDir } = await bootFixture(
        database,
        'uuid-keys',
        { FLEET_DISPATCHER_KEY: DISPATCHER },
        DISPATCHER,
      ));
    });
    after(async () => app?.close());

    it('validates without a diagnostic', () => {
      expect(diagnosticsOf('uuid-keys')).to.deep.equal([]);
    });

    it('describes itself in a valid OpenAPI 3.1 document', async () => {
      await expectValidOpenApi(appDir);
    });

    it('generates UUIDs, refuses a client-sent one, and serves the record under it', async () => {
      const depot = await post('depots', { city: 'Lyon' });
      expect(depot.status, depot.text).to.equal(201);
      const id = (depot.body as Rec).id as string;
      expect(id).to.match(UUID);
      expect(depot.headers.get('location')).to.equal(`/api/depots/${id}`);
      const sent = await post('depots', { id: '0f8fad5b-d9cb-469f-a165-70867728950e', city: 'Nice' });
      expect(problems(sent)).to.deep.equal({ code: 'VALIDATION_FAILED', details: ['id:READ_ONLY'] });
      expect(await app.rows.count('Depot')).to.equal(1);
      expect(await api.get('depots', id)).to.deep.equal({ id, city: 'Lyon' });
      const put = await api.call(
        'PUT',
        '/api/depots/{id}',
        `/api/depots/${id}`,
        { city: 'Lyon 7e' },
        { idem: idem('put') },
      );
      expect(put.body).to.deep.equal({ id, city: 'Lyon 7e' });
      const list = await api.call('GET', '/api/depots', '/api/depots');
      expect((list.body as { items: Rec[] }).items).to.deep.equal([{ id, city: 'Lyon 7e' }]);
    });

    it('checks Refs to UUID keys: the UUID form (400) and an existing record (422)', async () => {
      const depot = (await post('depots', { city: 'Lille' })).body as Rec;
      const before = await app.rows.count('Truck');
      const notUuid = await post('trucks', { plate: 'AB-123-CD', depotId: 'lille' });
      expect(problems(notUuid)).to.deep.equal({ code: 'VALIDATION_FAILED', details: ['depotId:INVALID_TYPE'] });
      const missing = await post('trucks', { plate: 'AB-123-CD', depotId: '0f8fad5b-d9cb-469f-a165-70867728950e' });
      expect(missing.status, missing.text).to.equal(422);
      expect(problems(missing)).to.deep.equal({
        code: 'REFERENCE_NOT_FOUND',
        details: ['depotId:REFERENCE_NOT_FOUND'],
      });
      expect(await app.rows.count('Truck')).to.equal(before);
      const truck = await post('trucks', { plate: 'AB-123-CD', depotId: depot.id });
      expect(truck.status, truck.text).to.equal(201);
      const truckId = (truck.body as Rec).truckId as string;
      expect(truckId).to.match(UUID);
      expect(truck.headers.get('location')).to.equal(`/api/trucks/${truckId}`);
      const put = await api.call(
        'PUT',
        '/api/trucks/{id}',
        `/api/trucks/${truckId}`,
        { plate: 'EF-456-GH' },
        { idem: idem('put') },
      );
      expect(put.body).to.deep.equal({ truckId, plate: 'EF-456-GH', depotId: depot.id });
      const del = await api.call('DELETE', '/api/trucks/{id}', `/api/trucks/${truckId}`, undefined, {
        idem: idem('del'),
      });
      expect(del.status, del.text).to.equal(204);
    });

    it('checks a Ref to a unique field that is not the key (Truck.plate) against that field', async () => {
      const depot = (await post('depots', { city: 'Brest' })).body as Rec;
      await post('trucks', { plate: 'TR-001', depotId: depot.id });
      const trip = await post('trips', { truckPlate: 'TR-001', destination: 'Quimper' });
      expect(trip.status, trip.text).to.equal(201);
      expect(trip.body).to.include({ truckPlate: 'TR-001', destination: 'Quimper' });
      const missing = await post('trips', { truckPlate: 'TR-404', destination: 'Nowhere' });
      expect(problems(missing)).to.deep.equal({
        code: 'REFERENCE_NOT_FOUND',
        details: ['truckPlate:REFERENCE_NOT_FOUND'],
      });
      const notText = await post('trips', { truckPlate: 1, destination: 'Nowhere' });
      expect(problems(notText)).to.deep.equal({ code: 'VALIDATION_FAILED', details: ['truckPlate:INVALID_TYPE'] });
      const id = (trip.body as Rec).id as string;
      const put = await api.call(
        'PUT',
        '/api/trips/{id}',
        `/api/trips/${id}`,
        { destination: 'Morlaix' },
        { idem: idem('put') },
      );
      expect(put.body).to.include({ truckPlate: 'TR-001', destination: 'Morlaix' });
      const list = await api.call('GET', '/api/trips', '/api/trips');
      expect((list.body as { items: Rec[] }).items.map((t) => t.id)).to.deep.equal([id]);
    });

    it('describes UUID ids in openapi.json', () => {
      expect(idSchema(appDir, '/api/trucks/{id}')).to.deep.equal({ type: 'string', format: 'uuid' });
    });
  });

for (const database of DATABASES)
  describe(`Zebric keys: polymorphic relations (test/fixtures/zebric/polymorphic, ${database})`, function () {
    this.timeout(120_000);
    const EDITOR = 'editor-key-0123456789abcdef';
    let app: AppOnDatabase;
    let api: Api;
    let appDir: string;

    const comment = (relatedEntityType: string, relatedEntityId: string, kind: string) =>
      api.create('comments', { relatedEntityType, relatedEntityId, kind, body: `${kind} on ${relatedEntityId}` });

    before(async () => {
      ({ app, api, appDir } = await bootFixture(database, 'polymorphic', { NEWSROOM_EDITOR_KEY: EDITOR }, EDITOR));
    });
    after(async () => app?.close());

    it('validates without a diagnostic', () => {
      expect(diagnosticsOf('polymorphic')).to.deep.equal([]);
    });

    it('describes itself in a valid OpenAPI 3.1 document', async () => {
      await expectValidOpenApi(appDir);
    });

    it('stores the subject as plain fields: no foreign key, no Prisma relation', async () => {
      const schema = fs.readFileSync(path.join(prismaDir(appDir, database), 'schema.prisma'), 'utf8');
      expect(schema).to.not.match(/@relation/);
      const orphan = await comment('Ticket', 'no-such-ticket', 'note');
      expect(orphan.relatedEntityId).to.equal('no-such-ticket');
      const fks =
        database === 'sqlite'
          ? await app.rows.all(`SELECT * FROM pragma_foreign_key_list('Comment')`)
          : await app.rows.all(
              `SELECT conname FROM pg_constraint WHERE conrelid = '"Comment"'::regclass AND contype = 'f'`,
            );
      expect(fks).to.deep.equal([]);
    });

    it('creates, lists, reads, updates and deletes every entity', async () => {
      const article = await api.create('articles', { slug: 'launch-day', title: 'Launch day' });
      expect(article).to.deep.equal({ slug: 'launch-day', title: 'Launch day', status: 'draft' });
      const ticket = await api.create('tickets', { subject: 'Typo' });
      const sla = await api.create('slas', { subjectId: ticket.id, tier: 'basic' });
      const note = await comment('Article', 'launch-day', 'note');
      for (const [collection, record, key] of [
        ['articles', article, 'slug'],
        ['tickets', ticket, 'id'],
        ['slas', sla, 'id'],
        ['comments', note, 'id'],
      ] as const) {
        const id = record[key] as string;
        expect(await api.get(collection, id)).to.deep.equal(record);
        const list = await api.call('GET', `/api/${collection}`, `/api/${collection}`);
        expect((list.body as { items: Rec[] }).items.map((r) => r[key])).to.include(id);
      }
      const put = await api.call(
        'PUT',
        '/api/comments/{id}',
        `/api/comments/${note.id}`,
        { body: 'edited' },
        { idem: idem('put') },
      );
      expect(put.body).to.include({ body: 'edited', relatedEntityId: 'launch-day' });
      const del = await api.call('DELETE', '/api/comments/{id}', `/api/comments/${note.id}`, undefined, {
        idem: idem('del'),
      });
      expect(del.status, del.text).to.equal(204);
    });

    it('lets PublishArticle through only once a comment approves that article (hasMany on a Text key)', async () => {
      await api.create('articles', { slug: 'draft-one', title: 'Draft one' });
      await api.create('articles', { slug: 'draft-two', title: 'Draft two' });
      await comment('Article', 'draft-one', 'note');
      await comment('Article', 'draft-two', 'approval');
      const refused = await api.command('publish_article', 'draft-one', undefined, { idem: idem('pub') });
      expect(refused.status, refused.text).to.equal(403);
      expect((await api.get('articles', 'draft-one')).status).to.equal('draft');
      await comment('Article', 'draft-one', 'approval');
      const published = await api.command('publish_article', 'draft-one', undefined, { idem: idem('pub') });
      expect(published.status, published.text).to.equal(200);
      expect(published.body).to.include({ slug: 'draft-one', status: 'published' });
    });

    it('checks CloseTicket against its comments (hasMany) and its SLA (hasOne) on a ULID key', async () => {
      const plain = await api.create('tickets', { subject: 'Slow page' });
      const id = plain.id as string;
      const early = await api.command('close_ticket', id, undefined, { idem: idem('close') });
      expect(early.status, early.text).to.equal(409);
      expect(problems(early).code).to.equal('COMMAND_UNAVAILABLE');
      await comment('Ticket', id, 'resolution');
      const closed = await api.command('close_ticket', id, undefined, { idem: idem('close') });
      expect(closed.status, closed.text).to.equal(200);
      expect(closed.body).to.include({ closed: true });

      const gold = await api.create('tickets', { subject: 'Outage' });
      await api.create('slas', { subjectId: gold.id, tier: 'gold' });
      await comment('Ticket', gold.id as string, 'resolution');
      const unapproved = await api.command('close_ticket', gold.id as string, undefined, { idem: idem('close') });
      expect(unapproved.status, unapproved.text).to.equal(403);
      await comment('Ticket', gold.id as string, 'approval');
      const approved = await api.command('close_ticket', gold.id as string, undefined, { idem: idem('close') });
      expect(approved.status, approved.text).to.equal(200);
    });
  });

for (const database of DATABASES)
  describe(`Zebric keys: entity indexes (test/fixtures/zebric/indexes, ${database})`, function () {
    this.timeout(120_000);
    const BOX = 'boxoffice-key-0123456789abcdef';
    let app: AppOnDatabase;
    let api: Api;
    let appDir: string;

    const seat = (body: Rec): Promise<HttpResponse> =>
      api.call(
        'POST',
        '/api/seats',
        '/api/seats',
        { eventId: 'gala', row: 'A', number: 1, code: 'GA-A1', ...body },
        { idem: idem('seat') },
      );

    before(async () => {
      ({ app, api, appDir } = await bootFixture(database, 'indexes', { VENUE_BOXOFFICE_KEY: BOX }, BOX));
    });
    after(async () => app?.close());

    it('validates with one warning: the entry that repeats the primary key', () => {
      expect(diagnosticsOf('indexes')).to.deep.equal([
        'app.toml:36:3 warning REDUNDANT_INDEX entity.Seat.indexes.4: this index adds nothing: ' +
          '"id" is the primary key, already unique and indexed; it is not generated',
      ]);
    });

    it('describes itself in a valid OpenAPI 3.1 document', async () => {
      await expectValidOpenApi(appDir);
    });

    it('writes @@unique / @@index (with map: for named ones), and the database has exactly those indexes', async () => {
      const schema = fs.readFileSync(path.join(prismaDir(appDir, database), 'schema.prisma'), 'utf8');
      expect(schema).to.include(
        [
          '  @@index([section])',
          '  @@unique([eventId, row, number], map: "seat_position")',
          '  @@unique([eventId, code])',
          '  @@index([holder, eventId], map: "seat_holder")',
          '  @@index([row])',
          '}',
        ].join('\n'),
      );
      // Every index but the primary key's, as the database itself describes it.
      if (database === 'sqlite') {
        const indexes = await app.rows.all(
          `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Seat' ` +
            'AND sql IS NOT NULL ORDER BY name',
        );
        expect(indexes).to.deep.equal([
          {
            name: 'Seat_eventId_code_key',
            sql: 'CREATE UNIQUE INDEX "Seat_eventId_code_key" ON "Seat"("eventId", "code")',
          },
          { name: 'Seat_row_idx', sql: 'CREATE INDEX "Seat_row_idx" ON "Seat"("row")' },
          { name: 'Seat_section_idx', sql: 'CREATE INDEX "Seat_section_idx" ON "Seat"("section")' },
          { name: 'seat_holder', sql: 'CREATE INDEX "seat_holder" ON "Seat"("holder", "eventId")' },
          { name: 'seat_position', sql: 'CREATE UNIQUE INDEX "seat_position" ON "Seat"("eventId", "row", "number")' },
        ]);
      } else {
        const indexes = await app.rows.all(
          `SELECT i.relname AS name, pg_get_indexdef(i.oid) AS sql
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
         WHERE x.indrelid = '"Seat"'::regclass AND NOT x.indisprimary ORDER BY i.relname COLLATE "C"`,
        );
        expect(indexes).to.deep.equal([
          {
            name: 'Seat_eventId_code_key',
            sql: 'CREATE UNIQUE INDEX "Seat_eventId_code_key" ON public."Seat" USING btree ("eventId", code)',
          },
          { name: 'Seat_row_idx', sql: 'CREATE INDEX "Seat_row_idx" ON public."Seat" USING btree ("row")' },
          { name: 'Seat_section_idx', sql: 'CREATE INDEX "Seat_section_idx" ON public."Seat" USING btree (section)' },
          { name: 'seat_holder', sql: 'CREATE INDEX seat_holder ON public."Seat" USING btree (holder, "eventId")' },
          {
            name: 'seat_position',
            sql: 'CREATE UNIQUE INDEX seat_position ON public."Seat" USING btree ("eventId", "row", number)',
          },
        ]);
      }
    });

    it(
      'answers 409 UNIQUE_CONFLICT naming the fields of a composite unique index, on create and update, ' +
        'storing nothing',
      async () => {
        const first = await seat({});
        expect(first.status, first.text).to.equal(201);
        const before = await app.rows.count('Seat');
        const sameSpot = await seat({ code: 'GA-A1-bis' });
        expect(sameSpot.status, sameSpot.text).to.equal(409);
        expect(problems(sameSpot)).to.deep.equal({
          code: 'UNIQUE_CONFLICT',
          details: ['eventId:UNIQUE', 'row:UNIQUE', 'number:UNIQUE'],
        });
        expect((sameSpot.body as { error: { message: string } }).error.message).to.equal(
          'another record already has this eventId and row and number',
        );
        const sameCode = await seat({ number: 2 });
        expect(problems(sameCode)).to.deep.equal({
          code: 'UNIQUE_CONFLICT',
          details: ['eventId:UNIQUE', 'code:UNIQUE'],
        });
        expect(await app.rows.count('Seat')).to.equal(before);
        // The same seat at another event, or the next seat, is fine.
        expect((await seat({ eventId: 'matinee' })).status).to.equal(201);
        const next = await seat({ number: 2, code: 'GA-A2' });
        expect(next.status, next.text).to.equal(201);
        const id = (next.body as Rec).id as string;
        const clash = await api.call(
          'PUT',
          '/api/seats/{id}',
          `/api/seats/${id}`,
          { number: 1 },
          { idem: idem('put') },
        );
        expect(clash.status, clash.text).to.equal(409);
        expect(problems(clash).details).to.deep.equal(['eventId:UNIQUE', 'row:UNIQUE', 'number:UNIQUE']);
        expect((await api.get('seats', id)).number).to.equal(2);
      },
    );

    it('reads, lists, updates and deletes seats; plain indexes allow repeated values', async () => {
      const a = (await seat({ row: 'B', code: 'GA-B1', holder: 'ada' })).body as Rec;
      const b = (await seat({ row: 'B', number: 2, code: 'GA-B2', holder: 'ada' })).body as Rec;
      expect(await api.get('seats', b.id as string)).to.include({ holder: 'ada', row: 'B' });
      const list = await api.call('GET', '/api/seats', '/api/seats');
      expect((list.body as { items: Rec[] }).items.map((s) => s.id)).to.include.members([a.id, b.id]);
      const put = await api.call(
        'PUT',
        '/api/seats/{id}',
        `/api/seats/${a.id}`,
        { holder: null },
        { idem: idem('put') },
      );
      expect(put.body).to.include({ holder: null });
      const del = await api.call('DELETE', '/api/seats/{id}', `/api/seats/${a.id}`, undefined, { idem: idem('del') });
      expect(del.status, del.text).to.equal(204);
    });
  });
