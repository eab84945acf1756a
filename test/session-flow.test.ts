// People on the generated helpdesk app, end to end over real HTTP: sign-up, sign-in with a new
// session id, the session endpoint, CSRF and trusted origins on a real entity route, logout,
// failed sign-ins and their slow-down, the login page, the cookie's flags, actor fields no
// request can set, and the start-up checks of secrets (SESSION_SECRET, API key values). Every
// suite runs once per database the app runs on, SQLite and PostgreSQL.

import * as path from 'node:path';
import { expect } from 'chai';
import { addUser, freshDir, generate, request, ROOT, startApp, type RunningApp } from './support/apps.ts';
import { CookieClient, idempotencyKey, setCookie } from './support/access/client.ts';
import { appRows, type AppRows, withAppRows } from './support/database-rows.ts';
import { DATABASES, databaseUrl, type DatabaseKind } from './support/databases.ts';

type ErrorBody = { error: { code: string; message: string; details?: Array<{ field?: string; code: string }> } };
type AuditEntry = { operation: string; actorId: string; credentialId: string; delegatedBy: string | null };

const COOKIE = 'helpdesk.sid';
const TRIAGE_KEY = 'triage-key-session-flow-0123456789';
const PASSWORD = 'session-flow-password-1';

/**
 * The SESSION_SECRET an app on `database` starts with in development: none on SQLite (it makes a
 * random one, with a warning), a fixed one on PostgreSQL, where the app refuses to start without.
 */
const developmentSecret = (database: DatabaseKind): Record<string, string> =>
  database === 'postgres' ? { SESSION_SECRET: 'session-flow-development-secret' } : {};

for (const database of DATABASES)
  describe(`session flow (generated helpdesk app, ${database})`, function () {
    this.timeout(120_000);
    let appDir: string;
    let env: Record<string, string>;
    let app: RunningApp;
    let rows: AppRows;
    let emails = 0;
    const newEmail = (tag: string) => `${tag}-${++emails}@session.example`;

    const asTriage = (method: string, url: string, json?: unknown, headers: Record<string, string> = {}) =>
      request(app.url, method, url, {
        ...(json === undefined ? {} : { json }),
        headers: {
          authorization: `Bearer ${TRIAGE_KEY}`,
          ...(method === 'GET' ? {} : { 'idempotency-key': idempotencyKey() }),
          ...headers,
        },
      });
    const ticketCount = () => rows.count('Ticket');
    const sessionsWithSid = (sid: string) => rows.count('_bp_sessions', '"sid" = ?', [sid]);
    const errorOf = (body: unknown) => (body as ErrorBody).error;

    /** A new person, signed up over HTTP and holding the session sign-up started. */
    const signedUp = async (
      tag: string,
    ): Promise<{ client: CookieClient; email: string; token: string; actor: { id: string } }> => {
      const client = new CookieClient(app.url);
      const email = newEmail(tag);
      const res = await client.send('POST', '/api/auth/signup', { json: { email, password: PASSWORD } });
      expect(res.status, res.text).to.equal(201);
      return { client, email, token: res.body.csrfToken, actor: res.body.actor };
    };

    before(async () => {
      appDir = path.join(freshDir(`session-flow-${database}`), 'app');
      await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
      // REPORTER_API_KEY is left unset on purpose: that key must be disabled with a warning.
      expect(process.env.REPORTER_API_KEY, 'REPORTER_API_KEY must not be set in the test environment').to.equal(
        undefined,
      );
      env = {
        DATABASE_URL: await databaseUrl(database, 'session'),
        TRIAGE_API_KEY: TRIAGE_KEY,
        ...developmentSecret(database),
      };
      app = await startApp(appDir, env);
      rows = await appRows(env.DATABASE_URL, appDir);
    });
    after(async () => {
      await rows?.close();
      await app?.stop();
    });

    it('signs up with 201, no roles, a session and its CSRF token', async () => {
      const client = new CookieClient(app.url);
      const email = newEmail('signup');
      const res = await client.send('POST', '/api/auth/signup', { json: { email, password: PASSWORD } });
      expect(res.status).to.equal(201);
      expect(res.body.actor).to.include({ kind: 'user', email });
      expect(res.body.actor.roles).to.deep.equal([]);
      expect(res.body.csrfToken).to.match(/^[0-9a-f]{64}$/);
      expect(client.cookies.has(COOKIE)).to.equal(true);
      const session = await client.send('GET', '/api/auth/session');
      expect(session.body.actor).to.include({ kind: 'user', email, id: res.body.actor.id });
    });

    it('gives a new session id at login; the session from before no longer names anyone', async () => {
      const { email } = await signedUp('rotate');
      // The browser already holds a session (another person's, planted or left behind) and its token.
      const { client, token: earlier } = await signedUp('earlier');
      const before = `${COOKIE}=${client.cookies.get(COOKIE)}`;

      const login = await client.send('POST', '/api/auth/login', {
        json: { email, password: PASSWORD },
        headers: { 'x-csrf-token': earlier },
      });
      expect(login.status).to.equal(200);
      const after = client.lastSetCookie.find((l) => l.startsWith(`${COOKIE}=`))?.split(';')[0];
      expect(after).to.be.a('string');
      expect(after).not.to.equal(before);
      // The signed value changes with the session id; the id itself (before the signature) too.
      const sid = (cookie: string) =>
        decodeURIComponent(cookie.slice(COOKIE.length + 1))
          .replace(/^s:/, '')
          .split('.')[0];
      expect(sid(after!)).not.to.equal(sid(before));
      expect(await sessionsWithSid(sid(before))).to.equal(0);
      expect(await sessionsWithSid(sid(after!))).to.equal(1);

      const old = await request(app.url, 'GET', '/api/auth/session', { headers: { cookie: before } });
      expect((old.body as { actor: { kind: string } }).actor.kind).to.equal('anonymous');
      const current = await client.send('GET', '/api/auth/session');
      expect(current.body.actor).to.include({ kind: 'user', email });
    });

    it('answers GET /api/auth/session with the actor and the CSRF token of the session', async () => {
      const { client, email, token, actor } = await signedUp('session');
      const res = await client.send('GET', '/api/auth/session');
      expect(res.status).to.equal(200);
      expect(res.headers.get('cache-control')).to.equal('no-store');
      expect(res.body).to.deep.equal({
        actor: {
          kind: 'user',
          type: 'user',
          id: actor.id,
          effectiveId: actor.id,
          email,
          roles: [],
          credentialId: `session:${actor.id}`,
        },
        csrfToken: token,
      });
    });

    it('refuses a session mutation without the CSRF token (nothing written), accepts it with the token', async () => {
      const { client, token } = await signedUp('csrf');
      const before = await ticketCount();
      for (const headers of [{}, { 'x-csrf-token': 'f'.repeat(64) }, { 'x-csrf-token': '' }] as Array<
        Record<string, string>
      >) {
        const res = await client.send('POST', '/api/tickets', { json: { title: 'forged' }, headers });
        expect(res.status, JSON.stringify(headers)).to.equal(403);
        expect(errorOf(res.body).code).to.equal('CSRF_FAILED');
      }
      expect(await ticketCount()).to.equal(before);

      const ok = await client.send('POST', '/api/tickets', {
        json: { title: 'with the token' },
        headers: { 'x-csrf-token': token },
      });
      expect(ok.status).to.equal(201);
      // The token may also travel as a _csrf field, which is consumed and never stored as data.
      const field = await client.send('POST', '/api/tickets', { json: { title: 'token in the body', _csrf: token } });
      expect(field.status).to.equal(201);
      expect(field.body).not.to.have.property('_csrf');
      expect(await ticketCount()).to.equal(before + 2);
    });

    it('refuses an untrusted Origin even with the token, and a cross-site request without Origin', async () => {
      const { client, token } = await signedUp('origin');
      const before = await ticketCount();
      const evil = await client.send('POST', '/api/tickets', {
        json: { title: 'from evil' },
        headers: { 'x-csrf-token': token, origin: 'http://evil.example' },
      });
      expect(evil.status).to.equal(403);
      expect(errorOf(evil.body).code).to.equal('CSRF_FAILED');
      const crossSite = await client.send('POST', '/api/tickets', {
        json: { title: 'cross-site' },
        headers: { 'x-csrf-token': token, 'sec-fetch-site': 'cross-site' },
      });
      expect(crossSite.status).to.equal(403);
      expect(await ticketCount()).to.equal(before);
      // The app's own origin (as the request reached it) is trusted.
      const own = await client.send('POST', '/api/tickets', {
        json: { title: 'same origin' },
        headers: { 'x-csrf-token': token, origin: app.url },
      });
      expect(own.status).to.equal(201);
    });

    it('logs out only with the token, destroying the session: the old cookie then gets 401', async () => {
      const { client, token } = await signedUp('logout');
      const cookie = `${COOKIE}=${client.cookies.get(COOKIE)}`;
      expect((await request(app.url, 'GET', '/api/tickets', { headers: { cookie } })).status).to.equal(200);

      // A forged logout (no token) is refused and the session lives on.
      const forged = await client.send('POST', '/api/auth/logout');
      expect(forged.status).to.equal(403);
      expect(errorOf(forged.body).code).to.equal('CSRF_FAILED');
      expect((await request(app.url, 'GET', '/api/tickets', { headers: { cookie } })).status).to.equal(200);

      const out = await client.send('POST', '/api/auth/logout', { headers: { 'x-csrf-token': token } });
      expect(out.status).to.equal(204);
      expect(
        out.headers.getSetCookie().some((l) => l.startsWith(`${COOKIE}=;`) && /Expires=Thu, 01 Jan 1970/i.test(l)),
      ).to.equal(true);
      const sid = decodeURIComponent(cookie.slice(COOKIE.length + 1))
        .replace(/^s:/, '')
        .split('.')[0];
      expect(await sessionsWithSid(sid)).to.equal(0);

      const after = await request(app.url, 'GET', '/api/tickets', { headers: { cookie } });
      expect(after.status).to.equal(401);
      expect(errorOf(after.body).code).to.equal('UNAUTHENTICATED');
    });

    it('answers a wrong password and an unknown e-mail alike: 401 INVALID_CREDENTIALS, same message', async () => {
      const { email } = await signedUp('wrong');
      const wrong = await request(app.url, 'POST', '/api/auth/login', {
        json: { email, password: 'not-the-password-1' },
      });
      const unknown = await request(app.url, 'POST', '/api/auth/login', {
        json: { email: newEmail('nobody'), password: 'not-the-password-1' },
      });
      for (const res of [wrong, unknown]) {
        expect(res.status).to.equal(401);
        expect(errorOf(res.body).code).to.equal('INVALID_CREDENTIALS');
        expect(setCookie(new Response(null, { headers: res.headers }), COOKIE), 'no session for a failure').to.equal(
          undefined,
        );
      }
      expect(errorOf(wrong.body).message).to.equal(errorOf(unknown.body).message);
    });

    it(
      'refuses sign-up and sign-in sent with an API key (400 SESSION_WITH_API_KEY), ' +
        'storing no person and no session',
      async () => {
        const { email } = await signedUp('keyed');
        const people = () => rows.count('_bp_users');
        const sessions = () => rows.count('_bp_sessions');
        const [peopleBefore, sessionsBefore] = [await people(), await sessions()];
        const signup = await asTriage('POST', '/api/auth/signup', { email: newEmail('keyed-new'), password: PASSWORD });
        const login = await asTriage('POST', '/api/auth/login', { email, password: PASSWORD });
        for (const res of [signup, login]) {
          expect(res.status, res.text).to.equal(400);
          expect(errorOf(res.body).code).to.equal('SESSION_WITH_API_KEY');
          expect(setCookie(new Response(null, { headers: res.headers }), COOKIE), 'no session cookie').to.equal(
            undefined,
          );
        }
        expect(await people(), 'no person stored').to.equal(peopleBefore);
        expect(await sessions(), 'no session stored').to.equal(sessionsBefore);
      },
    );

    it('slows repeated failures: 429 TOO_MANY_ATTEMPTS with Retry-After, even for the right password', async () => {
      const { email } = await signedUp('slow');
      for (let i = 0; i < 5; i++) {
        const res = await request(app.url, 'POST', '/api/auth/login', {
          json: { email, password: `wrong-password-${i}` },
        });
        expect(res.status, `attempt ${i + 1}`).to.equal(401);
      }
      const slowed = await request(app.url, 'POST', '/api/auth/login', { json: { email, password: PASSWORD } });
      expect(slowed.status).to.equal(429);
      expect(errorOf(slowed.body).code).to.equal('TOO_MANY_ATTEMPTS');
      expect(Number(slowed.headers.get('retry-after'))).to.be.within(1, 900);
    });

    it('serves the login page at /login unauthenticated: HTML, a form posting to the login route, a CSP', async () => {
      const res = await request(app.url, 'GET', '/login');
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/html/);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).to.include("default-src 'none'");
      expect(csp).to.include("form-action 'self'");
      expect(csp).to.include("frame-ancestors 'none'");
      expect(res.text).to.include('<form method="post" action="/api/auth/login">');
      expect(res.text).to.match(/<input type="hidden" name="_csrf" value="[\w-]{24}\.[\w-]{43}">/);
      // The token's nonce travels in an HttpOnly cookie; no session is made for a visitor.
      const cookies = res.headers.getSetCookie();
      expect(cookies).to.have.length(1);
      expect(cookies[0]).to.match(/^helpdesk\.csrf=[\w-]{24}; Path=\/; HttpOnly; SameSite=Lax$/);
      expect(res.text).to.include('name="email"');
      expect(res.text).to.include('name="password" type="password"');
      expect(res.text).not.to.include('<script');
      // auth.signup is on (the default): the page links to its sign-up variant.
      expect(res.text).to.include('<a href="/login?mode=signup">No account yet? Create one</a>');
    });

    it('names the cookie helpdesk.sid (not connect.sid): HttpOnly, SameSite=Lax, not Secure in dev', async () => {
      const { email } = await signedUp('cookie');
      const res = await fetch(`${app.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD }),
      });
      const lines = res.headers.getSetCookie();
      expect(lines).to.have.length(1);
      const [line] = lines;
      expect(line.startsWith(`${COOKIE}=`)).to.equal(true);
      expect(line).not.to.include('connect.sid');
      const attributes = line
        .split(';')
        .slice(1)
        .map((a) => a.trim().toLowerCase());
      expect(attributes).to.include.members(['path=/', 'httponly', 'samesite=lax']);
      expect(attributes).not.to.include('secure');
    });

    describe('actor fields come from verified credentials only', () => {
      const FORGED_HEADERS = {
        'x-delegated-by': 'mallory',
        'x-actor-id': 'mallory',
        'x-roles': 'admin',
        'x-credential-id': 'cred-triage-1',
      };
      const FORGED_QUERY = '?delegatedBy=mallory&roles=admin&actor.delegatedBy=mallory&kind=system';
      const audit = async (id: string) =>
        ((await asTriage('GET', `/api/audit?entity=Ticket&recordId=${id}`)).body as { items: AuditEntry[] }).items;

      it('ignores forged fields at sign-in and on the session endpoint', async () => {
        const { email, actor } = await signedUp('forge');
        const client = new CookieClient(app.url);
        const login = await client.send('POST', '/api/auth/login', {
          json: {
            email,
            password: PASSWORD,
            delegatedBy: 'mallory',
            roles: ['admin'],
            kind: 'system',
            id: 'mallory',
            credentialId: 'cred-triage-1',
          },
        });
        expect(login.status).to.equal(200);
        const expected = {
          kind: 'user',
          type: 'user',
          id: actor.id,
          effectiveId: actor.id,
          email,
          roles: [],
          credentialId: `session:${actor.id}`,
        };
        expect(login.body.actor).to.deep.equal(expected);
        const session = await client.send('GET', `/api/auth/session${FORGED_QUERY}`, { headers: FORGED_HEADERS });
        expect(session.body.actor).to.deep.equal(expected);
      });

      it('never records a delegatedBy sent by a person: header, query parameter or body field', async () => {
        const { client, token, actor } = await signedUp('audit');
        const created = await client.send('POST', `/api/tickets${FORGED_QUERY}`, {
          json: { title: 'audited' },
          headers: { ...FORGED_HEADERS, 'x-csrf-token': token },
        });
        expect(created.status).to.equal(201);
        const entries = await audit(created.body.id);
        expect(entries.map((e) => [e.operation, e.actorId, e.credentialId, e.delegatedBy])).to.deep.equal([
          ['Ticket.create', actor.id, `session:${actor.id}`, null],
        ]);

        const before = await ticketCount();
        const inBody = await client.send('POST', '/api/tickets', {
          json: { title: 'audited', delegatedBy: 'mallory' },
          headers: { 'x-csrf-token': token },
        });
        expect(inBody.status).to.equal(400);
        expect(errorOf(inBody.body).details).to.deep.include({
          field: 'delegatedBy',
          code: 'UNKNOWN_FIELD',
          message: 'Ticket has no field "delegatedBy"',
        });
        expect(await ticketCount()).to.equal(before);
      });

      it('never records a delegatedBy sent with an API key, on entity routes and commands', async () => {
        const session = await asTriage('GET', `/api/auth/session${FORGED_QUERY}`, undefined, FORGED_HEADERS);
        expect((session.body as { actor: Record<string, unknown> }).actor).to.deep.equal({
          kind: 'agent',
          type: 'agent',
          id: 'agent-triage',
          effectiveId: 'agent-triage',
          credentialId: 'cred-triage-1',
          roles: ['agent'],
          role: 'agent',
          scopes: ['tickets.read', 'tickets.write'],
          displayName: 'Triage agent',
        });
        const created = await asTriage(
          'POST',
          `/api/tickets${FORGED_QUERY}`,
          { title: 'by the agent' },
          FORGED_HEADERS,
        );
        expect(created.status).to.equal(201);
        const id = (created.body as { id: string }).id;
        const started = await asTriage('POST', `/api/commands/start_ticket/${id}${FORGED_QUERY}`, {}, FORGED_HEADERS);
        expect(started.status, started.text).to.equal(200);
        const entries = await audit(id);
        expect(entries.map((e) => [e.operation, e.actorId, e.credentialId, e.delegatedBy])).to.have.deep.members([
          ['Ticket.create', 'agent-triage', 'cred-triage-1', null],
          ['command:StartTicket', 'agent-triage', 'cred-triage-1', null],
        ]);
      });
    });

    describe('secrets at start-up', () => {
      let refusedUrl: string;
      before(async () => {
        refusedUrl = await databaseUrl(database, 'refused');
      });
      const refusal = async (settings: Record<string, string>): Promise<string> => {
        try {
          const started = await startApp(appDir, { DATABASE_URL: refusedUrl, ...settings });
          await started.stop();
          return 'started';
        } catch (err) {
          return (err as Error).message;
        }
      };

      it('warns that an unset API key is disabled', () => {
        expect(app.output()).to.include('warning: API key "reporter" is disabled: REPORTER_API_KEY is not set');
      });

      // A generated development secret is SQLite's alone: on PostgreSQL the app refuses to start without one.
      if (database === 'sqlite') {
        it('warns that a development session secret is generated when SESSION_SECRET is not set', () => {
          expect(app.output()).to.include('warning: SESSION_SECRET is not set');
        });
      } else {
        it('refuses to start without SESSION_SECRET even in development: every instance must share it', async () => {
          const message = await refusal({ TRIAGE_API_KEY: TRIAGE_KEY });
          expect(message).to.match(/^app exited with 1:/);
          expect(message).to.include('cannot start: SESSION_SECRET must be set on PostgreSQL');
        });
      }

      it('refuses to start in production without SESSION_SECRET, with a clear message', async () => {
        const message = await refusal({ NODE_ENV: 'production', TRIAGE_API_KEY: TRIAGE_KEY });
        expect(message).to.match(/^app exited with 1:/);
        expect(message).to.include('cannot start: SESSION_SECRET must be set in production');
      });

      it('refuses to start with a short or empty API key value, naming the variable', async () => {
        const short = await refusal({ ...developmentSecret(database), TRIAGE_API_KEY: 'short-key' });
        expect(short).to.match(/^app exited with 1:/);
        expect(short).to.include('cannot start: TRIAGE_API_KEY (API key "triage") must be at least 16 characters');
        const empty = await refusal({ ...developmentSecret(database), TRIAGE_API_KEY: '' });
        expect(empty).to.include('TRIAGE_API_KEY (API key "triage") must be at least 16 characters, and is empty');
      });

      it('starts in production with a SESSION_SECRET and marks the cookie Secure behind a TLS proxy', async () => {
        const prod = await startApp(appDir, {
          DATABASE_URL: env.DATABASE_URL,
          NODE_ENV: 'production',
          SESSION_SECRET: 'a-production-secret-of-at-least-32-characters',
          TRIAGE_API_KEY: TRIAGE_KEY,
          // The test stands in for the TLS proxy, on loopback: only a proxy TRUST_PROXY names is believed.
          TRUST_PROXY: 'loopback',
        });
        try {
          const email = newEmail('prod');
          const res = await fetch(`${prod.url}/api/auth/signup`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
            body: JSON.stringify({ email, password: PASSWORD }),
          });
          expect(res.status).to.equal(201);
          const [line] = res.headers.getSetCookie();
          expect(line.split(';').map((a) => a.trim().toLowerCase())).to.include.members([
            'httponly',
            'samesite=lax',
            'secure',
          ]);
        } finally {
          await prod.stop();
        }
      });
    });
  });

// Issue 8: every anonymous request that asked for a CSRF token used to store a session row (kept
// an hour), so an unauthenticated client could fill the disk. Anonymous visitors now cost no row.
for (const database of DATABASES)
  describe(`anonymous visitors store nothing (generated helpdesk app, ${database})`, function () {
    this.timeout(180_000);
    let app: RunningApp;
    let appDir: string;
    let url: string;

    before(async () => {
      appDir = path.join(freshDir(`anonymous-rows-${database}`), 'app');
      await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
      url = await databaseUrl(database, 'anonymous');
      app = await startApp(appDir, { DATABASE_URL: url, TRIAGE_API_KEY: TRIAGE_KEY, ...developmentSecret(database) });
    });
    after(async () => app?.stop());

    /** Rows of _bp_sessions, as the app committed them. */
    // A connection of its own for each count: only what the app committed.
    const sessionRows = () => withAppRows(url, appDir, (db) => db.count('_bp_sessions'));

    it('stores a row when a person signs up: the count below sees what the app commits', async () => {
      const before = await sessionRows();
      const email = 'rows@session.example';
      const signup = await request(app.url, 'POST', '/api/auth/signup', { json: { email, password: PASSWORD } });
      expect(signup.status, signup.text).to.equal(201);
      expect((await sessionRows()) - before).to.equal(1);
    });

    it('adds no _bp_sessions row for 10,000 anonymous requests (session, sign-in page, failed sign-ins)', async () => {
      const before = await sessionRows();
      const statuses = new Map<string, number>();
      const count = (label: string, status: number) =>
        statuses.set(`${label} ${status}`, (statuses.get(`${label} ${status}`) ?? 0) + 1);
      const TOTAL = 10_000;
      let next = 0;
      const worker = async (): Promise<void> => {
        // One visitor per worker keeps the sign-in page's cookie and token for its form posts.
        let page: { cookie: string; token: string } | undefined;
        for (let i = next++; i < TOTAL; i = next++) {
          const kind = i % 4;
          if (kind === 0) {
            const res = await fetch(`${app.url}/api/auth/session`);
            const body = (await res.json()) as { actor: { kind: string }; csrfToken: string | null };
            expect(body.actor.kind).to.equal('anonymous');
            expect(body.csrfToken).to.be.a('string');
            count('session', res.status);
          } else if (kind === 1 || page === undefined) {
            const res = await fetch(`${app.url}/login`);
            const html = await res.text();
            const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
            const cookie = res.headers
              .getSetCookie()
              .map((l) => l.split(';')[0])
              .join('; ');
            expect(token).to.be.a('string');
            page = { cookie, token: token! };
            count('page', res.status);
          } else if (kind === 2) {
            const res = await fetch(`${app.url}/api/auth/login`, {
              method: 'POST',
              redirect: 'manual',
              headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.cookie },
              body: new URLSearchParams({
                _csrf: page.token,
                email: `nobody-${i}@rows.example`,
                password: 'not-the-password',
              }).toString(),
            });
            await res.text();
            count('form sign-in', res.status);
          } else {
            const res = await request(app.url, 'POST', '/api/auth/login', {
              json: { email: `nobody-${i}@rows.example`, password: 'not-the-password' },
            });
            count('json sign-in', res.status);
          }
        }
      };
      await Promise.all(Array.from({ length: 16 }, worker));
      const total = [...statuses.values()].reduce((a, b) => a + b, 0);
      expect(total).to.equal(TOTAL);
      // Every request was answered as an anonymous visitor: pages, tokens and refused sign-ins.
      for (const key of statuses.keys())
        expect(key, JSON.stringify([...statuses])).to.match(/^(session 200|page 200|(form|json) sign-in (401|429))$/);
      expect((await sessionRows()) - before).to.equal(0);
    });
  });

// auth.signup: on (the helpdesk above signs people up over HTTP), and off: accounts come from the
// users command only, the route is gone and the sign-in page offers no sign-up.
for (const database of DATABASES)
  describe(`auth.signup = false (generated app, ${database})`, function () {
    this.timeout(120_000);
    let app: RunningApp;
    let appDir: string;
    let env: Record<string, string>;
    const errorOf = (body: unknown) => (body as ErrorBody).error;
    const userCount = () => withAppRows(env.DATABASE_URL, appDir, (db) => db.count('_bp_users'));

    before(async () => {
      appDir = path.join(freshDir(`closed-signup-${database}`), 'app');
      await generate(path.join(ROOT, 'test/fixtures/valid/closed-signup/app.toml'), appDir);
      env = { DATABASE_URL: await databaseUrl(database, 'closed'), ...developmentSecret(database) };
      app = await startApp(appDir, env);
    });
    after(async () => app?.stop());

    it('answers POST /api/auth/signup with 404 ROUTE_NOT_FOUND, as JSON or as a form, and adds no one', async () => {
      const json = await request(app.url, 'POST', '/api/auth/signup', {
        json: { email: 'eve@closed.example', password: PASSWORD },
      });
      const client = new CookieClient(app.url);
      const token = /name="_csrf" value="([^"]+)"/.exec((await client.send('GET', '/signin')).text)?.[1] as string;
      const form = await client.send('POST', '/api/auth/signup', {
        form: { _csrf: token, email: 'eve@closed.example', password: PASSWORD },
      });
      const unknown = await request(app.url, 'POST', '/api/auth/nothing-here', { json: {} });
      for (const res of [json, form]) {
        expect(res.status).to.equal(404);
        expect(errorOf(res.body).code).to.equal('ROUTE_NOT_FOUND');
        expect(Object.keys(res.body as object)).to.deep.equal(Object.keys(unknown.body as object));
      }
      expect(await userCount()).to.equal(0);
    });

    it('offers no sign-up on the sign-in page; a person added with the users command signs in', async () => {
      for (const url of ['/signin', '/signin?mode=signup']) {
        const page = await request(app.url, 'GET', url);
        expect(page.status).to.equal(200);
        expect(page.text).to.include('<title>Sign in to Staff notes</title>');
        expect(page.text).to.include('action="/api/auth/login"');
        expect(page.text).not.to.match(/signup|Create/);
      }
      addUser(appDir, env, 'staff@closed.example', PASSWORD);
      const login = await request(app.url, 'POST', '/api/auth/login', {
        json: { email: 'staff@closed.example', password: PASSWORD },
      });
      expect(login.status, login.text).to.equal(200);
      expect((login.body as { actor: { email: string } }).actor.email).to.equal('staff@closed.example');
    });
  });
