// A real browser (headless Chromium through playwright-core) against the generated helpdesk app:
// a person signs in through the login page (landing where `next` says, or on the sign-in page
// itself, which then shows who is signed in), then pages on other origins auto-submit forms at the
// app with the victim's browser. Neither a cross-site page (127.0.0.2, where SameSite=Lax keeps
// the cookie home) nor a same-site page on another port (which does get the cookie) may create a
// ticket or end the session: the Origin check and the CSRF token refuse them. Once per database
// the app runs on, SQLite and PostgreSQL.
//
// Needs Chromium (support/chromium.ts: /usr/bin/chromium or CHROMIUM_PATH); without it the test
// fails at once with one line saying how to install it, it is never skipped.

import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { freshDir, generate, request, ROOT, startApp, type RunningApp } from './support/apps.ts';
import { addUser } from './support/access/client.ts';
import { launchChromium } from './support/chromium.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

const TRIAGE_KEY = 'triage-key-browser-0123456789';
const EMAIL = 'victim@browser.example';
const PASSWORD = 'browser-password-123';
// On PostgreSQL the app refuses to start without SESSION_SECRET (every instance must share it).
const POSTGRES_SESSION_SECRET = 'browser-login-development-secret';

/** A tiny site whose pages auto-submit a urlencoded POST form to `target` as soon as they load. */
async function attackerSite(host: string, target: string): Promise<{ url: string; close: () => Promise<void> }> {
  const page = (action: string, fields: Record<string, string>) => `<!doctype html>
<html><body>
<form id="f" method="post" action="${target}${action}" enctype="application/x-www-form-urlencoded">
${Object.entries(fields)
  .map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
  .join('\n')}
</form>
<script>document.getElementById('f').submit()</script>
</body></html>`;
  const pages: Record<string, string> = {
    '/ticket': page('/api/tickets', { title: 'pwned by a form', priority: 'high' }),
    '/logout': page('/api/auth/logout', {}),
  };
  const server = http.createServer((req, res) => {
    const body = pages[req.url ?? ''];
    res.writeHead(body ? 200 : 404, { 'content-type': 'text/html' }).end(body ?? 'not found');
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, host, resolve));
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

for (const database of DATABASES)
  describe(`browser login and cross-origin forms (headless Chromium, ${database})`, function () {
    this.timeout(90_000);
    let app: RunningApp;
    let browser: Browser;
    let context: BrowserContext;
    let victim: Page;
    const sites: Array<{ close: () => Promise<void> }> = [];

    const ticketCount = async () => {
      const res = await request(app.url, 'GET', '/api/tickets?limit=1000', {
        headers: { authorization: `Bearer ${TRIAGE_KEY}` },
      });
      expect(res.status).to.equal(200);
      return (res.body as { items: unknown[] }).items.length;
    };
    const sessionSeenByPage = async (page: Page) =>
      page.evaluate(
        async () =>
          ((await (await fetch('/api/auth/session')).json()) as { actor: { kind: string; email?: string } }).actor,
      );

    before(async () => {
      // First, so that a machine without Chromium is told so before an app is generated.
      browser = await launchChromium();
      const appDir = path.join(freshDir(`browser-login-${database}`), 'app');
      await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
      const env: Record<string, string> = {
        DATABASE_URL: await databaseUrl(database, 'browser'),
        TRIAGE_API_KEY: TRIAGE_KEY,
        ...(database === 'postgres' ? { SESSION_SECRET: POSTGRES_SESSION_SECRET } : {}),
      };
      app = await startApp(appDir, env);
      await addUser(appDir, env, { email: EMAIL, password: PASSWORD, roles: ['agent'] });
      context = await browser.newContext();
      victim = await context.newPage();
    });
    after(async () => {
      await browser?.close();
      for (const site of sites) await site.close();
      await app?.stop();
    });

    it('signs in through the login page and lands on the redirect target with a working session', async () => {
      await victim.goto(`${app.url}/login?next=/api/auth/session`);
      expect(await victim.title()).to.equal('Sign in to Helpdesk');
      await victim.fill('#email', EMAIL);
      await victim.fill('#password', PASSWORD);
      await Promise.all([victim.waitForURL(`${app.url}/api/auth/session`), victim.click('button[type=submit]')]);
      // The redirect target is the session endpoint itself, so the landing page shows who signed in.
      const landed = JSON.parse((await victim.textContent('body')) ?? '') as {
        actor: { kind: string; email: string; roles: string[] };
      };
      expect(landed.actor).to.include({ kind: 'user', email: EMAIL });
      expect(landed.actor.roles).to.deep.equal(['agent']);

      expect(await sessionSeenByPage(victim)).to.include({ kind: 'user', email: EMAIL });
      const [cookie] = (await context.cookies(app.url)).filter((c) => c.name === 'helpdesk.sid');
      expect(cookie).to.include({ httpOnly: true, sameSite: 'Lax', secure: false });
      // The sign-in page's token came from the anonymous nonce cookie, also out of scripts' reach.
      const [nonce] = (await context.cookies(app.url)).filter((c) => c.name === 'helpdesk.csrf');
      expect(nonce).to.include({ httpOnly: true, sameSite: 'Lax', secure: false });
      // HttpOnly: the page's scripts cannot read the session cookie.
      expect(await victim.evaluate(() => document.cookie)).not.to.include('helpdesk.sid');
    });

    it('lands a sign-in without next on the sign-in page, which shows who is signed in and signs out', async () => {
      // A browser of its own, so the victim's session above stays as it is.
      const own = await browser.newContext();
      try {
        const page = await own.newPage();
        await page.goto(`${app.url}/login`);
        await page.fill('#email', EMAIL);
        await page.fill('#password', PASSWORD);
        const [response] = await Promise.all([
          page.waitForResponse((r) => r.url() === `${app.url}/login` && r.request().method() === 'GET'),
          page.click('button[type=submit]'),
        ]);
        expect(response.status()).to.equal(200);
        expect(page.url()).to.equal(`${app.url}/login`);
        expect(await page.title()).to.equal('Signed in to Helpdesk');
        expect(await page.textContent('main p')).to.equal(`Signed in as ${EMAIL}.`);
        // The page allows no scripts (its CSP), so ask with the browser's cookies from outside it.
        const actor = async () =>
          ((await (await own.request.get(`${app.url}/api/auth/session`)).json()) as { actor: { kind: string } }).actor;
        expect(await actor()).to.include({ kind: 'user', email: EMAIL });

        await Promise.all([page.waitForURL(`${app.url}/login`), page.click('button[type=submit]')]);
        expect(await page.title()).to.equal('Sign in to Helpdesk');
        expect(await page.isVisible('#password')).to.equal(true);
        expect(await actor()).to.include({ kind: 'anonymous' });
        expect((await own.cookies(app.url)).map((c) => c.name)).to.not.include('helpdesk.sid');
      } finally {
        await own.close();
      }
    });

    for (const [label, host, cookieSent] of [
      ['a cross-site page (127.0.0.2)', '127.0.0.2', false],
      ['a same-site page on another port (127.0.0.1)', '127.0.0.1', true],
    ] as const) {
      it(`refuses forms posted from ${label}: no ticket, still signed in`, async () => {
        const site = await attackerSite(host, app.url);
        sites.push(site);
        const before = await ticketCount();
        const attacker = await context.newPage();
        for (const [pagePath, target] of [
          ['/ticket', '/api/tickets'],
          ['/logout', '/api/auth/logout'],
        ]) {
          const [response] = await Promise.all([
            attacker.waitForResponse((r) => r.url() === `${app.url}${target}` && r.request().method() === 'POST'),
            attacker.goto(`${site.url}${pagePath}`),
          ]);
          const headers = await response.request().allHeaders();
          expect(headers.origin, 'browsers name the posting origin').to.equal(site.url);
          // SameSite=Lax: a cross-site POST carries no session cookie; a same-site one does.
          expect(/helpdesk\.sid=/.test(headers.cookie ?? ''), 'session cookie sent').to.equal(cookieSent);
          expect(response.status(), `${target} status`).to.equal(403);
          expect(((await response.json()) as { error: { code: string } }).error.code).to.equal('CSRF_FAILED');
        }
        await attacker.close();
        expect(await ticketCount()).to.equal(before);
        expect(await sessionSeenByPage(victim)).to.include({ kind: 'user', email: EMAIL });
      });
    }
  });
