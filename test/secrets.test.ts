// Passwords and API keys never appear in plain text where they could leak from: the database
// (the SQLite file and its -wal/-shm files, read as bytes; on PostgreSQL every row of every table,
// as text), the logs (everything the app and the users command print) and the traces (the
// in-process trace store, serialized).
//
// Each scan is paired with a control that finds a value that is meant to be there (an e-mail, a
// route), so a scan of the wrong file or the wrong encoding cannot pass by finding nothing.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { freshDir, generate, request, ROOT, startApp, type RunningApp } from './support/apps.ts';
import { addUser, CookieClient, idempotencyKey } from './support/access/client.ts';
import { bootInProcess, type InProcessApp } from './support/commands/harness.ts';
import { withAppRows } from './support/database-rows.ts';
import { freshPostgresDatabase } from './support/postgres.ts';

const unique = (label: string) => `${label}-${randomBytes(10).toString('hex')}`;

// Every secret is distinctive, so finding it anywhere means it leaked.
const SECRETS = {
  triageKey: unique('triage-key'),
  reporterKey: unique('reporter-key'),
  sessionSecret: unique('session-secret-value'),
  cliPassword: unique('cli-password'),
  signupPassword: unique('signup-password'),
  formPassword: unique('form-password'),
  wrongPassword: unique('wrong-password'),
  wrongKey: unique('not-a-configured-key'),
};
const CLI_EMAIL = 'cli-user@secrets.example';
const SIGNUP_EMAIL = 'signup-user@secrets.example';
const FORM_EMAIL = 'form-user@secrets.example';

/** Which secrets occur in `haystack` (as UTF-8 bytes or text). */
function leaked(haystack: Buffer | string): string[] {
  const bytes = typeof haystack === 'string' ? Buffer.from(haystack, 'utf8') : haystack;
  return Object.entries(SECRETS)
    .filter(([, value]) => bytes.includes(Buffer.from(value, 'utf8')) || bytes.includes(Buffer.from(value, 'utf16le')))
    .map(([name]) => name);
}

/** The database file and its write-ahead log and shared-memory index, as bytes. */
function databaseBytes(file: string): Buffer {
  const parts = [file, `${file}-wal`, `${file}-shm`].filter((f) => fs.existsSync(f));
  expect(parts, 'the database file exists').to.include(file);
  return Buffer.concat(parts.map((f) => fs.readFileSync(f)));
}

/**
 * Everything a person and an agent do with credentials: the users command, sign-up, JSON and form
 * sign-in, a wrong password, API-key reads and writes, an unknown key.
 */
async function exercise(base: string): Promise<void> {
  const signup = await request(base, 'POST', '/api/auth/signup', {
    json: { email: SIGNUP_EMAIL, password: SECRETS.signupPassword },
  });
  expect(signup.status).to.equal(201);
  for (const [email, password] of [
    [CLI_EMAIL, SECRETS.cliPassword],
    [SIGNUP_EMAIL, SECRETS.signupPassword],
  ]) {
    const login = await request(base, 'POST', '/api/auth/login', { json: { email, password } });
    expect(login.status, email).to.equal(200);
  }
  const wrong = await request(base, 'POST', '/api/auth/login', {
    json: { email: CLI_EMAIL, password: SECRETS.wrongPassword },
  });
  expect(wrong.status).to.equal(401);

  // The sign-in page's form: its nonce cookie, its token, a urlencoded body with the password.
  const browser = new CookieClient(base);
  const page = await browser.send('GET', '/login');
  const token = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
  const form = await browser.send('POST', '/api/auth/signup', {
    form: { _csrf: token, email: FORM_EMAIL, password: SECRETS.formPassword },
  });
  expect(form.status).to.equal(303);

  for (const key of [SECRETS.triageKey, SECRETS.reporterKey]) {
    const auth = { authorization: `Bearer ${key}` };
    expect((await request(base, 'GET', '/api/tickets', { headers: auth })).status).to.equal(200);
    const created = await request(base, 'POST', '/api/tickets', {
      json: { title: 'a ticket' },
      headers: { ...auth, 'idempotency-key': idempotencyKey() },
    });
    expect(created.status).to.equal(201);
  }
  const unknown = await request(base, 'GET', '/api/tickets', {
    headers: { authorization: `Bearer ${SECRETS.wrongKey}` },
  });
  expect(unknown.status).to.equal(401);
}

describe('secrets stay out of the database, the logs and the traces', function () {
  this.timeout(120_000);
  let appDir: string;

  before(async () => {
    appDir = path.join(freshDir('secrets'), 'app');
    await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
  });

  describe('the running app (npm start)', () => {
    let app: RunningApp;
    let dbFile: string;
    let cliOutput: string;

    before(async () => {
      dbFile = path.join(appDir, 'data', 'secrets.db');
      const env = {
        DATABASE_URL: `file:${dbFile}`,
        TRIAGE_API_KEY: SECRETS.triageKey,
        REPORTER_API_KEY: SECRETS.reporterKey,
        SESSION_SECRET: SECRETS.sessionSecret,
      };
      app = await startApp(appDir, env);
      cliOutput = await addUser(appDir, env, { email: CLI_EMAIL, password: SECRETS.cliPassword, roles: ['agent'] });
      await exercise(app.url);
    });
    after(async () => app?.stop());

    it('keeps them out of the database file and its WAL while running', () => {
      const bytes = databaseBytes(dbFile);
      expect(bytes.includes(Buffer.from(CLI_EMAIL)), 'control: the e-mails are stored').to.equal(true);
      expect(bytes.includes(Buffer.from(FORM_EMAIL)), 'control: the e-mails are stored').to.equal(true);
      expect(leaked(bytes)).to.deep.equal([]);
    });

    it('keeps them out of the logs of the app and of the users command', () => {
      expect(app.output(), 'control: the app logged its start').to.include('listening on http://localhost:');
      expect(cliOutput, 'control: the users command reported').to.include(`added ${CLI_EMAIL}`);
      expect(leaked(app.output())).to.deep.equal([]);
      expect(leaked(cliOutput)).to.deep.equal([]);
    });

    it('keeps them out of the database after shutdown (WAL checkpointed into the file)', async () => {
      await app.stop();
      expect(leaked(databaseBytes(dbFile))).to.deep.equal([]);
      expect(leaked(app.output())).to.deep.equal([]);
    });
  });

  describe('the running app on PostgreSQL (npm start)', () => {
    let app: RunningApp;
    let url: string;
    let cliOutput: string;

    before(async () => {
      url = await freshPostgresDatabase('secrets');
      const env = {
        DATABASE_URL: url,
        TRIAGE_API_KEY: SECRETS.triageKey,
        REPORTER_API_KEY: SECRETS.reporterKey,
        SESSION_SECRET: SECRETS.sessionSecret,
      };
      app = await startApp(appDir, env);
      cliOutput = await addUser(appDir, env, { email: CLI_EMAIL, password: SECRETS.cliPassword, roles: ['agent'] });
      await exercise(app.url);
    });
    after(async () => app?.stop());

    it('keeps them out of every row of every table, and out of the logs', async () => {
      const dump = await withAppRows(url, appDir, async (db) => {
        const tables = await db.all(
          `SELECT table_name AS "name" FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
        );
        expect(
          tables.map((t) => t.name),
          'control: the app made its tables',
        ).to.include.members(['Ticket', '_bp_users', '_bp_sessions']);
        // Each row as PostgreSQL writes it out as text: every column, whatever its type.
        const rows: string[] = [];
        for (const t of tables)
          rows.push(
            ...(await db.all(`SELECT t::text AS "row" FROM "${String(t.name)}" AS t`)).map((r) => String(r.row)),
          );
        return rows.join('\n');
      });
      expect(dump, 'control: the e-mails are stored').to.include(CLI_EMAIL).and.include(FORM_EMAIL);
      expect(leaked(dump)).to.deep.equal([]);
      expect(cliOutput, 'control: the users command reported').to.include(`added ${CLI_EMAIL}`);
      expect(leaked(app.output())).to.deep.equal([]);
      expect(leaked(cliOutput)).to.deep.equal([]);
    });
  });

  describe('the app in-process, with its trace store', () => {
    let inProcess: InProcessApp;
    /** What the users command printed. */
    let cliOutput: string[];

    before(async () => {
      const env = {
        TRIAGE_API_KEY: SECRETS.triageKey,
        REPORTER_API_KEY: SECRETS.reporterKey,
        SESSION_SECRET: SECRETS.sessionSecret,
      };
      inProcess = await bootInProcess(appDir, env, {
        dbName: 'traced.db',
        traces: { max: 10_000, maxAgeMs: 60 * 60 * 1000 },
      });
      type Io = { out: (line: string) => void; readPassword: () => Promise<string> };
      const { runUsersCli } = await inProcess.load<{
        runUsersCli: (db: unknown, args: string[], io: Io) => Promise<number>;
      }>('src/runtime/auth/email/users-cli.ts');
      cliOutput = [];
      const io: Io = { out: (l) => cliOutput.push(l), readPassword: async () => SECRETS.cliPassword };
      expect(await runUsersCli(inProcess.database, ['add', '--email', CLI_EMAIL, '--role', 'agent'], io)).to.equal(0);
      await exercise(inProcess.url);
    });
    after(() => inProcess?.close());

    it('keeps them out of every trace', () => {
      const serialized = JSON.stringify(inProcess.traces.list());
      expect(serialized, 'control: sign-in was traced').to.include('/api/auth/login');
      expect(serialized, 'control: an API-key request was traced').to.include('/api/tickets');
      expect(leaked(serialized)).to.deep.equal([]);
    });

    it('keeps them out of the warnings and the database', () => {
      expect(cliOutput.join('\n'), 'control: the users command reported').to.include(`added ${CLI_EMAIL}`);
      expect(leaked([...cliOutput, ...inProcess.warnings].join('\n'))).to.deep.equal([]);
      expect(leaked(databaseBytes(inProcess.dbFile))).to.deep.equal([]);
    });
  });
});
