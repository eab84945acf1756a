// File uploads of `file` fields in a generated app, over HTTP, on SQLite and PostgreSQL: multipart
// creates and updates, the download at GET /uploads/<name> (its bytes and headers, only to readers
// of the record and the field), the limits (a field's max, the 50 MB limit cut off while the body
// streams), the accepted types (declared, and the bytes themselves), names that are not stored
// names, no file left behind by a refused write, the old file removed when replaced or deleted, and
// a form's `_csrf` field. Then the S3-compatible store (s3rver), shared by two instances of the app
// on one PostgreSQL database.

import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { expect } from 'chai';
import {
  addUser,
  freshDir,
  freshKey,
  generate,
  login,
  readResponse,
  request,
  ROOT,
  startApp,
  type HttpResponse,
  type RunningApp,
  type Session,
} from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';
import { isStoredName, newStoredName } from '../runtime-lib/uploads/stored-names.ts';

type Rec = Record<string, unknown>;
const errorCode = (r: HttpResponse) => (r.body as { error: { code: string } }).error.code;

const BLUEPRINT = `
[project]
name = "Uploads"
version = "1.0.0"

[auth]
providers = ["email"]
signup = false

[entity.Doc]
fields = [
  { name = "id", type = "ULID", primary_key = true },
  { name = "title", type = "Text", required = true },
  { name = "pages", type = "Integer" },
  { name = "scan", type = "file", max = 4096, accept = ["image/png", "application/pdf", "text/plain"] },
  { name = "secret", type = "file", accept = ["text/*"], access = { read = "actor.roles contains 'auditor'" } },
  { name = "big", type = "file" },
]

[entity.Doc.access]
read = "actor.roles contains 'reader' || actor.roles contains 'auditor'"
create = "actor.roles contains 'reader'"
update = "actor.roles contains 'reader'"
delete = "actor.roles contains 'reader'"

[entity.Note]
fields = [
  { name = "id", type = "ULID", primary_key = true },
  { name = "title", type = "Text", required = true },
]
`;

/** A 1x1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
/** The start of an ELF executable. */
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(56)]);
const PASSWORD = 'correct horse battery';
const SECRET = 'uploads-secret-0123456789abcdef0123456789';

/** A multipart part: text, or a file with its declared type and name. */
type Part = [name: string, value: string | { bytes: Buffer; type: string; filename?: string }];

function form(parts: Part[]): FormData {
  const data = new FormData();
  for (const [name, value] of parts) {
    if (typeof value === 'string') data.append(name, value);
    else data.append(name, new Blob([new Uint8Array(value.bytes)], { type: value.type }), value.filename ?? 'upload');
  }
  return data;
}

async function send(
  base: string,
  method: string,
  urlPath: string,
  parts: Part[],
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  return readResponse(await fetch(base + urlPath, { method, headers, body: form(parts) }));
}

/** The files of a folder store (its `.incoming` folder of files being received included). */
function storedFiles(appDir: string): string[] {
  const dir = path.join(appDir, 'data', 'uploads');
  const files = (at: string, prefix = '') =>
    fs.existsSync(at)
      ? fs
          .readdirSync(at, { withFileTypes: true })
          .filter((f) => f.isFile())
          .map((f) => prefix + f.name)
      : [];
  return [...files(dir), ...files(path.join(dir, '.incoming'), '.incoming/')].sort();
}

/** The files left once a response has ended (they are removed as it ends): waits for `expected`. */
async function settledFiles(appDir: string, expected: string[]): Promise<string[]> {
  let files = storedFiles(appDir);
  for (let i = 0; i < 40 && JSON.stringify(files) !== JSON.stringify([...expected].sort()); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    files = storedFiles(appDir);
  }
  return files;
}

const nameOf = (value: unknown) => String(value).replace('/uploads/', '');

/**
 * POSTs a multipart body whose file part streams `total` bytes from one reused 1 MB buffer (never
 * the whole body in memory), until the server answers (unless `ignoreAnswer`: a client that goes
 * on sending) or cuts the connection. Answers the response, if one came, how many bytes were
 * written, and whether the connection was cut.
 */
async function streamLargeUpload(
  base: string,
  urlPath: string,
  headers: Record<string, string>,
  total: number,
  ignoreAnswer = false,
): Promise<{ status?: number; body?: Rec; written: number; cut: boolean }> {
  const boundary = 'bp-large-upload-boundary';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="title"\r\n\r\nhuge\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="big"; filename="huge.bin"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  return new Promise((resolve) => {
    let written = 0;
    let answered: { status?: number; body?: Rec } | undefined;
    let cut = false;
    let finished = false;
    const done = () => {
      if (finished) return;
      finished = true;
      resolve({ ...answered, written, cut });
    };
    const req = http.request(new URL(urlPath, base), {
      method: 'POST',
      headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    const stop = () => answered !== undefined && !ignoreAnswer;
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        answered = { status: res.statusCode, body: JSON.parse(text) as Rec };
        if (stop()) {
          req.destroy();
          done();
        }
      });
    });
    // Closed or reset by the server, not by this client (which destroys it once answered).
    req.on('error', () => undefined);
    req.on('close', () => {
      cut = !stop() && written < total;
      setTimeout(done, 200);
    });
    const more = () => {
      while (written < total && !req.destroyed && !stop()) {
        written += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', more);
      }
      if (!req.destroyed && !stop()) req.end(tail);
    };
    req.write(head);
    more();
  });
}

async function setUp(database: (typeof DATABASES)[number], label: string, extraEnv: Record<string, string> = {}) {
  const appDir = path.join(freshDir(`uploads-${label}-${database}`), 'app');
  const blueprint = path.join(path.dirname(appDir), 'uploads.toml');
  fs.writeFileSync(blueprint, BLUEPRINT);
  const r = await generate(blueprint, appDir);
  expect(r.status, r.stderr).to.equal(0);
  const env = { SESSION_SECRET: SECRET, DATABASE_URL: await databaseUrl(database, `uploads_${label}`), ...extraEnv };
  addUser(appDir, env, 'alice@example.com', PASSWORD, ['reader']);
  addUser(appDir, env, 'bob@example.com', PASSWORD);
  addUser(appDir, env, 'carol@example.com', PASSWORD, ['auditor']);
  return { appDir, env };
}

const asPerson = (s: Session) => ({ cookie: s.cookie, 'x-csrf-token': s.csrfToken });

for (const database of DATABASES)
  describe(`file uploads (generated app, ${database})`, function () {
    this.timeout(180_000);
    let appDir: string;
    let app: RunningApp;
    let alice: Session;
    let bob: Session;
    let carol: Session;

    before(async () => {
      const setup = await setUp(database, 'disk');
      appDir = setup.appDir;
      app = await startApp(appDir, setup.env);
      alice = await login(app.url, 'alice@example.com', PASSWORD);
      bob = await login(app.url, 'bob@example.com', PASSWORD);
      carol = await login(app.url, 'carol@example.com', PASSWORD);
    });
    after(async () => app?.stop());

    /** Creates a Doc as Alice with `parts`; expects 201. */
    async function created(parts: Part[]): Promise<Rec> {
      const r = await send(app.url, 'POST', '/api/docs', parts, asPerson(alice));
      expect(r.status, r.text).to.equal(201);
      return r.body as Rec;
    }

    it('stores an upload and serves it back: the same bytes, its type, nosniff, a safe disposition', async () => {
      const doc = await created([
        ['title', 'Scan'],
        ['pages', '3'],
        ['scan', { bytes: PNG, type: 'image/png', filename: '../../etc/passwd.png' }],
      ]);
      expect(doc.pages).to.equal(3);
      expect(doc.scan).to.match(/^\/uploads\/[0-9a-f]{32}\.png$/);
      const got = await fetch(app.url + String(doc.scan), { headers: { cookie: alice.cookie } });
      expect(got.status).to.equal(200);
      expect(Buffer.from(await got.arrayBuffer()).equals(PNG)).to.equal(true);
      expect(got.headers.get('content-type')).to.equal('image/png');
      expect(got.headers.get('content-length')).to.equal(String(PNG.length));
      expect(got.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(got.headers.get('content-disposition')).to.equal(`inline; filename="${nameOf(doc.scan)}"`);
      const head = await fetch(app.url + String(doc.scan), { method: 'HEAD', headers: { cookie: alice.cookie } });
      expect(head.status).to.equal(200);
      expect(head.headers.get('content-length')).to.equal(String(PNG.length));
      // Anything but a plain image type is an attachment: text could be read as a page.
      const text = await created([
        ['title', 'Notes'],
        ['scan', { bytes: Buffer.from('<script>alert(1)</script>'), type: 'text/plain' }],
      ]);
      const served = await fetch(app.url + String(text.scan), { headers: { cookie: alice.cookie } });
      expect(await served.text()).to.equal('<script>alert(1)</script>');
      expect(served.headers.get('content-type')).to.equal('text/plain; charset=utf-8');
      expect(served.headers.get('content-disposition')).to.equal(`attachment; filename="${nameOf(text.scan)}"`);
      expect(served.headers.get('content-security-policy')).to.include('sandbox');
      // The record reads back with the stored value.
      const read = await request(app.url, 'GET', `/api/docs/${String(doc.id)}`, { headers: asPerson(alice) });
      expect((read.body as Rec).scan).to.equal(doc.scan);
    });

    it("refuses a file over its field's max with 413, and stores nothing", async () => {
      const before = storedFiles(appDir);
      const r = await send(
        app.url,
        'POST',
        '/api/docs',
        [
          ['title', 'Too big'],
          ['scan', { bytes: Buffer.alloc(4097, 0x61), type: 'text/plain' }],
        ],
        asPerson(alice),
      );
      expect(r.status, r.text).to.equal(413);
      expect(errorCode(r)).to.equal('UPLOAD_TOO_LARGE');
      expect(await settledFiles(appDir, before)).to.deep.equal(before);
      // Exactly the max is taken.
      await created([
        ['title', 'Just fits'],
        ['scan', { bytes: Buffer.alloc(4096, 0x61), type: 'text/plain' }],
      ]);
    });

    it('cuts off a body over the 50 MB limit while it streams (413), and stores nothing', async () => {
      const before = storedFiles(appDir);
      const count = await request(app.url, 'GET', '/api/docs?limit=1000', { headers: asPerson(alice) });
      const total = 400 * 1024 * 1024;
      const r = await streamLargeUpload(app.url, '/api/docs', asPerson(alice), total);
      expect(r.status).to.equal(413);
      expect((r.body as { error: { code: string } }).error.code).to.equal('UPLOAD_TOO_LARGE');
      // Answered once the limit was passed, long before the client had sent it all.
      expect(r.written).to.be.below(150 * 1024 * 1024);
      expect(await settledFiles(appDir, before)).to.deep.equal(before);
      const after = await request(app.url, 'GET', '/api/docs?limit=1000', { headers: asPerson(alice) });
      expect((after.body as { items: Rec[] }).items.length).to.equal((count.body as { items: Rec[] }).items.length);
      // A client that goes on sending after the answer is cut off (2 s later) long before its end.
      const deaf = await streamLargeUpload(app.url, '/api/docs', asPerson(alice), 64 * 1024 ** 3, true);
      expect(deaf.cut).to.equal(true);
      expect(deaf.written).to.be.below(64 * 1024 ** 3);
      expect(await settledFiles(appDir, before)).to.deep.equal(before);
      // The server still serves.
      expect((await request(app.url, 'GET', '/api/docs', { headers: asPerson(alice) })).status).to.equal(200);
    });

    it("refuses a declared type the field's accept does not list (415)", async () => {
      const before = storedFiles(appDir);
      const r = await send(
        app.url,
        'POST',
        '/api/docs',
        [
          ['title', 'Gif'],
          ['scan', { bytes: Buffer.from('GIF89a'), type: 'image/gif' }],
        ],
        asPerson(alice),
      );
      expect(r.status, r.text).to.equal(415);
      expect(errorCode(r)).to.equal('UPLOAD_TYPE_NOT_ACCEPTED');
      expect(await settledFiles(appDir, before)).to.deep.equal(before);
    });

    it('refuses bytes that are not the type declared: a PDF, an executable or text sent as image/png', async () => {
      const before = storedFiles(appDir);
      for (const bytes of [PDF, ELF, Buffer.from('just text')]) {
        const r = await send(
          app.url,
          'POST',
          '/api/docs',
          [
            ['title', 'Disguised'],
            ['scan', { bytes, type: 'image/png', filename: 'innocent.png' }],
          ],
          asPerson(alice),
        );
        expect(r.status, r.text).to.equal(415);
        expect(errorCode(r)).to.equal('UPLOAD_TYPE_NOT_ACCEPTED');
      }
      // An executable declared as text: its bytes say otherwise.
      const r = await send(
        app.url,
        'POST',
        '/api/docs',
        [
          ['title', 'Disguised'],
          ['scan', { bytes: ELF, type: 'text/plain' }],
        ],
        asPerson(alice),
      );
      expect(r.status, r.text).to.equal(415);
      expect(await settledFiles(appDir, before)).to.deep.equal(before);
      // The real thing passes.
      await created([
        ['title', 'Real PDF'],
        ['scan', { bytes: PDF, type: 'application/pdf' }],
      ]);
    });

    it('refuses a file where none is taken, text where a file is, and a string in a JSON body', async () => {
      const before = storedFiles(appDir);
      const onText = await send(
        app.url,
        'POST',
        '/api/docs',
        [['title', { bytes: Buffer.from('x'), type: 'text/plain' }]],
        asPerson(alice),
      );
      expect(onText.status, onText.text).to.equal(400);
      expect(errorCode(onText)).to.equal('UPLOAD_NOT_ACCEPTED');
      const textInFile = await send(
        app.url,
        'POST',
        '/api/docs',
        [
          ['title', 'x'],
          ['scan', '/uploads/0123456789abcdef0123456789abcdef.png'],
        ],
        asPerson(alice),
      );
      expect(textInFile.status, textInFile.text).to.equal(400);
      expect(errorCode(textInFile)).to.equal('UPLOAD_NOT_ACCEPTED');
      const noFiles = await send(
        app.url,
        'POST',
        '/api/notes',
        [
          ['title', 'x'],
          ['title2', { bytes: PNG, type: 'image/png' }],
        ],
        asPerson(alice),
      );
      expect(noFiles.status, noFiles.text).to.equal(415);
      expect(errorCode(noFiles)).to.equal('UNSUPPORTED_MEDIA_TYPE');
      // Nobody can point a record at a file by its name: JSON takes only null in a file field.
      const existing = await created([
        ['title', 'Mine'],
        ['scan', { bytes: PNG, type: 'image/png' }],
      ]);
      const pointed = await request(app.url, 'POST', '/api/docs', {
        json: { title: 'Pointer', scan: existing.scan },
        headers: asPerson(alice),
      });
      expect(pointed.status, pointed.text).to.equal(400);
      expect((pointed.body as { error: { details: Rec[] } }).error.details[0]).to.include({
        field: 'scan',
        code: 'NOT_AN_UPLOAD',
      });
      const cleared = await request(app.url, 'PUT', `/api/docs/${String(existing.id)}`, {
        json: { scan: null },
        headers: asPerson(alice),
      });
      expect(cleared.status, cleared.text).to.equal(200);
      expect((cleared.body as Rec).scan).to.equal(null);
      expect(await settledFiles(appDir, before)).to.deep.equal(before);
    });

    it('answers 404 for a name that is not a stored name, without touching the store', async () => {
      const doc = await created([
        ['title', 'Target'],
        ['scan', { bytes: PNG, type: 'image/png' }],
      ]);
      fs.writeFileSync(path.join(appDir, 'data', 'outside.txt'), 'not for you');
      for (const bad of [
        '..%2Foutside.txt',
        '..%2F..%2Fpackage.json',
        '%2E%2E%2Foutside.txt',
        `${nameOf(doc.scan)}%00.png`,
        nameOf(doc.scan).toUpperCase(),
        '.incoming',
        'outside.txt',
      ]) {
        const r = await request(app.url, 'GET', `/uploads/${bad}`, { headers: { cookie: alice.cookie } });
        expect(r.status, bad).to.be.oneOf([400, 404]);
        expect(r.text).not.to.include('not for you');
      }
    });

    it('answers 404 to a reader who may not read the record, or the field, that holds the file', async () => {
      const doc = await created([
        ['title', 'Private'],
        ['scan', { bytes: PNG, type: 'image/png' }],
        ['secret', { bytes: Buffer.from('for auditors'), type: 'text/plain' }],
      ]);
      const get = (who: Session | undefined, value: unknown) =>
        fetch(app.url + String(value), { headers: who ? { cookie: who.cookie } : {} });
      const full = await request(app.url, 'GET', `/api/docs/${String(doc.id)}`, { headers: asPerson(carol) });
      expect(doc).not.to.have.property('secret');
      doc.secret = (full.body as Rec).secret;
      expect(doc.secret).to.match(/^\/uploads\/[0-9a-f]{32}\.txt$/);
      // Bob may read no Doc; nobody signed in, neither.
      expect((await get(bob, doc.scan)).status).to.equal(404);
      expect((await get(undefined, doc.scan)).status).to.equal(404);
      // Alice reads the record, but not its secret field.
      expect((await get(alice, doc.scan)).status).to.equal(200);
      expect((await get(alice, doc.secret)).status).to.equal(404);
      // Carol, an auditor, reads both.
      const secret = await get(carol, doc.secret);
      expect(secret.status).to.equal(200);
      expect(await secret.text()).to.equal('for auditors');
      // A missing file answers the same 404.
      const missing = await get(alice, '/uploads/0123456789abcdef0123456789abcdef.png');
      expect(missing.status).to.equal(404);
      const denied = (await (await get(bob, doc.scan)).json()) as { error: { code: string } };
      expect(denied.error.code).to.equal(((await missing.json()) as { error: { code: string } }).error.code);
    });

    it("removes a record's old file once it is replaced, cleared, or the record deleted", async () => {
      const doc = await created([
        ['title', 'Versions'],
        ['scan', { bytes: PNG, type: 'image/png' }],
      ]);
      const first = nameOf(doc.scan);
      expect(storedFiles(appDir)).to.include(first);
      const replaced = await send(
        app.url,
        'PUT',
        `/api/docs/${String(doc.id)}`,
        [['scan', { bytes: PDF, type: 'application/pdf' }]],
        asPerson(alice),
      );
      expect(replaced.status, replaced.text).to.equal(200);
      const second = nameOf((replaced.body as Rec).scan);
      expect(second).to.match(/\.pdf$/);
      const files = storedFiles(appDir);
      expect(files).to.include(second);
      expect(files).not.to.include(first);
      const deleted = await request(app.url, 'DELETE', `/api/docs/${String(doc.id)}`, { headers: asPerson(alice) });
      expect(deleted.status, deleted.text).to.equal(204);
      expect(storedFiles(appDir)).not.to.include(second);
    });

    it('leaves no file behind when the write is refused, fails, or replays its Idempotency-Key', async () => {
      const before = storedFiles(appDir);
      // Another field's validation error.
      const invalid = await send(
        app.url,
        'POST',
        '/api/docs',
        [
          ['pages', 'many'],
          ['scan', { bytes: PNG, type: 'image/png' }],
        ],
        asPerson(alice),
      );
      expect(invalid.status, invalid.text).to.equal(400);
      expect(errorCode(invalid)).to.equal('VALIDATION_FAILED');
      // The access rules: Bob may not create a Doc.
      const refused = await send(
        app.url,
        'POST',
        '/api/docs',
        [
          ['title', 'Bob'],
          ['scan', { bytes: PNG, type: 'image/png' }],
        ],
        asPerson(bob),
      );
      expect(refused.status, refused.text).to.equal(403);
      // An update of a record that does not exist.
      const missing = await send(
        app.url,
        'PUT',
        '/api/docs/01ARZ3NDEKTSV4RRFFQ69G5FAV',
        [['scan', { bytes: PNG, type: 'image/png' }]],
        asPerson(alice),
      );
      expect(missing.status, missing.text).to.equal(404);
      expect(await settledFiles(appDir, before)).to.deep.equal(before);
      // A retry under the same Idempotency-Key answers the first response and keeps no second copy.
      const key = freshKey();
      const parts: Part[] = [
        ['title', 'Once'],
        ['scan', { bytes: PNG, type: 'image/png' }],
      ];
      const one = await send(app.url, 'POST', '/api/docs', parts, { ...asPerson(alice), 'idempotency-key': key });
      expect(one.status, one.text).to.equal(201);
      const two = await send(app.url, 'POST', '/api/docs', parts, { ...asPerson(alice), 'idempotency-key': key });
      expect(two.status, two.text).to.equal(201);
      expect(two.body).to.deep.equal(one.body);
      expect(await settledFiles(appDir, [...before, nameOf((one.body as Rec).scan)])).to.deep.equal(
        [...before, nameOf((one.body as Rec).scan)].sort(),
      );
    });

    it('will not start without a writable uploads folder, or with an UPLOADS_URL it cannot use', async () => {
      const folder = path.join(appDir, 'data', 'uploads');
      const aside = `${folder}.aside`;
      fs.renameSync(folder, aside);
      fs.writeFileSync(folder, 'a file where the folder should be');
      try {
        const env = { SESSION_SECRET: SECRET, DATABASE_URL: await databaseUrl(database, 'uploads_disk') };
        let failure = '';
        await startApp(appDir, env).then(
          (started) => started.stop(),
          (err: Error) => (failure = err.message),
        );
        expect(failure).to.include(`cannot start: uploads: the folder ${folder} must exist and be writable`);
        failure = '';
        await startApp(appDir, { ...env, UPLOADS_URL: 'ftp://files/x' }).then(
          (started) => started.stop(),
          (err: Error) => (failure = err.message),
        );
        expect(failure).to.include('cannot start: UPLOADS_URL must be s3://bucket/prefix (got "ftp://files/x")');
      } finally {
        fs.rmSync(folder);
        fs.renameSync(aside, folder);
      }
    });

    it('describes the multipart bodies and the download in its OpenAPI document', async () => {
      const api = (await request(app.url, 'GET', '/api/openapi.json')).body as {
        paths: Record<string, Record<string, { requestBody?: { content: Record<string, Rec> } }>>;
        components: { schemas: Record<string, { properties: Record<string, Rec> }> };
      };
      const create = api.paths['/api/docs'].post.requestBody?.content ?? {};
      expect(Object.keys(create)).to.deep.equal(['application/json', 'multipart/form-data']);
      expect(create['multipart/form-data'].encoding).to.deep.equal({
        scan: { contentType: 'image/png, application/pdf, text/plain' },
        secret: { contentType: 'text/*' },
      });
      const upload = api.components.schemas.DocCreateUpload.properties;
      expect(upload.scan).to.include({ type: 'string', format: 'binary' });
      expect(upload.big.description).to.include(`at most ${50 * 1024 * 1024} bytes`);
      expect(upload.pages.type).to.deep.equal(['integer', 'null']);
      expect(api.components.schemas.DocCreate.properties.scan).to.include({ type: 'null' });
      expect(Object.keys(api.paths['/api/docs/{id}'].put.requestBody?.content ?? {})).to.include('multipart/form-data');
      expect(Object.keys(api.paths['/api/notes'].post.requestBody?.content ?? {})).to.deep.equal(['application/json']);
      expect(api.paths['/uploads/{name}']).to.have.property('get');
    });

    it("takes a form's _csrf field sent before its file, and stores nothing without a valid one", async () => {
      const before = storedFiles(appDir);
      const parts = (token: string | undefined): Part[] => [
        ...(token === undefined ? [] : ([['_csrf', token]] as Part[])),
        ['title', 'Form post'],
        ['scan', { bytes: PNG, type: 'image/png' }],
      ];
      const good = await send(app.url, 'POST', '/api/docs', parts(alice.csrfToken), { cookie: alice.cookie });
      expect(good.status, good.text).to.equal(201);
      expect((good.body as Rec).title).to.equal('Form post');
      for (const token of [undefined, 'forged', bob.csrfToken]) {
        const r = await send(app.url, 'POST', '/api/docs', parts(token), { cookie: alice.cookie });
        expect(r.status, r.text).to.equal(403);
        expect(errorCode(r)).to.equal('CSRF_FAILED');
      }
      // After the file is too late: the file would be stored before the token is read.
      const late = await send(
        app.url,
        'POST',
        '/api/docs',
        [
          ['title', 'Late'],
          ['scan', { bytes: PNG, type: 'image/png' }],
          ['_csrf', alice.csrfToken],
        ],
        { cookie: alice.cookie },
      );
      expect(late.status, late.text).to.equal(403);
      // A route that reads no multipart body cannot take the token from one.
      const deleted = await send(
        app.url,
        'DELETE',
        `/api/docs/${String((good.body as Rec).id)}`,
        parts(alice.csrfToken),
        {
          cookie: alice.cookie,
        },
      );
      expect(deleted.status, deleted.text).to.equal(403);
      expect(errorCode(deleted)).to.equal('CSRF_FAILED');
      expect(await settledFiles(appDir, [...before, nameOf((good.body as Rec).scan)])).to.deep.equal(
        [...before, nameOf((good.body as Rec).scan)].sort(),
      );
    });
  });

describe('an app without file fields', function () {
  this.timeout(60_000);
  it('carries no upload code and needs none of its packages', async () => {
    const appDir = path.join(freshDir('uploads-none'), 'app');
    const r = await generate(path.join(ROOT, 'test/fixtures/valid/closed-signup/app.toml'), appDir);
    expect(r.status, r.stderr).to.equal(0);
    expect(fs.existsSync(path.join(appDir, 'src', 'runtime', 'uploads'))).to.equal(false);
    expect(fs.readFileSync(path.join(appDir, 'src', 'app.ts'), 'utf8')).not.to.include('uploads');
    const pkg = JSON.parse(fs.readFileSync(path.join(appDir, 'package.json'), 'utf8')) as { dependencies: Rec };
    for (const name of ['busboy', 'file-type', '@aws-sdk/client-s3'])
      expect(pkg.dependencies).not.to.have.property(name);
  });
});

describe('stored names of uploads', () => {
  it('are random names with a checked extension, and nothing else passes for one', () => {
    const png = newStoredName('image/png');
    expect(png).to.match(/^[0-9a-f]{32}\.png$/);
    expect(newStoredName('image/png')).not.to.equal(png);
    expect(newStoredName('application/x-unknown')).to.match(/\.bin$/);
    expect(isStoredName(png)).to.equal(true);
    for (const bad of [
      '',
      '../etc/passwd',
      `../${png}`,
      `${png}/..`,
      `sub/${png}`,
      `sub\\${png}`,
      png.toUpperCase(),
      `${png}\u0000`,
      `.${png}`,
      png.replace('.png', ''),
      png.replace('.png', '.png.exe'),
      '..',
      '.incoming',
    ])
      expect(isStoredName(bad), bad).to.equal(false);
  });
});

/** s3rver's interface, as far as the test uses it (it ships no types). */
interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (options: Rec) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;

describe('file uploads on S3-compatible storage, two instances on one PostgreSQL database', function () {
  this.timeout(180_000);
  let s3: S3rverInstance;
  let s3Dir: string;
  let one: RunningApp;
  let two: RunningApp;

  before(async () => {
    s3Dir = path.join(freshDir('uploads-s3rver'), 'store');
    fs.mkdirSync(s3Dir, { recursive: true });
    s3 = new S3rver({
      address: '127.0.0.1',
      port: 0,
      silent: true,
      directory: s3Dir,
      configureBuckets: [{ name: 'bp-files' }],
    });
    const { port } = await s3.run();
    const { appDir, env } = await setUp('postgres', 's3', {
      UPLOADS_URL: 's3://bp-files/app/uploads',
      AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'us-east-1',
    });
    [one, two] = await Promise.all([startApp(appDir, env), startApp(appDir, env)]);
  });
  after(async () => {
    await Promise.all([one?.stop(), two?.stop()]);
    await s3?.close();
  });

  it('answers 503 when the bucket cannot be reached, and writes no record', async () => {
    const closed = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const { appDir, env } = await setUp('sqlite', 's3-down', {
      UPLOADS_URL: 's3://bp-files/app/uploads',
      AWS_ENDPOINT_URL: `http://127.0.0.1:${closed}`,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    });
    const down = await startApp(appDir, env);
    try {
      const alice = await login(down.url, 'alice@example.com', PASSWORD);
      const r = await send(
        down.url,
        'POST',
        '/api/docs',
        [
          ['title', 'Nowhere'],
          ['scan', { bytes: PNG, type: 'image/png' }],
        ],
        asPerson(alice),
      );
      expect(r.status, r.text).to.equal(503);
      expect(errorCode(r)).to.equal('STORAGE_UNAVAILABLE');
      expect(r.headers.get('retry-after')).to.equal('5');
      const list = await request(down.url, 'GET', '/api/docs', { headers: asPerson(alice) });
      expect((list.body as { items: Rec[] }).items).to.deep.equal([]);
    } finally {
      await down.stop();
    }
  });

  /** The objects s3rver holds in the bucket under the app's prefix. */
  function objects(): string[] {
    const dir = path.join(s3Dir, 'bp-files', 'app', 'uploads');
    if (!fs.existsSync(dir)) return [];
    const suffix = '._S3rver_object';
    return fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(suffix))
      .map((f) => f.slice(0, -suffix.length));
  }

  it('stores through one instance, serves through the other, and removes the replaced file', async () => {
    const alice = await login(one.url, 'alice@example.com', PASSWORD);
    const created = await send(
      one.url,
      'POST',
      '/api/docs',
      [
        ['title', 'Shared'],
        ['scan', { bytes: PNG, type: 'image/png' }],
      ],
      asPerson(alice),
    );
    expect(created.status, created.text).to.equal(201);
    const doc = created.body as Rec;
    expect(objects()).to.deep.equal([nameOf(doc.scan)]);
    // The session lives in the shared database: the other instance knows Alice.
    const got = await fetch(two.url + String(doc.scan), { headers: { cookie: alice.cookie } });
    expect(got.status).to.equal(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(PNG)).to.equal(true);
    expect(got.headers.get('content-type')).to.equal('image/png');
    expect(got.headers.get('x-content-type-options')).to.equal('nosniff');
    const bob = await login(two.url, 'bob@example.com', PASSWORD);
    expect((await fetch(two.url + String(doc.scan), { headers: { cookie: bob.cookie } })).status).to.equal(404);
    // Replaced through the second instance: the first file leaves the bucket.
    const replaced = await send(
      two.url,
      'PUT',
      `/api/docs/${String(doc.id)}`,
      [['scan', { bytes: PDF, type: 'application/pdf' }]],
      asPerson(alice),
    );
    expect(replaced.status, replaced.text).to.equal(200);
    expect(objects()).to.deep.equal([nameOf((replaced.body as Rec).scan)]);
    const pdf = await fetch(one.url + String((replaced.body as Rec).scan), { headers: { cookie: alice.cookie } });
    expect(Buffer.from(await pdf.arrayBuffer()).equals(PDF)).to.equal(true);
    // A refused write leaves nothing in the bucket.
    const refused = await send(
      one.url,
      'POST',
      '/api/docs',
      [
        ['pages', 'many'],
        ['scan', { bytes: PNG, type: 'image/png' }],
      ],
      asPerson(alice),
    );
    expect(refused.status, refused.text).to.equal(400);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(objects()).to.deep.equal([nameOf((replaced.body as Rec).scan)]);
  });
});
