// The blueprint's pages (issue 28): list, detail and dashboard pages rendered on the server from
// the same stores, rules and executor as the API, on SQLite and PostgreSQL. What a page shows is
// what the API would show the viewer (rows, fields, included relations); what it offers is what the
// viewer may run now; a refused, stale or unconfirmed submission writes nothing. Then a walk
// through the pages in Chromium.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { PAGE_CSP } from '../runtime-lib/pages/document.ts';
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

const PASSWORD = 'pages-test-password-1';
const PEOPLE = {
  lead: { email: 'lead@studio.example', roles: ['lead'] },
  finance: { email: 'finance@studio.example', roles: ['finance'] },
  member: { email: 'member@studio.example', roles: [] as string[] },
};
type Person = keyof typeof PEOPLE;

let appDir: string;
let warnings: string;

before(async function () {
  this.timeout(120_000);
  appDir = path.join(freshDir('pages'), 'app');
  warnings = (await generate(path.join(ROOT, 'test/fixtures/pages/app.toml'), appDir)).stderr;
});

/** The hidden `_seen` of a command's form on a detail page. */
function seenOf(html: string, command: string): string {
  const form = html.split('<form method="post"').find((f) => f.includes(`name="_command" value="${command}"`));
  const match = form && /name="_seen" value="([^"]+)"/.exec(form);
  if (!match) throw new Error(`no form of ${command} on the page`);
  return match[1];
}

for (const database of DATABASES) {
  describe(`pages (${database})`, function () {
    this.timeout(120_000);
    let app: RunningApp;
    const sessions = {} as Record<Person, Session>;
    const ids: Record<string, string> = {};

    const status = async (id: string) => {
      const res = await request(app.url, 'GET', `/api/projects/${id}`, { headers: { cookie: sessions.lead.cookie } });
      return (res.body as { status: string }).status;
    };

    before(async () => {
      const env = {
        DATABASE_URL: await databaseUrl(database, 'pages'),
        SESSION_SECRET: 'pages-test-session-secret-0123456789',
      };
      for (const person of Object.values(PEOPLE)) await addUser(appDir, env, { ...person, password: PASSWORD });
      app = await startApp(appDir, env);
      for (const name of Object.keys(PEOPLE) as Person[])
        sessions[name] = await login(app.url, PEOPLE[name].email, PASSWORD);
      const me = await request(app.url, 'GET', '/api/auth/session', { headers: { cookie: sessions.lead.cookie } });
      const leadId = (me.body as { actor: { id: string } }).actor.id;
      const headers = { cookie: sessions.lead.cookie, 'x-csrf-token': sessions.lead.csrfToken };
      for (const [name, budget] of [
        ['Charlie', 300],
        ['Alpha', 100],
        ['Bravo', 200],
      ] as const) {
        const ownerId = name === 'Bravo' ? 'someone-else' : leadId;
        const res = await request(app.url, 'POST', '/api/projects', {
          json: { name, budget, ownerId, note: `<b>${name}</b> & co` },
          headers,
        });
        expect(res.status, res.text).to.equal(201);
        ids[name] = (res.body as { id: string }).id;
      }
      for (const title of ['Sketch', 'Review']) {
        const res = await request(app.url, 'POST', '/api/tasks', { json: { projectId: ids.Alpha, title }, headers });
        expect(res.status, res.text).to.equal(201);
      }
      const notice = await request(app.url, 'POST', '/api/notices', { json: { text: 'Open day on Friday' }, headers });
      expect(notice.status, notice.text).to.equal(201);
    });
    after(async () => {
      await app?.stop();
    });

    it('sends a signed-out person to sign in, and back to the page after', async () => {
      const res = await page(app, '/projects?page=2');
      expect(res.status).to.equal(303);
      expect(res.headers.get('location')).to.equal('/login?next=%2Fprojects%3Fpage%3D2');
    });

    it('lists the records a page at a time, in the query order, each linked to its page', async () => {
      const first = await page(app, '/projects', sessions.member);
      const html = await first.text();
      expect(first.status).to.equal(200);
      expect(first.headers.get('content-security-policy')).to.equal(PAGE_CSP);
      expect(first.headers.get('cache-control')).to.equal('no-store');
      expect(html).not.to.match(/<script/i);
      expect(html).to.include('<title>Projects · Studio</title>');
      expect(html).to.include(`<a href="/projects/${ids.Alpha}">Alpha</a>`);
      expect(html.indexOf('>Alpha<')).to.be.below(html.indexOf('>Bravo<'));
      expect(html).not.to.include('Charlie');
      expect(html).to.include('<a rel="next" href="/projects?page=2">Next</a>');
      const second = await (await page(app, '/projects?page=2', sessions.member)).text();
      expect(second).to.include('Charlie').and.include('<a rel="prev" href="/projects">Previous</a>');
      expect(second).not.to.include('>Alpha<');
    });

    it('shows a record, its included relation, and a field only to those who may read it', async () => {
      const member = await (await page(app, `/projects/${ids.Alpha}`, sessions.member)).text();
      expect(member).to.include('<dt>Name</dt><dd>Alpha</dd>');
      expect(member).to.include('<dd>&lt;b&gt;Alpha&lt;/b&gt; &amp; co</dd>');
      expect(member).to.include('State: <span class="status">draft</span>');
      expect(member).to.include('<h2>Tasks</h2>').and.include('Sketch').and.include('Review');
      expect(member).not.to.include('Budget').and.not.include('>100<');
      const finance = await (await page(app, `/projects/${ids.Alpha}`, sessions.finance)).text();
      expect(finance).to.include('<dt>Budget</dt><dd>100</dd>');
      // The list shows the same field to the same people only.
      expect(await (await page(app, '/projects', sessions.member)).text()).not.to.include('Budget');
      expect(await (await page(app, '/projects', sessions.finance)).text()).to.include('Budget');
    });

    it('tries a fixed path segment before a parameter, whatever the blueprint order', async () => {
      const res = await page(app, '/projects/archived', sessions.member);
      expect(res.status).to.equal(200);
      expect(await res.text()).to.include('<h1>Archived projects</h1>');
    });

    it('answers 404 for a record that is not there, and for a key that cannot be one', async () => {
      for (const id of ['01ARZ3NDEKTSV4RRFFQ69G5FAV', 'not-a-ulid']) {
        const res = await page(app, `/projects/${id}`, sessions.member);
        expect(res.status).to.equal(404);
        expect(await res.text()).to.include('There is nothing here');
      }
    });

    it('offers only the commands the viewer may run on the record now', async () => {
      const member = await (await page(app, `/projects/${ids.Alpha}`, sessions.member)).text();
      expect(member).not.to.include('name="_command"');
      const lead = await (await page(app, `/projects/${ids.Alpha}`, sessions.lead)).text();
      expect(lead).to.include('name="_command" value="Activate"');
      expect(lead).not.to.include('name="_command" value="Archive"');
    });

    it('asks before a command with confirm, runs it once confirmed, then offers what is next', async () => {
      const url = `/projects/${ids.Alpha}`;
      const seen = seenOf(await (await page(app, url, sessions.lead)).text(), 'Activate');
      const ask = await post(app, url, sessions.lead, { _action: 'command', _command: 'Activate', _seen: seen });
      const question = await ask.text();
      expect(ask.status).to.equal(200);
      expect(question).to.include('Activate this project?').and.include('name="_confirmed" value="1"');
      expect(await status(ids.Alpha)).to.equal('draft');
      const done = await post(app, url, sessions.lead, {
        _action: 'command',
        _command: 'Activate',
        _seen: seen,
        _confirmed: '1',
      });
      expect(done.status).to.equal(303);
      expect(done.headers.get('location')).to.equal(url);
      expect(await status(ids.Alpha)).to.equal('active');
      const flash = (done.headers.get('set-cookie') ?? '').split(';')[0];
      expect(flash).to.match(/^studio\.flash=/);
      const after = await (await page(app, url, sessions.lead, flash)).text();
      expect(after).to.include('Activate: done.').and.include('State: <span class="status">active</span>');
      expect(after).to.include('name="_command" value="Archive"').and.not.include('value="Activate"');
    });

    it('refuses a stale submission with a message and writes nothing', async () => {
      const url = `/projects/${ids.Charlie}`;
      const seen = seenOf(await (await page(app, url, sessions.lead)).text(), 'Activate');
      // The record moves on after the page was shown (a change through the API).
      const change = await request(app.url, 'PUT', `/api/projects/${ids.Charlie}`, {
        json: { note: 'changed meanwhile' },
        headers: { cookie: sessions.lead.cookie, 'x-csrf-token': sessions.lead.csrfToken },
      });
      expect(change.status, change.text).to.equal(200);
      const res = await post(app, url, sessions.lead, {
        _action: 'command',
        _command: 'Activate',
        _seen: seen,
        _confirmed: '1',
      });
      expect(res.status).to.equal(409);
      expect(await res.text()).to.include('this record changed since the page showed it');
      expect(await status(ids.Charlie)).to.equal('draft');
    });

    it('refuses a command the viewer may not run, and one no longer available, with a message', async () => {
      const url = `/projects/${ids.Charlie}`;
      const seen = seenOf(await (await page(app, url, sessions.lead)).text(), 'Activate');
      const member = await post(app, url, sessions.member, {
        _action: 'command',
        _command: 'Activate',
        _seen: seen,
        _confirmed: '1',
      });
      expect(member.status).to.equal(403);
      expect(await member.text()).to.include('Activate was not run: you may not run Activate on this record.');
      expect(await status(ids.Charlie)).to.equal('draft');
      // Archive is for active projects: sent anyway, the executor refuses it.
      const archive = await post(app, url, sessions.lead, {
        _action: 'command',
        _command: 'Archive',
        _seen: seen,
        reason: 'x',
      });
      expect(archive.status).to.equal(409);
      expect(await archive.text()).to.include('Archive was not run: Archive is not available');
      expect(await status(ids.Charlie)).to.equal('draft');
    });

    it("shows a refused input beside its field, with the person's input kept", async () => {
      const url = `/projects/${ids.Alpha}`;
      const seen = seenOf(await (await page(app, url, sessions.lead)).text(), 'Archive');
      const res = await post(app, url, sessions.lead, {
        _action: 'command',
        _command: 'Archive',
        _seen: seen,
        reason: '',
      });
      const html = await res.text();
      expect(res.status).to.equal(400);
      expect(html).to.include('<span class="field-error" id="Archive-reason-error">reason is required</span>');
      expect(await status(ids.Alpha)).to.equal('active');
    });

    it('refuses a post without the session token (CSRF) and writes nothing', async () => {
      const url = `/projects/${ids.Charlie}`;
      const seen = seenOf(await (await page(app, url, sessions.lead)).text(), 'Activate');
      const res = await fetch(app.url + url, {
        method: 'POST',
        headers: { cookie: sessions.lead.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _action: 'command', _command: 'Activate', _seen: seen, _confirmed: '1' }),
        redirect: 'manual',
      });
      expect(res.status).to.equal(403);
      expect(await status(ids.Charlie)).to.equal('draft');
    });

    it("shows a page of the viewer's own records ($currentUser)", async () => {
      const lead = await (await page(app, '/mine', sessions.lead)).text();
      expect(lead).to.include('Alpha').and.include('Charlie').and.not.include('Bravo');
      const member = await (await page(app, '/mine', sessions.member)).text();
      expect(member).to.include('Nothing to show.');
    });

    it('shows each query of a dashboard in its own section', async () => {
      const html = await (await page(app, '/overview', sessions.member)).text();
      expect(html).to.include('<h2>Projects</h2>').and.include('<h2>Open tasks</h2>');
      expect(html).to.include('Sketch').and.include('Review');
    });

    it('serves a page with auth = "none" to anyone, through the entity rules', async () => {
      const res = await page(app, '/notices');
      expect(res.status).to.equal(200);
      const html = await res.text();
      expect(html).to.include('Open day on Friday').and.include('<a href="/login?next=%2Fnotices">Sign in</a>');
    });

    it('refuses to order by a field the viewer may not read, and orders for those who may', async () => {
      const member = await page(app, '/by-budget', sessions.member);
      expect(member.status).to.equal(403);
      expect(await member.text()).to.include('budget');
      const html = await (await page(app, '/by-budget', sessions.finance)).text();
      expect(html.indexOf('Charlie')).to.be.below(html.indexOf('Bravo'));
      expect(html.indexOf('Bravo')).to.be.below(html.indexOf('>Alpha<'));
    });

    it('answers another method at a page with 405 and Allow, and a post of no action with a 400 page', async () => {
      const put = await request(app.url, 'PUT', `/projects/${ids.Alpha}`, { json: {} });
      expect(put.status).to.equal(405);
      expect(put.headers.get('allow')).to.equal('GET, HEAD, POST');
      const res = await post(app, `/projects/${ids.Alpha}`, sessions.lead, { _action: 'nothing' });
      expect(res.status).to.equal(400);
      expect(res.headers.get('content-type')).to.equal('text/html; charset=utf-8');
      expect(await res.text()).to.include('this page has no such action');
    });

    it('serves an auth page as the sign-in page, back to its next or callbackURL', async () => {
      for (const [query, next] of [
        ['', '%2F'],
        ['?callbackURL=%2Fprojects', '%2Fprojects'],
        ['?next=%2Fmine', '%2Fmine'],
      ]) {
        const res = await page(app, `/signin${query}`);
        expect(res.status).to.equal(303);
        expect(res.headers.get('location')).to.equal(`/login?next=${next}`);
      }
    });

    it('lists the pages the person may open on the index and in every page header', async () => {
      const out = await (await page(app, '/')).text();
      expect(out).to.include('<a href="/notices">Notices</a>').and.not.include('<a href="/projects">');
      const lead = await (await page(app, '/', sessions.lead)).text();
      expect(lead).to.include('<a href="/projects">Projects</a>').and.include('<a href="/overview">Overview</a>');
      expect(lead).not.to.include('/projects/:id').and.not.include('/projects/{id}');
      // The sign-in page (layout auth) is offered only to someone not signed in.
      expect(out).to.include('<a href="/signin">Sign in</a>');
      expect(lead).not.to.include('<a href="/signin">');
    });
  });
}

describe('pages in Chromium', function () {
  this.timeout(120_000);
  let app: RunningApp;
  let browser: Browser;
  let headers: Record<string, string>;
  let delta: string;

  before(async () => {
    const env = { DATABASE_URL: await databaseUrl('sqlite', 'pages-browser') };
    await addUser(appDir, env, { ...PEOPLE.lead, password: PASSWORD });
    app = await startApp(appDir, env);
    const session = await login(app.url, PEOPLE.lead.email, PASSWORD);
    headers = { cookie: session.cookie, 'x-csrf-token': session.csrfToken };
    const res = await request(app.url, 'POST', '/api/projects', {
      json: { name: 'Delta', note: 'A new studio', budget: 9000 },
      headers,
    });
    expect(res.status, res.text).to.equal(201);
    delta = (res.body as { id: string }).id;
    await request(app.url, 'POST', '/api/tasks', {
      json: { projectId: (res.body as { id: string }).id, title: 'Plan' },
      headers,
    });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('signs in from a page, opens a record, runs a command after confirming, and sees it done', async () => {
    const tab = await (await browser.newContext({ viewport: { width: 900, height: 700 } })).newPage();
    fs.mkdirSync(TMP, { recursive: true });
    await tab.goto(`${app.url}/projects`);
    await tab.waitForURL(`${app.url}/login?next=%2Fprojects`);
    await tab.fill('#email', PEOPLE.lead.email);
    await tab.fill('#password', PASSWORD);
    await Promise.all([tab.waitForURL(`${app.url}/projects`), tab.click('button[type=submit]')]);
    await tab.screenshot({ path: path.join(TMP, 'page-list.png'), fullPage: true });
    await Promise.all([tab.waitForURL(/\/projects\/[0-9A-Z]{26}$/), tab.click('text=Delta')]);
    expect(await tab.textContent('.status')).to.equal('draft');
    await tab.click('button:has-text("Activate")');
    expect(await tab.textContent('#confirm-question')).to.equal('Activate this project?');
    await tab.screenshot({ path: path.join(TMP, 'page-confirm.png'), fullPage: true });
    await tab.click('button:has-text("Activate")');
    await tab.waitForSelector('.flash.success');
    expect(await tab.textContent('.status')).to.equal('active');
    expect(await tab.locator('button:has-text("Activate")').count()).to.equal(0);
    expect(await tab.locator('button:has-text("Archive")').count()).to.equal(1);
    await tab.screenshot({ path: path.join(TMP, 'page-detail.png'), fullPage: true });
    // The budget is for finance: no page shows it to this lead.
    for (const url of ['/projects', `/projects/${delta}`, '/overview', '/mine']) {
      await tab.goto(app.url + url);
      expect(await tab.textContent('main'), url)
        .not.to.include('Budget')
        .and.not.include('9000');
    }
    // Keyboard: the first link of the header takes focus, visibly.
    await tab.keyboard.press('Tab');
    expect(await tab.evaluate(() => document.activeElement?.textContent)).to.equal('Studio');
    await tab.goto(`${app.url}/overview`);
    await tab.screenshot({ path: path.join(TMP, 'page-dashboard.png'), fullPage: true });
  });

  it('refuses a command sent from a page the record has moved on from, with a message', async () => {
    const tab = await (await browser.newContext({ viewport: { width: 900, height: 700 } })).newPage();
    await tab.goto(`${app.url}/projects/${delta}`);
    await tab.fill('#email', PEOPLE.lead.email);
    await tab.fill('#password', PASSWORD);
    await Promise.all([tab.waitForURL(`${app.url}/projects/${delta}`), tab.click('button[type=submit]')]);
    // Someone else changes the record while the page is open.
    const change = await request(app.url, 'PUT', `/api/projects/${delta}`, { json: { note: 'changed' }, headers });
    expect(change.status, change.text).to.equal(200);
    await tab.fill('input[name=reason]', 'Done for the year');
    await tab.click('button:has-text("Archive")');
    expect(await tab.textContent('.flash.error')).to.include('this record changed since the page showed it');
    expect(await tab.textContent('main')).to.include('changed');
    const after = await request(app.url, 'GET', `/api/projects/${delta}`, { headers });
    expect((after.body as { status: string }).status).to.equal('active');
  });
});

describe('uploads through a page in Chromium', function () {
  this.timeout(120_000);
  let app: RunningApp;
  let browser: Browser;
  const PDF = Buffer.from('%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n');

  before(async () => {
    const env = { DATABASE_URL: await databaseUrl('sqlite', 'pages-uploads') };
    await addUser(appDir, env, { ...PEOPLE.lead, password: PASSWORD });
    app = await startApp(appDir, env);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('uploads a file through a form, shows it, and refuses oversized, wrong-type and disguised ones', async () => {
    const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
    const tab = await context.newPage();
    await tab.goto(`${app.url}/projects/new`);
    await tab.fill('#email', PEOPLE.lead.email);
    await tab.fill('#password', PASSWORD);
    await Promise.all([tab.waitForURL(`${app.url}/projects/new`), tab.click('button[type=submit]')]);
    const send = async (name: string, file: { name: string; mimeType: string; buffer: Buffer }) => {
      await tab.goto(`${app.url}/projects/new`);
      await tab.fill('main input[name=name]', name);
      await tab.setInputFiles('main input[name=brief]', file);
      const [res] = await Promise.all([tab.waitForNavigation(), tab.click('main form button[type=submit]')]);
      return res;
    };
    await send('With a brief', { name: 'brief.pdf', mimeType: 'application/pdf', buffer: PDF });
    expect(tab.url()).to.match(/\/projects\/[0-9A-Z]{26}$/);
    expect(await tab.textContent('.flash.success')).to.equal('Project created');
    const link = tab.locator('main a[href^="/uploads/"]');
    const href = (await link.getAttribute('href')) as string;
    const file = await context.request.get(app.url + href);
    expect(file.status()).to.equal(200);
    expect(file.headers()['content-type']).to.equal('application/pdf');
    expect(file.headers()['x-content-type-options']).to.equal('nosniff');
    expect(Buffer.from(await file.body()).equals(PDF)).to.equal(true);
    await tab.screenshot({ path: path.join(TMP, 'page-upload.png'), fullPage: true });
    // Over the field's max, of a type it does not accept, and bytes that are not what they say.
    const big = Buffer.concat([PDF, Buffer.alloc(70_000, 32)]);
    const refused = [
      [await send('Too big', { name: 'big.pdf', mimeType: 'application/pdf', buffer: big }), 413],
      [await send('Wrong type', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('plain') }), 415],
      [
        await send('Disguised', {
          name: 'fake.pdf',
          mimeType: 'application/pdf',
          buffer: Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, ...new Array(56).fill(0)]),
        }),
        415,
      ],
    ] as const;
    for (const [res, status] of refused) expect(res?.status()).to.equal(status);
    const list = await context.request.get(`${app.url}/api/projects?limit=100`);
    const names = ((await list.json()) as { items: Array<{ name: string }> }).items.map((p) => p.name);
    expect(names).to.include('With a brief').and.not.include('Too big').and.not.include('Disguised');
    expect(names).not.to.include('Wrong type');
    await context.close();
  });
});

describe('pages at generate time', () => {
  it('warns of no page it serves', () => {
    expect(warnings).not.to.include('NOT_GENERATED');
  });
});
