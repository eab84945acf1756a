// A generated app on its own, outside bp's checkout: a copy of the reference blueprint folder
// (blueprint, handlers) under the system's temporary folder, generated with the real CLI, its
// dependencies resolved from a parent folder's node_modules (here a symlink to bp's). It type-checks
// (its handler imports 'bp/runtime'), builds with esbuild, runs from dist/ and runs the handler;
// `npm start` builds when the build is missing or stale; a deployment with only the production
// dependencies builds and serves.

import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';
import { bp, freshKey, request, ROOT, START_COMMAND, startApp, typecheck, type RunningApp } from './support/apps.ts';

const KEY = 'triage-key-0123456789abcdef';
const ENV = { TRIAGE_API_KEY: KEY };
const agent = () => ({ authorization: `Bearer ${KEY}`, 'idempotency-key': freshKey() });

/** Runs `node <args>` in `cwd` (e.g. `npm run build`'s command). */
function node(cwd: string, args: string[], input = '') {
  return spawnSync(process.execPath, args, { cwd, encoding: 'utf8', input });
}

/** Creates a ticket and walks it through start, resolve and close (close_ticket runs the fixture's handler). */
async function closeATicket(url: string): Promise<void> {
  const created = await request(url, 'POST', '/api/tickets', { json: { title: 'standalone' }, headers: agent() });
  expect(created.status, created.text).to.equal(201);
  const id = (created.body as { id: string }).id;
  for (const [command, input] of [
    ['start_ticket', {}],
    ['resolve_ticket', { resolution: 'rebooted' }],
    ['close_ticket', {}],
  ] as const) {
    const res = await request(url, 'POST', `/api/commands/${command}/${id}`, { json: input, headers: agent() });
    expect(res.status, `${command}: ${res.text}`).to.equal(200);
  }
  const ticket = await request(url, 'GET', `/api/tickets/${id}`, { headers: agent() });
  expect(ticket.body).to.include({ status: 'closed' });
  const trail = await request(url, 'GET', `/api/audit?entity=Ticket&recordId=${id}`, { headers: agent() });
  const operations = (trail.body as { items: Array<{ operation: string }> }).items.map((a) => a.operation);
  // The handler's own audit entry: it ran.
  expect(operations).to.include('command:CloseTicket:ticket.closed');
}

describe("a generated app outside bp's checkout", function () {
  this.timeout(180_000);
  let root: string;
  let blueprintDir: string;
  let out: string;

  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-standalone-'));
    blueprintDir = path.join(root, 'helpdesk');
    fs.cpSync(path.join(ROOT, 'fixtures', 'helpdesk'), blueprintDir, { recursive: true });
    out = path.join(blueprintDir, 'out');
    const r = bp(['generate', 'helpdesk.toml', '-o', 'out'], blueprintDir);
    expect(r.status, r.stderr).to.equal(0);
    // "npm install, or resolve dependencies from a parent folder" (the generated README).
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(out, 'node_modules'));
  });

  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it("type-checks: its handler's bp/runtime resolves to the app's own copy", () => {
    const r = typecheck(out);
    expect(r.stdout + r.stderr).to.equal('');
    expect(r.status).to.equal(0);
  });

  it("builds into dist/, recording every input, and serves the handler's command from the build", async () => {
    const built = node(out, ['scripts/build.js']);
    expect(built.status, built.stderr).to.equal(0);
    expect(built.stdout).to.match(/^built dist\/ \(server, users\) from \d+ files in \d+ ms$/m);
    for (const file of ['server.js', 'server.js.map', 'users.js', 'users.js.map'])
      expect(fs.existsSync(path.join(out, 'dist', file)), file).to.equal(true);
    const record = JSON.parse(fs.readFileSync(path.join(out, 'dist', 'build.json'), 'utf8')) as {
      inputs: Record<string, string>;
    };
    expect(record.inputs).to.include.keys(
      '../handlers/tickets.ts',
      'src/server.ts',
      'src/extend.ts',
      'scripts/build.js',
      'tsconfig.json',
      'package.json',
    );
    expect(Object.keys(record.inputs).filter((f) => f.includes('node_modules'))).to.deep.equal([]);

    const app = await startApp(out, ENV, START_COMMAND);
    try {
      expect(app.output()).not.to.contain('building dist/');
      await closeATicket(app.url);
    } finally {
      await app.stop();
    }
    // npm run users runs through the build too; its output stays its own.
    const added = node(
      out,
      ['scripts/start.js', 'users', 'add', '--email', 'ada@example.com', '--role', 'agent'],
      'a long password 123\n',
    );
    expect(added.status, added.stderr).to.equal(0);
    expect(added.stderr).to.equal('');
    const listed = node(out, ['scripts/start.js', 'users', 'list']);
    expect(listed.stdout).to.contain('ada@example.com');
    expect(node(out, ['scripts/start.js', 'nope']).stderr).to.contain('usage: node scripts/start.js <server|users>');
  });

  it('npm start rebuilds when an input changed since the build, the handler outside the folder included', async () => {
    expect(node(out, ['scripts/build.js']).status).to.equal(0);
    const extend = path.join(out, 'src', 'extend.ts');
    const original = fs.readFileSync(extend, 'utf8');
    fs.writeFileSync(
      extend,
      original.replace(
        'export default defineExtension({',
        'export default defineExtension({\n  routes(router) {\n' +
          "    router.get('/api/built-from', (_req, res) => { res.json({ from: 'edited' }); });\n  },",
      ),
    );
    let app: RunningApp = await startApp(out, ENV, START_COMMAND);
    try {
      expect(app.output()).to.contain('building dist/ first: src/extend.ts changed');
      expect((await request(app.url, 'GET', '/api/built-from')).body).to.deep.equal({ from: 'edited' });
    } finally {
      await app.stop();
    }
    // Fresh now: no second build.
    app = await startApp(out, ENV, START_COMMAND);
    await app.stop();
    expect(app.output()).not.to.contain('building dist/');

    const handler = path.join(blueprintDir, 'handlers', 'tickets.ts');
    fs.appendFileSync(handler, '\n// an edit\n');
    app = await startApp(out, ENV, START_COMMAND);
    await app.stop();
    expect(app.output()).to.contain('building dist/ first: ../handlers/tickets.ts changed');
    fs.writeFileSync(extend, original);
  });

  it('npm start in a freshly generated folder builds, then serves', async () => {
    const fresh = path.join(blueprintDir, 'fresh');
    expect(bp(['generate', 'helpdesk.toml', '-o', 'fresh'], blueprintDir).status).to.equal(0);
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(fresh, 'node_modules'));
    // The real npm, detached so that stopping it stops its shell and node too.
    const child = spawn('npm', ['start'], {
      cwd: fresh,
      env: { ...process.env, ...ENV, PORT: '0' },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    try {
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`npm start did not serve in 60 s:\n${output}`)), 60_000);
        child.stdout.on('data', () => {
          const m = /listening on http:\/\/localhost:(\d+)/.exec(output);
          if (m) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        });
        child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
      });
      expect(output).to.contain('building dist/ first: there is no build yet');
      const res = await request(`http://127.0.0.1:${port}`, 'GET', '/api/openapi.json');
      expect(res.status).to.equal(200);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        process.kill(-(child.pid as number), 'SIGTERM');
        await exited;
      }
    }
  });

  it('builds and serves where only its production dependencies are installed (npm ci --omit=dev)', async () => {
    // The blueprint folder as a deployment receives it, node_modules holding the app's
    // dependencies only: no tsx, TypeScript or Prisma to fall back on.
    const deploy = path.join(root, 'deploy');
    const left = new Set([
      ...['node_modules', 'dist', 'data'].map((d) => path.join(out, d)),
      path.join(blueprintDir, 'fresh'),
    ]);
    fs.cpSync(blueprintDir, deploy, { recursive: true, filter: (src) => !left.has(src) });
    const app = path.join(deploy, 'out');
    const pkg = JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(pkg.dependencies).to.include.keys('esbuild', 'express', 'better-sqlite3');
    expect(pkg.devDependencies).to.include.keys('tsx', 'typescript', 'prisma');
    for (const name of Object.keys(pkg.dependencies)) {
      const link = path.join(app, 'node_modules', name);
      fs.mkdirSync(path.dirname(link), { recursive: true });
      fs.symlinkSync(path.join(ROOT, 'node_modules', name), link);
    }
    // Nothing above the deployment may supply a package either.
    for (let dir = path.dirname(deploy); dir !== path.dirname(dir); dir = path.dirname(dir)) {
      expect(fs.existsSync(path.join(dir, 'node_modules')), `${dir}/node_modules`).to.equal(false);
    }
    const running = await startApp(app, ENV, START_COMMAND);
    try {
      expect(running.output()).to.contain('building dist/ first: there is no build yet');
      await closeATicket(running.url);
    } finally {
      await running.stop();
    }
  });
});
