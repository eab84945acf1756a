// The admin server's /workflows/visualization page (runtime-lib/admin/workflow-graph.ts), drawn in
// Chromium: every trigger kind and step type, nested branches, escaped names, no script. Its
// screenshot is kept in test/.tmp/workflows-visualization.png.

import * as path from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { workflowGraphPage } from '../runtime-lib/admin/workflow-graph.ts';
import type { WorkflowSpec } from '../runtime-lib/workflows/engine.ts';
import { freshDir } from './support/apps.ts';
import { launchChromium } from './support/chromium.ts';

const base = { transactional: false, retries: 3, maxConcurrent: 10 };

const WORKFLOWS: WorkflowSpec[] = [
  {
    ...base,
    name: 'TriageTicket',
    description: 'Route a new ticket.',
    trigger: { kind: 'entity', entity: 'Ticket', event: 'create', condition: { 'after.status': 'open' } },
    transactional: true,
    steps: [
      { type: 'query', entity: 'Ticket', action: 'update', where: { id: '{{ trigger.after.id }}' }, data: {} },
      {
        type: 'condition',
        if: 'trigger.after.priority == "high"',
        then: [{ type: 'command', command: 'escalate' }],
        else: [{ type: 'notify', adapter: 'slack', body: 'new ticket' }],
      },
    ],
  },
  {
    ...base,
    name: 'InboundMail',
    trigger: { kind: 'webhook', route: '/webhooks/mail', secretEnv: 'MAIL_SECRET' },
    steps: [
      {
        type: 'loop',
        items: '{{ webhook.body.attachments }}',
        do: [{ type: 'plugin', plugin: 'scanner', action_name: 'scan' }],
      },
      { type: 'webhook', url: 'https://hooks.example.com/in', method: 'PUT' },
    ],
  },
  {
    ...base,
    name: 'NightlyDigest',
    trigger: { kind: 'schedule', cron: '0 6 * * *' },
    steps: [
      { type: 'delay', duration: '5m' },
      { type: 'email', to: 'team@example.com', subject: 'Digest', body: '…' },
      { type: 'service', service: 'crm', operation: 'sync' },
    ],
  },
  {
    ...base,
    name: '<Escalate>',
    trigger: { kind: 'manual' },
    precondition: { 'variables.data.record.status': 'open' },
    steps: [{ type: 'notify', body: 'escalated' }],
  },
];

describe('workflow visualization', function () {
  this.timeout(60_000);
  let browser: Browser;
  let tab: Page;

  before(async () => {
    browser = await launchChromium();
    tab = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await tab.setContent(workflowGraphPage(WORKFLOWS, 'Help & Desk'));
  });

  after(async () => {
    await tab?.screenshot({
      path: path.join(freshDir('workflow-graph'), 'workflows-visualization.png'),
      fullPage: true,
    });
    await browser?.close();
  });

  it('draws one lane per workflow, sorted by name, titled with the app', async () => {
    expect(await tab.title()).to.equal('Workflows · Help & Desk');
    const names = await tab.locator('section h2').allTextContents();
    expect(names).to.deep.equal(['<Escalate>', 'InboundMail', 'NightlyDigest', 'TriageTicket']);
  });

  it('starts each lane at its trigger, with its condition or precondition', async () => {
    const triggers = await tab.locator('section .node.trigger').allInnerTexts();
    expect(triggers[0])
      .to.match(/started by hand/)
      .and.match(/requires variables\.data\.record\.status = open/);
    expect(triggers[1])
      .to.match(/POST \/webhooks\/mail/)
      .and.match(/secret in MAIL_SECRET/);
    expect(triggers[2]).to.match(/schedule 0 6 \* \* \*/);
    expect(triggers[3])
      .to.match(/Ticket created/)
      .and.match(/when after\.status = open/);
  });

  it('shows each step in order with what it reaches', async () => {
    const digest = tab.locator('#workflow-NightlyDigest .lane > .node:not(.trigger)');
    expect(await digest.locator('b').allTextContents()).to.deep.equal(['delay', 'email', 'service']);
    const text = (await digest.allInnerTexts()).join('\n');
    expect(text)
      .to.match(/wait\s+5m/)
      .and.match(/adapter\s+the e-mail adapter/)
      .and.match(/service\s+crm\.sync/);
    const mail = await tab.locator('#workflow-InboundMail').innerText();
    expect(mail).to.match(/address\s+PUT https:\/\/hooks\.example\.com\/in/);
  });

  it('draws branches of conditions and loops as nested lanes', async () => {
    const branches = tab.locator('#workflow-TriageTicket .branch');
    expect(await branches.locator('em').allTextContents()).to.deep.equal(['then', 'else']);
    expect(await branches.nth(0).innerText()).to.match(/command\s+escalate/);
    expect(await branches.nth(1).innerText()).to.match(/adapter\s+slack/);
    const loop = tab.locator('#workflow-InboundMail .branch');
    expect(await loop.innerText())
      .to.match(/do/)
      .and.match(/plugin\s+scanner\.scan/);
    // Transactional database steps and the rest are told apart by colour, stated in the legend.
    const colour = await tab
      .locator('#workflow-TriageTicket .node.database')
      .first()
      .evaluate((el) => getComputedStyle(el).borderLeftColor);
    expect(colour).to.equal('rgb(9, 105, 218)');
  });

  it('escapes names and runs no script', async () => {
    expect(await tab.locator('script').count()).to.equal(0);
    expect(await tab.locator('escalate').count()).to.equal(0);
    expect(workflowGraphPage(WORKFLOWS, 'x')).to.include('&lt;Escalate&gt;');
  });

  it('says so when the app has no workflows', () => {
    expect(workflowGraphPage([], 'Empty')).to.include('This app has no workflows.');
  });
});
