// What the email provider keeps in the app's database, on both databases it runs on: sessions
// (DatabaseSessionStore) and failed sign-in counts (SigninThrottle). The tables are the ones the
// generated app's own migrations create (prisma/migrations, prisma/postgres/migrations), applied
// as the app applies them. The drivers are imported here, not through data/open.ts: mocha loads
// test files as CommonJS, so the modules open.ts imports with import() would be second copies
// (another AppError class, which the first copies' instanceof checks would not recognise).

import * as path from 'node:path';
import { expect } from 'chai';
import type { SessionData } from 'express-session';
import { createEmailAuth } from '../runtime-lib/auth/email/provider.ts';
import { DatabaseSessionStore } from '../runtime-lib/auth/email/session-store.ts';
import {
  EMAIL_FAILURE_THRESHOLD,
  IP_FAILURE_THRESHOLD,
  SigninThrottle,
} from '../runtime-lib/auth/email/signin-throttle.ts';
import { all, type Database, get, run } from '../runtime-lib/data/database.ts';
import { applyMigrations } from '../runtime-lib/data/migrate.ts';
import { openPostgres } from '../runtime-lib/data/postgres.ts';
import { applyPostgresMigrations } from '../runtime-lib/data/postgres-migrate.ts';
import { openSqlite } from '../runtime-lib/data/sqlite.ts';
import { freshDir, generate, ROOT } from './support/apps.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

const FAILURES = '_bp_signin_failures';
const WINDOW_MS = 15 * 60 * 1000;

describe('auth state in the database', function () {
  let appDir: string;

  before(async function () {
    appDir = freshDir('auth-storage');
    const r = await generate(path.join(ROOT, 'fixtures', 'helpdesk', 'helpdesk.toml'), appDir);
    expect(r.status, r.stderr).to.equal(0);
  });

  for (const kind of DATABASES) {
    describe(`on ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`, function () {
      let db: Database;
      let n = 0;

      beforeEach(async function () {
        n += 1;
        const url = await databaseUrl(kind, `auth_storage_${n}`);
        if (kind === 'sqlite') {
          const sqlite = openSqlite(url, appDir);
          applyMigrations(sqlite.connection, path.join(appDir, 'prisma', 'migrations'));
          db = sqlite;
        } else {
          const postgres = await openPostgres(url);
          await applyPostgresMigrations(postgres.pool, path.join(appDir, 'prisma', 'postgres', 'migrations'));
          db = postgres;
        }
      });

      afterEach(async () => db.close());

      const count = async (key: string): Promise<number | undefined> => {
        const row = await db.read(get(`SELECT "count" FROM "${FAILURES}" WHERE "key" = ?`, [key]));
        return row === undefined ? undefined : Number(row.count);
      };

      describe('SigninThrottle', function () {
        it(
          `makes the attempt after ${EMAIL_FAILURE_THRESHOLD} failures of one e-mail wait, ` +
            'and counts nothing while it waits',
          async () => {
            const throttle = new SigninThrottle(db, { pruneIntervalMs: 0 });
            for (let i = 0; i < EMAIL_FAILURE_THRESHOLD; i++)
              expect(await throttle.attempt('a@x.test', '10.0.0.1')).to.equal(0);
            const wait = await throttle.attempt('a@x.test', '10.0.0.1');
            expect(wait).to.be.within(1, 1000);
            expect(await count('email:a@x.test')).to.equal(EMAIL_FAILURE_THRESHOLD);
            expect(await count('ip:10.0.0.1')).to.equal(EMAIL_FAILURE_THRESHOLD);
            // Another e-mail from the same address is not held back by the first one's count.
            expect(await throttle.attempt('b@x.test', '10.0.0.1')).to.equal(0);
          },
        );

        it('forgets the e-mail on success and gives the address its attempt back', async () => {
          const throttle = new SigninThrottle(db, { pruneIntervalMs: 0 });
          for (let i = 0; i < 3; i++) await throttle.attempt('c@x.test', '10.0.0.2');
          await throttle.succeeded('c@x.test', '10.0.0.2');
          expect(await count('email:c@x.test')).to.equal(undefined);
          expect(await count('ip:10.0.0.2')).to.equal(2);
          await throttle.attempt('d@x.test', '10.0.0.3');
          await throttle.succeeded('d@x.test', '10.0.0.3');
          expect(await count('ip:10.0.0.3'), 'a count back at zero is deleted').to.equal(undefined);
        });

        it(`limits an address over all e-mails it tries (${IP_FAILURE_THRESHOLD}) and its sign-up probes`, async () => {
          const throttle = new SigninThrottle(db, { pruneIntervalMs: 0 });
          for (let i = 0; i < IP_FAILURE_THRESHOLD - 1; i++)
            expect(await throttle.attempt(`p${i}@x.test`, '10.0.0.4')).to.equal(0);
          expect(await throttle.addressWait('10.0.0.4')).to.equal(0);
          await throttle.addressFailed('10.0.0.4');
          expect(await throttle.addressWait('10.0.0.4')).to.be.above(0);
          expect(await throttle.attempt('fresh@x.test', '10.0.0.4')).to.be.above(0);
          expect(await count('email:fresh@x.test')).to.equal(undefined);
        });

        it('starts the count again after a pause of the window, and prunes lapsed counts', async () => {
          const throttle = new SigninThrottle(db, { pruneIntervalMs: 0 });
          const old = Date.now() - WINDOW_MS - 1000;
          await db.write(() =>
            run(`INSERT INTO "${FAILURES}" ("key", "count", "lastAt") VALUES (?, ?, ?), (?, ?, ?)`, [
              'email:e@x.test',
              50,
              old,
              'ip:10.0.0.9',
              3,
              old,
            ]),
          );
          expect(await throttle.attempt('e@x.test', '10.0.0.5')).to.equal(0);
          expect(await count('email:e@x.test')).to.equal(1);
          expect(await throttle.prune()).to.equal(1);
          const keys = (await db.read(all(`SELECT "key" FROM "${FAILURES}" ORDER BY "key"`))).map((r) => r.key);
          expect(keys).to.deep.equal(['email:e@x.test', 'ip:10.0.0.5']);
        });

        it('counts concurrent attempts one at a time: only one gets past the last free attempt', async () => {
          const throttle = new SigninThrottle(db, { pruneIntervalMs: 0 });
          for (let i = 0; i < EMAIL_FAILURE_THRESHOLD - 1; i++) await throttle.attempt('f@x.test', `10.1.0.${i}`);
          const waits = await Promise.all(
            Array.from({ length: 12 }, (_, i) => throttle.attempt('f@x.test', `10.2.0.${i}`)),
          );
          expect(waits.filter((w) => w === 0)).to.have.length(1);
          expect(await count('email:f@x.test')).to.equal(EMAIL_FAILURE_THRESHOLD);
        });
      });

      describe('DatabaseSessionStore', function () {
        const session = (expires: number, userId?: string) =>
          ({
            cookie: { expires: new Date(expires), originalMaxAge: 1000 },
            ...(userId ? { userId } : {}),
          }) as unknown as SessionData;
        const call = <T>(fn: (cb: (err?: unknown, value?: T) => void) => void): Promise<T | undefined> =>
          new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value))));

        it('keeps sessions, never returns an expired one nor revives it, and prunes it', async () => {
          const store = new DatabaseSessionStore(db, { pruneIntervalMs: 0 });
          await call((cb) => store.set('live', session(Date.now() + 60_000), cb));
          await call((cb) => store.set('dead', session(Date.now() - 1), cb));
          expect(await call((cb) => store.get('live', cb))).to.be.an('object');
          expect(await call((cb) => store.get('dead', cb))).to.equal(null);
          await call((cb) => store.touch('dead', session(Date.now() + 60_000), cb));
          expect(await call((cb) => store.get('dead', cb))).to.equal(null);
          expect(await call<number>((cb) => store.length(cb))).to.equal(1);
          expect(await store.prune()).to.equal(1);
          await call((cb) => store.destroy('live', cb));
          expect(await call((cb) => store.get('live', cb))).to.equal(null);
        });

        it("ends a person's sessions when they are removed, and saves none back to life", async () => {
          const store = new DatabaseSessionStore(db, { pruneIntervalMs: 0 });
          const users =
            'INSERT INTO "_bp_users" ("id", "email", "passwordHash", "roles", "createdAt") ' +
            `VALUES (?, ?, 'x', '[]', ?)`;
          await db.write(() => run(users, ['u1', 'u1@x.test', '2026-01-01T00:00:00.000+00:00']));
          await call((cb) => store.set('mine', session(Date.now() + 60_000, 'u1'), cb));
          const owner = await db.read(get(`SELECT "userId" FROM "_bp_sessions" WHERE "sid" = 'mine'`));
          expect(owner).to.deep.equal({ userId: 'u1' });
          await db.write(() => run(`DELETE FROM "_bp_users" WHERE "id" = 'u1'`));
          expect(await call((cb) => store.get('mine', cb))).to.equal(null);
          // A request of the removed person that ends after the removal saves nothing and fails nothing.
          await call((cb) => store.set('mine', session(Date.now() + 60_000, 'u1'), cb));
          expect(await db.read(get(`SELECT 1 AS "one" FROM "_bp_sessions" WHERE "sid" = 'mine'`))).to.equal(undefined);
        });
      });

      it(
        kind === 'postgres'
          ? 'refuses to start without SESSION_SECRET: every instance must share it'
          : 'starts without SESSION_SECRET in development, with a warning',
        () => {
          const warnings: string[] = [];
          const start = () =>
            createEmailAuth({
              db,
              appSlug: 'hd',
              loginPath: '/login',
              trustedOrigins: [],
              sessionDuration: 60,
              idleTimeout: 60,
              production: false,
              warn: (m) => warnings.push(m),
            }).close();
          if (kind === 'postgres') expect(start).to.throw(/SESSION_SECRET must be set on PostgreSQL/);
          else {
            start();
            expect(warnings.join('\n')).to.match(/SESSION_SECRET is not set/);
          }
        },
      );
    });
  }
});
