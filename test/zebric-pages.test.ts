// A blueprint written in Zebric 0.6's grammar (test/fixtures/zebric/grammar, our own) with pages of
// every layout bp renders, opened and used in Chromium on SQLite and PostgreSQL (issue 28): its
// dashboard at /, a list, an auth page, a board moved through its workflow, a detail page rendered by its own Liquid
// template under an action bar, a form that creates a task, and a board widget whose toggle writes
// through the entity's rules. Screenshots are left in test/.tmp/.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { freshDir, freshKey, generate, login, request, ROOT, startApp, TMP, type RunningApp } from './support/apps.ts';
import { addUser } from './support/access/client.ts';
import { launchChromium } from './support/chromium.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

const KEYS = {
  STUDIO_OPS_KEY: 'studio-ops-key-0123456789abcdef',
  STUDIO_REPORTER_KEY: 'studio-reporter-key-0123456789ab',
};
const EMAIL = 'admin@studio.example.com';
const PASSWORD = 'zebric-pages-password-1';

let appDir: string;
let browser: Browser;

before(async function () {
  this.timeout(120_000);
  appDir = path.join(freshDir('zebric-pages'), 'app');
  await generate(path.join(ROOT, 'test/fixtures/zebric/grammar/app.toml'), appDir);
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
});

for (const database of DATABASES) {
  describe(`a Zebric blueprint's pages in Chromium (${database})`, function () {
    this.timeout(120_000);
    let app: RunningApp;
    let context: BrowserContext;
    let tab: Page;
    const ids: Record<string, string> = {};

    /** A record made with the operations key, as an agent would. */
    const create = async (collection: string, json: Record<string, unknown>): Promise<string> => {
      const res = await request(app.url, 'POST', `/api/${collection}`, {
        json,
        headers: { authorization: `Bearer ${KEYS.STUDIO_OPS_KEY}`, 'idempotency-key': freshKey() },
      });
      expect(res.status, res.text).to.equal(201);
      return String((res.body as { id: string }).id);
    };
    const task = async (id: string) => {
      const res = await request(app.url, 'GET', `/api/tasks/${id}`, {
        headers: { authorization: `Bearer ${KEYS.STUDIO_OPS_KEY}` },
      });
      return res.body as Record<string, unknown>;
    };
    /** Opens a page: 200, its heading, never the error page. */
    const open = async (urlPath: string, heading: string) => {
      const res = await tab.goto(app.url + urlPath);
      expect(res?.status(), urlPath).to.equal(200);
      expect(await tab.textContent('h1')).to.equal(heading);
      expect(await tab.content()).not.to.include('Something went wrong');
    };
    const shot = (name: string) =>
      tab.screenshot({ path: path.join(TMP, `zebric-${database}-${name}.png`), fullPage: true });

    before(async () => {
      const env = {
        ...KEYS,
        DATABASE_URL: await databaseUrl(database, 'zebric-pages'),
        SESSION_SECRET: 'zebric-pages-session-secret-0123456789',
      };
      await addUser(appDir, env, { email: EMAIL, password: PASSWORD, roles: ['admin'] });
      app = await startApp(appDir, env);
      ids.team = await create('teams', { name: 'Core', slug: 'core' });
      ids.member = await create('members', { teamId: ids.team, email: 'maker@studio.example.com', role: 'maker' });
      ids.todo = await create('columns', { name: 'To do', position: 1 });
      ids.doing = await create('columns', { name: 'Doing', position: 2 });
      ids.plan = await create('tasks', { title: 'Draft the plan', status: 'doing', columnId: ids.todo, points: 3 });
      ids.ship = await create('tasks', { title: 'Ship <it>', status: 'todo', columnId: ids.todo, points: 5 });
      // The person signs in over HTTP; the browser carries their session from there.
      const session = await login(app.url, EMAIL, PASSWORD);
      const [name, value] = session.cookie.split('=');
      context = await browser.newContext({ viewport: { width: 1000, height: 760 } });
      await context.addCookies([{ name, value, url: app.url, httpOnly: true, sameSite: 'Lax' }]);
      tab = await context.newPage();
      fs.mkdirSync(TMP, { recursive: true });
    });
    after(async () => {
      await context?.close();
      await app?.stop();
    });

    it('shows the dashboard at / with its query', async () => {
      await open('/', 'Studio');
      expect(await tab.textContent('main')).to.include('Draft the plan');
      await shot('dashboard');
    });

    it('lists the tasks, each linked to its page', async () => {
      await open('/tasks', 'Tasks');
      const href = await tab.locator('main a', { hasText: 'Draft the plan' }).getAttribute('href');
      expect(href).to.equal(`/tasks/${ids.plan}`);
      expect(await tab.content()).to.include('Ship &lt;it&gt;');
      await shot('list');
    });

    it('sends an auth page to the sign-in page, and back', async () => {
      const res = await fetch(`${app.url}/signin?callbackURL=%2Fboard`, { redirect: 'manual' });
      expect(res.status).to.equal(303);
      expect(res.headers.get('location')).to.equal('/login?next=%2Fboard');
    });

    it('renders a detail page by its own template, under its action bar', async () => {
      await open(`/tasks/${ids.plan}`, 'Task');
      expect(await tab.textContent('main')).to.include('Draft the plan');
      expect(await tab.content()).to.include('Move to done');
      await shot('detail');
    });

    it('creates a task through the form page and lands on it with the message', async () => {
      await open('/tasks/new', 'New task');
      await tab.fill('input[name=title]', 'Write the notes');
      await tab.fill('input[name=points]', '2');
      await Promise.all([tab.waitForURL(/\/tasks\/[0-9A-Z]{26}$/), tab.click('main form button[type=submit]')]);
      expect(await tab.textContent('.flash.success')).to.equal('Task created');
      const id = tab.url().split('/').pop() as string;
      expect(await task(id)).to.deep.include({ title: 'Write the notes', points: 2 });
      await shot('form-done');
    });

    it('moves a card on the board through its workflow', async () => {
      await open('/board', 'Board');
      const text = await tab.textContent('main');
      expect(text).to.include('Ship <it>').and.include('Draft the plan');
      await shot('board');
      const card = tab.locator('form', { has: tab.locator(`input[value="${ids.ship}"]`) }).first();
      await card.locator('select').selectOption({ index: 1 });
      await card.locator('button').click();
      await tab.waitForSelector('.flash');
      expect(await tab.textContent('.flash')).to.include('Moved');
    });

    it('toggles a card of the board widget through the entity rules', async () => {
      await open('/kanban', 'Kanban');
      expect(await tab.textContent('main')).to.include('Draft the plan');
      await shot('kanban');
      const toggle = tab.locator('form', { has: tab.locator(`input[value="${ids.plan}"]`) }).filter({ hasText: '☆' });
      await toggle.first().locator('button').click();
      await tab.waitForSelector('.flash');
      const flash = await tab.textContent('.flash');
      expect(await task(ids.plan), flash ?? '').to.deep.include({ starred: true });
    });
  });
}
