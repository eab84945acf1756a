// JSON bodies whose bytes are not UTF-8 (issue 26, finding 6). Decoding such bytes turns each
// bad sequence into U+FFFD, and the app stored text the client never sent with a 201. Every place
// a JSON body is parsed refuses them with 400 INVALID_JSON (detail INVALID_UTF8) and changes
// nothing: entity creates and updates, commands, skill actions (entity and workflow), MCP, the
// sign-in route (reference app), and a webhook delivery (the triggers fixture).

import * as path from 'node:path';
import { expect } from 'chai';
import {
  freshDir,
  freshKey,
  generate,
  readResponse,
  request,
  ROOT,
  startApp,
  type HttpResponse,
  type RunningApp,
} from './support/apps.ts';
import { withAppRows } from './support/database-rows.ts';

type Rec = Record<string, unknown>;

/** The app's SQLite file, which the tests read through a connection of their own. */
const DATABASE_URL = 'file:./data/app.db';
const AGENT_KEY = 'triage-key-0123456789abcdef';
const AUTH = { authorization: `Bearer ${AGENT_KEY}` };

/** A JSON object whose one string value holds `bad` between valid text. */
const bodyWith = (json: string, bad: number[]): Buffer => {
  const [before, after] = json.split('BAD');
  return Buffer.concat([Buffer.from(before), Buffer.from(bad), Buffer.from(after)]);
};
/** Byte sequences that are not UTF-8: a lone continuation byte, a truncated sequence, an overlong '/', a surrogate. */
const NOT_UTF8 = [[0x80], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80]];

async function send(
  base: string,
  method: string,
  url: string,
  bytes: Buffer,
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  return readResponse(
    await fetch(base + url, {
      method,
      body: new Uint8Array(bytes),
      headers: { 'content-type': 'application/json', ...headers },
    }),
  );
}

function expectRefused(res: HttpResponse, what: string): void {
  expect(res.status, `${what}: ${res.text}`).to.equal(400);
  const error = (res.body as { error: Rec }).error;
  expect(error.code, what).to.equal('INVALID_JSON');
  expect(error.details, what).to.deep.equal([
    { code: 'INVALID_UTF8', message: 'every byte sequence must be valid UTF-8 (or the UTF-16 the charset names)' },
  ]);
}

describe('JSON bodies that are not UTF-8 are refused', function () {
  this.timeout(120_000);

  describe('reference app: entity routes, commands, skills, MCP, sign-in', () => {
    let app: RunningApp;
    let appDir: string;
    let ticketId: string;

    const rows = () =>
      withAppRows(DATABASE_URL, appDir, async (db) => ({
        tickets: await db.all('SELECT * FROM "Ticket" ORDER BY "id"'),
        comments: await db.all('SELECT * FROM "Comment" ORDER BY "id"'),
        jobs: await db.count('_bp_jobs'),
        keys: await db.count('_bp_idempotency'),
      }));

    before(async () => {
      appDir = path.join(freshDir('json-body'), 'app');
      await generate(path.join(ROOT, 'fixtures/helpdesk/helpdesk.toml'), appDir);
      app = await startApp(appDir, {
        DATABASE_URL,
        TRIAGE_API_KEY: AGENT_KEY,
        SESSION_SECRET: 'json-body-secret-0123456789abcdef0123',
      });
      const res = await request(app.url, 'POST', '/api/tickets', {
        json: { title: 'café ☕ 😀' },
        headers: { ...AUTH, 'idempotency-key': freshKey() },
      });
      expect(res.status, res.text).to.equal(201);
      ticketId = (res.body as Rec).id as string;
    });
    after(async () => app?.stop());

    it('stores valid UTF-8, multi-byte characters included, exactly as sent', async () => {
      const res = await request(app.url, 'GET', `/api/tickets/${ticketId}`, { headers: AUTH });
      expect((res.body as Rec).title).to.equal('café ☕ 😀');
    });

    it('answers 400 INVALID_JSON (INVALID_UTF8) on every route that takes a JSON body; stores nothing', async () => {
      const before = await rows();
      const keyed = () => ({ ...AUTH, 'idempotency-key': freshKey() });
      const routes: Array<[string, string, string, Record<string, string>]> = [
        ['POST', '/api/tickets', '{"title":"caBADfé"}', keyed()],
        ['PUT', `/api/tickets/${ticketId}`, '{"title":"reBADnamed"}', keyed()],
        ['POST', `/api/commands/start_ticket/${ticketId}`, '{"note":"BAD"}', keyed()],
        ['POST', `/api/skills/triage/tickets/${ticketId}/comments`, '{"authorId":"a","body":"BAD"}', keyed()],
        ['POST', `/api/skills/triage/tickets/${ticketId}/escalate`, '{"reason":"BAD"}', keyed()],
        [
          'POST',
          '/mcp',
          '{"jsonrpc":"2.0","id":1,"method":"tools/call",' +
            '"params":{"name":"add_comment","arguments":{"body":{"authorId":"a","body":"BAD"}}}}',
          { ...AUTH, accept: 'application/json, text/event-stream' },
        ],
        ['POST', '/api/auth/login', '{"email":"person@example.com","password":"passBADword"}', {}],
      ];
      for (const [method, url, json, headers] of routes) {
        for (const bad of NOT_UTF8)
          expectRefused(await send(app.url, method, url, bodyWith(json, bad), headers), `${method} ${url} ${bad}`);
      }
      // A gzip-compressed body is checked after it is inflated.
      const { gzipSync } = await import('node:zlib');
      expectRefused(
        await send(app.url, 'POST', '/api/tickets', gzipSync(bodyWith('{"title":"BAD"}', [0x80])), {
          ...keyed(),
          'content-encoding': 'gzip',
        }),
        'gzip',
      );
      expect(await rows()).to.deep.equal(before);
    });

    it('takes UTF-16 when the charset names it, and refuses a UTF-16 body with a lone surrogate', async () => {
      const text = '{"title":"utf-16 ☕"}';
      const ok = await send(app.url, 'POST', '/api/tickets', Buffer.from(text, 'utf16le'), {
        ...AUTH,
        'idempotency-key': freshKey(),
        'content-type': 'application/json; charset=utf-16le',
      });
      expect(ok.status, ok.text).to.equal(201);
      expect((ok.body as Rec).title).to.equal('utf-16 ☕');
      const lone = Buffer.concat([
        Buffer.from('{"title":"', 'utf16le'),
        Buffer.from([0x00, 0xd8]),
        Buffer.from('"}', 'utf16le'),
      ]);
      const before = await rows();
      expectRefused(
        await send(app.url, 'POST', '/api/tickets', lone, {
          ...AUTH,
          'idempotency-key': freshKey(),
          'content-type': 'application/json; charset=utf-16le',
        }),
        'a lone surrogate in UTF-16',
      );
      expect(await rows()).to.deep.equal(before);
    });
  });

  describe('a webhook delivery (triggers fixture)', () => {
    let app: RunningApp;
    let appDir: string;

    before(async () => {
      appDir = path.join(freshDir('json-body-webhook'), 'app');
      await generate(path.join(ROOT, 'test/fixtures/triggers/app.toml'), appDir);
      app = await startApp(appDir, {
        DATABASE_URL,
        OPS_API_KEY: 'ops-key-0123456789abcdef',
        SESSION_SECRET: 'json-body-webhook-secret-0123456789ab',
      });
    });
    after(async () => app?.stop());

    it('refuses a JSON delivery that is not UTF-8 with 400 and starts no job', async () => {
      const jobs = () => withAppRows(DATABASE_URL, appDir, (db) => db.count('_bp_jobs', `"workflow" = 'OpenDoor'`));
      for (const bad of NOT_UTF8)
        expectRefused(
          await send(app.url, 'POST', '/webhooks/open', bodyWith('{"subject":"BAD"}', bad)),
          `webhook ${bad}`,
        );
      expect(await jobs()).to.equal(0);
      const ok = await send(app.url, 'POST', '/webhooks/open', Buffer.from('{"subject":"fine é"}'));
      expect(ok.status, ok.text).to.equal(202);
      expect(await jobs()).to.equal(1);
    });
  });
});
