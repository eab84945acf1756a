// A field hidden by its read rule stays hidden on every surface of a generated app
// (test/fixtures/hidden-fields), on SQLite and on PostgreSQL. Employee.salary and Employee.taxId
// are readable by role hr only, Employee.review by the record's owner or hr. The walk goes through
// the record and the list routes, the audit trail, a skill list's query and path parameters,
// a skill get, commands (their answers, an availableWhen that compares), workflow jobs (their
// results and failures), MCP tools and unique conflicts, as a self-made account and as an API key
// without hr: no answer holds a hidden value, and no answer differs with a guess of it. The same
// walk as an hr person or the hr key sees the values (the positive control: the walk would see
// them if they leaked).

import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import {
  addUser,
  freshDir,
  freshKey,
  generate,
  type HttpResponse,
  jobFinished,
  request,
  ROOT,
  startApp,
  type RunningApp,
} from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

type Rec = Record<string, unknown>;

const env = {
  CLERK_API_KEY: 'clerk-key-0123456789abcdef',
  PAYROLL_API_KEY: 'payroll-key-0123456789abcdef',
  SESSION_SECRET: 'hidden-secret-0123456789abcdef0123456789ab',
};
const PASSWORD = 'correct horse battery';
/** Eve's hidden values: her salary before and after the raise, her tax id and her review. */
const OLD_SALARY = 123456;
const SALARY = 234567;
const TAX_ID = 'TAX-EVE-9182';
const REVIEW = 'outstanding-7731';
const SECRETS = [String(OLD_SALARY), String(SALARY), TAX_ID, REVIEW];

/** A caller: how its requests authenticate, reads and writes. */
interface Caller {
  name: string;
  headers: Record<string, string>;
  /** Extra headers of a write (a session's CSRF token). */
  writeHeaders: Record<string, string>;
  id: string;
}

for (const database of DATABASES)
  describe(`a hidden field on every surface (generated app, ${database})`, function () {
    this.timeout(180_000);
    let app: RunningApp;
    let hr: Caller;
    let self: Caller;
    const clerk: Caller = {
      name: 'clerk key',
      headers: { authorization: `Bearer ${env.CLERK_API_KEY}` },
      writeHeaders: {},
      id: 'clerk',
    };
    const payroll: Caller = {
      name: 'payroll key',
      headers: { authorization: `Bearer ${env.PAYROLL_API_KEY}` },
      writeHeaders: {},
      id: 'payroll',
    };
    let eve: Rec;
    /** Every answer a caller without hr got: none may hold a hidden value. */
    const seenByOthers: Array<{ where: string; text: string }> = [];

    async function signIn(email: string): Promise<Caller> {
      const res = await fetch(`${app.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD }),
      });
      const body = (await res.json()) as { csrfToken: string; actor: { id: string } };
      expect(res.status, JSON.stringify(body)).to.equal(200);
      const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0];
      return { name: email, headers: { cookie }, writeHeaders: { 'x-csrf-token': body.csrfToken }, id: body.actor.id };
    }

    /** A request as `who`; answers to callers other than hr are kept for the final check. */
    async function as(who: Caller, method: string, url: string, json?: unknown): Promise<HttpResponse> {
      const write = method !== 'GET';
      const headers = { ...who.headers, ...(write ? { ...who.writeHeaders, 'idempotency-key': freshKey() } : {}) };
      const res = await request(app.url, method, url, { json, headers });
      if (who !== hr && who !== payroll) seenByOthers.push({ where: `${who.name}: ${method} ${url}`, text: res.text });
      return res;
    }

    const ok = (res: HttpResponse, status = 200) => {
      expect(res.status, res.text).to.equal(status);
      return res.body as Rec;
    };
    const items = (res: HttpResponse) => (ok(res).items as Rec[]).map((r) => r.name);
    const refusedFor = (res: HttpResponse, field: string) => {
      expect(res.status, res.text).to.equal(403);
      const error = (res.body as { error: { code: string; details: Rec[] } }).error;
      expect(error.code).to.equal('FORBIDDEN');
      expect(error.details).to.deep.include({
        field,
        code: 'FIELD_READ_DENIED',
        message: `${field} is not readable for you`,
      });
    };
    /** Runs a workflow action and waits for its job. */
    async function job(who: Caller, url: string, body: Rec = {}): Promise<Rec> {
      const submitted = ok(await as(who, 'POST', url, body), 202) as { job: { url: string } };
      const done = await jobFinished<Rec>(app.url, who.headers, submitted.job.url);
      if (who !== hr && who !== payroll)
        seenByOthers.push({ where: `${who.name}: job of ${url}`, text: JSON.stringify(done) });
      return done;
    }

    before(async () => {
      const appDir = path.join(freshDir(`hidden-fields-${database}`), 'app');
      const r = await generate(path.join(ROOT, 'test/fixtures/hidden-fields/app.toml'), appDir);
      expect(r.status, r.stderr).to.equal(0);
      const appEnv = { ...env, DATABASE_URL: await databaseUrl(database, 'hidden_fields') };
      addUser(appDir, appEnv, 'hr@example.com', PASSWORD, ['hr']);
      app = await startApp(appDir, appEnv);
      hr = await signIn('hr@example.com');
      // An account that signed itself up: no roles.
      const signup = await request(app.url, 'POST', '/api/auth/signup', {
        json: { email: 'self@example.com', password: PASSWORD },
      });
      expect(signup.status, signup.text).to.be.oneOf([200, 201]);
      self = await signIn('self@example.com');

      eve = ok(
        await as(hr, 'POST', '/api/employees', { name: 'Eve', salary: OLD_SALARY, taxId: TAX_ID, review: REVIEW }),
        201,
      );
      ok(await as(hr, 'PUT', `/api/employees/${eve.id}`, { salary: SALARY }));
      // The command's input is the salary it already has: the audit entry changes nothing, its detail holds the value.
      ok(await as(hr, 'POST', `/api/commands/set_salary/${eve.id}`, { amount: SALARY }));
      // A record of the self-made account's own, whose review it may read.
      ok(await as(self, 'POST', '/api/employees', { name: 'Sam', ownerId: self.id, review: 'steady' }), 201);
    });
    after(async () => {
      await app?.stop();
    });

    it('the record and the list routes show it to hr only', async () => {
      expect(ok(await as(hr, 'GET', `/api/employees/${eve.id}`))).to.include({
        salary: SALARY,
        taxId: TAX_ID,
        review: REVIEW,
      });
      for (const who of [self, clerk]) {
        const record = ok(await as(who, 'GET', `/api/employees/${eve.id}`));
        expect(record).to.include({ name: 'Eve' }).and.not.to.have.any.keys('salary', 'taxId', 'review');
        const list = ok(await as(who, 'GET', '/api/employees')).items as Rec[];
        expect(list.find((e) => e.id === eve.id)).to.not.have.any.keys('salary', 'taxId', 'review');
      }
    });

    it('the audit trail leaves out the changes, and the details, of fields the reader may not read', async () => {
      const url = `/api/audit?entity=Employee&recordId=${eve.id}`;
      const full = ok(await as(hr, 'GET', url)).items as Array<{ operation: string; changes: Rec; detail: Rec | null }>;
      expect(full.map((e) => e.operation)).to.deep.equal(['command:SetSalary', 'Employee.update', 'Employee.create']);
      expect(full[1].changes).to.deep.equal({ salary: { before: OLD_SALARY, after: SALARY } });
      expect(full[0].detail).to.deep.equal({ command: 'SetSalary', input: { amount: SALARY } });
      for (const who of [self, clerk]) {
        const trail = ok(await as(who, 'GET', url)).items as Array<{
          operation: string;
          changes: Rec;
          detail: Rec | null;
        }>;
        expect(trail.map((e) => e.operation)).to.deep.equal([
          'command:SetSalary',
          'Employee.update',
          'Employee.create',
        ]);
        expect(trail[0].detail).to.equal(null);
        expect(trail[1].changes).to.deep.equal({});
        expect(Object.keys(trail[2].changes)).to.include('name').and.not.include.members(['salary', 'taxId', 'review']);
      }
    });

    it('a skill list refuses a filter on a field the caller may not read, whatever the value', async () => {
      expect(items(await as(hr, 'GET', `/api/skills/people/staff?salary=${SALARY}`))).to.deep.equal(['Eve']);
      expect(items(await as(hr, 'GET', `/api/skills/people/staff?salary=${OLD_SALARY}`))).to.deep.equal([]);
      expect(items(await as(payroll, 'GET', `/api/skills/people/tax/${TAX_ID}/staff`))).to.deep.equal(['Eve']);
      for (const who of [self, clerk]) {
        refusedFor(await as(who, 'GET', `/api/skills/people/staff?salary=${SALARY}`), 'salary');
        refusedFor(await as(who, 'GET', `/api/skills/people/staff?salary=${OLD_SALARY}`), 'salary');
        refusedFor(await as(who, 'GET', `/api/skills/people/tax/${TAX_ID}/staff`), 'taxId');
        refusedFor(await as(who, 'GET', '/api/skills/people/tax/TAX-NOBODY/staff'), 'taxId');
        // A filter on a field the caller may read still works.
        expect(items(await as(who, 'GET', '/api/skills/people/staff?name=Eve'))).to.deep.equal(['Eve']);
      }
    });

    it('a filter on a field whose rule reads the record matches only records the caller may read it on', async () => {
      expect(items(await as(hr, 'GET', `/api/skills/people/staff?review=${REVIEW}`))).to.deep.equal(['Eve']);
      // The owner filters on its own record's review; Eve's review, not its to read, matches nothing.
      expect(items(await as(self, 'GET', '/api/skills/people/staff?review=steady'))).to.deep.equal(['Sam']);
      expect(items(await as(self, 'GET', `/api/skills/people/staff?review=${REVIEW}`))).to.deep.equal([]);
      // The clerk key owns nothing: the filter matches no record, whatever the value.
      expect(items(await as(clerk, 'GET', `/api/skills/people/staff?review=${REVIEW}`))).to.deep.equal([]);
      expect(items(await as(clerk, 'GET', '/api/skills/people/staff?review=steady'))).to.deep.equal([]);
    });

    it('a skill get and command answers show the fields as the caller may read them', async () => {
      expect(ok(await as(payroll, 'GET', `/api/skills/people/staff/${eve.id}`))).to.include({ salary: SALARY });
      expect(ok(await as(hr, 'POST', `/api/commands/rename/${eve.id}`, { name: 'Eve' }))).to.include({
        salary: SALARY,
      });
      for (const who of [self, clerk]) {
        expect(ok(await as(who, 'GET', `/api/skills/people/staff/${eve.id}`))).to.not.have.any.keys(
          'salary',
          'taxId',
          'review',
        );
        const renamed = ok(await as(who, 'POST', `/api/commands/rename/${eve.id}`, { name: 'Eve' }));
        expect(renamed).to.include({ name: 'Eve' }).and.not.to.have.any.keys('salary', 'taxId', 'review');
      }
    });

    it('a command whose availableWhen compares a hidden field runs for those who may read it only', async () => {
      const sam = (ok(await as(hr, 'GET', '/api/skills/people/staff?name=Sam')).items as Rec[])[0];
      expect(ok(await as(hr, 'POST', `/api/commands/rename_well_paid/${eve.id}`, { name: 'Eve' }))).to.include({
        salary: SALARY,
      });
      const unavailable = await as(hr, 'POST', `/api/commands/rename_well_paid/${sam.id}`, { name: 'Sam' });
      expect(unavailable.status, unavailable.text).to.equal(409);
      for (const who of [self, clerk]) {
        for (const id of [eve.id, sam.id]) {
          refusedFor(
            await as(who, 'POST', `/api/commands/rename_well_paid/${String(id)}`, { name: 'Renamed' }),
            'salary',
          );
        }
      }
      expect(ok(await as(hr, 'GET', `/api/employees/${sam.id}`))).to.include({ name: 'Sam' });
    });

    it('a command whose availableWhen reads a hidden field via a relation runs only for its readers', async () => {
      const sam = (ok(await as(hr, 'GET', '/api/skills/people/staff?name=Sam')).items as Rec[])[0];
      const bonusOf = async (employee: Rec) =>
        ok(await as(hr, 'POST', '/api/bonuss', { employeeId: employee.id }), 201);
      const [eveBonus, samBonus] = [await bonusOf(eve), await bonusOf(sam)];
      expect(ok(await as(hr, 'POST', `/api/commands/grant_bonus/${eveBonus.id}`, { amount: 5 }))).to.include({
        amount: 5,
      });
      const unavailable = await as(hr, 'POST', `/api/commands/grant_bonus/${samBonus.id}`, { amount: 5 });
      expect(unavailable.status, unavailable.text).to.equal(409);
      for (const who of [self, clerk]) {
        for (const bonus of [eveBonus, samBonus]) {
          refusedFor(
            await as(who, 'POST', `/api/commands/grant_bonus/${String(bonus.id)}`, { amount: 9 }),
            'employee.salary',
          );
        }
      }
      expect(ok(await as(hr, 'GET', `/api/bonuss/${eveBonus.id}`))).to.include({ amount: 5 });
    });

    it('a unique field the writer may not read is refused before the database can say the value is taken', async () => {
      // hr, who may read taxId, hears that it is taken.
      const taken = await as(hr, 'POST', '/api/employees', { name: 'Copy', taxId: TAX_ID });
      expect(taken.status, taken.text).to.equal(409);
      for (const who of [self, clerk]) {
        refusedFor(await as(who, 'POST', '/api/employees', { name: 'Copy', taxId: TAX_ID }), 'taxId');
        refusedFor(await as(who, 'POST', '/api/employees', { name: 'Copy', taxId: 'TAX-FREE-1' }), 'taxId');
        refusedFor(await as(who, 'PUT', `/api/employees/${eve.id}`, { taxId: TAX_ID }), 'taxId');
      }
      expect(ok(await as(hr, 'GET', `/api/employees/${eve.id}`))).to.include({ taxId: TAX_ID, name: 'Eve' });
    });

    it('workflow jobs compare a hidden field for hr only, and answer with the fields the caller may read', async () => {
      const found = await job(hr, '/api/skills/people/paid-like', { guess: SALARY });
      expect(found.status).to.equal('completed');
      expect((found.result as { found: Rec[] }).found.map((e) => e.salary)).to.deep.equal([SALARY]);
      const guessed = await job(hr, `/api/skills/people/staff/${eve.id}/rename-if-paid`, {
        guess: OLD_SALARY,
        name: 'Eva',
      });
      expect(guessed.error).to.include({ code: 'STATE_CONFLICT' });
      const touched = await job(hr, `/api/skills/people/staff/${eve.id}/touch`);
      expect(touched.status, JSON.stringify(touched)).to.equal('completed');
      for (const step of ['touched', 'renamed'] as const)
        expect((touched.result as Record<string, Rec>)[step]).to.include({ salary: SALARY });

      for (const who of [self, clerk]) {
        for (const guess of [SALARY, OLD_SALARY]) {
          const paid = await job(who, '/api/skills/people/paid-like', { guess });
          expect(paid).to.include({ status: 'failed', result: null });
          expect(paid.error).to.include({ code: 'FORBIDDEN' });
          const renamed = await job(who, `/api/skills/people/staff/${eve.id}/rename-if-paid`, { guess, name: 'Eva' });
          expect(renamed.error).to.include({ code: 'FORBIDDEN' });
        }
        const mine = await job(who, `/api/skills/people/staff/${eve.id}/touch`);
        expect(mine.status, JSON.stringify(mine)).to.equal('completed');
        const result = mine.result as { touched: Rec; renamed: Rec; found: Rec[] };
        for (const record of [result.touched, result.renamed, ...result.found]) {
          expect(record).to.not.have.any.keys('salary', 'taxId', 'review');
        }
      }
      expect(ok(await as(hr, 'GET', `/api/employees/${eve.id}`))).to.include({ name: 'Eve' });
    });

    it('MCP tools answer as the routes do: hidden fields for the hr key only', async () => {
      const clients: Client[] = [];
      const connect = async (key: string) => {
        const client = new Client({ name: 'bp-test', version: '1.0.0' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
            requestInit: { headers: { authorization: `Bearer ${key}` } },
          }),
        );
        clients.push(client);
        return client;
      };
      type ToolResult = { isError?: boolean; content: Array<{ text?: string }>; structuredContent?: Rec };
      const call = async (client: Client, name: string, args: Rec) =>
        (await client.callTool({ name, arguments: args })) as unknown as ToolResult;
      try {
        const hrClient = await connect(env.PAYROLL_API_KEY);
        const listed = await call(hrClient, 'people_staff', { salary: String(SALARY) });
        expect(JSON.stringify(listed.structuredContent)).to.include(String(SALARY));
        const got = await call(hrClient, 'people_employee', { id: eve.id });
        expect(got.structuredContent).to.include({ salary: SALARY });

        const clerkClient = await connect(env.CLERK_API_KEY);
        const answers: ToolResult[] = [
          await call(clerkClient, 'people_staff', { salary: String(SALARY) }),
          await call(clerkClient, 'people_staff', { salary: String(OLD_SALARY) }),
          await call(clerkClient, 'people_by_tax_id', { taxId: TAX_ID }),
        ];
        for (const answer of answers) {
          expect(answer.isError, JSON.stringify(answer)).to.equal(true);
          expect(JSON.parse(answer.content[0].text as string).error).to.include({ code: 'FORBIDDEN' });
        }
        const record = await call(clerkClient, 'people_employee', { id: eve.id });
        expect(record.structuredContent)
          .to.include({ name: 'Eve' })
          .and.not.to.have.any.keys('salary', 'taxId', 'review');
        const renamed = await call(clerkClient, 'rename', {
          recordId: eve.id,
          name: 'Eve',
          idempotencyKey: freshKey(),
        });
        expect(renamed.structuredContent)
          .to.include({ name: 'Eve' })
          .and.not.to.have.any.keys('salary', 'taxId', 'review');
        for (const answer of [...answers, record, renamed])
          seenByOthers.push({ where: 'clerk key: MCP', text: JSON.stringify(answer) });
      } finally {
        for (const client of clients) await client.close();
      }
    });

    it('no answer to a caller without hr held a hidden value', () => {
      expect(seenByOthers.length).to.be.greaterThan(40);
      for (const { where, text } of seenByOthers) {
        for (const secret of SECRETS) expect(text, where).to.not.include(secret);
      }
    });
  });
