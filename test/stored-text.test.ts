// Text and JSON that one database stores and the other cannot are refused on both, with a 400 that
// names the field, and nothing written: text an index holds beyond its share of 2,000 bytes
// (PostgreSQL refuses an index entry over 2,704 bytes; random text does not compress below it),
// and JSON with U+0000 or a lone surrogate (PostgreSQL's jsonb refuses both) or a number JSON.parse
// read as Infinity (JSON would store null). Everything up to those limits is stored as written.

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

type Rec = Record<string, unknown>;

const KEY = 'text-writer-key-0123456789abcdef';
const headers = { authorization: `Bearer ${KEY}` };

/** `bytes` bytes of printable ASCII that no compression shrinks much (a fixed seed: the same each run). */
function randomText(bytes: number, seed: number): string {
  let state = seed;
  let text = '';
  for (let i = 0; i < bytes; i++) {
    state = (state * 1103515245 + 12345) % 2147483648;
    text += String.fromCharCode(33 + (state % 94));
  }
  return text;
}

/** The detail codes of a 400's error, as `field:CODE`. */
function refusal(res: HttpResponse): string[] {
  expect(res.status, res.text).to.equal(400);
  return (res.body as { error: { details: Rec[] } }).error.details.map((d) => `${d.field}:${d.code}`);
}

for (const database of DATABASES) {
  describe(`text and JSON both databases store (${database})`, function () {
    this.timeout(120_000);
    let appDir: string;
    let app: RunningApp;
    let seed = 1;

    const write = (method: string, urlPath: string, json: unknown): Promise<HttpResponse> =>
      request(app.url, method, urlPath, { json, headers: { ...headers, 'idempotency-key': freshKey() } });
    /** Creates an item, then reads it back: both answers must be the same bytes. */
    const createAndRead = async (json: Rec): Promise<Rec> => {
      const created = await write('POST', '/api/items', json);
      expect(created.status, created.text.slice(0, 300)).to.equal(201);
      const read = await request(app.url, 'GET', `/api/items/${(created.body as Rec).id}`, { headers });
      expect(created.text).to.equal(read.text);
      return created.body as Rec;
    };
    const count = async (): Promise<number> =>
      ((await request(app.url, 'GET', '/api/items?limit=1000', { headers })).body as { items: unknown[] }).items.length;

    before(async () => {
      appDir = path.join(freshDir(`stored-text-${database}`), 'app');
      await generate(path.join(ROOT, 'test/fixtures/stored-text/app.toml'), appDir);
      app = await startApp(appDir, { TEXT_KEY: KEY, DATABASE_URL: await databaseUrl(database, 'text') });
    });
    after(async () => app?.stop());

    it('stores indexed text up to its share of 2,000 bytes, counted in UTF-8', async () => {
      await createAndRead({ code: randomText(2000, seed++), label: randomText(2000, seed++) });
      // Three bytes each: 666 of them fit, 667 do not.
      await createAndRead({ code: '€'.repeat(666) });
      // Two fields of one composite index share it: 1,000 bytes each.
      await createAndRead({ first: randomText(1000, seed++), last: randomText(1000, seed++) });
      // No index holds a LongText: only the body's limit bounds it.
      await createAndRead({ body: randomText(200_000, seed++) });
    });

    it('refuses indexed text past its share with 400 TOO_LONG, and writes nothing', async () => {
      const before = await count();
      const refusals: Array<[Rec, string[]]> = [
        [{ code: randomText(4000, seed++) }, ['code:TOO_LONG']],
        [{ code: randomText(2001, seed++) }, ['code:TOO_LONG']],
        [{ label: '€'.repeat(667) }, ['label:TOO_LONG']],
        [{ first: randomText(1001, seed++), last: 'short' }, ['first:TOO_LONG']],
        [{ first: randomText(1500, seed++), last: randomText(1500, seed++) }, ['first:TOO_LONG', 'last:TOO_LONG']],
      ];
      for (const [body, expected] of refusals)
        expect(refusal(await write('POST', '/api/items', body))).to.deep.equal(expected);
      expect(await count()).to.equal(before);
      const item = await createAndRead({ code: 'kept' });
      expect(refusal(await write('PUT', `/api/items/${item.id}`, { code: randomText(3000, seed++) }))).to.deep.equal([
        'code:TOO_LONG',
      ]);
      const read = await request(app.url, 'GET', `/api/items/${item.id}`, { headers });
      expect((read.body as Rec).code).to.equal('kept');
    });

    it('refuses JSON with U+0000, a lone surrogate or an infinite number, and writes nothing', async () => {
      const before = await count();
      const bodies = [
        '{"data":{"note":"a\\u0000b"}}',
        '{"data":{"a\\u0000":1}}',
        '{"data":["\\ud800"]}',
        '{"data":{"deep":[{"x":"\\udc00 alone"}]}}',
        '{"data":[1e400]}',
        '{"data":{"n":-1e999}}',
      ];
      const codes = [];
      for (const body of bodies) {
        const res = await request(app.url, 'POST', '/api/items', {
          body,
          headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': freshKey() },
        });
        codes.push(refusal(res)[0]);
      }
      expect(codes).to.deep.equal([
        'data:NUL_CHARACTER',
        'data:NUL_CHARACTER',
        'data:LONE_SURROGATE',
        'data:LONE_SURROGATE',
        'data:OUT_OF_RANGE',
        'data:OUT_OF_RANGE',
      ]);
      expect(await count()).to.equal(before);
    });

    it('stores JSON with other control characters, surrogate pairs and the largest numbers as written', async () => {
      const data = { tab: 'a\tb\u0001', emoji: '🎉', keys: { 'é\u0007': [5e-324, 1.7976931348623157e308, -0.5] } };
      const row = await createAndRead({ data });
      expect(row.data).to.deep.equal(data);
      // Half a megabyte of array: more members than one call takes as arguments.
      const long = await createAndRead({ data: new Array(250_000).fill(0) });
      expect((long.data as number[]).length).to.equal(250_000);
    });

    it('says so in openapi.json', async () => {
      const spec = (await request(app.url, 'GET', '/api/openapi.json')).body as {
        components: { schemas: Record<string, { properties: Record<string, { description?: string }> }> };
      };
      const item = spec.components.schemas.Item.properties;
      expect(item.code.description).to.equal('At most 2000 bytes long in UTF-8 (an index holds it).');
      expect(item.first.description).to.equal('At most 1000 bytes long in UTF-8 (an index holds it).');
      expect(item.body.description).to.equal(undefined);
      // A Text id is 255 characters at most, within its index's share already.
      expect(item.ownerId.description).not.to.match(/bytes/);
    });
  });
}
