// [[plugins]]: a blueprint's enabled plugins are npm packages the generated app loads at start, written
// to Zebric 0.6's plugin interface. The fixture's two packages live beside it (test/fixtures/plugins/)
// and are loaded by their `file:` version: the tests' apps share bp's node_modules and are never
// installed, so the app imports each from its folder (after npm install it would be node_modules').
// The app runs on SQLite and on PostgreSQL: plugins write through the entity stores of either.
// A workflow's plugin steps run the plugin's actions, which write through the entity stores as the
// plugin's own system actor; a field naming a plugin validator refuses bad writes; plugin middleware
// sees every request; a plugin is refused what it did not declare; a package that is missing or not a
// plugin stops the app at start; bp validate reads `action` as a plugin step's action_name, with a
// warning, and refuses a step naming a plugin that is not declared and enabled.

import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { expect } from 'chai';
import {
  bp,
  freshDir,
  generate,
  request,
  ROOT,
  START_COMMAND,
  startApp,
  typecheck,
  type RunningApp,
} from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'plugins');
const BLUEPRINT = path.join(FIXTURES, 'app.toml');
const json = { 'content-type': 'application/json' };

/** Polls `check` every 50 ms until it answers something, 100 times at most. */
async function eventually<T>(check: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const found = await check();
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('never happened');
}

/** A loopback HTTP server answering `text` to every request, counting them. */
async function loopbackServer(text: string) {
  let count = 0;
  const server = http.createServer((_req, res) => {
    count++;
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    requests: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Why the app generated from `blueprint` (a fixture file) refused to start. */
async function refusal(name: string, blueprint: string): Promise<string> {
  const appDir = path.join(freshDir(`plugins-${name}`), 'app');
  await generate(path.join(FIXTURES, blueprint), appDir);
  const started = startApp(appDir);
  let reason = '';
  await started.then(
    (app) => app.stop(),
    (err: Error) => void (reason = err.message),
  );
  return reason;
}

describe('[[plugins]] (generated app over HTTP)', function () {
  this.timeout(180_000);
  let appDir: string;

  before(async () => {
    appDir = path.join(freshDir('plugins'), 'app');
    await generate(BLUEPRINT, appDir);
  });

  it('puts each enabled plugin in package.json, a file: version relative to the app', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(appDir, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const relative = path.relative(appDir, path.join(FIXTURES, 'crm-plugin')).split(path.sep).join('/');
    expect(pkg.dependencies['bp-fixture-crm']).to.equal(`file:${relative}`);
    expect(pkg.dependencies).to.have.property('bp-fixture-probe');
    // Disabled: not loaded, not a dependency. Named by a path: loaded, not a dependency either.
    expect(pkg.dependencies).not.to.have.property('bp-fixture-retired');
    expect(pkg.dependencies).not.to.have.property('./local-plugin.js');
  });

  it('typechecks in strict mode, the plugin packages typed as modules of any shape', () => {
    const r = typecheck(appDir);
    expect(r.stdout + r.stderr).to.equal('');
    expect(r.status).to.equal(0);
  });

  for (const database of DATABASES)
    describe(`on ${database}`, () => {
      let app: RunningApp;
      before(async () => {
        app = await startApp(appDir, { DATABASE_URL: await databaseUrl(database, 'plugins'), ADMIN_PORT: '0' });
      });
      after(async () => app?.stop());

      it("lists the loaded plugins on the admin server's /plugins", async () => {
        const admin = await eventually(
          async () => /admin server on (http:\/\/127\.0\.0\.1:\d+)/.exec(app.output())?.[1],
        );
        const answer = await request(admin, 'GET', '/plugins');
        expect(answer.status, answer.text).to.equal(200);
        const loaded = (answer.body as { loaded: Array<{ name: string; trustLevel: string }> }).loaded;
        expect(loaded.map((p) => p.name)).to.include('bp-fixture-crm');
        expect(loaded.every((p) => p.trustLevel === 'limited' || p.trustLevel === 'full')).to.equal(true);
      });

      it("runs a workflow's plugin steps through the plugin's actions, writing as its system actor", async () => {
        const contact = await request(app.url, 'POST', '/api/contacts', { json: { name: 'Ada', vat: 'DE123456789' } });
        expect(contact.status, contact.text).to.equal(201);
        // The first step's action creates a Note (with the entry's config); the second, spelled `action`, tags it.
        const note = await eventually(async () => {
          const notes = (await request(app.url, 'GET', '/api/notes')).body as {
            items: Array<{ id: string; text: string }>;
          };
          return notes.items.find((n) => n.text.endsWith('#tagged'));
        });
        expect(note.text).to.equal('synced: Ada #tagged');
        const trail = await request(app.url, 'GET', `/api/audit?entity=Note&recordId=${note.id}`);
        expect(trail.status, trail.text).to.equal(200);
        const entries = (trail.body as { items: Array<{ operation: string; actorId: string }> }).items;
        expect(entries.map((e) => `${e.operation} by ${e.actorId}`)).to.deep.equal([
          'Note.update by plugin:bp-fixture-crm',
          'Note.create by plugin:bp-fixture-crm',
        ]);
      });

      it('starts a workflow for a plugin (engine.workflows.trigger), run as its system actor', async () => {
        const ping = await request(app.url, 'GET', '/crm/ping');
        expect(ping.text).to.equal('triggered');
        const note = await eventually(async () => {
          const notes = (await request(app.url, 'GET', '/api/notes')).body as {
            items: Array<{ id: string; text: string }>;
          };
          return notes.items.find((n) => n.text === 'ping from crm');
        });
        const trail = await request(app.url, 'GET', `/api/audit?entity=Note&recordId=${note.id}`);
        const entries = (trail.body as { items: Array<{ operation: string; actorId: string }> }).items;
        expect(entries.map((e) => `${e.operation} by ${e.actorId}`)).to.deep.equal([
          'Note.create by plugin:bp-fixture-crm',
        ]);
      });

      it("refuses a write its plugin's field validator refuses (400, nothing written), takes a good one", async () => {
        const before = (await request(app.url, 'GET', '/api/contacts')).body as { items: unknown[] };
        const bad = await request(app.url, 'POST', '/api/contacts', { json: { name: 'Bob', vat: 'nope' } });
        expect(bad.status).to.equal(400);
        expect(bad.body).to.deep.include({
          error: {
            code: 'VALIDATION_FAILED',
            message: 'vat: is not a VAT number',
            retryable: false,
            details: [{ field: 'vat', code: 'FIELD_VALIDATOR', message: 'vat: is not a VAT number' }],
            traceId: (bad.body as { error: { traceId: string } }).error.traceId,
          },
        });
        const after = (await request(app.url, 'GET', '/api/contacts')).body as { items: unknown[] };
        expect(after.items).to.have.length(before.items.length);
        // Updates are checked too; a field without validators is not.
        const good = await request(app.url, 'POST', '/api/contacts', { json: { name: 'Bob', vat: 'FR12345678901' } });
        expect(good.status, good.text).to.equal(201);
        const id = (good.body as { id: string }).id;
        const badUpdate = await request(app.url, 'PUT', `/api/contacts/${id}`, { json: { vat: 'FR1' } });
        expect(badUpdate.status, badUpdate.text).to.equal(400);
        expect((badUpdate.body as { error: { details: unknown[] } }).error.details).to.deep.equal([
          { field: 'vat', code: 'FIELD_VALIDATOR', message: 'vat: is not a VAT number' },
        ]);
        const stored = await request(app.url, 'GET', `/api/contacts/${id}`);
        expect(stored.body).to.deep.include({ vat: 'FR12345678901' });
        const rename = await request(app.url, 'PUT', `/api/contacts/${id}`, { json: { name: 'Robert' } });
        expect(rename.status, rename.text).to.equal(200);
      });

      it("runs the plugins' middleware on every request, before the routes", async () => {
        for (const url of ['/api/notes', '/api/openapi.json', '/no/such/path']) {
          const res = await request(app.url, 'GET', url);
          expect(res.headers.get('x-crm-seen'), url).to.equal(`GET ${url}`);
          // The plugin named by its path (./local-plugin.js) runs too, after it.
          expect(res.headers.get('x-local-plugin'), url).to.equal('stamped');
        }
      });

      it('withholds the engine members of capabilities a plugin did not declare', async () => {
        // bp-fixture-probe declared none: its middleware answers GET /probe with what init was given.
        const probe = await request(app.url, 'GET', '/probe', { headers: json });
        expect(probe.status, probe.text).to.equal(200);
        const refused = (member: string, capability: string) =>
          `refused: plugin "bp-fixture-probe" did not declare the "${capability}" capability: engine.${member} is ` +
          `withheld (add "${capability}" to capabilities in its [[plugins]] entry)`;
        expect(probe.body).to.deep.equal({
          db: refused('db', 'database'),
          fetch: refused('fetch', 'network'),
          dataDir: refused('dataDir', 'filesystem'),
          storage: refused('storage', 'storage'),
          cache: 'object',
          log: 'object',
          workflows: 'object',
          blueprint: 'object',
          entities: ['Contact', 'Note'],
        });
      });

      it("keeps a storage plugin's files in the uploads store, under names of its own, served to nobody", async () => {
        const greeting = await request(app.url, 'GET', '/crm/greeting');
        expect(greeting.text).to.equal('synced');
        // The app has no file field: the plugin's storage opened the uploads folder.
        const stored = fs.readdirSync(path.join(appDir, 'data', 'uploads')).filter((f) => f.startsWith('plugin-'));
        expect(stored).to.have.length(1);
        expect(fs.readFileSync(path.join(appDir, 'data', 'uploads', stored[0]), 'utf8')).to.equal('synced');
        expect((await request(app.url, 'GET', `/uploads/${stored[0]}`)).status).to.equal(404);
      });

      it('gives a filesystem plugin its own folder, a network plugin fetch (anywhere in development)', async () => {
        const dir = await request(app.url, 'GET', '/crm/dir');
        expect(dir.text).to.equal(path.join(appDir, 'data', 'plugins', 'bp-fixture-crm'));
        expect(fs.statSync(dir.text).isDirectory()).to.equal(true);
        const local = await loopbackServer('hello from loopback');
        try {
          const fetched = await request(app.url, 'GET', `/crm/fetch?url=${encodeURIComponent(local.url)}`);
          expect(fetched.body).to.deep.equal({ status: 200, text: 'hello from loopback' });
        } finally {
          await local.close();
        }
      });
    });

  it('loads its plugins from the production build too (npm start: esbuild, packages left out)', async () => {
    const app = await startApp(appDir, { DATABASE_URL: await databaseUrl('sqlite', 'plugins-start') }, START_COMMAND);
    try {
      const res = await request(app.url, 'GET', '/api/notes');
      expect(res.headers.get('x-crm-seen')).to.equal('GET /api/notes');
      expect((await request(app.url, 'GET', '/crm/greeting')).text).to.equal('synced');
    } finally {
      await app.stop();
    }
  });

  it("refuses a network plugin's fetch of a loopback address in production, before sending it", async () => {
    const local = await loopbackServer('never read');
    const app = await startApp(appDir, {
      NODE_ENV: 'production',
      DATABASE_URL: await databaseUrl('sqlite', 'plugins-production'),
    });
    try {
      for (const target of [local.url, local.url.replace('127.0.0.1', 'localhost')]) {
        const fetched = await request(app.url, 'GET', `/crm/fetch?url=${encodeURIComponent(target)}`);
        const host = new URL(target).host;
        expect(fetched.body).to.deep.equal({
          refused: `plugin "bp-fixture-crm": ${host} is a local, private or reserved address: refused in production`,
        });
      }
      expect(local.requests()).to.equal(0);
    } finally {
      await app.stop();
      await local.close();
    }
  });

  it('refuses to start when a plugin package is not installed, naming it', async () => {
    expect(await refusal('missing', 'missing.toml')).to.include(
      'cannot start: plugin "bp-fixture-absent" ([[plugins]]): its package is not installed: run npm install ' +
        '(package.json lists "bp-fixture-absent": "^1.0.0")',
    );
  });

  it('refuses to start when a plugin step (a nested one) names an action its plugin does not provide', async () => {
    expect(await refusal('unknown-action', 'unknown-action.toml')).to.include(
      'cannot start: workflow Sync runs bp-fixture-crm.upsertt, which plugin "bp-fixture-crm" does not provide ' +
        '(its workflows: upsert, tag) and src/extend.ts does not register',
    );
  });

  it('refuses to start when a plugin package is not a plugin, saying why', async () => {
    expect(await refusal('malformed', 'malformed.toml')).to.include(
      'cannot start: plugin "bp-fixture-malformed" ([[plugins]]): its module is not a plugin: no version (a string); ' +
        'no provides (an object); workflows.upsert is not a function',
    );
  });
});

describe('bp validate: plugin steps', () => {
  const variant = (name: string, edit: (text: string) => string): string => {
    const dir = freshDir(`plugins-validate-${name}`);
    for (const file of ['crm-plugin', 'probe-plugin', 'local-plugin.js'])
      fs.cpSync(path.join(FIXTURES, file), path.join(dir, file), { recursive: true });
    const file = path.join(dir, 'app.toml');
    fs.writeFileSync(file, edit(fs.readFileSync(BLUEPRINT, 'utf8')));
    return file;
  };

  it('reads a plugin step written with `action` as its action_name, with a warning naming action_name', () => {
    const r = bp(['validate', BLUEPRINT]);
    expect(r.status, r.stdout + r.stderr).to.equal(0);
    expect(r.stdout + r.stderr).to.include(
      'workflow.SyncContact.steps.1.action: a plugin step names its action with action_name; action is read as it ' +
        '[warning ALTERNATE_KEY]\n  hint: write action_name = "tag"',
    );
  });

  it('refuses a plugin step naming a plugin that is not declared, or not enabled, and a file: plugin not there', () => {
    const typo = bp([
      'validate',
      variant('typo', (t) =>
        t.replace('plugin = "bp-fixture-crm", action_name', 'plugin = "bp-fixture-crn", action_name'),
      ),
    ]);
    expect(typo.status).to.equal(1);
    expect(typo.stdout + typo.stderr).to.include(
      'workflow.SyncContact.steps.0.plugin: plugin "bp-fixture-crn" is not declared in [[plugins]] ' +
        '[error PLUGIN_NOT_DECLARED]\n  hint: did you mean "bp-fixture-crm"?',
    );
    const gone = bp(['validate', variant('gone', (t) => t.replace('file:./probe-plugin', 'file:./probe-plugins'))]);
    expect(gone.status).to.equal(1);
    expect(gone.stdout + gone.stderr).to.match(
      /plugin\.bp-fixture-probe\.version: \S*probe-plugins holds no package\.json \[error PLUGIN_NOT_FOUND\]/,
    );
    const retired = bp([
      'validate',
      variant('retired', (t) =>
        t.replace('plugin = "bp-fixture-crm", action =', 'plugin = "bp-fixture-retired", action ='),
      ),
    ]);
    expect(retired.status).to.equal(1);
    expect(retired.stdout + retired.stderr).to.include(
      'workflow.SyncContact.steps.1.plugin: plugin "bp-fixture-retired" is declared with enabled = false: ' +
        'this step could never run [error PLUGIN_NOT_DECLARED]',
    );
  });
});
