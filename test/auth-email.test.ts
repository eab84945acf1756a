// The e-mail/password provider over real HTTP, mounted the way generated apps mount it:
// tracing → session → actor resolution → csrf → auth router → app routes → error handler.
// A manual cookie jar stands in for the browser, so every cookie the server sets is visible.

import { expect } from 'chai';
import * as fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import express, { type Express } from 'express';
import { ANONYMOUS, type Actor } from '../runtime-lib/core/actor.ts';
import { createEmailAuth, type EmailAuth, type EmailAuthOptions } from '../runtime-lib/auth/email/provider.ts';
import type { Database } from '../runtime-lib/data/database.ts';
import { type Connection, openSqlite, type SqliteDatabase } from '../runtime-lib/data/sqlite.ts';
import { AppError } from '../runtime-lib/core/errors.ts';
import { jsonBody } from '../runtime-lib/http/body.ts';
import { matched, tracing } from '../runtime-lib/http/pipeline.ts';
import { errorHandler } from '../runtime-lib/http/respond.ts';
import { renderLoginPage } from '../runtime-lib/auth/email/login-page.ts';
import { PAGE_CSP } from '../runtime-lib/pages/document.ts';
import { hashPassword, verifyPassword } from '../runtime-lib/auth/email/password.ts';
import { DatabaseSessionStore } from '../runtime-lib/auth/email/session-store.ts';
import { TraceStore } from '../runtime-lib/observe/tracing.ts';
import { CookieClient } from './support/access/client.ts';

/** The tables the app's migrations create; the session DDL is the one the generator emits. */
const AUTH_DDL = `
CREATE TABLE "_bp_users" (id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, passwordHash TEXT NOT NULL,
  roles TEXT NOT NULL DEFAULT '[]', createdAt DATETIME NOT NULL);
CREATE TABLE "_bp_sessions" (sid TEXT PRIMARY KEY, data TEXT NOT NULL, expiresAt INTEGER NOT NULL,
  userId TEXT REFERENCES "_bp_users" (id) ON DELETE CASCADE);
CREATE INDEX "_bp_sessions_expiresAt_idx" ON "_bp_sessions"("expiresAt");
CREATE TABLE "_bp_signin_failures" (key TEXT PRIMARY KEY, count INTEGER NOT NULL, lastAt BIGINT NOT NULL);
`;

const SECRET = 'test-secret-that-is-long-enough-for-production-use';
const PASSWORD = 'correct horse battery staple';
const TRUSTED = 'https://trusted.example';
const AGENT: Actor = { kind: 'agent', id: 'agent-1', credentialId: 'cred-1', roles: ['agent'] };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Running {
  base: string;
  db: SqliteDatabase;
  /** The database's own connection, to look at and change rows behind the app's back. */
  sql: Connection;
  auth: EmailAuth;
  traces: TraceStore;
  things: unknown[];
  server: Server;
}

function openTestDb(dir: string): SqliteDatabase {
  const db = openSqlite(`file:${path.join(dir, 'app.db')}`, dir);
  if (!db.connection.prepare(`SELECT 1 FROM sqlite_master WHERE name = '_bp_users'`).get())
    db.connection.exec(AUTH_DDL);
  return db;
}

function buildApp(auth: EmailAuth, traces: TraceStore, things: unknown[]): Express {
  const app = express();
  // Lets a test claim HTTPS through X-Forwarded-Proto, as a TLS-terminating proxy would.
  app.set('trust proxy', 'loopback');
  app.use(tracing(traces));
  app.use(auth.session);
  // Stand-in for the app's actor resolution: a verified API key makes an agent, else the session.
  app.use(async (req, _res, next) => {
    try {
      req.actor =
        req.headers.authorization === 'Bearer test-key' ? AGENT : ((await auth.sessionActor(req)) ?? ANONYMOUS);
    } catch (err) {
      return next(err);
    }
    next();
  });
  app.use(auth.csrf);
  app.use(auth.router);
  app.post('/api/things', matched('things.create'), jsonBody, (req, res) => {
    if (req.actor.kind === 'anonymous') throw new AppError('UNAUTHENTICATED', 'sign in first');
    things.push(req.body);
    res.status(201).json({ by: req.actor.id, body: req.body });
  });
  app.use(errorHandler());
  return app;
}

async function start(dir: string, overrides: Partial<EmailAuthOptions> = {}): Promise<Running> {
  const db = openTestDb(dir);
  const auth = createEmailAuth({
    db,
    appSlug: 'hd',
    loginPath: '/login',
    trustedOrigins: [TRUSTED],
    sessionDuration: 3600,
    idleTimeout: 600,
    production: false,
    secret: SECRET,
    warn: () => {},
    ...overrides,
  });
  const traces = new TraceStore();
  const things: unknown[] = [];
  const server = buildApp(auth, traces, things).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    db,
    sql: db.connection,
    auth,
    traces,
    things,
    server,
  };
}

async function stop(app: Running): Promise<void> {
  app.server.closeAllConnections();
  await new Promise((resolve) => app.server.close(resolve));
  app.auth.close();
  await app.db.close();
}

/** The shared cookie-jar client, with this provider's endpoints as shortcuts. */
class Client extends CookieClient {
  /** The session endpoint's token (the session's, or the anonymous one of this client's cookie). */
  async token(): Promise<string> {
    return (await this.send('GET', '/api/auth/session')).body.csrfToken as string;
  }

  signup(email: string, password = PASSWORD) {
    return this.send('POST', '/api/auth/signup', { json: { email, password } });
  }

  login(email: string, password = PASSWORD, headers: Record<string, string> = {}) {
    return this.send('POST', '/api/auth/login', { json: { email, password }, headers });
  }
}

describe('email auth', function () {
  let dir: string;
  let app: Running;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-auth-'));
    app = await start(dir);
  });

  afterEach(async () => {
    await stop(app);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('sign-up and sign-in', () => {
    it('signs up with a normalized e-mail, no roles, a hashed password and a session', async () => {
      const client = new Client(app.base);
      const { status, body } = await client.signup('  Alice@Example.COM ');
      expect(status).to.equal(201);
      expect(body.actor).to.include({ kind: 'user', email: 'alice@example.com' });
      expect(body.actor.roles).to.deep.equal([]);
      expect(body.actor.credentialId).to.equal(`session:${body.actor.id}`);
      expect(body.csrfToken).to.be.a('string').with.length.greaterThan(20);
      expect(client.cookies.has('hd.sid')).to.equal(true);

      const row = app.sql.prepare('SELECT * FROM _bp_users').get() as Record<string, string>;
      expect(row.id).to.match(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
      expect(row.roles).to.equal('[]');
      expect(row.createdAt).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/);
      expect(row.passwordHash).to.match(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]{86}==$/);

      const session = await client.send('GET', '/api/auth/session');
      expect(session.body.actor.email).to.equal('alice@example.com');
      expect(session.body.csrfToken).to.equal(body.csrfToken);
    });

    it('refuses a taken e-mail, a weak password and a malformed e-mail', async () => {
      const client = new Client(app.base);
      await client.signup('alice@example.com');
      const taken = await new Client(app.base).signup('ALICE@example.com');
      expect(taken.status).to.equal(409);
      expect(taken.body.error.code).to.equal('EMAIL_TAKEN');

      const weak = await new Client(app.base).signup('bob@example.com', 'short');
      expect(weak.status).to.equal(400);
      expect(weak.body.error.code).to.equal('WEAK_PASSWORD');
      expect(weak.body.error.message).to.contain('at least 12 characters');
      const huge = await new Client(app.base).signup('bob@example.com', 'x'.repeat(1025));
      expect(huge.body.error).to.include({
        code: 'WEAK_PASSWORD',
        message: 'the password must be at most 1024 characters long',
      });

      const bad = await new Client(app.base).signup('not-an-email', PASSWORD);
      expect(bad.status).to.equal(400);
      expect(bad.body.error.code).to.equal('VALIDATION_FAILED');
      expect(bad.body.error.details).to.deep.equal([
        { field: 'email', code: 'INVALID_EMAIL', message: 'not a valid e-mail address' },
      ]);
      expect((app.sql.prepare('SELECT COUNT(*) AS n FROM _bp_users').get() as { n: number }).n).to.equal(1);
    });

    it('gives a new session id at sign-in; a session planted before it stops working (fixation)', async () => {
      await new Client(app.base).signup('alice@example.com');
      // Mallory plants her own signed-in session (and knows its token) in the victim's browser.
      const mallory = new Client(app.base);
      const planted = await mallory.signup('mallory@example.com');
      const victim = new Client(app.base);
      victim.cookies.set('hd.sid', mallory.cookies.get('hd.sid') as string);

      const { status, body } = await victim.login('alice@example.com', PASSWORD, {
        'x-csrf-token': planted.body.csrfToken,
      });
      expect(status).to.equal(200);
      expect(body.actor.email).to.equal('alice@example.com');
      expect(victim.cookies.get('hd.sid')).to.be.a('string').and.not.equal(mallory.cookies.get('hd.sid'));
      expect(body.csrfToken).to.not.equal(planted.body.csrfToken);
      // The planted id names no one any more, so it cannot be used to act as Alice.
      expect((await mallory.send('GET', '/api/auth/session')).body.actor.kind).to.equal('anonymous');
      expect((await victim.send('GET', '/api/auth/session')).body.actor.email).to.equal('alice@example.com');
    });

    it('answers a wrong password and an unknown e-mail alike', async () => {
      await new Client(app.base).signup('alice@example.com');
      const wrong = await new Client(app.base).login('alice@example.com', 'not the password at all');
      const unknown = await new Client(app.base).login('nobody@example.com', 'not the password at all');
      for (const r of [wrong, unknown]) {
        expect(r.status).to.equal(401);
        expect(r.body.error).to.include({
          code: 'INVALID_CREDENTIALS',
          message: 'the e-mail or password is incorrect',
          retryable: false,
        });
      }
      expect(Object.keys(wrong.body.error)).to.deep.equal(Object.keys(unknown.body.error));
      expect(wrong.headers.get('set-cookie')).to.equal(null);
    });

    it('reports missing fields', async () => {
      const { status, body } = await new Client(app.base).send('POST', '/api/auth/login', {
        json: { email: 'a@example.com' },
      });
      expect(status).to.equal(400);
      expect(body.error.details).to.deep.equal([
        { field: 'password', code: 'REQUIRED', message: 'a password is required' },
      ]);
    });
  });

  describe('failed sign-ins', () => {
    it('slows down an e-mail after 5 failures with 429 and Retry-After, even for the right password', async () => {
      await new Client(app.base).signup('alice@example.com');
      const client = new Client(app.base);
      for (let i = 0; i < 5; i++)
        expect((await client.login('alice@example.com', `wrong password ${i}`)).status).to.equal(401);
      for (const password of ['wrong password 5', PASSWORD]) {
        const blocked = await client.login('alice@example.com', password);
        expect(blocked.status).to.equal(429);
        expect(blocked.body.error).to.include({ code: 'TOO_MANY_ATTEMPTS', retryable: true });
        expect(Number(blocked.headers.get('retry-after'))).to.be.within(1, 900);
      }
      // Another e-mail from the same address is not affected.
      expect((await client.login('bob@example.com', 'wrong password x')).status).to.equal(401);
      // The wait is honoured: after Retry-After the right password works again.
      await sleep(1100);
      expect((await client.login('alice@example.com')).status).to.equal(200);
    });

    it('lets a success clear the e-mail counter', async () => {
      await new Client(app.base).signup('alice@example.com');
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < 4; i++)
          expect((await new Client(app.base).login('alice@example.com', `wrong password ${i}`)).status).to.equal(401);
        expect((await new Client(app.base).login('alice@example.com')).status).to.equal(200);
      }
    });

    it('slows down one address trying many e-mails', async () => {
      const client = new Client(app.base);
      for (let i = 0; i < 20; i++)
        expect((await client.login(`user${i}@example.com`, 'wrong password here')).status).to.equal(401);
      const blocked = await client.login('fresh@example.com', 'wrong password here');
      expect(blocked.status).to.equal(429);
      expect(blocked.headers.get('retry-after')).to.equal('1');
    });

    it('counts parallel guesses before hashing, so a burst cannot pass the limit', async () => {
      await new Client(app.base).signup('alice@example.com');
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => new Client(app.base).login('alice@example.com', `wrong password ${i}`)),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 401)).to.have.length(5);
      expect(statuses.filter((s) => s === 429)).to.have.length(7);
    });
  });

  describe('CSRF', () => {
    async function signedIn(): Promise<{ client: Client; token: string }> {
      const client = new Client(app.base);
      const { body } = await client.signup('alice@example.com');
      return { client, token: body.csrfToken as string };
    }

    it('refuses a session mutation without the token, and changes nothing', async () => {
      const { client } = await signedIn();
      for (const headers of [{}, { 'x-csrf-token': 'forged' }] as Record<string, string>[]) {
        const { status, body } = await client.send('POST', '/api/things', { json: { name: 'x' }, headers });
        expect(status).to.equal(403);
        expect(body.error.code).to.equal('CSRF_FAILED');
      }
      expect(app.things).to.deep.equal([]);
    });

    it('accepts the token in the X-CSRF-Token header or a _csrf field, which handlers never see', async () => {
      const { client, token } = await signedIn();
      const viaHeader = await client.send('POST', '/api/things', {
        json: { name: 'a' },
        headers: { 'x-csrf-token': token },
      });
      expect(viaHeader.status).to.equal(201);
      const viaField = await client.send('POST', '/api/things', { json: { name: 'b', _csrf: token } });
      expect(viaField.status).to.equal(201);
      expect(viaField.body).to.deep.equal({ by: viaHeader.body.by, body: { name: 'b' } });
      expect(app.things).to.deep.equal([{ name: 'a' }, { name: 'b' }]);
    });

    it('refuses an untrusted Origin and accepts its own and trusted ones', async () => {
      const { client, token } = await signedIn();
      const headers = (origin: string) => ({ 'x-csrf-token': token, origin });
      const evil = await client.send('POST', '/api/things', {
        json: { name: 'x' },
        headers: headers('https://evil.example'),
      });
      expect(evil.status).to.equal(403);
      expect(evil.body.error.code).to.equal('CSRF_FAILED');
      const nul = await client.send('POST', '/api/things', { json: { name: 'x' }, headers: headers('null') });
      expect(nul.status).to.equal(403);
      const crossSite = await client.send('POST', '/api/things', {
        json: { name: 'x' },
        headers: { 'x-csrf-token': token, 'sec-fetch-site': 'cross-site' },
      });
      expect(crossSite.status).to.equal(403);
      expect(app.things).to.deep.equal([]);
      expect(
        (await client.send('POST', '/api/things', { json: { name: 'own' }, headers: headers(app.base) })).status,
      ).to.equal(201);
      expect(
        (await client.send('POST', '/api/things', { json: { name: 'trusted' }, headers: headers(TRUSTED) })).status,
      ).to.equal(201);
    });

    it('lets API-key requests skip CSRF, even with a session cookie', async () => {
      const { client } = await signedIn();
      const { status, body } = await client.send('POST', '/api/things', {
        json: { name: 'k' },
        headers: { authorization: 'Bearer test-key' },
      });
      expect(status).to.equal(201);
      expect(body.by).to.equal('agent-1');
      const session = await client.send('GET', '/api/auth/session', { headers: { authorization: 'Bearer test-key' } });
      expect(session.body).to.deep.equal({ actor: AGENT, csrfToken: null });
    });

    it('blocks login CSRF: a form post without the sign-in page session, or from another origin', async () => {
      await new Client(app.base).signup('mallory@example.com');
      // A foreign page's form: the victim's browser has no session with a token for it.
      const victim = new Client(app.base);
      const forged = await victim.send('POST', '/api/auth/login', {
        form: { email: 'mallory@example.com', password: PASSWORD },
      });
      expect(forged.status).to.equal(403);
      expect(forged.headers.get('content-type')).to.match(/^text\/html/);
      expect((await victim.send('GET', '/api/auth/session')).body.actor.kind).to.equal('anonymous');
      // A foreign page's fetch (modern browsers send Origin) is refused before any check of the password.
      const viaFetch = await new Client(app.base).login('mallory@example.com', PASSWORD, {
        origin: 'https://evil.example',
      });
      expect(viaFetch.status).to.equal(403);
      expect(viaFetch.body.error.code).to.equal('CSRF_FAILED');
      // A text/plain body (sendable cross-site without preflight) is no way around it.
      const plain = await fetch(`${app.base}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ email: 'mallory@example.com', password: PASSWORD }),
      });
      expect(plain.status).to.equal(403);
      expect(((await plain.json()) as { error: { code: string } }).error.code).to.equal('CSRF_FAILED');
    });
  });

  describe('anonymous visitors', () => {
    const sessionRows = () => (app.sql.prepare('SELECT COUNT(*) AS n FROM _bp_sessions').get() as { n: number }).n;
    const pageToken = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] as string;

    it('get a signed token and an HttpOnly nonce cookie, and cost no stored row', async () => {
      const client = new Client(app.base);
      const first = await client.send('GET', '/api/auth/session');
      expect(first.body.actor).to.deep.equal(ANONYMOUS);
      const token = first.body.csrfToken as string;
      expect(token).to.match(/^[A-Za-z0-9_-]{24}\.[A-Za-z0-9_-]{43}$/);
      expect(client.lastSetCookie).to.have.length(1);
      expect(client.lastSetCookie[0]).to.match(/^hd\.csrf=[A-Za-z0-9_-]{24}; Path=\/; HttpOnly; SameSite=Lax$/);
      expect(token.startsWith(`${client.cookies.get('hd.csrf')}.`)).to.equal(true);
      // The same visitor keeps its nonce: the same token, no new cookie, on the page too.
      const again = await client.send('GET', '/api/auth/session');
      expect(again.body.csrfToken).to.equal(token);
      expect(client.lastSetCookie).to.deep.equal([]);
      expect(pageToken((await client.send('GET', '/login')).text)).to.equal(token);
      expect(client.lastSetCookie).to.deep.equal([]);
      // A failed form sign-in shows the page again, still without a session.
      const failed = await client.send('POST', '/api/auth/login', {
        form: { _csrf: token, email: 'a@example.com', password: 'wrong password!!' },
      });
      expect(failed.status).to.equal(401);
      expect(pageToken(failed.text)).to.equal(token);
      expect(client.cookies.has('hd.sid')).to.equal(false);
      expect(sessionRows()).to.equal(0);
    });

    it('accept a sign-in form only with the token of their own cookie', async () => {
      await new Client(app.base).signup('alice@example.com');
      const alice = new Client(app.base);
      const aliceToken = pageToken((await alice.send('GET', '/login')).text);
      const bob = new Client(app.base);
      await bob.send('GET', '/login');
      const [nonce, mac] = aliceToken.split('.');
      const tampered = `${nonce}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`;
      const form = (token: string) => ({ form: { _csrf: token, email: 'alice@example.com', password: PASSWORD } });
      for (const [label, client, token] of [
        ["another visitor's token", bob, aliceToken],
        ['a tampered signature', alice, tampered],
        ['a token without its cookie', new Client(app.base), aliceToken],
      ] as const) {
        const res = await client.send('POST', '/api/auth/login', form(token));
        expect(res.status, label).to.equal(403);
        expect(res.text, label).to.contain('The form expired. Please try again.');
        expect(client.cookies.has('hd.sid'), label).to.equal(false);
      }
      // A token made with another secret is refused too.
      await stop(app);
      app = await start(dir, { secret: `${SECRET}-rotated` });
      const restarted = new Client(app.base);
      restarted.cookies.set('hd.csrf', alice.cookies.get('hd.csrf') as string);
      const rotated = await restarted.send('POST', '/api/auth/login', form(aliceToken));
      expect(rotated.status).to.equal(403);
      // The page re-issues a token for the same nonce under the new secret, and it works.
      const fresh = pageToken(rotated.text);
      expect(fresh.split('.')[0]).to.equal(nonce);
      const ok = await restarted.send('POST', '/api/auth/login', form(fresh));
      expect(ok.status).to.equal(303);
      expect(restarted.cookies.has('hd.sid')).to.equal(true);
    });

    it('get neither a session cookie nor a token when the session cannot be stored', async () => {
      await new Client(app.base).signup('alice@example.com');
      const rowsBefore = sessionRows();
      app.sql.exec(
        `CREATE TRIGGER no_sessions BEFORE INSERT ON _bp_sessions BEGIN SELECT RAISE(ABORT, 'disk is full'); END`,
      );
      const json = await new Client(app.base).login('alice@example.com');
      const signup = await new Client(app.base).signup('bob@example.com');
      const browser = new Client(app.base);
      const token = pageToken((await browser.send('GET', '/login')).text);
      const form = await browser.send('POST', '/api/auth/login', {
        form: { _csrf: token, email: 'alice@example.com', password: PASSWORD },
      });
      for (const [label, res] of [
        ['JSON sign-in', json],
        ['sign-up', signup],
        ['form sign-in', form],
      ] as const) {
        expect(res.status, label).to.be.at.least(500);
        expect(res.body.error, label).to.be.an('object');
        expect(res.text, label).to.not.contain('csrfToken');
        expect(
          res.headers.getSetCookie().filter((c) => c.startsWith('hd.sid=')),
          label,
        ).to.deep.equal([]);
      }
      expect(sessionRows()).to.equal(rowsBefore);
      // Once the store works again, so does signing in.
      app.sql.exec('DROP TRIGGER no_sessions');
      expect((await new Client(app.base).login('alice@example.com')).status).to.equal(200);
    });
  });

  describe('the sign-in page', () => {
    it('is served without authentication, with a strict CSP and the anonymous token embedded', async () => {
      const client = new Client(app.base);
      const res = await client.send('GET', '/login?next=%2Ftickets%3Fstatus%3Dopen');
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-security-policy')).to.equal(PAGE_CSP);
      expect(res.headers.get('cache-control')).to.equal('no-store');
      const html = res.text;
      expect(html).to.contain('action="/api/auth/login"');
      expect(html).to.contain('<input type="hidden" name="next" value="/tickets?status=open">');
      expect(html).to.not.match(/<script/i);
      const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
      expect(token).to.equal(await client.token());
    });

    it('drops a next that would leave the site', async () => {
      for (const next of ['//evil.example/x', '/\\evil.example', 'https://evil.example', '/.//evil.example']) {
        const html = (await new Client(app.base).send('GET', `/login?next=${encodeURIComponent(next)}`)).text;
        expect(html).to.not.contain('name="next"');
      }
    });

    it('signs in with the form: 303 to next; a failure shows the page again with the error', async () => {
      await new Client(app.base).signup('alice@example.com');
      const client = new Client(app.base);
      const page = (await client.send('GET', '/login')).text;
      const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] as string;

      const failed = await client.send('POST', '/api/auth/login', {
        form: { _csrf: token, email: 'Alice@example.com', password: 'wrong password!!', next: '/tickets' },
      });
      expect(failed.status).to.equal(401);
      const failedHtml = failed.text;
      expect(failedHtml).to.contain('role="alert"');
      expect(failedHtml).to.contain('the e-mail or password is incorrect');
      expect(failedHtml).to.contain('value="Alice@example.com"');
      expect(failedHtml).to.contain('name="next" value="/tickets"');

      const ok = await client.send('POST', '/api/auth/login', {
        form: { _csrf: token, email: 'alice@example.com', password: PASSWORD, next: '/tickets' },
      });
      expect(ok.status).to.equal(303);
      expect(ok.headers.get('location')).to.equal('/tickets');
      expect((await client.send('GET', '/api/auth/session')).body.actor.email).to.equal('alice@example.com');

      // Sign-out by form, with the new session's token in the _csrf field.
      const token2 = await client.token();
      const out = await client.send('POST', '/api/auth/logout', { form: { _csrf: token2 } });
      expect(out.status).to.equal(303);
      expect(out.headers.get('location')).to.equal('/login');
      expect((await client.send('GET', '/api/auth/session')).body.actor.kind).to.equal('anonymous');
    });

    it('lands a form sign-in without next on the sign-in page, which shows who is signed in', async () => {
      await new Client(app.base).signup('alice@example.com');
      const client = new Client(app.base);
      const token = /name="_csrf" value="([^"]+)"/.exec((await client.send('GET', '/login')).text)?.[1] as string;
      const ok = await client.send('POST', '/api/auth/login', {
        form: { _csrf: token, email: 'alice@example.com', password: PASSWORD },
      });
      expect(ok.status).to.equal(303);
      expect(ok.headers.get('location')).to.equal('/login');

      const landed = await client.send('GET', '/login?next=%2Ftickets');
      expect(landed.status).to.equal(200);
      expect(landed.headers.get('content-security-policy')).to.equal(PAGE_CSP);
      expect(landed.text).to.contain('<title>Signed in to hd</title>');
      expect(landed.text).to.contain('Signed in as <strong id="signed-in-email">alice@example.com</strong>');
      expect(landed.text).to.contain('<a href="/tickets">Continue to /tickets</a>');
      expect(landed.text).to.not.contain('type="password"');
      // Its sign-out button posts the session's own token.
      expect(landed.text).to.contain('<form method="post" action="/api/auth/logout">');
      const sessionToken = /name="_csrf" value="([^"]+)"/.exec(landed.text)?.[1];
      expect(sessionToken).to.equal(await client.token());
      const out = await client.send('POST', '/api/auth/logout', { form: { _csrf: sessionToken as string } });
      expect(out.status).to.equal(303);
      expect(out.headers.get('location')).to.equal('/login');
      const after = await client.send('GET', '/login');
      expect(after.text).to.contain('<title>Sign in to hd</title>');
      expect(after.text).to.not.contain('Signed in as');
    });

    it('offers sign-up when auth.signup is on, and a sign-up through that page signs the person in', async () => {
      const client = new Client(app.base);
      const signIn = (await client.send('GET', '/login?next=%2Ftickets')).text;
      expect(signIn).to.contain('<a href="/login?mode=signup&amp;next=%2Ftickets">No account yet? Create one</a>');
      const page = await client.send('GET', '/login?mode=signup&next=%2Ftickets');
      expect(page.text).to.contain('<title>Create an account for hd</title>');
      expect(page.text).to.contain('action="/api/auth/signup"');
      expect(page.text).to.contain('autocomplete="new-password"');
      expect(page.text).to.contain('<a href="/login?next=%2Ftickets">Already have an account? Sign in</a>');
      const token = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1] as string;
      const weak = await client.send('POST', '/api/auth/signup', {
        form: { _csrf: token, email: 'carol@example.com', password: 'short', next: '/tickets' },
      });
      expect(weak.status).to.equal(400);
      expect(weak.text).to.contain('action="/api/auth/signup"');
      const created = await client.send('POST', '/api/auth/signup', {
        form: { _csrf: token, email: 'carol@example.com', password: PASSWORD, next: '/tickets' },
      });
      expect(created.status).to.equal(303);
      expect(created.headers.get('location')).to.equal('/tickets');
      expect((await client.send('GET', '/api/auth/session')).body.actor.email).to.equal('carol@example.com');
    });

    it('offers no sign-up when auth.signup is off', async () => {
      await stop(app);
      app = await start(dir, { signup: false });
      const client = new Client(app.base);
      for (const url of ['/login', '/login?mode=signup']) {
        const html = (await client.send('GET', url)).text;
        expect(html, url).to.contain('<title>Sign in to hd</title>');
        expect(html, url).to.contain('action="/api/auth/login"');
        expect(html, url).to.not.match(/signup|Create/);
      }
      // The route is gone: no account is made, whatever the body (404 comes from the app's router).
      const token = /name="_csrf" value="([^"]+)"/.exec((await client.send('GET', '/login')).text)?.[1] as string;
      for (const send of [
        { json: { email: 'eve@example.com', password: PASSWORD } },
        { form: { _csrf: token, email: 'eve@example.com', password: PASSWORD } },
      ]) {
        expect((await client.send('POST', '/api/auth/signup', send)).status).to.equal(404);
      }
      expect((app.sql.prepare('SELECT COUNT(*) AS n FROM _bp_users').get() as { n: number }).n).to.equal(0);
    });

    it('escapes every value it shows', () => {
      const html = renderLoginPage({
        title: '<T>',
        action: '/a"b',
        csrfToken: '"><script>',
        error: '<b>x</b>',
        email: "o'neil@example.com",
        next: '/x?a=1&b=2',
      });
      expect(html).to.contain('<title>&lt;T&gt;</title>');
      expect(html).to.contain('action="/a&quot;b"');
      expect(html).to.contain('value="&quot;&gt;&lt;script&gt;"');
      expect(html).to.contain('&lt;b&gt;x&lt;/b&gt;');
      expect(html).to.contain('value="o&#39;neil@example.com"');
      expect(html).to.contain('value="/x?a=1&amp;b=2"');
    });
  });

  describe('sessions', () => {
    it('logout destroys the session: the old cookie no longer works', async () => {
      const client = new Client(app.base);
      const { body } = await client.signup('alice@example.com');
      const cookie = client.cookies.get('hd.sid') as string;
      const res = await client.send('POST', '/api/auth/logout', { headers: { 'x-csrf-token': body.csrfToken } });
      expect(res.status).to.equal(204);
      expect(client.lastSetCookie.some((c) => c.startsWith('hd.sid=;') && /Expires=Thu, 01 Jan 1970/.test(c))).to.equal(
        true,
      );
      expect(client.cookies.has('hd.sid')).to.equal(false);
      expect((app.sql.prepare('SELECT COUNT(*) AS n FROM _bp_sessions').get() as { n: number }).n).to.equal(0);

      // Replayed with its old token, the cookie names no session: the caller is anonymous.
      const replay = new Client(app.base);
      replay.cookies.set('hd.sid', cookie);
      expect(
        (await replay.send('POST', '/api/things', { json: { n: 1 }, headers: { 'x-csrf-token': body.csrfToken } }))
          .status,
      ).to.equal(401);
      expect((await replay.send('GET', '/api/auth/session')).body.actor.kind).to.equal('anonymous');
    });

    it('reads roles on every request; a removed user is signed out', async () => {
      const client = new Client(app.base);
      const { body } = await client.signup('alice@example.com');
      app.sql.prepare(`UPDATE _bp_users SET roles = '["admin","agent"]'`).run();
      expect((await client.send('GET', '/api/auth/session')).body.actor.roles).to.deep.equal(['admin', 'agent']);
      app.sql.prepare('DELETE FROM _bp_users').run();
      expect((await client.send('GET', '/api/auth/session')).body.actor.kind).to.equal('anonymous');
      expect(
        (await client.send('POST', '/api/things', { json: {}, headers: { 'x-csrf-token': body.csrfToken } })).status,
      ).to.equal(401);
    });

    it('sets HttpOnly, SameSite=Lax, no Secure in development, named <slug>.sid', async () => {
      const client = new Client(app.base);
      await client.signup('alice@example.com');
      const cookie = client.lastSetCookie.find((c) => c.startsWith('hd.sid=')) as string;
      expect(cookie).to.be.a('string');
      expect(cookie).to.match(/; HttpOnly/);
      expect(cookie).to.match(/; SameSite=Lax/);
      expect(cookie).to.match(/; Path=\//);
      expect(cookie).to.not.match(/Secure/i);
      expect(client.lastSetCookie.some((c) => c.startsWith('connect.sid'))).to.equal(false);
    });

    it('sets Secure in production and refuses to start there without a secret', async () => {
      expect(() => createEmailAuth({ ...baseOptions(app.db), production: true, secret: undefined })).to.throw(
        /SESSION_SECRET must be set in production/,
      );
      expect(() => createEmailAuth({ ...baseOptions(app.db), production: true, secret: 'short' })).to.throw(
        /at least 32 characters/,
      );
      const warnings: string[] = [];
      createEmailAuth({ ...baseOptions(app.db), secret: undefined, warn: (m) => warnings.push(m) });
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.match(/SESSION_SECRET is not set/);

      await stop(app);
      app = await start(dir, { production: true });
      const client = new Client(app.base);
      // Over plain HTTP a Secure cookie would be dropped: signing up is refused, and nothing is sent.
      const plain = await client.signup('alice@example.com', PASSWORD);
      expect(plain.status).to.equal(400);
      expect(plain.body.error.code).to.equal('HTTPS_REQUIRED');
      expect(client.lastSetCookie).to.deep.equal([]);
      const https = new Client(app.base);
      expect(
        (
          await https.send('POST', '/api/auth/signup', {
            json: { email: 'alice@example.com', password: PASSWORD },
            headers: { 'x-forwarded-proto': 'https' },
          })
        ).status,
      ).to.equal(201);
      await https.login('alice@example.com', PASSWORD, { 'x-forwarded-proto': 'https' });
      // __Host-: Secure, path /, no Domain, so no sibling subdomain can set these cookies for us.
      const cookie = https.lastSetCookie.find((c) => c.startsWith('__Host-hd.sid=')) as string;
      expect(cookie).to.match(/; Secure/);
      expect(cookie).to.match(/; HttpOnly/);
      expect(cookie).to.match(/; SameSite=Lax/);
      expect(cookie).to.match(/; Path=\/(;|$)/);
      expect(cookie).to.not.match(/Domain=/i);
      const anonymous = new Client(app.base);
      await anonymous.send('GET', '/api/auth/session', { headers: { 'x-forwarded-proto': 'https' } });
      const nonce = anonymous.lastSetCookie.find((c) => c.startsWith('__Host-hd.csrf=')) as string;
      expect(nonce, anonymous.lastSetCookie.join(' | ')).to.match(/; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
    });

    it('ends a session after the idle timeout, while activity keeps it alive', async () => {
      await stop(app);
      app = await start(dir, { idleTimeout: 2 });
      const client = new Client(app.base);
      await client.signup('alice@example.com');
      // 3 s of activity in all, more than the timeout, yet never 2 s without a request.
      for (let i = 0; i < 3; i++) {
        await sleep(1000);
        expect((await client.send('GET', '/api/auth/session')).body.actor.kind).to.equal('user');
      }
      await sleep(2100);
      expect((await client.send('GET', '/api/auth/session')).body.actor.kind).to.equal('anonymous');
    });

    it('ends a session after its absolute duration, however active', async () => {
      await stop(app);
      app = await start(dir, { sessionDuration: 3, idleTimeout: 60 });
      const client = new Client(app.base);
      await client.signup('alice@example.com');
      const sid = client.cookies.get('hd.sid');
      const expiresAt = (app.sql.prepare('SELECT expiresAt FROM _bp_sessions').get() as { expiresAt: number })
        .expiresAt;
      // The row (and cookie) never outlive the absolute deadline, whatever the idle timeout.
      expect(expiresAt - Date.now()).to.be.at.most(3000);
      for (let i = 0; i < 2; i++) {
        await sleep(1000);
        expect((await client.send('GET', '/api/auth/session')).body.actor.kind).to.equal('user');
      }
      await sleep(1100);
      const after = new Client(app.base);
      after.cookies.set('hd.sid', sid as string);
      expect((await after.send('GET', '/api/auth/session')).body.actor.kind).to.equal('anonymous');
    });

    it('applies a lowered duration to sessions started under the old one', async () => {
      const client = new Client(app.base);
      await client.signup('alice@example.com');
      await stop(app);
      app = await start(dir, { sessionDuration: 1 });
      await sleep(1100);
      const restarted = new Client(app.base);
      restarted.cookies.set('hd.sid', client.cookies.get('hd.sid') as string);
      expect((await restarted.send('GET', '/api/auth/session')).body.actor.kind).to.equal('anonymous');
      expect(restarted.lastSetCookie.some((c) => c.startsWith('hd.sid=;'))).to.equal(true);
      expect(
        (app.sql.prepare('SELECT COUNT(*) AS n FROM _bp_sessions WHERE data LIKE ?').get('%userId%') as { n: number })
          .n,
      ).to.equal(0);
    });

    it('survives a restart: a new app on the same database file knows the session', async () => {
      const client = new Client(app.base);
      await client.signup('alice@example.com');
      await stop(app);
      app = await start(dir);
      const restarted = new Client(app.base);
      restarted.cookies.set('hd.sid', client.cookies.get('hd.sid') as string);
      expect((await restarted.send('GET', '/api/auth/session')).body.actor.email).to.equal('alice@example.com');
    });

    it('never stores or traces the password in plain text', async () => {
      const secretPassword = 'unmistakable-Pa55word-marker';
      const client = new Client(app.base);
      await client.signup('alice@example.com', secretPassword);
      await new Client(app.base).login('alice@example.com', secretPassword);
      await new Client(app.base).login('alice@example.com', `${secretPassword}-wrong`);
      const rows = app.sql.prepare('SELECT data FROM _bp_sessions').all() as { data: string }[];
      expect(rows.length).to.be.greaterThan(0);
      for (const row of rows) expect(row.data).to.not.contain(secretPassword);
      expect(JSON.stringify(app.traces.list())).to.not.contain(secretPassword);
      app.sql.pragma('wal_checkpoint(TRUNCATE)');
      for (const file of fs.readdirSync(dir)) {
        const bytes = fs.readFileSync(path.join(dir, file));
        expect(bytes.includes(Buffer.from(secretPassword)), file).to.equal(false);
      }
    });
  });

  describe('DatabaseSessionStore', () => {
    it('never returns an expired session and prunes expired rows', async () => {
      const store = new DatabaseSessionStore(app.db, { pruneIntervalMs: 0 });
      const sess = (expires: Date) => ({ cookie: { expires, originalMaxAge: 1000 } }) as never;
      const get = (sid: string) =>
        new Promise((resolve, reject) =>
          store.get(sid, (err: unknown, s?: unknown) => (err ? reject(err) : resolve(s))),
        );
      const done = (resolve: () => void, reject: (err: unknown) => void) => (err?: unknown) =>
        err ? reject(err) : resolve();
      const set = (sid: string, s: never) =>
        new Promise<void>((resolve, reject) => store.set(sid, s, done(resolve, reject)));
      const touch = (sid: string, s: never) =>
        new Promise<void>((resolve, reject) => store.touch(sid, s, done(resolve, reject)));
      await set('live', sess(new Date(Date.now() + 60_000)));
      await set('dead', sess(new Date(Date.now() - 1)));
      expect(await get('live')).to.be.an('object');
      expect(await get('dead')).to.equal(null);
      // Touching an expired session does not revive it.
      await touch('dead', sess(new Date(Date.now() + 60_000)));
      expect(await get('dead')).to.equal(null);
      expect(await store.prune()).to.equal(1);
      expect(
        (app.sql.prepare('SELECT sid FROM _bp_sessions').all() as { sid: string }[]).map((r) => r.sid),
      ).to.deep.equal(['live']);
      store.close();
    });

    it('names its person in a foreign key: removing them ends their sessions; none is saved back to life', async () => {
      const store = new DatabaseSessionStore(app.db, { pruneIntervalMs: 0 });
      const future = new Date(Date.now() + 60_000);
      const set = (sid: string, userId: string) =>
        new Promise<void>((resolve, reject) =>
          store.set(sid, { cookie: { expires: future }, userId } as never, (err?: unknown) =>
            err ? reject(err) : resolve(),
          ),
        );
      app.sql
        .prepare(
          'INSERT INTO _bp_users (id, email, passwordHash, createdAt) ' +
            `VALUES ('p1', 'p1@example.com', 'x', '2024-01-01')`,
        )
        .run();
      await set('mine', 'p1');
      expect(app.sql.prepare('SELECT "userId" FROM _bp_sessions WHERE sid = ?').get('mine')).to.deep.equal({
        userId: 'p1',
      });
      app.sql.prepare(`DELETE FROM _bp_users WHERE id = 'p1'`).run();
      expect(app.sql.prepare('SELECT 1 FROM _bp_sessions WHERE sid = ?').get('mine')).to.equal(undefined);
      // A request of the removed person that ends after the removal saves nothing, and fails nothing.
      await set('mine', 'p1');
      expect(app.sql.prepare('SELECT 1 FROM _bp_sessions WHERE sid = ?').get('mine')).to.equal(undefined);
      store.close();
    });
  });

  describe('password hashing', () => {
    it('salts every hash and verifies only the right password', async () => {
      const [a, b] = await Promise.all([hashPassword(PASSWORD), hashPassword(PASSWORD)]);
      expect(a).to.not.equal(b);
      expect(await verifyPassword(PASSWORD, a)).to.equal(true);
      expect(await verifyPassword(`${PASSWORD}!`, a)).to.equal(false);
      expect(await verifyPassword(PASSWORD, 'plain-text')).to.equal(false);
      expect(await verifyPassword(PASSWORD, 'scrypt$1048576$8$1$c2FsdHNhbHQ=$aGFzaGhhc2hoYXNoaGFzaA==')).to.equal(
        false,
      );
      // Composed and decomposed forms of the same characters are the same password.
      expect(await verifyPassword('café-password-1', await hashPassword('cafe\u0301-password-1'))).to.equal(true);
    });
  });
});

function baseOptions(db: Database): EmailAuthOptions {
  return {
    db,
    appSlug: 'hd',
    loginPath: '/login',
    trustedOrigins: [],
    sessionDuration: 60,
    idleTimeout: 60,
    production: false,
    secret: SECRET,
    warn: () => {},
  };
}
