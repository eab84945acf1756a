// An app carries only the runtime modules it imports (generator/emit/runtime.ts): the catalog,
// without e-mail sign-in or workflows (so without webhooks, schedules, jobs or the workflow
// engine), carries none of their code, yet type-checks, builds and runs on both databases (the
// PostgreSQL driver and the MCP server, loaded by import(), are in).
// A dynamic import the generator cannot read stops the generation.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { emitRuntime, RUNTIME_DIR } from '../generator/emit/runtime.ts';
import { spawnSync } from 'node:child_process';
import {
  freshKey,
  freshDir,
  generate,
  request,
  ROOT,
  type RunningApp,
  START_COMMAND,
  startApp,
  typecheck,
} from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

const runtimeFiles = (appDir: string): string[] =>
  fs
    .readdirSync(path.join(appDir, 'src', 'runtime'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.split(path.sep).join('/'))
    .sort();

describe('the runtime an app carries', function () {
  this.timeout(240_000);
  let catalog: string;

  before(async () => {
    catalog = path.join(freshDir('runtime-copy'), 'catalog');
    await generate(path.join(ROOT, 'fixtures', 'catalog', 'catalog.toml'), catalog);
  });

  it('leaves out what the catalog does not import (e-mail sign-in, workflows, their jobs and routes)', () => {
    const files = runtimeFiles(catalog);
    expect(files.filter((f) => f.startsWith('auth/email/'))).to.deep.equal([]);
    expect(files.filter((f) => f.startsWith('workflows/'))).to.deep.equal([]);
    expect(files).not.to.include.members(['http/webhook-routes.ts', 'http/job-routes.ts', 'http/skill-jobs.ts']);
    // Nor a src/workflows.ts declaring no workflow.
    expect(fs.existsSync(path.join(catalog, 'src', 'workflows.ts'))).to.equal(false);
    expect(fs.readFileSync(path.join(catalog, 'src', 'app.ts'), 'utf8')).not.to.match(/workflow|JobRunner|jobRouter/i);
    // Loaded by import(): chosen by DATABASE_URL when the app starts, or by the first POST /mcp.
    expect(files).to.include.members(['data/postgres.ts', 'data/postgres-migrate.ts', 'mcp/server.ts']);
    // What a team's handlers import as bp/runtime.
    expect(files).to.include('commands/handler.ts');
  });

  it('copies every module a copied module imports, so the catalog type-checks', () => {
    const r = typecheck(catalog);
    expect(r.stdout + r.stderr).to.equal('');
    expect(r.status).to.equal(0);
  });

  for (const database of DATABASES) {
    it(`runs the catalog on ${database} with the smaller runtime`, async () => {
      const key = freshKey();
      let app: RunningApp | undefined;
      try {
        app = await startApp(catalog, {
          CATALOG_OPS_KEY: key,
          DATABASE_URL: await databaseUrl(database, 'runtime_copy'),
        });
        const headers = { authorization: `Bearer ${key}` };
        const created = await request(app.url, 'POST', '/api/categorys', {
          json: { slug: 'tools', title: 'Tools' },
          headers: { ...headers, 'idempotency-key': freshKey() },
        });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
        const listed = await request(app.url, 'GET', '/api/categorys', { headers });
        expect(listed.status).to.equal(200);
        expect(JSON.stringify(listed.body)).to.contain('tools');
        // No workflow, no job routes.
        const job = await request(app.url, 'GET', '/api/jobs/01HZZZZZZZZZZZZZZZZZZZZZZZ', { headers });
        expect(job.status).to.equal(404);
        expect((job.body as { error?: { code?: string } }).error?.code).to.equal('ROUTE_NOT_FOUND');
      } finally {
        await app?.stop();
      }
    });
  }

  it('builds the catalog into dist/ and serves it from the build', async () => {
    const built = spawnSync(process.execPath, ['scripts/build.js'], { cwd: catalog, encoding: 'utf8' });
    expect(built.status, built.stderr).to.equal(0);
    const key = freshKey();
    const app = await startApp(catalog, { CATALOG_OPS_KEY: key }, START_COMMAND);
    try {
      const listed = await request(app.url, 'GET', '/api/categorys', { headers: { authorization: `Bearer ${key}` } });
      expect(listed.status).to.equal(200);
    } finally {
      await app.stop();
    }
  });

  it("copies what the team's src/extend.ts imports when the app is generated again", async () => {
    const extend = path.join(catalog, 'src', 'extend.ts');
    const original = fs.readFileSync(extend, 'utf8');
    try {
      fs.writeFileSync(
        extend,
        `import { Scheduler } from './runtime/workflows/schedules.ts';\nvoid Scheduler;\n${original}`,
      );
      await generate(path.join(ROOT, 'fixtures', 'catalog', 'catalog.toml'), catalog);
      expect(runtimeFiles(catalog)).to.include('workflows/schedules.ts');
    } finally {
      fs.writeFileSync(extend, original);
      await generate(path.join(ROOT, 'fixtures', 'catalog', 'catalog.toml'), catalog);
    }
    expect(runtimeFiles(catalog)).not.to.include('workflows/schedules.ts');
  });

  it('holds, for the reference helpdesk, exactly the modules its files import', async () => {
    const helpdesk = path.join(freshDir('runtime-copy'), 'helpdesk');
    await generate(path.join(ROOT, 'fixtures', 'helpdesk', 'helpdesk.toml'), helpdesk);
    const files = runtimeFiles(helpdesk);
    expect(files).to.include.members([
      'auth/email/provider.ts',
      'http/webhook-routes.ts',
      'http/job-routes.ts',
      'http/skill-jobs.ts',
      'workflows/engine.ts',
      'workflows/runner.ts',
    ]);
    const all = fs.readdirSync(RUNTIME_DIR, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    expect(files.length).to.be.below(all.length);
  });

  it('stops the generation at an import() whose module it cannot tell', () => {
    const runtime = freshDir('runtime-copy-lib');
    fs.mkdirSync(path.join(runtime, 'data'));
    fs.mkdirSync(path.join(runtime, 'commands'));
    fs.writeFileSync(path.join(runtime, 'commands', 'handler.ts'), 'export const x = 1;\n');
    fs.writeFileSync(
      path.join(runtime, 'data', 'open.ts'),
      "const name = './sqlite.ts';\nexport const m = await import(name);\n",
    );
    const app = new Map([['src/app.ts', "import { m } from './runtime/data/open.ts';\nvoid m;\n"]]);
    expect(() => emitRuntime(app, new Map(), runtime)).to.throw(
      /src\/runtime\/data\/open\.ts: cannot tell which module import\(name\) loads/,
    );
    // A literal one is followed.
    fs.writeFileSync(path.join(runtime, 'data', 'open.ts'), "export const m = await import('./sqlite.ts');\n");
    fs.writeFileSync(path.join(runtime, 'data', 'sqlite.ts'), 'export {};\n');
    expect([...emitRuntime(app, new Map(), runtime).keys()]).to.deep.equal([
      'src/runtime/commands/handler.ts',
      'src/runtime/data/open.ts',
      'src/runtime/data/sqlite.ts',
    ]);
  });
});
