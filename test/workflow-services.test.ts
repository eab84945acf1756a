// Service steps over HTTP on a generated app: a workflow calls an operation of a declared service
// that the app's src/extend.ts implements. The input the step sends and the result the code
// returns are checked against the declared types; an operation without an implementation fails
// its job and says where to register it.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import {
  bp,
  freshDir,
  freshKey,
  generate,
  jobFinished,
  request,
  ROOT,
  startApp,
  typecheck,
  type RunningApp,
} from './support/apps.ts';

type Rec = Record<string, unknown>;
type Job = { status: string; result: unknown; error: { code: string; message: string; retryable: boolean } | null };
const BLUEPRINT = path.join(ROOT, 'test/fixtures/services/app.toml');
const env = { CLERK_API_KEY: 'clerk-key-0123456789abcdef0123' };
const clerk = { authorization: `Bearer ${env.CLERK_API_KEY}` };

describe('workflow service steps (generated app, over HTTP)', function () {
  this.timeout(120_000);
  let appDir: string;
  let app: RunningApp;

  const invoice = async (customer: string, amount = 120): Promise<Rec> => {
    const res = await request(app.url, 'POST', '/api/invoices', {
      json: { customer, amount },
      headers: { ...clerk, 'idempotency-key': freshKey() },
    });
    expect(res.status, res.text).to.equal(201);
    return res.body as Rec;
  };
  /** Starts `action` on the invoice and waits for its job to finish. */
  const run = async (id: unknown, action: string, body: unknown = {}): Promise<Job> => {
    const res = await request(app.url, 'POST', `/api/skills/billing/invoices/${String(id)}/${action}`, {
      json: body,
      headers: { ...clerk, 'idempotency-key': freshKey() },
    });
    expect(res.status, res.text).to.equal(202);
    return jobFinished<Job>(app.url, clerk, (res.body as { job: { url: string } }).job.url);
  };
  const charges = () =>
    app
      .output()
      .split('\n')
      .filter((l) => l.startsWith('CHARGE '))
      .map((l) => JSON.parse(l.slice(7)) as Rec);

  before(async () => {
    appDir = path.join(freshDir('services'), 'app');
    const r = await generate(BLUEPRINT, appDir);
    expect(r.status, r.stderr).to.equal(0);
    // The team's implementation of billing.charge; billing.refund is left out on purpose.
    fs.writeFileSync(
      path.join(appDir, 'src', 'extend.ts'),
      `import { defineExtension } from './runtime/http/extension.ts';
export default defineExtension({
  services: {
    billing: {
      charge: async (input: Record<string, unknown>, ctx: { workflow: string; jobId: string }) => {
        console.log('CHARGE ' + JSON.stringify({ input, workflow: ctx.workflow }));
        return input.customer === 'broken provider'
          ? { id: 42, status: 'pending' }
          : { id: 'ch_' + String(input.amount), status: 'paid' };
      },
    },
  },
});
`,
    );
    app = await startApp(appDir, env);
  });
  after(async () => app?.stop());

  it('reminds at generate time that src/extend.ts implements the service, and typechecks', () => {
    const r = bp(['validate', BLUEPRINT]);
    expect(r.stderr).to.include(
      'service "billing" runs the operations src/extend.ts implements (services.billing.<operation>)',
    );
    const t = typecheck(appDir);
    expect(t.stdout + t.stderr).to.equal('');
  });

  it('calls the operation with the checked input and hands its result to later steps', async () => {
    const inv = await invoice('Ada', 120);
    const job = await run(inv.id, 'charge', { lines: [{ sku: 'A-1', qty: 2 }, { sku: 'B-7' }] });
    expect(job.status, JSON.stringify(job.error)).to.equal('completed');
    expect(job.result).to.deep.equal({ charge: { id: 'ch_120', status: 'paid' } });
    const [call] = charges().slice(-1);
    expect(call).to.deep.equal({
      workflow: 'Charge',
      input: { customer: 'Ada', amount: 120, lines: [{ sku: 'A-1', qty: 2 }, { sku: 'B-7' }] },
    });
    const stored = (await request(app.url, 'GET', `/api/invoices/${String(inv.id)}`, { headers: clerk })).body as Rec;
    expect(stored.chargeId).to.equal('ch_120');
  });

  it('refuses input of another shape before calling the code (WORKFLOW_STEP_INVALID, naming each value)', async () => {
    const inv = await invoice('Grace');
    const before = charges().length;
    const job = await run(inv.id, 'charge', {
      lines: [
        { sku: 'A-1', qty: 'two' },
        { qty: 1, colour: 'red' },
      ],
    });
    expect(job.status).to.equal('failed');
    expect(job.error?.code).to.equal('WORKFLOW_STEP_INVALID');
    expect(job.error?.message).to.include('billing.charge.lines[0].qty must be an integer');
    expect(job.error?.message).to.include('billing.charge.lines[1].sku is required');
    expect(job.error?.message).to.include('billing.charge.lines[1].colour is not declared');
    expect(charges()).to.have.length(before);
    const stored = (await request(app.url, 'GET', `/api/invoices/${String(inv.id)}`, { headers: clerk })).body as Rec;
    expect(stored.chargeId).to.equal(null);
  });

  it('refuses a result of another shape from the code, and stops the workflow there', async () => {
    const inv = await invoice('broken provider');
    const job = await run(inv.id, 'charge', { lines: [] });
    expect(job.status).to.equal('failed');
    expect(job.error?.code).to.equal('WORKFLOW_STEP_INVALID');
    expect(job.error?.message).to.include('the result of billing.charge.id must be a string');
    expect(job.error?.message).to.include('the result of billing.charge.status must be one of paid, declined');
    const stored = (await request(app.url, 'GET', `/api/invoices/${String(inv.id)}`, { headers: clerk })).body as Rec;
    expect(stored.chargeId).to.equal(null);
  });

  it('fails the job at an operation src/extend.ts does not implement, saying where to register it', async () => {
    const inv = await invoice('Linus');
    const job = await run(inv.id, 'refund');
    expect(job.status).to.equal('failed');
    expect(job.error?.code).to.equal('WORKFLOW_STEP_NOT_SUPPORTED');
    expect(job.error?.message).to.include('services.billing.refund');
  });
});
