// `bp dev` (docs/bp-dev.md): the real CLI on a copy of the helpdesk fixture, driven by saving the
// blueprint, seen in headless Chromium through the page the app serves at /: a broken save shows
// the diagnostics overlay (exactly as bp validate prints them) while the app keeps serving, the fix
// reloads the page; an added field is applied and listed in /schema-diff, its removal waits for
// the developer's "y"; the admin port refuses foreign Hosts and Origins; Ctrl-C leaves no process
// and no port behind. Then the reload script of the generated app itself, over plain HTTP: only
// for loopback host names, never in production, never in an API response.

import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { WebSocket } from 'ws';
import { validateBlueprint } from '../generator/compile.ts';
import { schemaDiff as diffModels } from '../generator/model/schema-diff.ts';
import type { Blueprint } from '../generator/model/types.ts';
import { nodeSourceHost, type SourceHost } from '../generator/source.ts';
import { printDiagnostics } from '../bin/generate.ts';
import { bp, freshDir, request, ROOT, startApp, TMP } from './support/apps.ts';
import { edit, type RunningDev, startDev, until } from './support/bp-dev.ts';
import { launchChromium } from './support/chromium.ts';

const OVERLAY = '#bp-dev-overlay';
// The overlay's panel, in the shadow root of #bp-dev-overlay (locators pierce open shadow roots).
const PANEL = '#bp-dev-overlay section';
const DESCRIPTION = 'Tickets worked by people and agents under one set of rules.';

/** The processes whose parent is `parent`, from /proc. */
function childrenOf(parent: number): number[] {
  const parentOf = (pid: string) => {
    try {
      return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1];
    } catch {
      return undefined;
    }
  };
  return fs
    .readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p) && parentOf(p) === String(parent))
    .map(Number);
}

/** Gone, or a zombie (it ended, and its parent, gone before it, did not reap it). */
function ended(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].startsWith('Z');
  } catch {
    return true;
  }
}

/** What `bp validate` prints for the blueprint now, from bp dev's folder. */
function validateOutput(dev: RunningDev): string {
  let text = '';
  const { diagnostics } = validateBlueprint(dev.blueprint, nodeSourceHost(dev.dir));
  printDiagnostics(diagnostics, { out: (t) => void (text += t), err: (t) => void (text += t) });
  return text;
}

/** A GET with the Host header given (fetch may not set Host). */
function getAs(base: string, urlPath: string, host: string): Promise<{ status: number; text: string; csp: string }> {
  const url = new URL(urlPath, base);
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: url.port, path: url.pathname, headers: { host } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text, csp: String(res.headers['content-security-policy'] ?? '') }),
        );
      })
      .on('error', reject);
  });
}

async function schemaDiff(dev: RunningDev): Promise<Record<string, unknown> | null> {
  return (await request(dev.adminUrl, 'GET', '/schema-diff')).body as Record<string, unknown> | null;
}

/** Opens / and waits until its script is connected to bp dev (the page's marker survives until a reload). */
async function openIndex(browser: Browser, dev: RunningDev): Promise<Page> {
  const page = await browser.newPage();
  const before = ((await request(dev.adminUrl, 'GET', '/state')).body as { dev: { livePages: number } }).dev.livePages;
  await page.goto(`${dev.appUrl}/`);
  await page.evaluate(() => ((window as unknown as { bpMarker: number }).bpMarker = 1));
  await until(async () => {
    const state = (await request(dev.adminUrl, 'GET', '/state')).body as { dev: { livePages: number } };
    return state.dev.livePages > before ? true : undefined;
  }, 'the page to connect to bp dev');
  return page;
}

const reloaded = (page: Page) =>
  page.waitForFunction(() => (window as unknown as { bpMarker?: number }).bpMarker === undefined, undefined, {
    timeout: 30_000,
  });

describe('bp dev (real CLI, headless Chromium)', function () {
  this.timeout(180_000);
  let dev: RunningDev;
  let browser: Browser;

  before(async () => {
    [dev, browser] = await Promise.all([startDev(freshDir('bp-dev')), launchChromium()]);
  });

  after(async () => {
    await browser?.close();
    await dev?.stop();
  });

  it('shows the diagnostics overlay on a broken save, the app serving, and reloads on the fix', async () => {
    const page = await openIndex(browser, dev);
    expect(await page.locator(OVERLAY).count()).to.equal(0);

    const mark = dev.output().length;
    edit(dev.blueprint, '{ name = "name", type = "Text", required = true }', '{ name = "name", type = "Txt" }');
    const expected = validateOutput(dev);
    expect(expected).to.match(/bp\/helpdesk\.toml:\d+:\d+ entity\.Customer\.fields\.1\.type: .*\[error [A-Z_]+\]/);
    await page.locator(PANEL).waitFor({ timeout: 10_000 });
    expect(await page.locator(`${OVERLAY} pre`).textContent()).to.equal(expected);
    // The terminal prints the same lines, as bp validate does.
    await dev.waitFor(/the blueprint has errors/, 10_000, mark);
    expect(dev.output().slice(mark)).to.contain(expected);
    // The last good app keeps serving, the API unaltered.
    const api = await request(dev.appUrl, 'GET', '/api/openapi.json');
    expect(api.status).to.equal(200);
    expect(api.text).not.to.contain('<script');
    // A page opened now shows the overlay at once.
    const second = await browser.newPage();
    await second.goto(`${dev.appUrl}/`);
    await second.locator(PANEL).waitFor({ timeout: 10_000 });
    await second.screenshot({ path: path.join(TMP, 'bp-dev-overlay.png') });
    await second.close();

    edit(dev.blueprint, '{ name = "name", type = "Txt" }', '{ name = "name", type = "Text", required = true }');
    edit(dev.blueprint, DESCRIPTION, 'Tickets, now reloaded by bp dev.');
    await reloaded(page);
    await page.getByText('Tickets, now reloaded by bp dev.').waitFor({ timeout: 10_000 });
    expect(await page.locator(OVERLAY).count()).to.equal(0);
    await page.close();
  });

  it('applies an added field and lists it in /schema-diff; holds its removal until "y" is typed', async () => {
    const page = await openIndex(browser, dev);
    const field = '{ name = "email", type = "Email", required = true, unique = true },';
    edit(dev.blueprint, field, `${field}\n  { name = "phone", type = "Text" },`);
    const added = await until(async () => {
      const diff = await schemaDiff(dev);
      return diff?.status === 'applied' ? diff : undefined;
    }, 'the added field in /schema-diff');
    expect(added).to.include({ hasChanges: true, hasBreakingChanges: false });
    expect(added.fieldsAdded).to.deep.equal([{ entity: 'Customer', field: 'phone', fieldType: 'Text' }]);
    await reloaded(page);
    const migrations = path.join(dev.dir, 'app', 'prisma', 'migrations');
    expect(fs.readdirSync(migrations)).to.include('0002_blueprint_change');
    await page.evaluate(() => ((window as unknown as { bpMarker: number }).bpMarker = 1));

    const appPid = dev.appPid();
    edit(dev.blueprint, `${field}\n  { name = "phone", type = "Text" },`, field);
    const pending = await until(async () => {
      const diff = await schemaDiff(dev);
      return diff?.status === 'pending' ? diff : undefined;
    }, 'the pending removal in /schema-diff');
    expect(pending).to.include({ hasChanges: true, hasBreakingChanges: true });
    expect(pending.fieldsRemoved).to.deep.equal([{ entity: 'Customer', field: 'phone', fieldType: 'Text' }]);
    await page.locator(PANEL).waitFor({ timeout: 10_000 });
    const warning = (await page.locator(PANEL).textContent()) ?? '';
    expect(warning).to.contain('Customer.phone (Text) removed');
    expect(warning).to.contain('type y and Enter in the bp dev terminal');
    await dev.waitFor(/Customer\.phone \(Text\) removed/, 5000);
    // Not written, not applied: the same app serves, no new migration.
    expect(fs.readdirSync(migrations)).not.to.include('0003_blueprint_change');
    expect(dev.appPid()).to.equal(appPid);
    expect((await request(dev.appUrl, 'GET', '/api/openapi.json')).status).to.equal(200);

    dev.process.stdin?.write('y\n');
    const applied = await until(async () => {
      const diff = await schemaDiff(dev);
      return diff?.status === 'applied' && diff.hasBreakingChanges ? diff : undefined;
    }, 'the confirmed removal applied');
    expect(applied.fieldsRemoved).to.deep.equal([{ entity: 'Customer', field: 'phone', fieldType: 'Text' }]);
    await reloaded(page);
    expect(fs.readdirSync(migrations)).to.include('0003_blueprint_change');
    expect(await page.locator(OVERLAY).count()).to.equal(0);
    await page.close();
  });

  it('refuses a foreign Host on its admin port, and the WebSocket to foreign Origins', async () => {
    const foreign = await getAs(dev.adminUrl, '/schema-diff', 'rebound.example');
    expect(foreign.status).to.equal(403);
    expect(JSON.parse(foreign.text).error.code).to.equal('FORBIDDEN');
    expect((await getAs(dev.adminUrl, '/schema-diff', 'localhost')).status).to.equal(200);
    const channel = `${dev.adminUrl.replace('http:', 'ws:')}/live-reload`;
    const opens = (origin: string) =>
      new Promise<boolean>((resolve) => {
        const ws = new WebSocket(channel, { origin });
        ws.once('open', () => {
          ws.close();
          resolve(true);
        });
        ws.once('error', () => resolve(false));
      });
    expect(await opens('http://evil.example')).to.equal(false);
    expect(await opens(dev.appUrl)).to.equal(true);
  });

  it("serves the app's admin endpoints through its admin port (proxied), answering /state with its own", async () => {
    const page = await getAs(dev.appUrl, '/', 'localhost');
    expect(page.status).to.equal(200);
    const json = async (endpoint: string) => JSON.parse((await getAs(dev.adminUrl, endpoint, 'localhost')).text);
    const traces = (await json('/traces?limit=50')) as Array<{ metadata: { path: string } }>;
    expect(traces.map((t) => t.metadata.path)).to.include('/');
    const metrics = await getAs(dev.adminUrl, '/metrics', 'localhost');
    expect(metrics.status).to.equal(200);
    expect(metrics.text).to.match(/^bp_http_requests_total\{route="[^"]+",status_code="200"\} \d+/m);
    const workflows = (await json('/workflows')) as { workflows: Array<{ name: string }>; jobs: object };
    expect(workflows.workflows.map((w) => w.name)).to.include('EscalateTicket');
    expect(workflows.jobs).to.have.keys('pending', 'running', 'completed', 'failed');
    expect((await getAs(dev.adminUrl, '/workflows/visualization', 'localhost')).text).to.contain('EscalateTicket');
    const state = (await json('/state')) as { status: string; dev: { valid: boolean; app: string } };
    expect(state.status).to.equal('running');
    expect(state.dev).to.include({ valid: true, app: 'running' });
    expect((await json('/entities')).map((e: { name: string }) => e.name)).to.include('Ticket');
  });

  it('stops the app, the watcher and its servers on Ctrl-C: exit 0, no process, ports free', async () => {
    // bp dev's children: the app and the next app's process it keeps ready.
    const children = childrenOf(dev.process.pid as number);
    expect(children).to.include(dev.appPid());
    const ports = [new URL(dev.appUrl).port, new URL(dev.adminUrl).port].map(Number);
    expect(await dev.stop('SIGINT')).to.equal(0);
    for (const pid of children) expect(ended(pid), `pid ${pid}`).to.equal(true);
    for (const port of ports) {
      const refused = await new Promise<boolean>((resolve) => {
        const socket = net.connect(port, '127.0.0.1');
        socket.once('connect', () => {
          socket.destroy();
          resolve(false);
        });
        socket.once('error', () => resolve(true));
      });
      expect(refused, `port ${port} still open`).to.equal(true);
    }
  });

  it('injects the reload script only for loopback host names, outside production, and only into pages', async () => {
    const appDir = path.join(dev.dir, 'app');
    const env = { BP_LIVE_RELOAD_PORT: '3999', SESSION_SECRET: 'bp-dev-test-session-secret-0123456789' };
    const app = await startApp(appDir, env);
    try {
      for (const host of ['localhost', '127.0.0.1', '[::1]']) {
        const page = await getAs(app.url, '/', `${host}:${app.port}`);
        const nonce = /<script nonce="([^"]+)">/.exec(page.text)?.[1];
        expect(nonce, host).to.be.a('string');
        expect(page.text).to.contain(`ws://${host}:3999/live-reload`);
        expect(page.csp).to.contain(`script-src 'nonce-${nonce}'; connect-src ws://${host}:3999/live-reload`);
      }
      // The sign-in page too.
      expect((await getAs(app.url, '/login', 'localhost')).text).to.contain('<script');
      const foreign = await getAs(app.url, '/', 'app.example.com');
      expect(foreign.text).not.to.contain('<script');
      expect(foreign.csp).not.to.contain('script-src');
      const api = await getAs(app.url, '/api/openapi.json', 'localhost');
      expect(api.status).to.equal(200);
      expect(api.text).not.to.contain('<script');
    } finally {
      await app.stop();
    }
    const production = await startApp(appDir, { ...env, NODE_ENV: 'production' });
    try {
      const page = await getAs(production.url, '/', 'localhost');
      expect(page.status).to.equal(200);
      expect(page.text).not.to.contain('<script');
    } finally {
      await production.stop();
    }
  });
});

describe('bp dev command line', function () {
  this.timeout(120_000);

  it('with --no-hot-reload: no script in the pages, no WebSocket, no watching; stops on SIGTERM', async () => {
    const dev = await startDev(freshDir('bp-dev-no-reload'), ['--no-hot-reload']);
    try {
      const page = await getAs(dev.appUrl, '/', 'localhost');
      expect(page.status).to.equal(200);
      expect(page.text).not.to.contain('<script');
      const upgrade = await new Promise<string>((resolve) => {
        const ws = new WebSocket(`${dev.adminUrl.replace('http:', 'ws:')}/live-reload`, { origin: dev.appUrl });
        ws.once('open', () => resolve('open'));
        ws.once('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
        ws.once('error', () => resolve('error'));
      });
      expect(upgrade).to.equal('404');
      const pid = dev.appPid();
      edit(dev.blueprint, DESCRIPTION, 'Not watched.');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(dev.appPid()).to.equal(pid);
      expect((await getAs(dev.appUrl, '/', 'localhost')).text).to.contain(DESCRIPTION);
    } finally {
      expect(await dev.stop('SIGTERM')).to.equal(0);
    }
  });

  it("installs the app's packages when Node would not find them, and says so when npm install fails", async () => {
    // Outside the checkout, where no node_modules above the app holds its packages; npm's registry
    // is a closed port, so the install fails at once.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-dev-packages-'));
    const dev = await startDev(dir, [], {
      npm_config_registry: 'http://127.0.0.1:9/',
      npm_config_cache: path.join(dir, 'npm-cache'),
      npm_config_fetch_retries: '0',
    });
    try {
      expect(dev.output()).to.match(/bp dev: installing the app's packages \(npm install in app\): .*express/);
      expect(dev.output()).to.contain('bp dev: npm install failed in app: run it there, then save a file');
      expect(dev.output()).not.to.contain('ERR_MODULE_NOT_FOUND');
      expect(dev.output()).not.to.contain('app ready');
    } finally {
      expect(await dev.stop('SIGINT')).to.equal(0);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaves no process behind when it is killed outright (SIGKILL): the app and its spare stop', async () => {
    const dev = await startDev(freshDir('bp-dev-killed'));
    // With no page open, the spare is launched as soon as the app listens; esbuild's service is a child too.
    await until(
      async () => (childrenOf(dev.process.pid as number).length >= 2 ? true : undefined),
      'the spare',
      10_000,
    );
    const children = childrenOf(dev.process.pid as number);
    expect(children).to.include(dev.appPid());
    await dev.stop('SIGKILL');
    await until(async () => (children.every(ended) ? true : undefined), 'the children to end', 15_000);
  });

  it('documents every flag in --help', () => {
    const r = bp(['dev', '--help']);
    expect(r.status).to.equal(0);
    for (const flag of ['--out', '--port', '--admin-port', '--admin-host', '--no-hot-reload', '--accept-data-loss']) {
      expect(r.stdout).to.contain(flag);
    }
  });

  it('refuses an admin host that is not loopback (exit 2)', () => {
    const r = bp(['dev', 'fixtures/helpdesk/helpdesk.toml', '-o', 'unused', '--admin-host', '0.0.0.0']);
    expect(r.status).to.equal(2);
    expect(r.stderr).to.contain('--admin-host must be a loopback address');
  });
});

describe('bp dev schema diff (spec 2.10)', () => {
  const root = path.join(ROOT, 'fixtures', 'helpdesk', 'helpdesk.toml');
  /** The helpdesk's model with its root file edited in memory. */
  function model(edit: (text: string) => string = (t) => t): Blueprint {
    const disk = nodeSourceHost();
    const host: SourceHost = {
      ...disk,
      readFile: (file) => (file === fs.realpathSync(root) ? edit(disk.readFile(file) as string) : disk.readFile(file)),
    };
    const result = validateBlueprint(root, host);
    if (!result.model) throw new Error('no model');
    return result.model;
  }

  it('tells added entities and fields from removed ones and changed types; enum values are part of a type', () => {
    const before = model();
    const after = model((t) =>
      t
        .replace('{ name = "assigneeId", type = "Text", nullable = true }', '{ name = "assigneeId", type = "Integer" }')
        .replace('values = ["low", "normal", "high"]', 'values = ["low", "high"]')
        .replace(
          '[entity.Customer.access]',
          '[entity.Tag]\nfields = [{ name = "id", type = "UUID", primary_key = true }]\n\n[entity.Customer.access]',
        ),
    );
    const diff = diffModels(before, after);
    expect(diff).to.deep.include({ hasChanges: true, hasBreakingChanges: true, entitiesAdded: ['Tag'] });
    expect(diff.fieldsAdded).to.deep.equal([{ entity: 'Tag', field: 'id', fieldType: 'UUID' }]);
    expect(diff.fieldsRemoved).to.deep.equal([]);
    expect(diff.fieldsChanged).to.deep.equal([
      { entity: 'Ticket', field: 'priority', from: 'Enum(low, normal, high)', to: 'Enum(low, high)' },
      { entity: 'Ticket', field: 'assigneeId', from: 'Text', to: 'Integer' },
    ]);
    const back = diffModels(after, before);
    expect(back.entitiesRemoved).to.deep.equal(['Tag']);
    expect(back.fieldsRemoved).to.deep.equal([{ entity: 'Tag', field: 'id', fieldType: 'UUID' }]);
    expect(diffModels(before, model())).to.deep.include({ hasChanges: false, hasBreakingChanges: false });
  });
});
