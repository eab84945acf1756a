// Boards, board widgets and action bars (issue 28) on SQLite and PostgreSQL over HTTP: cards in
// their columns; a move that starts its workflow, and a stale one refused with nothing started; an
// action bar's action starting its workflow after its confirmation, and hidden or disabled actions
// refused when posted anyway; a widget's toggle written through the entity's rules (refused for a
// viewer who may not update). Then a board move and an action bar in Chromium, without scripts.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { validateBlueprint } from '../generator/compile.ts';
import type { SourceHost } from '../generator/source.ts';
import {
  freshDir,
  generate,
  login,
  request,
  ROOT,
  type Session,
  startApp,
  TMP,
  type RunningApp,
} from './support/apps.ts';
import { addUser } from './support/access/client.ts';
import { launchChromium } from './support/chromium.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';
import { getPage as page, postPage as post } from './support/pages.ts';

const PASSWORD = 'boards-test-password-1';
const PEOPLE = {
  editor: { email: 'editor@tasks.example', roles: ['editor'] },
  viewer: { email: 'viewer@tasks.example', roles: [] as string[] },
};
type Person = keyof typeof PEOPLE;
type Task = { id: string; title: string; status: string; starred: boolean; note: string | null; position: number };

let appDir: string;
let warnings: string;

before(async function () {
  this.timeout(120_000);
  appDir = path.join(freshDir('page-boards'), 'app');
  warnings = (await generate(path.join(ROOT, 'test/fixtures/page-boards/app.toml'), appDir)).stderr;
});

/** The hidden fields of the first form on the page whose markup includes every one of `marks`. */
function formFields(html: string, ...marks: string[]): Record<string, string> {
  const form = html.split('<form').find((f) => marks.every((m) => f.includes(m)));
  if (!form) throw new Error(`no form with ${marks.join(', ')}`);
  const fields: Record<string, string> = {};
  for (const m of form.split('</form>')[0].matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g))
    if (m[1] !== '_csrf') fields[m[1]] = m[2].replace(/&amp;/g, '&');
  return fields;
}

/** A column's section of a board page. */
function column(html: string, label: string): string {
  const start = html.indexOf(`<section class="column" aria-label="${label}">`);
  if (start < 0) throw new Error(`no column ${label}`);
  return html.slice(start, html.indexOf('</section>', start));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const database of DATABASES) {
  describe(`boards, widgets and action bars (${database})`, function () {
    this.timeout(120_000);
    let app: RunningApp;
    const sessions = {} as Record<Person, Session>;
    const ids: Record<string, string> = {};

    const task = async (name: string): Promise<Task> => {
      const res = await request(app.url, 'GET', `/api/tasks/${ids[name]}`, {
        headers: { cookie: sessions.editor.cookie },
      });
      return res.body as Task;
    };
    /** Polls until the workflow's job has run: `check` holds of the task. */
    const until = async (name: string, check: (t: Task) => boolean): Promise<Task> => {
      for (let i = 0; i < 100; i++) {
        const t = await task(name);
        if (check(t)) return t;
        await sleep(100);
      }
      throw new Error(`${name} never got there: ${JSON.stringify(await task(name))}`);
    };

    before(async () => {
      const env = {
        DATABASE_URL: await databaseUrl(database, 'page-boards'),
        SESSION_SECRET: 'boards-test-session-secret-0123456789',
      };
      for (const person of Object.values(PEOPLE)) await addUser(appDir, env, { ...person, password: PASSWORD });
      app = await startApp(appDir, env);
      for (const name of Object.keys(PEOPLE) as Person[])
        sessions[name] = await login(app.url, PEOPLE[name].email, PASSWORD);
      const headers = { cookie: sessions.editor.cookie, 'x-csrf-token': sessions.editor.csrfToken };
      const project = await request(app.url, 'POST', '/api/projects', { json: { name: 'Garden' }, headers });
      expect(project.status, project.text).to.equal(201);
      const projectId = (project.body as { id: string }).id;
      for (const [title, status, position] of [
        ['Alpha', 'todo', 2],
        ['Bravo', 'todo', 1],
        ['Charlie', 'doing', 1],
        ['Delta', 'parked', 1],
        ['Echo', 'todo', 3],
        ['Foxtrot', 'todo', 4],
      ] as const) {
        const res = await request(app.url, 'POST', '/api/tasks', {
          json: { title, status, position, projectId, note: `<i>${title}</i> note` },
          headers,
        });
        expect(res.status, res.text).to.equal(201);
        ids[title] = (res.body as { id: string }).id;
      }
      for (const [name, position] of [
        ['Later', 2],
        ['Now', 1],
      ] as const) {
        const res = await request(app.url, 'POST', '/api/lanes', { json: { name, position }, headers });
        expect(res.status, res.text).to.equal(201);
        ids[name] = (res.body as { id: string }).id;
      }
      const golf = await request(app.url, 'POST', '/api/tasks', { json: { title: 'Golf', laneId: ids.Now }, headers });
      expect(golf.status, golf.text).to.equal(201);
      ids.Golf = (golf.body as { id: string }).id;
    });
    after(async () => {
      await app?.stop();
    });

    it('shows each card in its column, in order, and a record of no declared column under Other', async () => {
      const html = await (await page(app, '/board', sessions.viewer)).text();
      const todo = column(html, 'To do');
      expect(todo).to.include('Not started').and.include('<span class="count">5</span>');
      expect(todo.indexOf('Bravo')).to.be.below(todo.indexOf('Alpha'));
      expect(todo).to.include(`<a href="/tasks/${ids.Alpha}">Alpha</a>`);
      expect(todo).to.include('<dt>Project name</dt><dd>Garden</dd>').and.include('&lt;i&gt;Alpha&lt;/i&gt; note');
      expect(column(html, 'Doing')).to.include('Charlie').and.not.include('Alpha');
      expect(column(html, 'Other')).to.include('Delta');
      expect(html).to.include('<label for="move-' + ids.Alpha + '">Move to</label>');
    });

    it('moves a card by starting the workflow, and says so', async () => {
      const board = await (await page(app, '/board', sessions.editor)).text();
      expect(formFields(board, `name="_id" value="${ids.Alpha}"`)).to.include({ _action: 'move', _from: 'todo' });
      const res = await post(app, '/board', sessions.editor, {
        _action: 'move',
        _id: ids.Alpha,
        _from: 'todo',
        _to: 'doing',
      });
      expect(res.status, await res.text()).to.equal(303);
      expect(res.headers.get('location')).to.equal('/board');
      await until('Alpha', (t) => t.status === 'doing');
      const flash = (res.headers.get('set-cookie') ?? '').split(';')[0];
      const after = await (await page(app, '/board', sessions.editor, flash)).text();
      expect(after).to.include('Moving the card.');
      expect(column(after, 'Doing')).to.include('Alpha');
    });

    it('refuses a stale move with a message, and starts nothing', async () => {
      // The page showed Charlie under "To do"; it is under "Doing".
      const res = await post(app, '/board', sessions.editor, {
        _action: 'move',
        _id: ids.Charlie,
        _from: 'todo',
        _to: 'done',
      });
      expect(res.status).to.equal(409);
      expect(await res.text()).to.include('Charlie was not moved: it is in &quot;Doing&quot; now');
      await sleep(1500);
      expect((await task('Charlie')).status).to.equal('doing');
    });

    it('shows the action bar by the record, and starts an action after its confirmation', async () => {
      const url = `/tasks/${ids.Bravo}`;
      const html = await (await page(app, url, sessions.editor)).text();
      expect(html).to.include('<p class="bar-title">Next steps</p>').and.include('Move the task along.');
      expect(html).to.include('>Start</button>').and.not.include('>Finish</button>');
      expect(html).to.match(/class="danger" disabled><span class="icon" aria-hidden="true">!<\/span> Flag/);
      expect(html).to.include('<a class="button link" href="/board" target="_blank" rel="noopener noreferrer">');
      // An icon font's name is not shown as text.
      expect(html).to.include('<a class="button ghost" href="/board">Board</a>').and.not.include('arrow-right');
      const fields = formFields(html, 'name="_id" value="a0"');
      const ask = await post(app, url, sessions.editor, fields);
      expect(ask.status).to.equal(200);
      expect(await ask.text())
        .to.include('Start this task?')
        .and.include('name="_confirmed" value="1"');
      await sleep(300);
      expect((await task('Bravo')).status).to.equal('todo');
      const done = await post(app, url, sessions.editor, { ...fields, _confirmed: '1' });
      expect(done.status).to.equal(303);
      await until('Bravo', (t) => t.status === 'doing');
      const flash = (done.headers.get('set-cookie') ?? '').split(';')[0];
      const after = await (await page(app, url, sessions.editor, flash)).text();
      expect(after).to.include('Task started.').and.include('>Finish</button>').and.not.include('>Start</button>');
      // Finish goes on to the page its redirect names, filled from the record.
      const finish = await post(app, url, sessions.editor, formFields(after, 'name="_id" value="a1"'));
      expect(finish.status).to.equal(303);
      expect(finish.headers.get('location')).to.equal(`/quick/${ids.Bravo}`);
      await until('Bravo', (t) => t.status === 'done');
    });

    it("shows the entity's status by an action bar that names no status field", async () => {
      const html = await (await page(app, `/quick/${ids.Delta}`, sessions.viewer)).text();
      expect(html)
        .to.include('<p class="bar-title">Quick</p>')
        .and.include('Status: <span class="status">parked</span>');
    });

    it('refuses a hidden action, a disabled one and a stale one posted anyway, and starts nothing', async () => {
      const url = `/tasks/${ids.Echo}`;
      const seen = formFields(await (await page(app, url, sessions.editor)).text(), 'name="_id" value="a0"')._seen;
      // Finish is hidden for a task to do; Flag disabled for one not starred.
      for (const id of ['a1', 'a2']) {
        const res = await post(app, url, sessions.editor, { _action: 'action', _id: id, _seen: seen, _confirmed: '1' });
        expect(res.status).to.equal(409);
        expect(await res.text()).to.include('is not available for this record.');
      }
      const change = await request(app.url, 'PUT', `/api/tasks/${ids.Echo}`, {
        json: { position: 9 },
        headers: { cookie: sessions.editor.cookie, 'x-csrf-token': sessions.editor.csrfToken },
      });
      expect(change.status, change.text).to.equal(200);
      const stale = await post(app, url, sessions.editor, {
        _action: 'action',
        _id: 'a0',
        _seen: seen,
        _confirmed: '1',
      });
      expect(stale.status).to.equal(409);
      expect(await stale.text()).to.include('this record changed since the page showed it');
      await sleep(1500);
      expect(await task('Echo')).to.include({ status: 'todo', note: '<i>Echo</i> note' });
    });

    it("writes a widget's toggle through the entity's rules: refused for a viewer, done for an editor", async () => {
      const html = await (await page(app, '/kanban', sessions.viewer)).text();
      expect(column(html, 'To do')).to.include('Foxtrot');
      const fields = formFields(html, `name="_id" value="${ids.Foxtrot}"`, 'name="_event" value="toggle"');
      const refused = await post(app, '/kanban', sessions.viewer, { ...fields, _field: 'starred' });
      expect(refused.status).to.equal(403);
      expect(await refused.text()).to.include('Nothing was changed: you may not update Task records.');
      expect((await task('Foxtrot')).starred).to.equal(false);
      const done = await post(app, '/kanban', sessions.editor, { ...fields, _field: 'starred' });
      expect(done.status).to.equal(303);
      expect((await task('Foxtrot')).starred).to.equal(true);
      // The same form again is stale: the record changed since that page.
      const again = await post(app, '/kanban', sessions.editor, { ...fields, _field: 'starred' });
      expect(again.status).to.equal(409);
      expect((await task('Foxtrot')).starred).to.equal(true);
      const after = await (await page(app, '/kanban', sessions.editor)).text();
      expect(after).to.include('aria-pressed="true"').and.include('>Starred</button>');
    });

    it("moves and edits a widget's card as its update templates say", async () => {
      const html = await (await page(app, '/kanban', sessions.editor)).text();
      const move = formFields(html, `name="_id" value="${ids.Foxtrot}"`, 'name="_event" value="move"');
      const res = await post(app, '/kanban', sessions.editor, { ...move, _to: 'done' });
      expect(res.status).to.equal(303);
      expect(await task('Foxtrot')).to.include({ status: 'done', position: 0 });
      const edit = formFields(
        await (await page(app, '/kanban', sessions.editor)).text(),
        `name="_id" value="${ids.Foxtrot}"`,
        'name="_event" value="edit"',
      );
      expect((await post(app, '/kanban', sessions.editor, { ...edit, _value: 'Foxtrot 2' })).status).to.equal(303);
      expect((await task('Foxtrot')).title).to.equal('Foxtrot 2');
    });

    it("moves a card between a column entity's records and starts the event's workflow; renames a column", async () => {
      const html = await (await page(app, '/lanes', sessions.editor)).text();
      expect(html.indexOf('aria-label="Now"')).to.be.below(html.indexOf('aria-label="Later"'));
      expect(column(html, 'Now')).to.include('Golf').and.include('todo · 0');
      const move = formFields(html, `name="_id" value="${ids.Golf}"`, 'name="_event" value="move"');
      const res = await post(app, '/lanes', sessions.editor, { ...move, _to: ids.Later });
      expect(res.status).to.equal(303);
      expect((await task('Golf')) as unknown).to.include({ laneId: ids.Later });
      await until('Golf', (t) => t.note === `moved to ${ids.Later}`);
      const rename = formFields(html, `name="_id" value="${ids.Later}"`, 'name="_event" value="column_rename"');
      const refused = await post(app, '/lanes', sessions.viewer, { ...rename, _value: 'Soon' });
      expect(refused.status).to.equal(403);
      const renamed = await post(app, '/lanes', sessions.editor, { ...rename, _value: 'Soon' });
      expect(renamed.status).to.equal(303);
      const lane = await request(app.url, 'GET', `/api/lanes/${ids.Later}`, {
        headers: { cookie: sessions.editor.cookie },
      });
      expect((lane.body as { name: string }).name).to.equal('Soon');
      expect(column(await (await page(app, '/lanes', sessions.editor)).text(), 'Soon')).to.include('Golf');
    });
  });
}

describe('boards and action bars in Chromium', function () {
  this.timeout(120_000);
  let app: RunningApp;
  let browser: Browser;
  const taskIds: Record<string, string> = {};

  before(async () => {
    const env = { DATABASE_URL: await databaseUrl('sqlite', 'page-boards-browser') };
    await addUser(appDir, env, { ...PEOPLE.editor, password: PASSWORD });
    app = await startApp(appDir, env);
    const session = await login(app.url, PEOPLE.editor.email, PASSWORD);
    const headers = { cookie: session.cookie, 'x-csrf-token': session.csrfToken };
    for (const [title, status] of [
      ['Plan the beds', 'todo'],
      ['Order seeds', 'todo'],
      ['Build the shed', 'doing'],
      ['Dig the pond', 'done'],
    ]) {
      const res = await request(app.url, 'POST', '/api/tasks', { json: { title, status, note: 'Spring' }, headers });
      expect(res.status, res.text).to.equal(201);
      taskIds[title] = (res.body as { id: string }).id;
    }
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('moves a card with the form, and starts an action after confirming it', async () => {
    const tab = await (await browser.newContext({ viewport: { width: 1000, height: 760 } })).newPage();
    fs.mkdirSync(TMP, { recursive: true });
    await tab.goto(`${app.url}/board`);
    await tab.fill('#email', PEOPLE.editor.email);
    await tab.fill('#password', PASSWORD);
    await Promise.all([tab.waitForURL(`${app.url}/board`), tab.click('button[type=submit]')]);
    await tab.selectOption(`#move-${taskIds['Plan the beds']}`, 'doing');
    await Promise.all([
      tab.waitForURL(`${app.url}/board`),
      tab.click(`form:has(#move-${taskIds['Plan the beds']}) button`),
    ]);
    expect(await tab.textContent('.flash.success')).to.equal('Moving the card.');
    // The job runs in the background: the board shows the card moved once it has.
    for (let i = 0; i < 50; i++) {
      await tab.goto(`${app.url}/board`);
      if ((await tab.textContent('section[aria-label="Doing"]'))?.includes('Plan the beds')) break;
      await tab.waitForTimeout(100);
    }
    expect(await tab.textContent('section[aria-label="Doing"]')).to.include('Plan the beds');
    await tab.screenshot({ path: path.join(TMP, 'page-board.png'), fullPage: true });
    await tab.goto(`${app.url}/kanban`);
    await tab.screenshot({ path: path.join(TMP, 'page-widget.png'), fullPage: true });
    await tab.goto(`${app.url}/tasks/${taskIds['Order seeds']}`);
    await tab.screenshot({ path: path.join(TMP, 'page-action-bar.png'), fullPage: true });
    expect(await tab.locator('button:has-text("Flag")').isDisabled()).to.equal(true);
    await tab.click('button:has-text("Start")');
    expect(await tab.textContent('#confirm-question')).to.equal('Start this task?');
    await tab.screenshot({ path: path.join(TMP, 'page-action-confirm.png'), fullPage: true });
    await Promise.all([
      tab.waitForURL(`${app.url}/tasks/${taskIds['Order seeds']}`),
      tab.click('button:has-text("Start")'),
    ]);
    expect(await tab.textContent('.flash.success')).to.equal('Task started.');
  });
});

/** Diagnostics of a one-file blueprint held in memory, as `code path` lines. */
function diagnosticsOf(text: string): string[] {
  const host: SourceHost = {
    readFile: (p) => (p === '/bp/app.toml' ? text : undefined),
    realPath: (p) => (p === '/bp/app.toml' || p === '/bp' ? p : undefined),
    display: (p) => path.basename(p),
  };
  return validateBlueprint('/bp/app.toml', host).diagnostics.map((d) => `${d.severity} ${d.code} ${d.path}`);
}

describe('boards at generate time', () => {
  const BLUEPRINT = `
[auth]
providers = ["email"]
[entity.Task]
fields = [{ name = "id", type = "ULID", primary_key = true }, { name = "title", type = "Text" }]
access = { read = "authenticated" }
[workflow.W]
trigger = { manual = true }
steps = [{ type = "query", entity = "Task", action = "find", where = {} }]
[page."/tasks/{id}"]
layout = "detail"
[page."/tasks/{id}".query.task]
entity = "Task"
where = { id = "$params.id" }
`;

  it('serves every page of the fixture: no NOT_GENERATED', () => {
    expect(warnings).not.to.include('NOT_GENERATED');
  });

  it('refuses an action condition that does not parse', () => {
    const bar = `[page."/tasks/{id}".actionBar]
actions = [{ label = "Go", workflow = "W", visibleWhen = { title = { in = ["a"] } } }]`;
    expect(diagnosticsOf(BLUEPRINT + bar)).to.include(
      'error INVALID_CONDITION page."/tasks/{id}".actionBar.actions.0.visibleWhen.title',
    );
  });

  it('refuses a widget page it cannot render (a lookup widget), never serving it blank', () => {
    const widget = `[page."/find"]
layout = "dashboard"
widget = { kind = "lookup", entity = "Task", search = ["title"] }`;
    const found = diagnosticsOf(BLUEPRINT + widget);
    expect(found).to.include('error WIDGET_NOT_RENDERED page."/find".widget.kind');
    expect(found.filter((d) => d.includes('"/find"') && d.includes('NOT_GENERATED'))).to.deep.equal([]);
  });
});
