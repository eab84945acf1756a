// A blueprint's own templates (issue 28): a page's `template` and `layoutSlots`, and [auth.pages].
// At generation: a template file must stay inside the blueprint's folder and exist, and every
// template must compile (Handlebars or Liquid, with the app's own engine settings), else an error
// at the template file's line and column (an inline template's: inside the blueprint's string). In
// the generated app: templates escape what they output unless told otherwise, read no file, reach no
// prototype, carry the CSRF field; a template that throws is a logged 500 page; the sign-in pages of
// [auth.pages] replace the provider's own while what their forms post does not change.
//
// The templates read nothing the other tests do not cover on both databases (the sign-in routes:
// test/session-flow.test.ts; the page queries: the pages suites), so the apps here run on SQLite.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { compileTemplate, TemplateSyntaxError } from '../runtime-lib/pages/custom-template.ts';
import { TemplateRenderError, templateVariables } from '../runtime-lib/pages/template-context.ts';
import { PAGE_CSP } from '../runtime-lib/pages/document.ts';
import { bp, freshDir, generate, login, request, ROOT, startApp, typecheck, type RunningApp } from './support/apps.ts';
import { addUser, CookieClient } from './support/access/client.ts';
import { databaseUrl } from './support/databases.ts';

const FIXTURE = path.join(ROOT, 'test/fixtures/templates');

/** A blueprint folder: the fixture's blueprint with `extra` TOML appended, and these template files. */
function blueprintWith(name: string, extra: string, files: Record<string, string> = {}): string {
  const dir = path.join(freshDir(`page-templates-${name}`), 'blueprint');
  fs.mkdirSync(path.join(dir, 'templates'), { recursive: true });
  const base = `version = "1.0"

[project]
name = "Checks"
version = "1.0.0"

[entity.Note]
fields = [{ name = "id", type = "ULID", primary_key = true }, { name = "title", type = "Text" }]

[entity.Note.access]
read = true

[page."/notes"]
title = "Notes"
auth = "none"
layout = "list"

[page."/notes".query.notes]
entity = "Note"
`;
  fs.writeFileSync(path.join(dir, 'app.toml'), base + extra);
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

/** `bp validate` of the folder's app.toml, run in the folder: its diagnostics as printed. */
function validate(dir: string): { status: number | null; out: string } {
  const r = bp(['validate', 'app.toml'], dir);
  return { status: r.status, out: r.stdout + r.stderr };
}

describe('page templates at generation (bp validate)', function () {
  this.timeout(60_000);

  it('accepts templates that compile: a file of each engine, an inline slot, the auth pages', () => {
    const r = bp(['validate', 'templates.toml'], FIXTURE);
    expect(r.stdout + r.stderr).not.to.match(/TEMPLATE_/);
    expect(r.status, r.stdout + r.stderr).to.equal(0);
  });

  it('refuses a template file that does not exist, at the blueprint key', () => {
    const dir = blueprintWith('missing', `\n[page."/notes".template]\nsource = "templates/nope.liquid"\n`);
    const { status, out } = validate(dir);
    expect(status).to.equal(1);
    expect(out).to.match(
      new RegExp(
        String.raw`^app\.toml:22:1 page\."\/notes"\.template\.source: template file templates\/nope\.liquid` +
          String.raw` does not exist \[error TEMPLATE_NOT_FOUND\]$`,
        'm',
      ),
    );
  });

  it('refuses a template file outside the blueprint folder, even when it exists', () => {
    const dir = blueprintWith(
      'outside',
      `\n[page."/notes".template]\nsource = "../outside.hbs"\nengine = "handlebars"\n`,
    );
    fs.writeFileSync(path.join(dir, '..', 'outside.hbs'), '<p>{{page.title}}</p>');
    const { status, out } = validate(dir);
    expect(status).to.equal(1);
    expect(out).to.match(
      new RegExp(
        String.raw`^app\.toml:22:1 page\."\/notes"\.template\.source: template "\.\.\/outside\.hbs"` +
          String.raw` leaves the blueprint's root folder .*\[error TEMPLATE_OUTSIDE_ROOT\]$`,
        'm',
      ),
    );
  });

  it('refuses a Handlebars file that does not parse, at its own line and column', () => {
    const dir = blueprintWith(
      'broken-hbs',
      `\n[page."/notes".template]\nengine = "handlebars"\nsource = "templates/notes.hbs"\n`,
      {
        'templates/notes.hbs': '<ul>\n{{#each data.notes}}\n  <li>{{this.title}</li>\n{{/each}}\n</ul>\n',
      },
    );
    const { status, out } = validate(dir);
    expect(status).to.equal(1);
    expect(out).to.match(
      new RegExp(
        String.raw`^templates\/notes\.hbs:3:19 page\."\/notes"\.template\.source: ` +
          String.raw`handlebars template templates\/notes\.hbs` +
          String.raw` does not compile: parse error: .* \[error TEMPLATE_INVALID\]$`,
        'm',
      ),
    );
  });

  it('refuses a Handlebars block closed by another name, at the engine position', () => {
    const dir = blueprintWith(
      'mismatch-hbs',
      `\n[page."/notes".template]\nengine = "handlebars"\nsource = "templates/notes.hbs"\n`,
      {
        'templates/notes.hbs': '<ul>\n{{#each data.notes}}\n  <li>{{this.title}}</li>\n{{/if}}\n',
      },
    );
    const { out } = validate(dir);
    expect(out).to.match(/^templates\/notes\.hbs:2:\d+ .*each doesn't match if \[error TEMPLATE_INVALID\]$/m);
  });

  it('refuses a Liquid file that does not parse, at its own line and column', () => {
    const dir = blueprintWith('broken-liquid', `\n[page."/notes".template]\nsource = "templates/notes.liquid"\n`, {
      'templates/notes.liquid': '<ul>\n{% for note in data.notes %}\n  <li>{{ note.title }}</li>\n</ul>\n',
    });
    const { status, out } = validate(dir);
    expect(status).to.equal(1);
    expect(out).to.match(
      new RegExp(
        String.raw`^templates\/notes\.liquid:2:1 page\."\/notes"\.template\.source: ` +
          String.raw`liquid template templates\/notes\.liquid` +
          String.raw` does not compile: tag \{% for note in data\.notes %\} not closed \[error TEMPLATE_INVALID\]$`,
        'm',
      ),
    );
  });

  it('refuses a partial or an include: a template reads no other file', () => {
    const dir = blueprintWith(
      'includes',
      `\n[page."/notes".template]\nengine = "handlebars"\nsource = "templates/notes.hbs"\n` +
        `\n[auth]\nproviders = ["email"]\n\n[auth.pages.signIn]\nsource = "templates/in.liquid"\n`,
      {
        'templates/notes.hbs': '<div>\n  {{> header}}\n</div>\n',
        'templates/in.liquid': '{% include "secrets.txt" %}',
      },
    );
    const { out } = validate(dir);
    expect(out).to.match(
      /^templates\/notes\.hbs:2:3 .*a partial \(\{\{> name\}\}\) is not available.*TEMPLATE_INVALID\]$/m,
    );
    expect(out).to.match(/^templates\/in\.liquid:1:1 auth\.pages\.signIn\.source: .*\{% include %\} is not available/m);
  });

  it('warns that [auth.pages] without the email provider are not served', () => {
    const dir = blueprintWith(
      'no-email',
      `\n[auth]\nproviders = []\n\n[auth.pages.signIn]\ntype = "inline"\nsource = "<p>{{ auth.action }}</p>"\n`,
    );
    const { status, out } = validate(dir);
    expect(status, out).to.equal(0);
    expect(out).to.match(
      /^app\.toml:\d+:\d+ auth\.pages\.signIn: \[auth\.pages\] signIn is a page of the "email" provider/m,
    );
    expect(out).to.include('it is not served [warning NOT_GENERATED]');
  });

  it('refuses an inline template that does not parse, inside the blueprint string', () => {
    const dir = blueprintWith(
      'inline',
      `\n[page."/notes".layoutSlots."list.empty"]\nsource = """\n<p>none</p>\n{% if user %}hi{% endfi %}"""\n`,
    );
    const { status, out } = validate(dir);
    expect(status).to.equal(1);
    // The slot's text starts on line 23 (after the """ line break); `{% endfi %}` is on its second.
    expect(out).to.match(
      new RegExp(
        String.raw`^app\.toml:24:16 page\."\/notes"\.layoutSlots\."list\.empty"\.source: inline` +
          String.raw` liquid template does not compile: .*\[error TEMPLATE_INVALID\]$`,
        'm',
      ),
    );
  });
});

describe('template engines (runtime pages/custom-template.ts)', () => {
  const variables = templateVariables({
    page: { path: '/notes', title: 'Notes' },
    data: { notes: [{ title: '<script>alert(1)</script>', tags: {} }] },
    csrfToken: 'to"ken',
  });

  for (const [engine, text] of [
    ['handlebars', '{{#each data.notes}}{{this.title}}{{/each}}|{{csrfField}}|{{data.notes.0.tags.constructor}}|'],
    [
      'liquid',
      '{% for n in data.notes %}{{ n.title }}{% endfor %}|{{ csrfField }}|{{ data.notes[0].tags.constructor }}|',
    ],
  ] as const) {
    it(`${engine}: escapes values, writes the CSRF field as HTML, reaches no prototype`, () => {
      const html = compileTemplate({ engine, text, source: 't' }).render(variables);
      expect(html).to.equal(
        '&lt;script&gt;alert(1)&lt;/script&gt;|<input type="hidden" name="_csrf" value="to&quot;ken">||',
      );
    });
  }

  it('reports a template that throws while rendering as a TemplateRenderError naming it', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const template = compileTemplate({ engine: 'handlebars', text: '{{json data}}', source: 'templates/x.hbs' });
    expect(() => template.render({ data: circular }))
      .to.throw(TemplateRenderError)
      .with.property('message')
      .that.matches(/^template templates\/x\.hbs failed: Converting circular structure/);
  });

  it('names the position of a syntax error (TemplateSyntaxError)', () => {
    expect(() => compileTemplate({ engine: 'liquid', text: 'a\n {% endif %}', source: 's' }))
      .to.throw(TemplateSyntaxError)
      .that.includes({ line: 2, column: 2 });
  });
});

describe('a generated app with templates: [auth.pages], page templates and slots', function () {
  this.timeout(120_000);
  const EMAIL = 'writer@templates.example';
  const PASSWORD = 'templates-password-1';
  let app: RunningApp;
  let appDir: string;

  before(async () => {
    appDir = path.join(freshDir('page-templates-app'), 'app');
    await generate(path.join(FIXTURE, 'templates.toml'), appDir);
    const env = { DATABASE_URL: await databaseUrl('sqlite', 'page-templates') };
    app = await startApp(appDir, env);
    await addUser(appDir, env, { email: EMAIL, password: PASSWORD, roles: [] });
  });
  after(async () => {
    await app?.stop();
  });

  it('depends on the template engines and carries the templates, never reading blueprint files', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(appDir, 'package.json'), 'utf8'));
    expect(pkg.dependencies).to.include.keys('handlebars', 'liquidjs');
    const pages = fs.readFileSync(path.join(appDir, 'src/auth-pages.ts'), 'utf8');
    expect(pages).to.include("source: 'templates/sign-in.hbs'").and.include('<div id="custom-sign-in">');
    const checked = typecheck(appDir);
    expect(checked.status, checked.stdout + checked.stderr).to.equal(0);
  });

  it('serves the blueprint sign-in page inside the app document, with its headers', async () => {
    const client = new CookieClient(app.url);
    const res = await client.send('GET', '/login?next=%2Fnotes');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-security-policy')).to.equal(PAGE_CSP);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect(res.text)
      .to.match(/^<!doctype html>/)
      .and.include('<title>Sign in to Notebook</title>');
    expect(res.text).to.include('<div id="custom-sign-in">').and.include('Come in');
    expect(res.text).to.include('<input type="hidden" name="next" value="/notes">');
    expect(res.text).to.match(/<input type="hidden" name="_csrf" value="[^"]+">/);
    // Handlebars escapes `=` too.
    expect(res.text).to.include('<a href="/login?mode&#x3D;signup&amp;next&#x3D;%2Fnotes">New here?</a>');
  });

  it('signs in through it: the same POST, CSRF and next as the built-in page', async () => {
    const client = new CookieClient(app.url);
    const page = await client.send('GET', '/login?next=%2Fnotes');
    const token = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1] as string;
    const res = await client.send('POST', '/api/auth/login', {
      form: { _csrf: token, next: '/notes', email: EMAIL, password: PASSWORD },
    });
    expect(res.status, res.text).to.equal(303);
    expect(res.headers.get('location')).to.equal('/notes');
    // Signed in: the login path is the blueprint's sign-out page.
    const signedIn = await client.send('GET', '/login');
    expect(signedIn.text).to.include(`<strong id="who">${EMAIL}</strong>`);
    const logoutToken = /name="_csrf" value="([^"]+)"/.exec(signedIn.text)?.[1] as string;
    const out = await client.send('POST', '/api/auth/logout', { form: { _csrf: logoutToken } });
    expect(out.status).to.equal(303);
    expect((await client.send('GET', '/login')).text).to.include('<div id="custom-sign-in">');
  });

  it('shows a refused sign-in on the blueprint page, the message and the e-mail escaped', async () => {
    const client = new CookieClient(app.url);
    const page = await client.send('GET', '/login');
    const token = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1] as string;
    const email = '"><script>x</script>@templates.example';
    const res = await client.send('POST', '/api/auth/login', { form: { _csrf: token, email, password: 'wrong' } });
    expect(res.status).to.be.oneOf([400, 401]);
    expect(res.text).to.include('<div id="custom-sign-in">');
    expect(res.text).to.include('role="alert"');
    expect(res.text).not.to.include('<script>x</script>');
  });

  it('serves the blueprint sign-up page (Liquid) with the built-in form parts', async () => {
    const client = new CookieClient(app.url);
    const res = await client.send('GET', '/login?mode=signup');
    expect(res.status).to.equal(200);
    expect(res.text).to.include('<div id="custom-sign-up">');
    expect(res.text).to.include('<form method="post" action="/api/auth/signup">');
    expect(res.text).to.include('<input id="email" name="email" type="email"');
    expect(res.text).to.include('<a href="/login">Back to sign-in</a>');
    const token = /name="_csrf" value="([^"]+)"/.exec(res.text)?.[1] as string;
    const made = await client.send('POST', '/api/auth/signup', {
      form: { _csrf: token, email: 'new@templates.example', password: 'a-long-enough-password-9' },
    });
    expect(made.status, made.text).to.equal(303);
  });
  describe('pages with the blueprint templates', () => {
    let cookie: string;
    let token: string;
    const SCRIPT = '<script>alert("note")</script>';

    it('shows the list.empty slot while the list is empty, with the viewer', async () => {
      const res = await request(app.url, 'GET', '/shelf');
      expect(res.status, res.text).to.equal(200);
      expect(res.text).to.include('<p id="empty-shelf">Nothing on the shelf, stranger.</p>');
      expect(res.text).not.to.include('Nothing to show.');
    });

    it('renders a Handlebars page template with the query results, escaped, and the CSRF field', async () => {
      const session = await login(app.url, EMAIL, PASSWORD);
      cookie = session.cookie;
      token = session.csrfToken;
      for (const title of ['Beta', SCRIPT, 'Alpha']) {
        const made = await request(app.url, 'POST', '/api/notes', {
          json: { title },
          headers: { cookie, 'x-csrf-token': token },
        });
        expect(made.status, made.text).to.equal(201);
      }
      const res = await request(app.url, 'GET', '/notes', { headers: { cookie } });
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('content-security-policy')).to.equal(PAGE_CSP);
      expect(res.text)
        .to.match(/^<!doctype html>/)
        .and.include('<title>Notes');
      const items = [...res.text.matchAll(/<li class="note">(.*)<\/li>/g)].map((m) => m[1]);
      expect(items).to.deep.equal(['&lt;script&gt;alert(&quot;note&quot;)&lt;/script&gt;', 'Alpha', 'Beta']);
      expect(res.text).not.to.include(SCRIPT);
      expect(res.text).to.include(`<p id="viewer">Signed in as ${EMAIL}</p>`);
      expect(res.text).to.include(`<input type="hidden" name="_csrf" value="${token}">`);
    });

    it('renders a Liquid page template the same way', async () => {
      const res = await request(app.url, 'GET', '/journal', { headers: { cookie } });
      expect(res.status, res.text).to.equal(200);
      const items = [...res.text.matchAll(/<li class="entry">(.*)<\/li>/g)].map((m) => m[1]);
      expect(items).to.deep.equal(['&lt;script&gt;alert(&#34;note&#34;)&lt;/script&gt;', 'Alpha', 'Beta']);
      expect(res.text).not.to.include(SCRIPT);
      expect(res.text).to.include(`<input type="hidden" name="_csrf" value="${token}">`);
    });

    it('renders the built-in list once there are records, and a detail.main slot with its record', async () => {
      const shelf = await request(app.url, 'GET', '/shelf');
      expect(shelf.text).not.to.include('empty-shelf');
      expect(shelf.text).to.include('&lt;script&gt;');
      const link = /href="(\/notes\/[^"]+)"/.exec(shelf.text)?.[1] as string;
      const detail = await request(app.url, 'GET', link);
      expect(detail.status, detail.text).to.equal(200);
      expect(detail.text).to.match(/<article id="note-main"><h2>[^<]+<\/h2><p>Note<\/p><\/article>/);
    });

    it('answers a signed-out visitor of a required page with the blueprint loginRequired page', async () => {
      const res = await request(app.url, 'GET', '/private');
      expect(res.status).to.equal(401);
      expect(res.text).to.include(
        '<p id="login-required">/private needs you to <a href="/login?next=%2Fprivate">sign in</a>.</p>',
      );
      const signedIn = await request(app.url, 'GET', '/private', { headers: { cookie } });
      expect(signedIn.text).to.include(`<p id="private">3 notes for ${EMAIL}</p>`);
    });

    it('answers a template that throws while rendering with a logged 500 page, no stack trace', async () => {
      const res = await request(app.url, 'GET', '/broken');
      expect(res.status).to.equal(500);
      expect(res.headers.get('content-type')).to.equal('text/html; charset=utf-8');
      expect(res.text).to.include('The page could not be shown.').and.not.include('requires exactly one argument');
      expect(res.text).not.to.match(/at .*\.ts:\d+/);
      expect(app.output()).to.include('template page."/broken".template failed: #with requires exactly one argument');
    });
  });
});
