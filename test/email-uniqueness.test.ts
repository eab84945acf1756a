// Unique Email fields compare addresses the same way on both databases (issue 26, finding 6):
// in NFC and Unicode lower case (runtime core/values.ts emailKey, the form sign-in uses), through
// a key column beside the field under a unique index. SQLite's lower() folds A to Z only, so it
// stored ÉLISE@exämple.de beside élise@exämple.de, and the Kelvin sign beside k.
//
// On each database, the reference app (Customer.email is unique): É/é, the Kelvin sign K/k, a
// composed and a decomposed é, and the capital ẞ/ß are one address (409 UNIQUE_CONFLICT naming
// email, on create and on update); ß and ss stay two addresses. An app generated before the key
// existed (by the generator of the commit this change starts from) upgrades: the next generation
// adds the column in a migration, and the app fills the keys of the rows it holds at start. On
// SQLite, where the old app could store two forms of one address, the upgraded app refuses to
// start and names them.

import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import {
  freshDir,
  freshKey,
  generate,
  request,
  ROOT,
  startApp,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { withAppRows } from './support/database-rows.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

type Rec = Record<string, unknown>;

const AGENT_KEY = 'triage-key-0123456789abcdef';
const ENV = { TRIAGE_API_KEY: AGENT_KEY, SESSION_SECRET: 'email-uniqueness-secret-0123456789abcdef' };
const HELPDESK = path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml');
/** The commit this change starts from: its generator wrote no key column. */
const BEFORE_KEYS = '68801a8111fff1c910c24503b91476a0320d6f5b';

const KELVIN = '\u212a';
const CAPITAL_SHARP_S = '\u1e9e';

function send(app: RunningApp, method: string, url: string, json: unknown): Promise<HttpResponse> {
  return request(app.url, method, url, {
    json,
    headers: { authorization: `Bearer ${AGENT_KEY}`, 'idempotency-key': freshKey() },
  });
}
const customer = (app: RunningApp, email: string) => send(app, 'POST', '/api/customers', { name: 'someone', email });

function expectCreated(res: HttpResponse, email: string): string {
  expect(res.status, `${email}: ${res.text}`).to.equal(201);
  // Stored and answered as sent; the key column is the app's own.
  expect(res.body).to.include({ email });
  expect(Object.keys(res.body as Rec).some((k) => k.includes('key'))).to.equal(false);
  return (res.body as Rec).id as string;
}

function expectTaken(res: HttpResponse, what: string): void {
  expect(res.status, `${what}: ${res.text}`).to.equal(409);
  const error = (res.body as { error: Rec }).error;
  expect(error.code, what).to.equal('UNIQUE_CONFLICT');
  expect(error.details, what).to.deep.equal([{ field: 'email', code: 'UNIQUE', message: 'already taken' }]);
}

/** The generator of BEFORE_KEYS, checked out once under test/.tmp (so it resolves this checkout's node_modules). */
function oldGenerator(): string {
  const dir = path.join(freshDir('email-keys-old-bp'), 'bp');
  fs.mkdirSync(dir);
  const archive = execFileSync(
    'git',
    ['archive', BEFORE_KEYS, 'bin', 'generator', 'runtime-lib', 'templates', 'package.json'],
    { cwd: ROOT, maxBuffer: 64 << 20 },
  );
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  return path.join(dir, 'bin', 'bp');
}

describe('unique Email fields: one comparison on both databases', function () {
  this.timeout(240_000);
  let oldBp: string;
  before(() => {
    oldBp = oldGenerator();
  });

  /** The helpdesk as the generator before the key column made it, holding these customers; then generated anew. */
  async function upgradedApp(name: string, url: string, addresses: readonly string[]): Promise<string> {
    const appDir = path.join(freshDir(name), 'app');
    const r = spawnSync(process.execPath, [oldBp, 'generate', HELPDESK, '-o', appDir], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    const app = await startApp(appDir, { ...ENV, DATABASE_URL: url });
    try {
      for (const address of addresses) expectCreated(await customer(app, address), address);
    } finally {
      await app.stop();
    }
    await generate(HELPDESK, appDir);
    return appDir;
  }

  for (const database of DATABASES) {
    describe(database, () => {
      it(
        'refuses É/é, K (Kelvin)/k, composed/decomposed é and ẞ/ß as one address, on create and update; ' +
          'ß and ss are two',
        async () => {
          const appDir = path.join(freshDir(`email-unique-${database}`), 'app');
          await generate(HELPDESK, appDir);
          const app = await startApp(appDir, { ...ENV, DATABASE_URL: await databaseUrl(database, 'email_unique') });
          try {
            expectCreated(await customer(app, 'élise@exämple.de'), 'élise@exämple.de');
            expectTaken(await customer(app, 'ÉLISE@EXÄMPLE.DE'), 'É beside é');
            expectTaken(await customer(app, 'E\u0301lise@exämple.de'), 'a decomposed É beside é');
            expectCreated(await customer(app, 'kim@kelvin.io'), 'kim@kelvin.io');
            expectTaken(await customer(app, `${KELVIN}im@kelvin.io`), 'the Kelvin sign beside k');
            expectCreated(await customer(app, 'straße@beispiel.de'), 'straße@beispiel.de');
            expectTaken(await customer(app, `STRA${CAPITAL_SHARP_S}E@beispiel.de`), 'ẞ beside ß');
            // Lower case never makes ß "ss": two addresses.
            expectCreated(await customer(app, 'strasse@beispiel.de'), 'strasse@beispiel.de');
            const other = expectCreated(await customer(app, 'other@example.com'), 'other@example.com');
            expectTaken(
              await send(app, 'PUT', `/api/customers/${other}`, { email: 'Élise@Exämple.de' }),
              'an update to É',
            );
            expectTaken(
              await send(app, 'PUT', `/api/customers/${other}`, { email: `${KELVIN}IM@KELVIN.IO` }),
              'an update to K',
            );
            // Its own address in another case is its own.
            const renamed = await send(app, 'PUT', `/api/customers/${other}`, { email: 'OTHER@example.com' });
            expect(renamed.status, renamed.text).to.equal(200);
            expect(renamed.body).to.include({ email: 'OTHER@example.com' });
            const list = await request(app.url, 'GET', '/api/customers?limit=100', {
              headers: { authorization: `Bearer ${AGENT_KEY}` },
            });
            const emails = (list.body as { items: Rec[] }).items.map((c) => c.email).sort();
            expect(emails).to.deep.equal(
              [
                'OTHER@example.com',
                'kim@kelvin.io',
                'strasse@beispiel.de',
                'straße@beispiel.de',
                'élise@exämple.de',
              ].sort(),
            );
          } finally {
            await app.stop();
          }
        },
      );

      it('upgrades an app made before the key: a migration adds it, the app fills it at start; it holds', async () => {
        const url = await databaseUrl(database, 'email_upgrade');
        const appDir = await upgradedApp(`email-upgrade-${database}`, url, ['Élise@upgrade.de', 'Bob@upgrade.de']);
        const added = fs.readFileSync(
          path.join(
            appDir,
            'prisma',
            ...(database === 'postgres' ? ['postgres'] : []),
            'migrations',
            '0002_blueprint_change',
            'migration.sql',
          ),
          'utf8',
        );
        expect(added).to.match(/ALTER TABLE "Customer" ADD COLUMN\s+"_bp_key_email" TEXT;/);
        const app = await startApp(appDir, { ...ENV, DATABASE_URL: url });
        try {
          const keys = await withAppRows(url, appDir, (rows) =>
            rows.all('SELECT "email", "_bp_key_email" AS "key" FROM "Customer" ORDER BY "email"'),
          );
          expect(keys).to.deep.equal([
            { email: 'Bob@upgrade.de', key: 'bob@upgrade.de' },
            { email: 'Élise@upgrade.de', key: 'élise@upgrade.de' },
          ]);
          expectTaken(await customer(app, 'élise@upgrade.de'), 'é beside a stored É');
          expectTaken(await customer(app, 'BOB@UPGRADE.DE'), 'BOB beside a stored Bob');
        } finally {
          await app.stop();
        }
      });
    });
  }

  it(
    'SQLite: an app whose old data holds one address twice (É and é) ' +
      'refuses to start after the upgrade, naming them',
    async () => {
      const url = 'file:./data/conflict.db';
      // The old app's index on lower() folds A to Z only: both are stored.
      const appDir = await upgradedApp('email-upgrade-conflict', url, ['Élise@dup.de', 'élise@dup.de']);
      const start = spawnSync(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
        cwd: appDir,
        env: { ...process.env, ...ENV, DATABASE_URL: url, PORT: '0' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(start.status, start.stdout + start.stderr).to.not.equal(0);
      expect(start.stderr).to.include(
        'Customer.email is unique, yet holds one address more than once: "Élise@dup.de" = "élise@dup.de"',
      );
    },
  );
});
