// The reference blueprint's pages in Chromium (issue 28): an agent signs in from /tickets, opens a
// ticket, starts work on it, resolves it (its input and its confirm question), and sees each
// command offered only while it applies. Its screenshots are the ones in docs/screenshots/.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { freshDir, generate, login, request, ROOT, startApp, TMP, type RunningApp } from './support/apps.ts';
import { addUser } from './support/access/client.ts';
import { launchChromium } from './support/chromium.ts';
import { databaseUrl } from './support/databases.ts';

const EMAIL = 'agent@helpdesk.example';
const PASSWORD = 'helpdesk-pages-password-1';

describe('the helpdesk pages in Chromium', function () {
  this.timeout(120_000);
  let app: RunningApp;
  let browser: Browser;
  let ticketId: string;

  before(async () => {
    const appDir = path.join(freshDir('helpdesk-pages'), 'app');
    await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
    const env = { DATABASE_URL: await databaseUrl('sqlite', 'helpdesk-pages') };
    await addUser(appDir, env, { email: EMAIL, password: PASSWORD, roles: ['agent'] });
    app = await startApp(appDir, env);
    const session = await login(app.url, EMAIL, PASSWORD);
    const headers = { cookie: session.cookie, 'x-csrf-token': session.csrfToken };
    const customer = await request(app.url, 'POST', '/api/customers', {
      json: { name: 'Ada Lovelace', email: 'ada@example.com' },
      headers,
    });
    expect(customer.status, customer.text).to.equal(201);
    const customerId = (customer.body as { id: string }).id;
    for (const title of ['Printer on fire', 'Cannot sign in']) {
      const res = await request(app.url, 'POST', '/api/tickets', {
        json: { title, body: `${title}: since this morning.`, priority: 'high', customerId },
        headers,
      });
      expect(res.status, res.text).to.equal(201);
      ticketId = (res.body as { id: string }).id;
    }
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('signs in, opens a ticket, starts work and resolves it, each command offered while it applies', async () => {
    const tab = await (await browser.newContext({ viewport: { width: 1000, height: 720 } })).newPage();
    fs.mkdirSync(TMP, { recursive: true });
    await tab.goto(`${app.url}/tickets`);
    await tab.fill('#email', EMAIL);
    await tab.fill('#password', PASSWORD);
    await Promise.all([tab.waitForURL(`${app.url}/tickets`), tab.click('button[type=submit]')]);
    expect(await tab.textContent('h1')).to.equal('Open tickets');
    await tab.screenshot({ path: path.join(TMP, 'helpdesk-tickets.png'), fullPage: true });
    await Promise.all([tab.waitForURL(`${app.url}/tickets/${ticketId}`), tab.click('text=Cannot sign in')]);
    expect(await tab.textContent('.status')).to.equal('open');
    // Resolve needs the ticket in progress, and its assignee: only Start work is offered.
    expect(await tab.locator('form[aria-label]').evaluateAll((forms) => forms.map((f) => f.ariaLabel))).to.deep.equal([
      'Start work',
    ]);
    await tab.click('button:has-text("Start work")');
    await tab.waitForSelector('.flash.success');
    expect(await tab.textContent('.status')).to.equal('in_progress');
    await tab.fill('textarea[name=resolution]', 'Reset the password with the customer on the phone.');
    await tab.click('button:has-text("Resolve")');
    expect(await tab.textContent('#confirm-question')).to.equal('Resolve this ticket?');
    await tab.click('button:has-text("Resolve")');
    await tab.waitForSelector('.flash.success');
    expect(await tab.textContent('.status')).to.equal('resolved');
    expect(await tab.textContent('section[aria-label=Ticket]')).to.include('Reset the password');
    expect(await tab.locator('form[aria-label]').evaluateAll((forms) => forms.map((f) => f.ariaLabel))).to.deep.equal([
      'Close',
    ]);
    await tab.screenshot({ path: path.join(TMP, 'helpdesk-ticket.png'), fullPage: true });
  });
});
