// An update or a command changes its row, under rules that read the row, and answers with it. On
// PostgreSQL 18 and later one statement reads, locks and changes the row (UPDATE ... RETURNING the
// row as it was); where the database itself may refuse the change (a unique field), the row is
// read and locked first, so that the rules still answer before the database does. Either way,
// and on SQLite, a refusal changes nothing, and the answer, the stored row and the audit agree.

import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { freshDir, freshKey, generate, request, ROOT, type HttpResponse } from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

type Rec = Record<string, unknown>;

const KEY = 'row-change-clerk-key-0123456789ab';
const headers = { authorization: `Bearer ${KEY}` };

interface Span {
  name: string;
  attributes?: Rec;
}
interface Db {
  read<T>(work: Generator<unknown, T, unknown>): Promise<T>;
  close(): Promise<void>;
}

for (const database of DATABASES) {
  describe(`changing one row under its rules (${database})`, function () {
    this.timeout(120_000);
    let url: string;
    let db: Db;
    let description: string;
    let get: (sql: string, params?: unknown[]) => Generator<unknown, Rec | undefined, unknown>;
    let traces: { list(): Array<{ traceId: string; spans: Span[] }> };
    let close: () => Promise<void>;

    before(async () => {
      const appDir = path.join(freshDir(`row-change-${database}`), 'app');
      await generate(path.join(ROOT, 'test/fixtures/row-change/app.toml'), appDir);
      const load = async (file: string) => import(pathToFileURL(path.join(appDir, file)).href);
      const { openDatabase } = await load('src/runtime/data/open.ts');
      ({ get } = await load('src/runtime/data/database.ts'));
      const opened = await openDatabase(appDir, { DATABASE_URL: await databaseUrl(database, 'rows') });
      ({ db, description } = opened);
      // In this process, so that each request's trace (a span per statement) can be read.
      const app = (await load('src/app.ts')).createApp({ db, appDir, env: { CLERK_KEY: KEY }, warn: () => undefined });
      traces = app.traces;
      const server: Server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      close = async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        await app.close();
        await db.close();
      };
    });
    after(async () => close?.());

    const write = (method: string, urlPath: string, json: unknown): Promise<HttpResponse> =>
      request(url, method, urlPath, { json, headers: { ...headers, 'idempotency-key': freshKey() } });
    const create = async (json: Rec): Promise<Rec> => {
      const res = await write('POST', '/api/cards', { title: 'A card', ...json });
      expect(res.status, res.text).to.equal(201);
      return res.body as Rec;
    };
    const stored = (table: string, id: unknown) => db.read(get(`SELECT * FROM "${table}" WHERE "id" = ?`, [id]));
    /** The statements a request sent, in order, but BEGIN, COMMIT and the key's and audit's rows. */
    const statementsOf = async (res: HttpResponse): Promise<string[]> => {
      let trace: { spans: Span[] } | undefined;
      // The trace is filed when the response has been sent; it may lag the client's read.
      for (let i = 0; i < 100 && !trace; i++) {
        trace = traces.list().find((t) => t.traceId === res.headers.get('x-trace-id'));
        if (!trace) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(trace, 'the request is traced').to.not.equal(undefined);
      return (trace as { spans: Span[] }).spans
        .filter((s) => s.name === 'database.query')
        .map((s) => String(s.attributes?.sql))
        .filter(
          (sql) => !/^(BEGIN|COMMIT)$|^(INSERT INTO|UPDATE|DELETE FROM) "_bp_|^SELECT [^()]* FROM "_bp_/.test(sql),
        );
    };
    const auditOf = async (id: unknown): Promise<Rec> => {
      const row = await db.read(get('SELECT "changes" FROM "_bp_audit" WHERE "recordId" = ? ORDER BY "id" DESC', [id]));
      return JSON.parse(String(row?.changes)) as Rec;
    };

    const audited = async (id: unknown): Promise<number> =>
      Number((await db.read(get('SELECT count(*) AS n FROM "_bp_audit" WHERE "recordId" = ?', [id])))?.n);

    if (database === 'postgres') {
      it('names the server version when it opens PostgreSQL', () => {
        expect(description).to.match(/^PostgreSQL \d+\.\d+\S*, a pool of 10 connections$/);
      });
    }

    it('updates a row: the answer, the stored row and the audit agree', async () => {
      const card = await create({ title: 'Before' });
      const res = await write('PUT', `/api/cards/${card.id}`, { title: 'After' });
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.deep.equal({ ...card, title: 'After' });
      expect((await request(url, 'GET', `/api/cards/${card.id}`, { headers })).body).to.deep.equal(res.body);
      expect(await auditOf(card.id)).to.deep.equal({ title: { before: 'Before', after: 'After' } });
      const statements = await statementsOf(res);
      if (database === 'postgres') {
        // One statement: the row as it was comes back from the UPDATE itself, locked by it.
        expect(statements).to.have.length(1);
        expect(statements[0]).to.match(
          new RegExp(
            String.raw`^UPDATE "Card" SET "title" = \? WHERE "id" = \? AND \(.+\) ` +
              String.raw`RETURNING WITH \(OLD AS bp_old, NEW AS bp_new\) bp_old\."id" AS "id", `,
          ),
        );
      } else {
        expect(statements).to.have.length(2);
        expect(statements[0]).to.match(/^SELECT "id", .* FROM "Card" WHERE "id" = \? AND \(.+\)$/);
        expect(statements[1]).to.equal('UPDATE "Card" SET "title" = ? WHERE "id" = ?');
      }
    });

    it('answers with the JSON the database stored, changed in one statement on PostgreSQL', async () => {
      const created = await write('POST', '/api/sheets', { title: 'Sheet', data: { z: 1 } });
      expect(created.status, created.text).to.equal(201);
      const id = (created.body as Rec).id;
      const res = await write('PUT', `/api/sheets/${id}`, { data: { b: [1, { y: null }], a: 'é' } });
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.deep.equal({ ...(created.body as Rec), data: { a: 'é', b: [1, { y: null }] } });
      expect((await request(url, 'GET', `/api/sheets/${id}`, { headers })).text).to.equal(res.text);
      expect(await auditOf(id)).to.deep.equal({ data: { before: { z: 1 }, after: { a: 'é', b: [1, { y: null }] } } });
      const statements = await statementsOf(res);
      if (database === 'postgres') {
        expect(statements).to.have.length(1);
        // With its audit record and its key's record, whose JSON PostgreSQL writes.
        expect(statements[0]).to.match(
          new RegExp(
            String.raw`^WITH bp_u AS \(UPDATE "Sheet" SET "data" = \? WHERE "id" = \? ` +
              String.raw`RETURNING WITH .* bp_new\."data" AS "new\.data", .* AS "bp_body"\), ` +
              String.raw`bp_audit AS \(INSERT INTO "_bp_audit" .*\), ` +
              String.raw`bp_key AS \(INSERT INTO "_bp_idempotency" .*\) SELECT `,
          ),
        );
      }
    });

    it('reads and locks the row first when the change sets a field of a composite unique index', async () => {
      const sheet = async (json: Rec) => {
        const res = await write('POST', '/api/sheets', json);
        expect(res.status, res.text).to.equal(201);
        return res.body as Rec;
      };
      await sheet({ book: 'B', title: 'Taken' });
      const mine = await sheet({ book: 'B', title: 'Mine', data: [1] });
      const conflict = await write('PUT', `/api/sheets/${mine.id}`, { title: 'Taken' });
      expect(conflict.status, conflict.text).to.equal(409);
      expect((conflict.body as { error: { code: string } }).error.code).to.equal('UNIQUE_CONFLICT');
      const res = await write('PUT', `/api/sheets/${mine.id}`, { title: 'Renamed', data: { k: true } });
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.deep.equal({ ...mine, title: 'Renamed', data: { k: true } });
      const statements = await statementsOf(res);
      expect(statements).to.have.length(2);
      expect(statements[0]).to.match(database === 'postgres' ? /^SELECT .* FOR UPDATE$/ : /^SELECT /);
      expect(statements[1]).to.match(/^UPDATE "Sheet" SET "title" = \?, "data" = \? WHERE "id" = \?/);
    });

    it('refuses a change the update rule forbids for the row as it was, and changes nothing', async () => {
      const card = await create({ title: 'Locked', locked: true });
      const res = await write('PUT', `/api/cards/${card.id}`, { title: 'Changed', locked: false });
      expect(res.status, res.text).to.equal(403);
      expect(await stored('Card', card.id)).to.include({ title: 'Locked', locked: 1 });
      expect(await audited(card.id), 'the create alone').to.equal(1);
    });

    it('answers 404 for a row the read rule hides, and changes nothing', async () => {
      const card = await create({ title: 'Hidden', shelf: 'hidden' });
      const res = await write('PUT', `/api/cards/${card.id}`, { title: 'Found' });
      expect(res.status, res.text).to.equal(404);
      expect(await stored('Card', card.id)).to.include({ title: 'Hidden' });
      expect(await audited(card.id), 'the create alone').to.equal(1);
      const command = await write('POST', `/api/commands/take_card/${card.id}`, {});
      expect(command.status, command.text).to.equal(404);
      expect(await stored('Card', card.id)).to.include({ status: 'new' });
    });

    it('reads and locks the row first if a unique field changes: the rules answer before the database', async () => {
      await create({ code: `taken-${database}` });
      const locked = await create({ title: 'Locked', locked: true });
      const refused = await write('PUT', `/api/cards/${locked.id}`, { code: `taken-${database}` });
      expect(refused.status, refused.text).to.equal(403);
      const open = await create({ title: 'Open' });
      const conflict = await write('PUT', `/api/cards/${open.id}`, { code: `taken-${database}` });
      expect(conflict.status, conflict.text).to.equal(409);
      expect((conflict.body as { error: { code: string } }).error.code).to.equal('UNIQUE_CONFLICT');
      for (const id of [locked.id, open.id]) {
        expect(await stored('Card', id)).to.include({ code: null });
        expect(await audited(id), 'the create alone').to.equal(1);
      }
      const res = await write('PUT', `/api/cards/${open.id}`, { code: `free-${database}`, title: 'Coded' });
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.include({ code: `free-${database}`, title: 'Coded' });
      const statements = await statementsOf(res);
      expect(statements).to.have.length(2);
      expect(statements[0]).to.match(database === 'postgres' ? /^SELECT .* FOR UPDATE$/ : /^SELECT /);
      expect(statements[1]).to.match(/^UPDATE "Card" SET "code" = \?, "title" = \? WHERE "id" = \?$/);
    });

    it('runs a command once of 10 sent at once: its availableWhen holds on the row as it was', async () => {
      const card = await create({ title: 'Wanted' });
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => write('POST', `/api/commands/take_card/${card.id}`, {})),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).to.deep.equal([200, ...Array(9).fill(409)]);
      for (const refused of answers.filter((a) => a.status === 409))
        expect((refused.body as { error: { code: string } }).error.code).to.equal('COMMAND_UNAVAILABLE');
      const taken = answers.find((a) => a.status === 200) as HttpResponse;
      expect(taken.body).to.include({ id: card.id, status: 'taken', title: 'Wanted' });
      expect(await stored('Card', card.id)).to.include({ status: 'taken' });
      expect(await auditOf(card.id)).to.deep.equal({ status: { before: 'new', after: 'taken' } });
      expect(await audited(card.id), 'the create and one command').to.equal(2);
      if (database === 'postgres') {
        const statements = await statementsOf(taken);
        expect(statements).to.have.length(1);
        // availableWhen in its WHERE: of the ten, one changes the row and the others find none.
        expect(statements[0]).to.match(
          /^WITH bp_u AS \(UPDATE "Card" SET "status" = \? WHERE "id" = \? AND \(.+\) RETURNING WITH /,
        );
      }
    });
  });
}
