// The built-in e-mail and Slack notification adapters of a generated app (issue 30), against
// servers the test starts: a real SMTP server (smtp-server), the received message parsed with
// mailparser; a local HTTP server speaking Slack's chat.postMessage. Also the outbox file without
// SMTP settings, the missing Slack token, the LITERAL_SECRET warning, and two spellings of real
// Zebric blueprints: a skill query parameter on a missing field, and `widget.on_select`.

import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { expect } from 'chai';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { validateBlueprint } from '../generator/compile.ts';
import { nodeSourceHost } from '../generator/source.ts';
import {
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
import { bootInProcess, type InProcessApp, type Rec } from './support/commands/harness.ts';

const FIXTURE = path.join(ROOT, 'test/fixtures/notification-adapters/app.toml');
const KEY = 'desk-key-0123456789abcdef';
const desk = { authorization: `Bearer ${KEY}` };
const TOKEN = 'xoxb-test-0123456789';

interface Job {
  status: string;
  error?: { code: string; message: string; retryable: boolean };
}

interface Received {
  envelope: { from: string; to: string[] };
  user?: string;
  mail: ParsedMail;
}

/** An SMTP server on loopback that accepts one user, without TLS (a test server), and keeps what arrives. */
async function smtpServer(user: string, password: string) {
  const received: Received[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      if (auth.username === user && auth.password === password) return callback(null, { user });
      return callback(new Error('bad credentials'));
    },
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((mail) => {
          received.push({
            envelope: {
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((r) => r.address),
            },
            user: session.user as string | undefined,
            mail,
          });
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return { received, port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

interface SlackCall {
  authorization?: string;
  params: Record<string, string>;
  at: number;
}

/** Slack's chat.postMessage on loopback: each call answered by the next of `answers` (the last repeats). */
async function slackServer() {
  const calls: SlackCall[] = [];
  let answers: Array<{ status: number; retryAfter?: string; json: Rec }> = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.url !== '/api/chat.postMessage') return void res.writeHead(404).end();
      const type = String(req.headers['content-type']);
      const params = type.startsWith('application/json')
        ? (JSON.parse(body) as Record<string, string>)
        : Object.fromEntries(new URLSearchParams(body));
      calls.push({ authorization: req.headers.authorization, params, at: Date.now() });
      const answer = answers[Math.min(calls.length - 1, answers.length - 1)];
      const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' };
      if (answer.retryAfter) headers['retry-after'] = answer.retryAfter;
      res.writeHead(answer.status, headers).end(JSON.stringify(answer.json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    calls,
    answer(next: typeof answers) {
      calls.length = 0;
      answers = next;
    },
    url: `http://127.0.0.1:${port}/api/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('notification adapters: e-mail over SMTP, Slack (generated app)', function () {
  this.timeout(180_000);
  let appDir: string;

  const newTicket = async (base: string, title: string): Promise<Rec> => {
    const res = await request(base, 'POST', '/api/tickets', {
      json: { title, requester: 'ann@example.com' },
      headers: { ...desk, 'idempotency-key': freshKey() },
    });
    expect(res.status, res.text).to.equal(201);
    return res.body as Rec;
  };
  /** Starts the action's workflow on the ticket and waits for its job to end. */
  const run = async (base: string, id: unknown, action: string, body: unknown = {}): Promise<Job> => {
    const res = await request(base, 'POST', `/api/skills/desk/tickets/${String(id)}/${action}`, {
      json: body,
      headers: { ...desk, 'idempotency-key': freshKey() },
    });
    expect(res.status, res.text).to.equal(202);
    return jobFinished<Job>(base, desk, (res.body as { job: { url: string } }).job.url, 200);
  };

  before(async () => {
    appDir = path.join(freshDir('notification-adapters'), 'app');
    await generate(FIXTURE, appDir);
  });

  it('depends on nodemailer and the Slack client, and typechecks', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(appDir, 'package.json'), 'utf8')) as {
      dependencies: Rec;
    };
    expect(pkg.dependencies).to.include.keys('nodemailer', '@slack/web-api');
    const r = typecheck(appDir);
    expect(r.stdout + r.stderr).to.equal('');
  });

  describe('with SMTP and Slack settings', () => {
    let app: InProcessApp;
    let smtp: Awaited<ReturnType<typeof smtpServer>>;
    let slack: Awaited<ReturnType<typeof slackServer>>;

    before(async () => {
      smtp = await smtpServer('desk', 'smtp secret 1');
      slack = await slackServer();
      app = await bootInProcess(appDir, {
        DESK_API_KEY: KEY,
        SMTP_HOST: '127.0.0.1',
        SMTP_PORT: String(smtp.port),
        SMTP_USER: 'desk',
        SMTP_PASSWORD: 'smtp secret 1',
        DESK_SLACK_TOKEN: TOKEN,
        DESK_SLACK_API: slack.url,
      });
    });
    after(async () => {
      await app?.close();
      await smtp?.close();
      await slack?.close();
    });

    it('says nothing at start about settings it has', () => {
      expect(app.warnings.filter((w) => w.includes('notification adapter'))).to.deep.equal([]);
    });

    it('sends an e-mail step over SMTP, signed in with the password from the environment', async () => {
      const t = await newTicket(app.url, 'Printer on fire');
      const job = await run(app.url, t.id, 'mail');
      expect(job.status, JSON.stringify(job.error)).to.equal('completed');
      expect(smtp.received).to.have.length(1);
      const [got] = smtp.received;
      expect(got.user).to.equal('desk');
      expect(got.envelope).to.deep.equal({ from: 'desk@example.com', to: ['ann@example.com'] });
      expect(got.mail.from?.value).to.deep.equal([{ address: 'desk@example.com', name: 'Desk' }]);
      expect(got.mail.to && !Array.isArray(got.mail.to) && got.mail.to.text).to.equal('ann@example.com');
      expect(got.mail.subject).to.equal('Re: Printer on fire');
      expect(got.mail.text?.trim()).to.equal('We are on it: Printer on fire');
    });

    it('keeps a line break in a templated subject from adding a header or a recipient', async () => {
      smtp.received.length = 0;
      const t = await newTicket(app.url, 'Hi\r\nBcc: mallory@example.com\r\nX-Evil: 1');
      const job = await run(app.url, t.id, 'mail');
      expect(job.status, JSON.stringify(job.error)).to.equal('completed');
      const [got] = smtp.received;
      expect(got.envelope.to).to.deep.equal(['ann@example.com']);
      expect(got.mail.bcc).to.equal(undefined);
      expect(got.mail.headers.has('x-evil')).to.equal(false);
      expect(got.mail.subject).to.include('Bcc: mallory@example.com');
    });

    it('posts to Slack with the bearer token, the default channel and the thread, once after a 429', async () => {
      slack.answer([
        { status: 429, retryAfter: '1', json: { ok: false, error: 'ratelimited' } },
        { status: 200, json: { ok: true, channel: 'C1', ts: '1700000001.000200' } },
      ]);
      const t = await newTicket(app.url, 'Disk full');
      const job = await run(app.url, t.id, 'ping', { thread: '1700000000.000100' });
      expect(job.status, JSON.stringify(job.error)).to.equal('completed');
      expect(slack.calls).to.have.length(2);
      for (const call of slack.calls) {
        expect(call.authorization).to.equal(`Bearer ${TOKEN}`);
        expect(call.params).to.include({
          channel: '#desk',
          text: 'New ticket: Disk full',
          thread_ts: '1700000000.000100',
        });
      }
      // Retry-After: 1 was honoured.
      expect(slack.calls[1].at - slack.calls[0].at).to.be.at.least(950);
    });

    it('fails the job when Slack refuses the message', async () => {
      slack.answer([{ status: 200, json: { ok: false, error: 'channel_not_found' } }]);
      const t = await newTicket(app.url, 'Lights off');
      const job = await run(app.url, t.id, 'ping', { thread: '1700000000.000100' });
      expect(job.status).to.equal('failed');
      expect(job.error).to.include({ code: 'NOTIFICATION_REJECTED', retryable: false });
      expect(job.error?.message).to.include('channel_not_found');
      expect(slack.calls).to.have.length(1);
    });

    it('leaves out a skill action whose query parameter names no field, and serves the others', async () => {
      const index = await request(app.url, 'GET', '/api/skills', { headers: desk });
      const [skill] = (index.body as { skills: Array<{ actions: Array<{ name: string }> }> }).skills;
      expect(skill.actions.map((a) => a.name)).to.deep.equal(['mail', 'ping', 'list']);
      expect((await request(app.url, 'GET', '/api/skills/desk/search', { headers: desk })).status).to.equal(404);
      const listed = await request(app.url, 'GET', '/api/skills/desk/tickets?title=Disk%20full', { headers: desk });
      expect(listed.status, listed.text).to.equal(200);
      expect((listed.body as { items: Rec[] }).items.map((r) => r.title)).to.deep.equal(['Disk full']);
    });
  });

  describe('without SMTP settings or a Slack token (npm run dev)', () => {
    let app: RunningApp;

    before(async () => {
      app = await startApp(appDir, { DESK_API_KEY: KEY });
    });
    after(async () => app?.stop());

    it('says so once at start', () => {
      const outbox = path.join(appDir, 'data', 'outbox', 'mail.jsonl');
      const lines = app.output().split('\n');
      expect(
        lines.filter((l) => l.includes(`has no SMTP host: its messages are appended to ${outbox}`)),
      ).to.have.length(1);
      expect(
        lines.filter((l) => l.includes('"team" (slack) has no bot token (DESK_SLACK_TOKEN is not set)')),
      ).to.have.length(1);
    });

    it('appends the e-mail to the outbox file', async () => {
      const t = await newTicket(app.url, 'Coffee machine');
      const job = await run(app.url, t.id, 'mail');
      expect(job.status, JSON.stringify(job.error)).to.equal('completed');
      const lines = fs
        .readFileSync(path.join(appDir, 'data', 'outbox', 'mail.jsonl'), 'utf8')
        .trim()
        .split('\n');
      expect(lines).to.have.length(1);
      expect(JSON.parse(lines[0])).to.include({
        adapter: 'mail',
        from: 'Desk <desk@example.com>',
        to: 'ann@example.com',
        subject: 'Re: Coffee machine',
        text: 'We are on it: Coffee machine',
        workflow: 'MailRequester',
      });
    });

    it('fails a Slack notification with a clear error', async () => {
      const t = await newTicket(app.url, 'No token');
      const job = await run(app.url, t.id, 'ping', { thread: '1700000000.000100' });
      expect(job.status).to.equal('failed');
      expect(job.error).to.deep.equal({
        code: 'NOTIFICATION_NOT_CONFIGURED',
        message: 'Slack adapter "team" has no bot token: set DESK_SLACK_TOKEN',
        retryable: false,
      });
    });
  });
});

describe('notification adapters: bp validate', () => {
  const validate = (toml: string) => {
    const dir = freshDir('notification-validate');
    fs.writeFileSync(path.join(dir, 'app.toml'), toml);
    // Anyone may read these entities: that warning is not what these tests are about.
    return validateBlueprint(path.join(dir, 'app.toml'), nodeSourceHost())
      .diagnostics.filter((d) => d.code !== 'PUBLIC_ENTITY')
      .map((d) => `${d.severity} ${d.code} ${d.path}`);
  };
  const base = `[project]
name = "N"

[entity.Task]
fields = [{ name = "id", type = "ULID", primary_key = true }, { name = "title", type = "Text" }]
`;

  it('warns about secrets written into adapter configs, not about environment variable names', () => {
    const seen = validate(`${base}
[[notifications.adapters]]
name = "team"
type = "slack"
config = { botToken = "xoxb-1234-5678-abcdef", signingSecretEnv = "SLACK_SIGNING_SECRET", defaultChannel = "#ops" }

[[notifications.adapters]]
name = "mail"
type = "email"
config = { from = "a@example.com", host = "smtp.example.com", port = 587, passwordEnv = "hunter2 is my password" }

[[notifications.adapters]]
name = "pager"
type = "pagerduty"
config = { apiKey = "e93facc04764012d7bfb002500d5d1a6", tokenEnv = "PAGER_TOKEN", region = "eu" }
`);
    expect(seen).to.deep.equal([
      'warning LITERAL_SECRET notifications.adapters.0.config.botToken',
      'warning LITERAL_SECRET notifications.adapters.1.config.passwordEnv',
      'warning NOT_GENERATED notifications.adapters.2.type',
      'warning LITERAL_SECRET notifications.adapters.2.config.apiKey',
    ]);
  });

  it('checks the keys and values of the built-in types', () => {
    const seen = validate(`${base}
[[notifications.adapters]]
name = "mail"
type = "email"
config = { from = "a@example.com", prot = 25, secure = "yes" }
`);
    expect(seen).to.deep.equal([
      'warning UNKNOWN_KEY notifications.adapters.0.config.prot',
      'error INVALID_VALUE notifications.adapters.0.config.secure',
    ]);
  });

  it('knows widget.on_select, and checks its workflow', () => {
    const page = (workflow: string) => `${base}
[workflow.Pick]
trigger = { manual = true }
steps = [{ type = "notify", adapter = "log", body = "picked" }]

[[notifications.adapters]]
name = "log"
type = "console"

[page."/board"]
layout = "kanban"
query = { tasks = { entity = "Task" } }
widget = { kind = "board", entity = "Task", group_by = "title", on_select = { workflow = "${workflow}" } }
`;
    expect(validate(page('Pick'))).to.deep.equal([]);
    expect(validate(page('Pik'))).to.include('error UNKNOWN_WORKFLOW page."/board".widget.on_select.workflow');
  });
});
