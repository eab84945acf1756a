// A create answers with the row as stored, on both databases. Where the database stores a new row
// exactly as the values written (ids the app makes, no JSON on PostgreSQL) the insert returns
// nothing and the answer is built from the values, so PostgreSQL takes the whole create in one
// round trip; elsewhere (an Integer key, jsonb) the insert returns the row. Either way, the
// create's answer is byte for byte what a read of the record returns afterwards.

import * as path from 'node:path';
import { expect } from 'chai';
import {
  freshDir,
  freshKey,
  generate,
  request,
  ROOT,
  startApp,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';
import { tripCounter } from './support/postgres.ts';

type Rec = Record<string, unknown>;

const KEY = 'rows-writer-key-0123456789abcdef';
const headers = { authorization: `Bearer ${KEY}` };

/** Values at the edges of what each type stores: every one must come back as written. */
const SAMPLES: Rec[] = [
  {},
  {
    title: 'Ünïcödé e\u0301 🎉 "quoted" \\ back',
    notes: 'line one\nline two\ttabbed',
    email: 'Mixed.Case+tag@Example.COM',
    count: 2147483647,
    ratio: 0.1 + 0.2,
    flag: false,
    day: '2024-02-29',
    at: '2024-03-01T10:00:00.123+05:30',
    level: 'high',
    token: '3f2a6c1e-8b4d-4e2f-9a7c-0d1e2f3a4b5c',
  },
  { title: 'smallest', count: -2147483648, ratio: 5e-324, day: '0001-01-01', at: '0001-01-01T00:00:00Z' },
  { title: 'largest', count: 0, ratio: 1.7976931348623157e308, day: '9999-12-31', at: '9999-12-31T23:59:59.999Z' },
  { title: 'exponents', ratio: 1e21, at: '1970-01-01T00:00:00.000Z' },
  { title: 'negative', ratio: -123456.789e-10, at: '1969-12-31T23:59:59.001-00:30' },
];

for (const database of DATABASES) {
  describe(`a create answers with the row as stored (${database})`, function () {
    this.timeout(120_000);
    let appDir: string;
    let app: RunningApp;
    let url: string;

    const write = (urlPath: string, json: unknown): Promise<HttpResponse> =>
      request(app.url, 'POST', urlPath, { json, headers: { ...headers, 'idempotency-key': freshKey() } });
    /** Creates, then reads the record back: the two answers must be the same bytes. */
    const createAndRead = async (collection: string, json: Rec): Promise<Rec> => {
      const created = await write(`/api/${collection}`, json);
      expect(created.status, created.text).to.equal(201);
      const id = (created.body as Rec).id;
      const read = await request(app.url, 'GET', `/api/${collection}/${id}`, { headers });
      expect(read.status, read.text).to.equal(200);
      expect(created.text, `${collection} ${JSON.stringify(json)}`).to.equal(read.text);
      return created.body as Rec;
    };

    before(async () => {
      appDir = path.join(freshDir(`stored-rows-${database}`), 'app');
      await generate(path.join(ROOT, 'test/fixtures/rows/app.toml'), appDir);
      url = await databaseUrl(database, 'rows');
      app = await startApp(appDir, { ROWS_KEY: KEY, DATABASE_URL: url });
      expect((await write('/api/owners', { id: 'owner-1', name: 'Ada' })).status).to.equal(201);
    });
    after(async () => app?.stop());

    it('every field type, at the edges of what it stores', async () => {
      for (const sample of SAMPLES) await createAndRead('samples', { title: 'sample', ...sample });
    });

    it('an update answers with the row as stored too, every field type at its edges', async () => {
      const created = await createAndRead('samples', { title: 'to update' });
      for (const sample of SAMPLES.slice(1)) {
        const updated = await request(app.url, 'PUT', `/api/samples/${created.id}`, {
          json: { ...sample, email: null },
          headers: { ...headers, 'idempotency-key': freshKey() },
        });
        expect(updated.status, updated.text).to.equal(200);
        const read = await request(app.url, 'GET', `/api/samples/${created.id}`, { headers });
        expect(updated.text, JSON.stringify(sample)).to.equal(read.text);
      }
      const doc = await createAndRead('docs', { title: 'json', data: { b: 1 } });
      const changed = await request(app.url, 'PUT', `/api/docs/${doc.id}`, {
        json: { data: { zeta: [1, { y: 2, x: 1 }], a: null } },
        headers: { ...headers, 'idempotency-key': freshKey() },
      });
      expect(changed.status, changed.text).to.equal(200);
      const read = await request(app.url, 'GET', `/api/docs/${doc.id}`, { headers });
      expect(changed.text).to.equal(read.text);
    });

    it('answers with the values as the API writes them: defaults, a DateTime in UTC, a Ref', async () => {
      const row = await createAndRead('samples', {
        title: 'defaults',
        ownerId: 'owner-1',
        at: '2024-03-01T10:00:00+02:00',
      });
      expect(row).to.include({
        count: 7,
        flag: true,
        level: 'low',
        ownerId: 'owner-1',
        at: '2024-03-01T08:00:00.000Z',
        notes: null,
      });
    });

    it('JSON as stored: on PostgreSQL, jsonb orders the keys, and the answer shows that order', async () => {
      const data = { zeta: 1, alpha: [3, 'two', { b: null, a: true }], mid: { y: 1.5, x: 'é' } };
      const row = await createAndRead('docs', { title: 'json', data });
      expect(row.data).to.deep.equal(data);
      const keys = Object.keys(row.data as Rec);
      // jsonb orders keys by length, then bytes; SQLite keeps the JSON text as written.
      expect(keys).to.deep.equal(database === 'postgres' ? ['mid', 'zeta', 'alpha'] : ['zeta', 'alpha', 'mid']);
    });

    it('an Integer key assigned by the database', async () => {
      const first = await createAndRead('tallys', { label: 'one' });
      const second = await createAndRead('tallys', { label: 'two' });
      expect(first.id).to.be.a('number');
      expect(second.id).to.equal((first.id as number) + 1);
    });

    it('refuses, on both databases, the values PostgreSQL cannot store: 400, nothing written', async () => {
      const refusals: Array<[string, Rec, string]> = [
        ['samples', { count: 2147483648 }, 'count'],
        ['samples', { count: -2147483649 }, 'count'],
        ['samples', { at: '9999-12-31T23:59:59.999-01:00' }, 'at'],
        ['samples', { at: '0001-01-01T00:30:00+01:00' }, 'at'],
        ['samples', { at: '0000-06-15T12:00:00Z' }, 'at'],
      ];
      for (const [collection, body, field] of refusals) {
        const res = await write(`/api/${collection}`, { title: 'refused', ...body });
        expect(res.status, `${JSON.stringify(body)}: ${res.text}`).to.equal(400);
        const details = (res.body as { error: { details: Rec[] } }).error.details;
        expect(details.map((d) => `${d.field}:${d.code}`)).to.deep.equal([`${field}:OUT_OF_RANGE`]);
      }
      const list = await request(app.url, 'GET', '/api/samples?limit=100', { headers });
      expect((list.body as { items: Rec[] }).items.map((r) => r.title)).not.to.include('refused');
    });

    it('answers 404 for an Integer id no record can have, and 400 for a Ref to one', async () => {
      for (const id of ['2147483648', '9007199254740991']) {
        const res = await request(app.url, 'GET', `/api/tallys/${id}`, { headers });
        expect(res.status, `${id}: ${res.text}`).to.equal(404);
      }
      const res = await write('/api/samples', { title: 'refused', tallyId: 2147483648 });
      expect(res.status, res.text).to.equal(400);
      const details = (res.body as { error: { details: Rec[] } }).error.details;
      expect(details.map((d) => `${d.field}:${d.code}`)).to.deep.equal(['tallyId:OUT_OF_RANGE']);
    });

    // PostgreSQL refuses a NUL byte in any text it is sent: such an id was a 500 there (404 on
    // SQLite). No record can have an id its create would refuse, so the database is not asked.
    it('answers 404 to a text id no record can have (NUL, control character, leading space, too long)', async () => {
      const ids = ['%00', 'a%00b', '%01', '%20leading-space', 'x'.repeat(256)];
      for (const collection of ['owners', 'samples', 'docs']) {
        for (const id of ids) {
          for (const [method, body] of [
            ['GET', undefined],
            ['PUT', { title: 'changed' }],
            ['DELETE', undefined],
          ] as const) {
            const res = await request(app.url, method, `/api/${collection}/${id}`, {
              headers: { ...headers, 'idempotency-key': freshKey() },
              ...(body ? { json: body } : {}),
            });
            expect(res.status, `${method} ${collection}/${id}: ${res.text}`).to.equal(404);
            expect((res.body as { error: Rec }).error).to.include({ code: 'NOT_FOUND' });
          }
        }
      }
    });

    it('a taken unique value is refused with 409 and writes nothing', async () => {
      await createAndRead('samples', { title: 'first', email: 'taken@example.com' });
      const refused = await write('/api/samples', { title: 'second', email: 'taken@example.com' });
      expect(refused.status, refused.text).to.equal(409);
      expect((refused.body as { error: Rec }).error).to.include({ code: 'UNIQUE_CONFLICT' });
      const list = await request(app.url, 'GET', '/api/samples?limit=100', { headers });
      const titles = (list.body as { items: Rec[] }).items.map((r) => r.title);
      expect(titles).to.include('first').and.not.include('second');
    });

    if (database === 'postgres') {
      it('takes one round trip where the row is the values written, two where the insert returns it', async () => {
        const counter = await tripCounter(url);
        const counted = await startApp(appDir, { ROWS_KEY: KEY, DATABASE_URL: counter.url, DATABASE_POOL_MAX: '1' });
        try {
          const post = (collection: string, json: Rec) =>
            request(counted.url, 'POST', `/api/${collection}`, {
              json,
              headers: { ...headers, 'idempotency-key': freshKey() },
            });
          expect((await post('samples', { title: 'warm-up' })).status).to.equal(201);
          counter.reset();
          expect((await post('samples', { title: 'counted', email: 'one-trip@example.com' })).status).to.equal(201);
          expect(counter.trips(), 'a create from the values written').to.equal(1);
          counter.reset();
          expect((await post('docs', { title: 'counted', data: { a: 1 } })).status).to.equal(201);
          expect(counter.trips(), 'a create whose insert returns the row').to.equal(2);
        } finally {
          await counted.stop();
          await counter.close();
        }
      });
    }
  });
}
