// `/` of a generated app is its index page, never the API's JSON 404 (issue 28): the app's name and
// description, sign-in (or who is signed in, with a sign-out form) where the app has e-mail
// sign-in, and a link to the API's description; an HTML document without scripts under a strict
// CSP, every blueprint text escaped. Other paths and methods answer as before: POST / a 405 with
// Allow, an unknown path the JSON 404. Over HTTP on real generated apps, and in headless Chromium.
//
// The page reads only the actor the pipeline resolved from the session (tested on both databases
// by test/session-flow.test.ts); it stores nothing, so these run on SQLite.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { PAGE_CSP } from '../runtime-lib/pages/document.ts';
import { freshDir, generate, login, request, ROOT, startApp, TMP, type RunningApp } from './support/apps.ts';
import { addUser } from './support/access/client.ts';
import { launchChromium } from './support/chromium.ts';
import { databaseUrl } from './support/databases.ts';

const EMAIL = 'reader@index.example';
const PASSWORD = 'index-page-password-1';

/** The checks every index page passes: 200 HTML, its headers, no script, the API's description. */
async function indexPage(app: RunningApp, headers: Record<string, string> = {}): Promise<string> {
  const res = await request(app.url, 'GET', '/', { headers });
  expect(res.status, res.text).to.equal(200);
  expect(res.headers.get('content-type')).to.equal('text/html; charset=utf-8');
  expect(res.headers.get('content-security-policy')).to.equal(PAGE_CSP);
  expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
  expect(res.text).to.match(/^<!doctype html>/);
  expect(res.text).not.to.match(/<script/i);
  expect(res.text).to.include('<a href="/api/openapi.json">');
  return res.text;
}

/** Unknown paths and other methods of / keep their API answers. */
function keepsApiAnswers(app: () => RunningApp, headers: () => Record<string, string> = () => ({})): void {
  it('answers POST / with 405 and Allow, and an unknown path with the JSON 404', async () => {
    const post = await request(app().url, 'POST', '/', { json: {}, headers: headers() });
    expect(post.status, post.text).to.equal(405);
    expect(post.headers.get('allow')).to.equal('GET, HEAD');
    expect((post.body as { error: { code: string } }).error.code).to.equal('METHOD_NOT_ALLOWED');
    const unknown = await request(app().url, 'GET', '/no-such-page');
    expect(unknown.status).to.equal(404);
    expect(unknown.headers.get('content-type')).to.match(/^application\/json/);
    expect((unknown.body as { error: { code: string } }).error.code).to.equal('ROUTE_NOT_FOUND');
  });
}

describe('index page at / (generated helpdesk app, e-mail sign-in)', function () {
  this.timeout(120_000);
  let app: RunningApp;
  let browser: Browser | undefined;

  before(async () => {
    const appDir = path.join(freshDir('index-page-helpdesk'), 'app');
    await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
    const env = { DATABASE_URL: await databaseUrl('sqlite', 'index-page') };
    app = await startApp(appDir, env);
    await addUser(appDir, env, { email: EMAIL, password: PASSWORD, roles: ['agent'] });
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('shows a signed-out person the name, the description, sign-in and sign-up, never cached', async () => {
    const html = await indexPage(app);
    expect(html).to.include('<title>Helpdesk</title>').and.include('<h1>Helpdesk</h1>');
    expect(html).to.include('Tickets worked by people and agents under one set of rules.');
    expect(html).to.include('<a href="/login?next=%2F">Sign in</a>');
    expect(html).to.include('<a href="/login?mode=signup&amp;next=%2F">create an account</a>');
    expect(html).not.to.include('Sign out');
    // The sign-up link opens the sign-in page's sign-up form.
    const signup = await request(app.url, 'GET', '/login?mode=signup&next=%2F');
    expect(signup.text).to.include('<title>Create an account for Helpdesk</title>');
    const res = await request(app.url, 'HEAD', '/');
    expect(res.status).to.equal(200);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect(res.text).to.equal('');
  });

  it('believes only a verified session: a made-up session cookie is signed out', async () => {
    const html = await indexPage(app, { cookie: 'helpdesk.sid=s%3Aforged.forged' });
    expect(html).to.include('Sign in</a>').and.not.include('Sign out');
  });

  it('names the signed-in person and signs them out with the session token', async () => {
    const session = await login(app.url, EMAIL, PASSWORD);
    const html = await indexPage(app, { cookie: session.cookie });
    expect(html).to.include(`Signed in as <strong id="signed-in-email">${EMAIL}</strong>.`);
    expect(html).to.include('<form method="post" action="/api/auth/logout">');
    expect(html).to.include(`<input type="hidden" name="_csrf" value="${session.csrfToken}">`);
    expect(html).not.to.include('Sign in</a>');
    // The form as a browser sends it; its answer sends the browser to the sign-in page.
    const out = await fetch(`${app.url}/api/auth/logout`, {
      method: 'POST',
      body: new URLSearchParams({ _csrf: session.csrfToken }),
      headers: { cookie: session.cookie },
      redirect: 'manual',
    });
    expect(out.status).to.equal(303);
    expect(out.headers.get('location')).to.equal('/login');
    const after = await indexPage(app, { cookie: session.cookie });
    expect(after).to.include('Sign in</a>').and.not.include(EMAIL);
  });

  keepsApiAnswers(
    () => app,
    () => ({}),
  );

  it('in Chromium: sign in from the index and land back on it, signed in', async () => {
    browser = await launchChromium();
    const page = await (await browser.newContext({ viewport: { width: 420, height: 640 } })).newPage();
    await page.goto(`${app.url}/`);
    expect(await page.title()).to.equal('Helpdesk');
    await Promise.all([page.waitForURL(`${app.url}/login?next=%2F`), page.click('text=Sign in')]);
    await page.fill('#email', EMAIL);
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(`${app.url}/`), page.click('button[type=submit]')]);
    expect(await page.textContent('#signed-in-email')).to.equal(EMAIL);
    fs.mkdirSync(TMP, { recursive: true });
    await page.screenshot({ path: path.join(TMP, 'index-page.png'), fullPage: true });
    await Promise.all([page.waitForURL(`${app.url}/login`), page.click('button[type=submit]')]);
    await page.goto(`${app.url}/`);
    expect(await page.locator('#signed-in-email').count()).to.equal(0);
  });
});

describe('index page at / (an app without sign-in whose name and description hold markup)', function () {
  this.timeout(120_000);
  let app: RunningApp;
  let warnings: string;
  let appDir: string;

  before(async () => {
    const dir = freshDir('index-page-markup');
    const source = fs.readFileSync(path.join(ROOT, 'test/fixtures/zebric/no-auth/app.toml'), 'utf8');
    const blueprint = source.replace(
      'name = "Guestbook"',
      'name = "<script>alert(1)</script>"\ndescription = "Tom & \\"Jerry\'s\\" <b>board</b>"',
    );
    // A page at `/` with nothing to show (no query): not served, so the index is served there.
    fs.writeFileSync(path.join(dir, 'app.toml'), `${blueprint}\n[page."/"]\ntitle = "Home"\n`);
    appDir = path.join(dir, 'app');
    warnings = (await generate(path.join(dir, 'app.toml'), appDir)).stderr;
    app = await startApp(appDir, { DATABASE_URL: await databaseUrl('sqlite', 'index-page-markup') });
  });
  after(async () => {
    await app?.stop();
  });

  it('renders the blueprint text as text, offers no sign-in, and is not kept from caches', async () => {
    const html = await indexPage(app);
    expect(html).to.include('<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>');
    expect(html).to.include('<p>Tom &amp; &quot;Jerry&#39;s&quot; &lt;b&gt;board&lt;/b&gt;</p>');
    expect(html).not.to.match(/sign in|sign out|<form/i);
    // Nothing of the e-mail provider is copied into an app without sign-in.
    expect(fs.existsSync(path.join(appDir, 'src/runtime/auth/email'))).to.equal(false);
    const res = await request(app.url, 'GET', '/');
    expect(res.headers.get('cache-control')).to.equal(null);
  });

  it("tells, in the page's PAGE_NOT_SERVED warning, that / serves the index", () => {
    expect(warnings).to.include(
      'page "/" is not served, a list page without a query has nothing to show: ' +
        "the app's index page (its name, sign-in, the pages and the API's description) is served there",
    );
  });

  keepsApiAnswers(() => app);
});
