// Who the client is, in production, behind the proxies TRUST_PROXY names (issue 26): by default no
// proxy is believed, so a client reaching the app directly cannot pick its own address with
// X-Forwarded-For (and so escape sign-in throttling) nor claim HTTPS with X-Forwarded-Proto;
// signing in or up without HTTPS is refused and stores nothing (the Secure cookie would be
// dropped, leaving a session row for nobody); a TRUST_PROXY the app cannot read refuses the start.
// On the generated helpdesk app over HTTP, on SQLite and PostgreSQL.

import * as path from 'node:path';
import { expect } from 'chai';
import {
  addUser,
  freshDir,
  generate,
  request,
  ROOT,
  startApp,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { appRows, type AppRows } from './support/database-rows.ts';
import { DATABASES, databaseUrl } from './support/databases.ts';

const SECRET = 'trust-proxy-production-secret-0123456789';
const TRIAGE_KEY = 'triage-key-trust-proxy-0123456789';
const PASSWORD = 'trust-proxy-password-1';
const COOKIE = '__Host-helpdesk.sid';
/** Failures one address may make before it is slowed (signin-throttle.ts IP_FAILURE_THRESHOLD). */
const ADDRESS_THRESHOLD = 20;

const codeOf = (res: HttpResponse) => (res.body as { error?: { code: string } } | undefined)?.error?.code;
const sessionCookie = (res: HttpResponse) => res.headers.getSetCookie().find((c) => c.startsWith(`${COOKIE}=`));

for (const database of DATABASES)
  describe(`TRUST_PROXY and HTTPS for sign-in (generated helpdesk app, production, ${database})`, function () {
    this.timeout(180_000);
    let appDir: string;
    let url: string;
    let rows: AppRows;
    const production = (settings: Record<string, string> = {}) => ({
      DATABASE_URL: url,
      NODE_ENV: 'production',
      SESSION_SECRET: SECRET,
      TRIAGE_API_KEY: TRIAGE_KEY,
      ...settings,
    });
    const stored = async () => ({
      sessions: await rows.count('_bp_sessions'),
      people: await rows.count('_bp_users'),
      failures: await rows.count('_bp_signin_failures'),
    });
    const login = (app: RunningApp, email: string, password: string, headers: Record<string, string> = {}) =>
      request(app.url, 'POST', '/api/auth/login', { json: { email, password }, headers });

    before(async () => {
      appDir = path.join(freshDir(`trust-proxy-${database}`), 'app');
      await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
      url = await databaseUrl(database, 'trustproxy');
      addUser(appDir, production(), 'ada@proxy.example', PASSWORD);
      rows = await appRows(url, appDir);
    });
    after(async () => rows?.close());

    describe('without TRUST_PROXY', () => {
      let app: RunningApp;
      before(async () => (app = await startApp(appDir, production())));
      after(async () => app?.stop());

      it(
        'believes no forwarded header: 25 sign-ins claiming HTTPS from rotating addresses ' +
          'are refused as plain HTTP, and store nothing',
        async () => {
          const before = await stored();
          for (let i = 0; i < ADDRESS_THRESHOLD + 5; i++) {
            const res = await login(app, `nobody-${i}@proxy.example`, 'wrong-password-0', {
              'x-forwarded-for': `203.0.113.${i + 1}`,
              'x-forwarded-proto': 'https',
            });
            expect(res.status, `attempt ${i + 1}: ${res.text}`).to.equal(400);
            expect(codeOf(res)).to.equal('HTTPS_REQUIRED');
          }
          expect(await stored()).to.deep.equal(before);
        },
      );

      it('refuses a correct sign-in over HTTP with HTTPS_REQUIRED: no cookie, no token, no session row', async () => {
        const before = await stored();
        const res = await login(app, 'ada@proxy.example', PASSWORD);
        expect(res.status, res.text).to.equal(400);
        expect(codeOf(res)).to.equal('HTTPS_REQUIRED');
        expect((res.body as { error: { message: string } }).error.message).to.include('TRUST_PROXY');
        expect(res.body).not.to.have.property('csrfToken');
        expect(res.headers.getSetCookie()).to.deep.equal([]);
        expect(await stored()).to.deep.equal(before);
      });

      it('refuses a sign-up over plain HTTP the same way: no person, no session', async () => {
        const before = await stored();
        const res = await request(app.url, 'POST', '/api/auth/signup', {
          json: { email: 'plain@proxy.example', password: PASSWORD },
        });
        expect(res.status, res.text).to.equal(400);
        expect(codeOf(res)).to.equal('HTTPS_REQUIRED');
        expect(res.headers.getSetCookie()).to.deep.equal([]);
        expect(await stored()).to.deep.equal(before);
      });
    });

    describe('TRUST_PROXY=loopback (the test is the proxy, appending the client address it saw)', () => {
      let app: RunningApp;
      before(async () => (app = await startApp(appDir, production({ TRUST_PROXY: 'loopback' }))));
      after(async () => app?.stop());

      /**
       * What a proxy forwards: the client's own X-Forwarded-For (anything it likes), then the
       * address the proxy saw.
       */
      const viaProxy = (client: string, claimed: string) => ({
        'x-forwarded-for': `${claimed}, ${client}`,
        'x-forwarded-proto': 'https',
      });

      it('keys throttling on the real client: failures of one client claiming varied addresses reach 429', async () => {
        const statuses: number[] = [];
        for (let i = 0; i < ADDRESS_THRESHOLD + 2; i++) {
          const res = await login(
            app,
            `nobody-${i}@proxy.example`,
            'wrong-password-0',
            viaProxy('198.51.100.7', `203.0.113.${i + 1}`),
          );
          statuses.push(res.status);
        }
        expect(statuses.slice(0, ADDRESS_THRESHOLD)).to.deep.equal(Array(ADDRESS_THRESHOLD).fill(401));
        expect(statuses.slice(ADDRESS_THRESHOLD)).to.deep.equal([429, 429]);
      });

      it('refuses even the right password from the throttled address, while another client signs in', async () => {
        const throttled = await login(app, 'ada@proxy.example', PASSWORD, viaProxy('198.51.100.7', '192.0.2.1'));
        expect(throttled.status, throttled.text).to.equal(429);
        expect(codeOf(throttled)).to.equal('TOO_MANY_ATTEMPTS');
        expect(sessionCookie(throttled)).to.equal(undefined);
        const other = await login(app, 'ada@proxy.example', PASSWORD, viaProxy('198.51.100.8', '192.0.2.1'));
        expect(other.status, other.text).to.equal(200);
        expect(sessionCookie(other)).to.match(/; Secure/);
      });

      it('still refuses a sign-in the proxy forwarded as plain HTTP, storing nothing', async () => {
        const before = await stored();
        const res = await login(app, 'ada@proxy.example', PASSWORD, {
          'x-forwarded-for': '198.51.100.9',
          'x-forwarded-proto': 'http',
        });
        expect(res.status, res.text).to.equal(400);
        expect(codeOf(res)).to.equal('HTTPS_REQUIRED');
        expect(await stored()).to.deep.equal(before);
      });
    });

    it('TRUST_PROXY as a hop count believes that many proxies: the address one hop back is the client', async () => {
      const app = await startApp(appDir, production({ TRUST_PROXY: '1' }));
      try {
        const res = await login(app, 'ada@proxy.example', PASSWORD, {
          'x-forwarded-for': '198.51.100.20',
          'x-forwarded-proto': 'https',
        });
        expect(res.status, res.text).to.equal(200);
        expect(sessionCookie(res)).to.match(/; Secure/);
      } finally {
        await app.stop();
      }
    });

    it('refuses to start with a TRUST_PROXY it cannot read, saying what to set', async () => {
      for (const [value, why] of [
        ['true', 'would believe any client about its own address'],
        ['banana', 'names "banana", which is not an address'],
        ['10.0.0.0/33', 'names "10.0.0.0/33"'],
        ['11', 'trusts 11 hops'],
        ['', 'is empty'],
      ]) {
        let message = 'started';
        try {
          const started = await startApp(appDir, production({ TRUST_PROXY: value }));
          await started.stop();
        } catch (err) {
          message = (err as Error).message;
        }
        expect(message, value).to.match(/^app exited with 1:/);
        expect(message, value).to.include(`cannot start: TRUST_PROXY=${JSON.stringify(value)} ${why}`);
        expect(message, value).to.include("set off, a hop count (1 to 10), or the proxies' addresses");
      }
    });
  });
