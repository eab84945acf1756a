// src/extend.ts, the file of a generated app that is its team's: scaffolded once, never overwritten,
// never a conflict nor stale. A team edits it (here: the scaffold's own commented example switched on,
// plus a service a handler uses and a request log) and, without touching a generated file, gets
// middleware on every route (CORS, preflight answered), its own routes, services in ctx.services and
// the delegation hook; in development (tsx) and from the production build.

import { createHash, createHmac } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';
import { bp, freshKey, request, ROOT, START_COMMAND, startApp, typecheck, type RunningApp } from './support/apps.ts';

const KEY = 'extension-agent-key-0123456789';
const APPROVAL_SECRET = 'approval-secret-for-the-test-0123456789';
const ENV = { EXT_AGENT_KEY: KEY, APPROVAL_SECRET };
const ORIGIN = 'https://app.example.com';
const agent = (extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${KEY}`,
  'idempotency-key': freshKey(),
  ...extra,
});

const sha256 = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/** The scaffold with its example switched on, as its header says: the four marker lines deleted. */
function withExamples(scaffold: string): string {
  const lines = scaffold.split('\n');
  const markers = lines.filter((l) => /^\s*(\/\* example|example \*\/)\s*$/.test(l));
  expect(markers, 'the scaffold marks its example with four lines').to.have.length(4);
  return lines.filter((l) => !markers.includes(l)).join('\n');
}

/** What the team adds to the example: a service the Stamp handler uses, and a request log. */
function teamEdits(source: string): string {
  const services =
    '  services: { mailer: { send: async (to: string, text: string) => console.log(`mail to ${to}: ${text}`) } },';
  expect(source).to.contain(services);
  return source
    .replace(services, '  services: { stamper: { stamp: (text: string) => `stamped: ${text}` } },')
    .replace(
      "  middleware: [allowOrigins(['https://app.example.com'])],",
      "  middleware: [allowOrigins(['https://app.example.com']), logRequests],",
    )
    .concat(
      '\n// Logs every request once answered, when its actor is known.\n' +
        'function logRequests(...[req, res, next]: Parameters<Middleware>): void {\n' +
        "  res.on('finish', () => " +
        'console.log(`request ${req.method} ${req.url} ${res.statusCode} ${req.actor?.id}`));\n' +
        '  next();\n' +
        '}\n',
    );
}

async function checkExtension(app: RunningApp): Promise<void> {
  const url = app.url;
  // CORS on the front door's own routes: the preflight is answered before any credential check.
  const preflight = await request(url, 'OPTIONS', '/api/notes', {
    headers: {
      origin: ORIGIN,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, idempotency-key',
    },
  });
  expect(preflight.status).to.equal(204);
  expect(preflight.headers.get('access-control-allow-origin')).to.equal(ORIGIN);
  expect(preflight.headers.get('access-control-allow-headers')).to.contain('Idempotency-Key');
  expect(preflight.headers.get('x-trace-id'), 'middleware runs after the trace starts').to.match(/^[0-9a-f]{32}$/);
  const foreign = await request(url, 'OPTIONS', '/api/notes', {
    headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
  });
  expect(foreign.headers.get('access-control-allow-origin')).to.equal(null);

  const created = await request(url, 'POST', '/api/notes', {
    json: { text: 'hello' },
    headers: agent({ origin: ORIGIN }),
  });
  expect(created.status, created.text).to.equal(201);
  expect(created.headers.get('access-control-allow-origin')).to.equal(ORIGIN);
  // A refusal carries the header too, so a browser can read it: the middleware ran before credentials.
  const refused = await request(url, 'GET', '/api/notes', { headers: { origin: ORIGIN } });
  expect(refused.status).to.equal(401);
  expect(refused.headers.get('access-control-allow-origin')).to.equal(ORIGIN);

  // The team's route, behind the pipeline: it knows the actor, and answers errors with the envelope.
  const me = await request(url, 'GET', '/api/me', { headers: { authorization: `Bearer ${KEY}` } });
  expect(me.status).to.equal(200);
  expect(me.body).to.deep.equal({ kind: 'agent', id: 'agent-ext', roles: ['agent'] });
  const anonymous = await request(url, 'GET', '/api/me');
  expect(anonymous.status).to.equal(401);
  expect((anonymous.body as { error: { code: string } }).error.code).to.equal('UNAUTHENTICATED');

  // The service reaches the handler (ctx.services.stamper).
  const id = (created.body as { id: string }).id;
  const stamped = await request(url, 'POST', `/api/commands/stamp/${id}`, { json: {}, headers: agent() });
  expect(stamped.status, stamped.text).to.equal(200);
  expect((await request(url, 'GET', `/api/notes/${id}`, { headers: agent() })).body).to.include({
    stamp: 'stamped: hello',
  });

  // Delegation: a signature from the approval service sets delegatedBy; a forged one does not.
  const signature = createHmac('sha256', APPROVAL_SECRET).update('person-7:agent-ext').digest('hex');
  const approved = await request(url, 'POST', '/api/notes', {
    json: { text: 'approved' },
    headers: agent({ 'x-approved-by': `person-7:${signature}` }),
  });
  const forged = await request(url, 'POST', '/api/notes', {
    json: { text: 'forged' },
    headers: agent({ 'x-approved-by': `person-8:${signature}` }),
  });
  for (const [res, delegatedBy] of [
    [approved, 'person-7'],
    [forged, null],
  ] as const) {
    expect(res.status).to.equal(201);
    const trail = await request(url, 'GET', `/api/audit?entity=Note&recordId=${(res.body as { id: string }).id}`, {
      headers: agent(),
    });
    expect(
      (trail.body as { items: Array<{ delegatedBy: string | null }> }).items.map((a) => a.delegatedBy),
    ).to.deep.equal([delegatedBy]);
  }

  // The request log saw the actor once the response finished.
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(app.output()).to.contain('request POST /api/notes 201 agent-ext');
  expect(app.output()).to.contain('request GET /api/notes 401 anonymous');
}

describe("src/extend.ts, the team's extension point", function () {
  this.timeout(180_000);
  let root: string;
  let blueprint: string;
  let out: string;
  let extend: string;

  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-extension-'));
    fs.cpSync(path.join(ROOT, 'test', 'fixtures', 'extension'), path.join(root, 'lab'), { recursive: true });
    blueprint = path.join(root, 'lab', 'app.toml');
    out = path.join(root, 'lab', 'out');
    extend = path.join(out, 'src', 'extend.ts');
  });

  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('is scaffolded once, says it is yours, and is not among the files bp owns', () => {
    const r = bp(['generate', blueprint, '-o', out]);
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stdout).to.contain('created for you to edit: src/extend.ts');
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(out, 'node_modules'));
    const text = fs.readFileSync(extend, 'utf8');
    expect(text.split('\n')[0]).to.equal(
      '// Yours to edit: bp created this file once and never changes, replaces or deletes it.',
    );
    expect(text).not.to.contain('generated by bp, do not edit');
    const manifest = JSON.parse(fs.readFileSync(path.join(out, '.bp-manifest.json'), 'utf8')) as {
      files: Record<string, string>;
      userOwned: string[];
    };
    expect(manifest.files).not.to.have.property('src/extend.ts');
    expect(manifest.userOwned).to.deep.equal(['src/extend.ts']);
  });

  it('survives regeneration untouched once edited: no conflict, and --check is clean', () => {
    fs.writeFileSync(extend, teamEdits(withExamples(fs.readFileSync(extend, 'utf8'))));
    const before = sha256(extend);
    const again = bp(['generate', blueprint, '-o', out]);
    expect(again.status, again.stderr).to.equal(0);
    expect(again.stdout).to.match(/: 0 written, \d+ unchanged$/m);
    expect(sha256(extend)).to.equal(before);
    const check = bp(['generate', blueprint, '-o', out, '--check']);
    expect(check.status, check.stdout + check.stderr).to.equal(0);
    expect(check.stdout).to.contain('is up to date');
    expect(check.stdout).not.to.contain('extend.ts');
  });

  it("type-checks with the team's edits and the handler's value import of bp/runtime", () => {
    const r = typecheck(out);
    expect(r.stdout + r.stderr).to.equal('');
    expect(r.status).to.equal(0);
  });

  it('honours middleware, routes, services and delegate over HTTP (npm run dev)', async () => {
    const app = await startApp(out, ENV);
    try {
      await checkExtension(app);
    } finally {
      await app.stop();
    }
  });

  it('honours them from the production build (npm start)', async () => {
    const app = await startApp(out, ENV, START_COMMAND);
    try {
      expect(app.output()).to.contain('building dist/ first');
      await checkExtension(app);
    } finally {
      await app.stop();
    }
  });

  it('stops the app with a message naming the mistake when the export is malformed', async () => {
    const edited = fs.readFileSync(extend, 'utf8');
    try {
      fs.writeFileSync(extend, edited.replace('  middleware: [', '  middlewares: ['));
      const error = await startApp(out, ENV).then(
        () => 'started',
        (e: Error) => e.message,
      );
      expect(error).to.contain('cannot start: src/extend.ts: unknown key(s) middlewares');
      expect(error).not.to.match(/\n\s+at /);
    } finally {
      fs.writeFileSync(extend, edited);
    }
  });

  it('is created again when deleted (the app imports it), and --check says so meanwhile', () => {
    fs.rmSync(extend);
    const check = bp(['generate', blueprint, '-o', out, '--check']);
    expect(check.status).to.equal(1);
    expect(check.stdout).to.contain('missing file bp would create for you to edit: src/extend.ts');
    expect(bp(['generate', blueprint, '-o', out]).status).to.equal(0);
    expect(fs.readFileSync(extend, 'utf8')).to.contain('Yours to edit');
  });

  it('keeps a src/extend.ts bp never wrote, in a folder it generates for the first time', () => {
    const other = path.join(root, 'lab', 'other');
    fs.mkdirSync(path.join(other, 'src'), { recursive: true });
    const mine =
      "import { defineExtension } from './runtime/http/extension.ts';\n\nexport default defineExtension({});\n";
    fs.writeFileSync(path.join(other, 'src', 'extend.ts'), mine);
    const r = bp(['generate', blueprint, '-o', other]);
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stdout).not.to.contain('created for you');
    expect(fs.readFileSync(path.join(other, 'src', 'extend.ts'), 'utf8')).to.equal(mine);
  });
});
