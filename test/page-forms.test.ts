// Form pages (issue 28, Forms): `layout = "form"` pages that create, update and delete records
// through the same entity store as the API, on SQLite and PostgreSQL. A refused submission (the
// form's own checks, the store's validation, access rules, command-only protection, a stale page,
// a missing CSRF token) writes nothing and shows the form again with the person's input and a
// message beside each field; a done one leaves its message and redirects (303). Then the same in
// Chromium, without JavaScript.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
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
import { validateBlueprint } from '../generator/compile.ts';
import { nodeSourceHost } from '../generator/source.ts';
import { addUser } from './support/access/client.ts';
import { launchChromium } from './support/chromium.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';
import { getPage as page, postPage } from './support/pages.ts';

const PASSWORD = 'page-forms-password-1';
const PEOPLE = {
  maker: { email: 'maker@forms.example', roles: ['maker'] },
  lead: { email: 'lead@forms.example', roles: ['maker', 'lead'] },
  viewer: { email: 'viewer@forms.example', roles: [] as string[] },
};
type Person = keyof typeof PEOPLE;

let appDir: string;
let warnings: string;

before(async function () {
  this.timeout(120_000);
  appDir = path.join(freshDir('page-forms'), 'app');
  warnings = (await generate(path.join(ROOT, 'test/fixtures/page-forms/app.toml'), appDir)).stderr;
});

/** A form posted as a browser posts it (`_action=form`), with the session's token unless `csrf` is false. */
function post(app: RunningApp, urlPath: string, session: Session, fields: Record<string, string>, csrf = true) {
  return postPage(app, urlPath, session, { _action: 'form', ...fields }, csrf);
}

function seenOf(html: string): string {
  const match = /name="_seen" value="([^"]+)"/.exec(html);
  if (!match) throw new Error('no _seen on the page');
  return match[1];
}

const VALID = {
  name: 'Garden shed',
  code: 'SHED',
  kind: 'client',
  budget: '1200',
  rate: '12.5',
  active: 'on',
  startsOn: '2026-12-01',
  kickoff: '2026-12-01T09:30',
  contact: 'owner@shed.example',
  note: 'Wood & <nails>',
  secret: 's3cret',
  priority: 'high',
};

for (const database of DATABASES) {
  describe(`form pages (${database})`, function () {
    this.timeout(120_000);
    let app: RunningApp;
    const sessions = {} as Record<Person, Session>;
    const members: Record<string, string> = {};

    const api = async (urlPath: string) =>
      (await request(app.url, 'GET', urlPath, { headers: { cookie: sessions.lead.cookie } })).body as Record<
        string,
        unknown
      >;
    const projects = async () => ((await api('/api/projects')).items as Array<Record<string, unknown>>) ?? [];

    before(async () => {
      const env = {
        DATABASE_URL: await databaseUrl(database, 'page-forms'),
        SESSION_SECRET: 'page-forms-session-secret-0123456789',
      };
      for (const person of Object.values(PEOPLE)) await addUser(appDir, env, { ...person, password: PASSWORD });
      app = await startApp(appDir, env);
      for (const name of Object.keys(PEOPLE) as Person[])
        sessions[name] = await login(app.url, PEOPLE[name].email, PASSWORD);
      const headers = { cookie: sessions.lead.cookie, 'x-csrf-token': sessions.lead.csrfToken };
      for (const [name, role] of [
        ['Zoe', 'maker'],
        ['Ann', 'maker'],
        ['Bob', 'viewer'],
        ['Cid', 'maker'],
      ]) {
        const res = await request(app.url, 'POST', '/api/members', { json: { name, role }, headers });
        expect(res.status, res.text).to.equal(201);
        members[name] = (res.body as { id: string }).id;
      }
    });
    after(async () => {
      await app?.stop();
    });

    it('renders every control with its label, and the CSRF token', async () => {
      const res = await page(app, '/projects/new', sessions.maker);
      const html = await res.text();
      expect(res.status).to.equal(200);
      expect(html).not.to.match(/<script/i);
      expect(html).to.include(`<input type="hidden" name="_csrf" value="`);
      expect(html).to.include('<input type="hidden" name="_action" value="form">');
      expect(html).to.include('<fieldset class="form-section single-column">\n<legend>About</legend>');
      expect(html).to.include('<p class="none">What the project is called.</p>');
      expect(html).to.include('<fieldset class="form-section two-column">');
      expect(html).to.include('<label for="field-name">Project name</label>');
      expect(html).to.include('placeholder="Garden shed"');
      expect(html).to.include('pattern="[A-Z]{3,8}"');
      // An Enum field's values, its default chosen.
      expect(html).to.match(
        /<select id="field-kind" name="kind">\n<option value=""><\/option>\n<option value="internal" selected>/,
      );
      expect(html).to.include('min="0" max="1000000" step="any"');
      expect(html).to.include('<input type="checkbox" id="field-active" name="active" value="on"> Active now');
      expect(html).to.include('<input type="date" id="field-startsOn"');
      expect(html).to.include('<input type="datetime-local" id="field-kickoff"');
      expect(html).to.include('<input type="email" id="field-contact"');
      expect(html).to.include('<textarea id="field-note" name="note" rows="3">');
      expect(html).to.include('<input type="password" id="field-secret" name="secret" value=""');
      expect(html).to.include('<legend>Priority <span class="none">(optional)</span></legend>');
      expect(html).to.include('value="high"> High</label>');
      // optionsFrom: the page query's records in its order, after the empty label.
      expect(html).to.include(
        `<option value="">Nobody yet</option>\n<option value="${members.Ann}">Ann</option>\n` +
          `<option value="${members.Bob}">Bob</option>`,
      );
      // The lookup: the first `limit` makers by name, shown by `display`.
      expect(html).to.include(
        `<option value="">Pick a reviewer</option>\n<option value="${members.Ann}">Ann (maker)</option>\n` +
          `<option value="${members.Cid}">Cid (maker)</option>\n</select>`,
      );
      // A command-only field does not start from its default: a create may not write it.
      expect(html).to.match(
        /<select id="field-status" name="status">\n<option value=""><\/option>\n<option value="draft">/,
      );
      expect(html).to.include('<input type="hidden" name="source" value="form">');
      expect(html).not.to.include('enctype');
      expect(html).to.include('<button type="submit" class="primary">Create</button>');
    });

    it('refuses a mistake with the message beside the field and the input kept, then creates', async () => {
      const bad = await post(app, '/projects/new', sessions.maker, { ...VALID, code: 'shed', budget: '-5' });
      const html = await bad.text();
      expect(bad.status).to.equal(400);
      expect(html).to.include('<p class="flash error" role="status">Please fix the marked fields</p>');
      expect(html).to.include('<span class="field-error" id="field-code-error">Use 3 to 8 capital letters</span>');
      expect(html).to.include('aria-describedby="field-code-error" aria-invalid="true"');
      expect(html).to.include('<span class="field-error" id="field-budget-error">Budget must be at least 0</span>');
      expect(html).to.include('<li><a href="#field-code">Code: Use 3 to 8 capital letters</a></li>');
      expect(html).to.include('value="Garden shed"').and.include('Wood &amp; &lt;nails&gt;</textarea>');
      expect(html).to.include('value="high" checked');
      expect(await projects()).to.have.length(0);

      const res = await post(app, '/projects/new', sessions.maker, { ...VALID, ownerId: members.Ann });
      expect(res.status, await res.text()).to.equal(303);
      const [created] = await projects();
      expect(res.headers.get('location')).to.equal(`/projects/${created.id as string}`);
      expect(created).to.include({
        name: 'Garden shed',
        code: 'SHED',
        kind: 'client',
        budget: 1200,
        rate: 12.5,
        active: true,
        startsOn: '2026-12-01',
        kickoff: '2026-12-01T09:30:00.000Z',
        contact: 'owner@shed.example',
        priority: 'high',
        ownerId: members.Ann,
        source: 'form',
        status: 'draft',
      });
      const flash = (res.headers.get('set-cookie') ?? '').split(';')[0];
      const shown = await (await page(app, `/projects/${created.id as string}`, sessions.maker, flash)).text();
      expect(shown).to.include('<p class="flash success" role="status">Project created</p>');
    });

    it("refuses a unique value the store refuses, beside the field, with the store's message", async () => {
      const res = await post(app, '/projects/new', sessions.maker, { ...VALID, name: 'Again' });
      const html = await res.text();
      expect(res.status).to.equal(409);
      // The store's own message: error_message speaks of the pattern, not of a value already taken.
      expect(html).to.match(/<span class="field-error" id="field-code-error">[^<]*already[^<]*<\/span>/);
      expect(html).not.to.include('Use 3 to 8 capital letters');
      expect((await projects()).map((p) => p.name)).to.deep.equal(['Garden shed']);
    });

    it('refuses a command-only field with its message, and writes nothing', async () => {
      const res = await post(app, '/projects/new', sessions.maker, { ...VALID, code: 'LIVE', status: 'live' });
      const html = await res.text();
      expect(res.status).to.equal(403);
      expect(html).to.include('status can be changed only through commands');
      expect(html).to.include('<span class="field-error" id="field-status-error">status is command-only</span>');
      expect((await projects()).map((p) => p.code)).to.deep.equal(['SHED']);
    });

    it('refuses a field the write rule keeps from this person, and a person who may not create', async () => {
      const rule = await post(app, '/projects/new', sessions.maker, { ...VALID, code: 'RULE', approvedBy: 'me' });
      expect(rule.status).to.equal(403);
      expect(await rule.text()).to.include('approvedBy');
      const viewer = await post(app, '/projects/new', sessions.viewer, { ...VALID, code: 'VIEW' });
      expect(viewer.status).to.equal(403);
      expect(await viewer.text()).to.include('class="page-form"');
      const lead = await post(app, '/projects/new', sessions.lead, { ...VALID, code: 'LEAD', approvedBy: 'lead' });
      expect(lead.status, await lead.text()).to.equal(303);
      expect((await projects()).map((p) => p.code).sort()).to.deep.equal(['LEAD', 'SHED']);
    });

    it('refuses a post without the CSRF token', async () => {
      const res = await post(app, '/projects/new', sessions.maker, { ...VALID, code: 'NOCSRF' }, false);
      expect(res.status).to.equal(403);
      expect((await projects()).map((p) => p.code)).not.to.include('NOCSRF');
    });

    it('prefills an update form with what the viewer may read, saves it, and refuses a stale one', async () => {
      const shed = (await projects()).find((p) => p.code === 'SHED') as Record<string, unknown>;
      const url = `/projects/${shed.id as string}/edit`;
      const html = await (await page(app, url, sessions.maker)).text();
      expect(html).to.include('value="Garden shed"').and.include('value="1200"');
      expect(html).to.include('name="active" value="on" checked');
      // A field the viewer may not read is not in the form (nor taken from a post): it stays as it is.
      expect(html).not.to.include('name="secret"');
      expect(html).to.include('<button type="submit" class="primary">Save</button>');
      const seen = seenOf(html);
      const saved = await post(app, url, sessions.maker, {
        _seen: seen,
        name: 'Big shed',
        budget: '',
        status: 'draft',
      });
      expect(saved.status, await saved.text()).to.equal(303);
      expect(saved.headers.get('location')).to.equal(`/projects/${shed.id as string}`);
      const after = await api(`/api/projects/${shed.id as string}`);
      // The checkbox not sent is false; the emptied number is cleared; the unchanged command-only field writes nothing.
      expect(after).to.include({ name: 'Big shed', budget: null, active: false, status: 'draft' });
      const again = await post(app, url, sessions.maker, { _seen: seen, name: 'Stale shed' });
      expect(again.status).to.equal(409);
      const stale = await again.text();
      expect(stale).to.include('this record changed since the page showed it');
      expect(stale).to.include('value="Stale shed"');
      expect((await api(`/api/projects/${shed.id as string}`)).name).to.equal('Big shed');
      const live = await post(app, url, sessions.maker, { _seen: seenOf(stale), name: 'Big shed', status: 'live' });
      expect(live.status).to.equal(403);
      expect(await live.text()).to.include('status can be changed only through commands');
      expect((await api(`/api/projects/${shed.id as string}`)).status).to.equal('draft');
    });

    it('answers 404 for an update form of a record that is not there', async () => {
      const res = await page(app, '/projects/01ARZ3NDEKTSV4RRFFQ69G5FAV/edit', sessions.maker);
      expect(res.status).to.equal(404);
    });

    it('deletes the record after showing it, refusing a viewer who may not', async () => {
      const lead = (await projects()).find((p) => p.code === 'LEAD') as Record<string, unknown>;
      const url = `/projects/${lead.id as string}/delete`;
      const html = await (await page(app, url, sessions.viewer)).text();
      expect(html).to.include('<dt>Code</dt><dd>LEAD</dd>').and.include('<button type="submit" class="danger">Delete');
      const refused = await post(app, url, sessions.viewer, { _seen: seenOf(html) });
      expect(refused.status).to.equal(403);
      expect((await projects()).map((p) => p.code)).to.include('LEAD');
      const done = await post(app, url, sessions.maker, { _seen: seenOf(html) });
      expect(done.status, await done.text()).to.equal(303);
      expect(done.headers.get('location')).to.equal('/projects/new');
      expect((await projects()).map((p) => p.code)).not.to.include('LEAD');
    });

    it("renders a form.form slot in place of the form, and takes its post (no _action) as the form's", async () => {
      const html = await (await page(app, '/members/new', sessions.maker)).text();
      expect(html).to.include('<form method="post" id="slot-form"><input type="hidden" name="_csrf"');
      expect(html).to.include('<label for="n">Name of the Member</label>');
      const res = await fetch(`${app.url}/members/new`, {
        method: 'POST',
        headers: {
          cookie: sessions.maker.cookie,
          'content-type': 'application/x-www-form-urlencoded',
          origin: app.url,
        },
        body: new URLSearchParams({ _csrf: sessions.maker.csrfToken, name: 'Dee' }),
        redirect: 'manual',
      });
      expect(res.status, await res.text()).to.equal(303);
      const names = ((await api('/api/members')).items as Array<{ name: string }>).map((m) => m.name);
      expect(names).to.include('Dee');
    });

    it('posts a file with the form (multipart), stores it, and refuses a file of another type', async () => {
      const html = await (await page(app, '/documents/new', sessions.maker)).text();
      expect(html).to.include('enctype="multipart/form-data"');
      expect(html).to.include('<input type="file" id="field-scan" name="scan" accept="application/pdf">');
      const send = (file: Blob, name: string, title = name) => {
        const body = new FormData();
        body.set('_csrf', sessions.maker.csrfToken);
        body.set('_action', 'form');
        body.set('title', title);
        body.set('scan', file, name);
        return fetch(`${app.url}/documents/new`, {
          method: 'POST',
          headers: { cookie: sessions.maker.cookie, origin: app.url },
          body,
          redirect: 'manual',
        });
      };
      const pdf = new Blob([new TextEncoder().encode('%PDF-1.4\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n%%EOF\n')], {
        type: 'application/pdf',
      });
      const done = await send(pdf, 'scan.pdf');
      expect(done.status, await done.text()).to.equal(303);
      const [doc] = (await api('/api/documents')).items as Array<{ title: string; scan: string }>;
      expect(doc.title).to.equal('scan.pdf');
      expect(doc.scan).to.match(/^\/uploads\//);
      const file = await fetch(app.url + doc.scan, { headers: { cookie: sessions.maker.cookie } });
      expect(file.status).to.equal(200);
      expect((await file.text()).startsWith('%PDF-1.4')).to.equal(true);
      // A refused write (the title is required) keeps no file: the form again, the message beside the title.
      const stored = () => fs.readdirSync(path.join(appDir, 'data', 'uploads')).filter((f) => !f.startsWith('.'));
      const before = stored().length;
      const untitled = await send(pdf, 'untitled.pdf', '');
      expect(untitled.status).to.equal(400);
      expect(await untitled.text()).to.include('<span class="field-error" id="field-title-error">');
      expect(stored()).to.have.length(before);
      const png = new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])], { type: 'image/png' });
      const refused = await send(png, 'image.png');
      expect(refused.status).to.be.oneOf([400, 415]);
      expect((await api('/api/documents')).items).to.have.length(1);
      // Without the token: refused before any file is stored.
      const body = new FormData();
      body.set('_action', 'form');
      body.set('title', 'no token');
      body.set('scan', pdf, 'x.pdf');
      const forged = await fetch(`${app.url}/documents/new`, {
        method: 'POST',
        headers: { cookie: sessions.maker.cookie, origin: app.url },
        body,
        redirect: 'manual',
      });
      expect(forged.status).to.equal(403);
      expect((await api('/api/documents')).items).to.have.length(1);
    });
  });
}

describe('form pages in Chromium', function () {
  this.timeout(120_000);
  let app: RunningApp;
  let browser: Browser;

  before(async () => {
    const env = { DATABASE_URL: await databaseUrl('sqlite', 'page-forms-browser') };
    await addUser(appDir, env, { ...PEOPLE.maker, password: PASSWORD });
    app = await startApp(appDir, env);
    const session = await login(app.url, PEOPLE.maker.email, PASSWORD);
    const headers = { cookie: session.cookie, 'x-csrf-token': session.csrfToken };
    for (const name of ['Ann', 'Cid']) {
      const res = await request(app.url, 'POST', '/api/members', { json: { name, role: 'maker' }, headers });
      expect(res.status, res.text).to.equal(201);
    }
    const taken = await request(app.url, 'POST', '/api/projects', { json: { name: 'Old', code: 'TAKEN' }, headers });
    expect(taken.status, taken.text).to.equal(201);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('shows a refused value beside its field with the input kept, then creates and redirects', async () => {
    const context = await browser.newContext({ viewport: { width: 900, height: 900 }, javaScriptEnabled: false });
    const tab = await context.newPage();
    fs.mkdirSync(TMP, { recursive: true });
    await tab.goto(`${app.url}/projects/new`);
    await tab.waitForURL(/\/login/);
    await tab.fill('#email', PEOPLE.maker.email);
    await tab.fill('#password', PASSWORD);
    await Promise.all([tab.waitForURL(`${app.url}/projects/new`), tab.click('button[type=submit]')]);
    await tab.fill('#field-name', 'Boat house');
    // Taken already: the browser cannot know, the store refuses it.
    await tab.fill('#field-code', 'TAKEN');
    await tab.fill('#field-budget', '500');
    await tab.check('#field-active');
    await tab.selectOption('#field-reviewerId', { label: 'Cid (maker)' });
    await tab.check('text=High');
    await tab.click('button:has-text("Create")');
    await tab.waitForSelector('#field-code-error');
    expect(await tab.inputValue('#field-name')).to.equal('Boat house');
    expect(await tab.inputValue('#field-budget')).to.equal('500');
    expect(await tab.isChecked('#field-active')).to.equal(true);
    expect(await tab.getAttribute('#field-code', 'aria-describedby')).to.equal('field-code-error');
    await tab.screenshot({ path: path.join(TMP, 'page-form.png'), fullPage: true });
    await tab.fill('#field-code', 'BOAT');
    await Promise.all([tab.waitForURL(/\/projects\/[0-9A-Z]{26}$/), tab.click('button:has-text("Create")')]);
    expect(await tab.textContent('.flash.success')).to.equal('Project created');
    expect(await tab.textContent('main'))
      .to.include('Boat house')
      .and.include('BOAT');
    // Keyboard: focus is visible on the form's controls.
    await tab.goto(`${app.url}/projects/new`);
    await tab.focus('#field-name');
    const outline = await tab.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle);
    expect(outline).to.equal('solid');
  });
});

describe('form pages at generate time', () => {
  it('serves every form page: no NOT_GENERATED', () => {
    expect(warnings).not.to.include('NOT_GENERATED');
  });

  it('says why a form page is not served, and that a form on another layout is ignored', () => {
    const file = path.join(freshDir('page-forms-validate'), 'app.toml');
    fs.writeFileSync(
      file,
      `[project]
name = "Forms"

[entity.Note]
fields = [{ name = "id", type = "ULID", primary_key = true }, { name = "text", type = "Text" }]
access = { read = "authenticated", create = "authenticated", update = "authenticated" }

[page."/empty"]
layout = "form"

[page."/notes/{id}/edit"]
layout = "form"
form = { entity = "Note", method = "update", fields = [{ name = "text" }] }

[page."/notes"]
layout = "list"
query.notes = { entity = "Note" }
form = { entity = "Note", fields = [{ name = "text" }] }
`,
    );
    const found = validateBlueprint(file, nodeSourceHost()).diagnostics.filter(
      (d) => d.code === 'PAGE_NOT_SERVED' || d.code === 'IGNORED_KEY',
    );
    expect(found.map((d) => [d.code, d.path, d.message])).to.deep.equal([
      [
        'PAGE_NOT_SERVED',
        'page."/empty"',
        'page "/empty" is not served, a form page without a form has nothing to show',
      ],
      [
        'PAGE_NOT_SERVED',
        'page."/notes/{id}/edit"',
        'page "/notes/{id}/edit" is not served, an update form without a first query of Note, ' +
          'the record it updates, has nothing to show',
      ],
      ['IGNORED_KEY', 'page."/notes".form', `a form is rendered only by layout = "form"; this page's is ignored`],
    ]);
  });
});
