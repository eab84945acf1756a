// `npm run users -- ...` of generated apps: runUsersCli against a real SQLite database with the
// auth tables, checking its output lines and exit codes (0 done, 1 bad input, 2 bad usage); how
// it reads a password (stdin, a terminal, never an argument); and the real command of a generated
// app, with the password piped and typed at a pseudo-terminal (util-linux `script`).

import { spawn, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { expect } from 'chai';
import BetterSqlite3 from 'better-sqlite3';
import { type Connection, SqliteDatabase } from '../runtime-lib/data/sqlite.ts';
import { verifyPassword } from '../runtime-lib/auth/email/password.ts';
import { readNewPassword } from '../runtime-lib/auth/email/password-input.ts';
import { PASSWORD_ARGUMENT_REFUSED, USERS_USAGE, runUsersCli } from '../runtime-lib/auth/email/users-cli.ts';
import { freshDir, generate, ROOT } from './support/apps.ts';

// The auth tables as the app's migrations create them (same DDL as test/auth-email.test.ts).
const AUTH_DDL = `
CREATE TABLE "_bp_users" (id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, passwordHash TEXT NOT NULL,
  roles TEXT NOT NULL DEFAULT '[]', createdAt DATETIME NOT NULL);
CREATE TABLE "_bp_sessions" (sid TEXT PRIMARY KEY, data TEXT NOT NULL, expiresAt INTEGER NOT NULL,
  userId TEXT REFERENCES "_bp_users" (id) ON DELETE CASCADE);
CREATE INDEX "_bp_sessions_expiresAt_idx" ON "_bp_sessions"("expiresAt");
`;
const PASSWORD = 'a long enough password';

describe('users CLI', () => {
  /** The connection the command's database runs on, to look at its rows. */
  let conn: Connection;
  let db: SqliteDatabase;
  let lines: string[];
  /** How often the command asked for a password. */
  let asked: number;
  /** The password the next `add` reads (as if piped or typed). */
  let typed: string;
  const run = (...argv: string[]): Promise<number> => {
    lines = [];
    asked = 0;
    return runUsersCli(db, argv, { out: (line) => lines.push(line), readPassword: async () => (asked++, typed) });
  };
  const user = (email: string) =>
    conn.prepare('SELECT * FROM _bp_users WHERE email = ?').get(email) as Record<string, string> | undefined;

  beforeEach(() => {
    conn = new BetterSqlite3(':memory:');
    conn.exec(AUTH_DDL);
    db = new SqliteDatabase(conn);
    typed = PASSWORD;
  });

  afterEach(() => db.close());

  it('adds a user with a normalized e-mail, a hashed password and its roles', async () => {
    expect(
      await run('add', '--email', ' Admin@Example.com', '--role', 'admin', '--role', 'agent', '--role', 'admin'),
    ).to.equal(0);
    expect(lines).to.deep.equal(['added admin@example.com (roles: admin, agent)']);
    const row = user('admin@example.com');
    expect(row?.roles).to.equal('["admin","agent"]');
    expect(row?.createdAt).to.match(/\+00:00$/);
    expect(row?.passwordHash).to.not.contain(PASSWORD);
    expect(await verifyPassword(PASSWORD, row?.passwordHash as string)).to.equal(true);

    expect(await run('add', '--email', 'plain@example.com')).to.equal(0);
    expect(lines).to.deep.equal(['added plain@example.com (no roles)']);
  });

  it('lists e-mails, roles and creation times, never hashes', async () => {
    expect(await run('list')).to.equal(0);
    expect(lines).to.deep.equal(['no users']);
    await run('add', '--email', 'b@example.com', '--role', 'admin');
    await run('add', '--email', 'a@example.com');
    expect(await run('list')).to.equal(0);
    expect(lines).to.have.length(3);
    expect(lines[0]).to.match(/^EMAIL\s+ROLES\s+CREATED$/);
    expect(lines[1]).to.match(/^a@example\.com\s+-\s+\d{4}-\d\d-\d\dT[\d:.]+\+00:00$/);
    expect(lines[2]).to.match(/^b@example\.com\s+admin\s+\d{4}-/);
    expect(lines.join('\n')).to.not.contain('scrypt');
  });

  it('replaces roles, and removes them all without --role', async () => {
    await run('add', '--email', 'a@example.com', '--role', 'viewer');
    expect(await run('set-roles', '--email', 'A@example.com', '--role', 'admin', '--role', 'agent')).to.equal(0);
    expect(lines).to.deep.equal(['a@example.com now has roles: admin, agent']);
    expect(user('a@example.com')?.roles).to.equal('["admin","agent"]');
    expect(await run('set-roles', '--email', 'a@example.com')).to.equal(0);
    expect(lines).to.deep.equal(['a@example.com now has no roles']);
    expect(user('a@example.com')?.roles).to.equal('[]');
  });

  it("removes a user and ends that user's sessions only", async () => {
    await run('add', '--email', 'a@example.com');
    await run('add', '--email', 'b@example.com');
    const ids = ['a', 'b'].map((n) => user(`${n}@example.com`)?.id);
    // As in the app: foreign keys on, so the session whose userId column names the person goes
    // with them (and must still be counted); s2 was saved before sessions had that column.
    conn.pragma('foreign_keys = ON');
    const insert = conn.prepare('INSERT INTO _bp_sessions (sid, data, expiresAt, userId) VALUES (?, ?, ?, ?)');
    insert.run('s1', JSON.stringify({ cookie: {}, userId: ids[0] }), Date.now() + 60_000, ids[0]);
    insert.run('s2', JSON.stringify({ cookie: {}, userId: ids[0] }), Date.now() + 60_000, null);
    insert.run('s3', JSON.stringify({ cookie: {}, userId: ids[1] }), Date.now() + 60_000, ids[1]);
    insert.run('s4', 'not json', Date.now() + 60_000, null);

    expect(await run('remove', '--email', 'a@example.com')).to.equal(0);
    expect(lines).to.deep.equal(['removed a@example.com (2 sessions ended)']);
    expect(user('a@example.com')).to.equal(undefined);
    expect(
      (conn.prepare('SELECT sid FROM _bp_sessions ORDER BY sid').all() as { sid: string }[]).map((r) => r.sid),
    ).to.deep.equal(['s3', 's4']);
  });

  it('exits 1 with a clear message on bad input', async () => {
    await run('add', '--email', 'a@example.com');
    const cases: [string[], string][] = [
      [
        ['add', '--email', 'A@example.com'],
        'error: a user with the e-mail a@example.com already exists (use set-roles to change their roles)',
      ],
      [['add', '--email', 'nope'], 'error: "nope" is not a valid e-mail address'],
      [
        ['add', '--email', 'b@example.com', '--role', 'bad role'],
        'error: "bad role" is not a valid role name (a letter, then letters, digits, _ . : or -)',
      ],
      [
        ['set-roles', '--email', 'ghost@example.com', '--role', 'admin'],
        'error: no user with the e-mail ghost@example.com',
      ],
      [['remove', '--email', 'ghost@example.com'], 'error: no user with the e-mail ghost@example.com'],
    ];
    for (const [argv, message] of cases) {
      expect(await run(...argv), argv.join(' ')).to.equal(1);
      expect(lines).to.deep.equal([message]);
      // Nobody is asked for a password that could not be used.
      expect(asked, argv.join(' ')).to.equal(0);
    }
    typed = 'short';
    expect(await run('add', '--email', 'b@example.com')).to.equal(1);
    expect(lines).to.deep.equal(['error: the password must be at least 12 characters long']);
    expect((conn.prepare('SELECT COUNT(*) AS n FROM _bp_users').get() as { n: number }).n).to.equal(1);
  });

  it('refuses --password, saying how to pass the password instead', async () => {
    for (const argv of [
      ['add', '--email', 'a@example.com', '--password', PASSWORD],
      ['add', '--email', 'a@example.com', `--password=${PASSWORD}`],
      ['set-roles', '--email', 'a@example.com', '--password', PASSWORD],
    ]) {
      expect(await run(...argv), argv.join(' ')).to.equal(2);
      expect(lines).to.deep.equal([`error: ${PASSWORD_ARGUMENT_REFUSED}`, USERS_USAGE]);
      expect(asked).to.equal(0);
    }
    expect(PASSWORD_ARGUMENT_REFUSED).to.contain(`printf '%s\\n' "$PASSWORD" | npm run users -- add --email E`);
    expect(USERS_USAGE).to.not.contain('--password');
    expect((conn.prepare('SELECT COUNT(*) AS n FROM _bp_users').get() as { n: number }).n).to.equal(0);
  });

  it('exits 2 with the usage on bad usage, 0 for help', async () => {
    const cases: [string[], string][] = [
      [[], 'error: missing command'],
      [['frobnicate'], 'error: unknown command "frobnicate"'],
      [['add'], 'error: add needs --email'],
      [['list', '--email', 'a@example.com'], 'error: list does not take --email'],
      [['remove', '--email', 'a@example.com', '--role', 'x'], 'error: remove does not take --role'],
      [['list', 'extra'], 'error: unexpected argument "extra"'],
    ];
    for (const [argv, message] of cases) {
      expect(await run(...argv), argv.join(' ')).to.equal(2);
      expect(lines).to.deep.equal([message, USERS_USAGE]);
    }
    expect(await run('add', '--bogus')).to.equal(2);
    expect(lines[0]).to.match(/^error: Unknown option '--bogus'/);
    expect(await run('--help')).to.equal(0);
    expect(lines).to.deep.equal([USERS_USAGE]);
  });

  it('sends errors to the error stream when one is given', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l), readPassword: async () => PASSWORD };
    expect(await runUsersCli(db, ['remove', '--email', 'ghost@example.com'], io)).to.equal(1);
    expect(out).to.deep.equal([]);
    expect(err).to.deep.equal(['error: no user with the e-mail ghost@example.com']);
  });
});

describe('readNewPassword', () => {
  const prompts = () => {
    let written = '';
    const stream = new Writable({ write: (chunk, _encoding, done) => ((written += String(chunk)), done()) });
    return { stream, written: () => written };
  };
  const piped = (text: string) => readNewPassword(Readable.from([Buffer.from(text)]), prompts().stream);

  it('reads one line from a pipe, with or without its line end', async () => {
    expect(await piped('a long enough password\n')).to.equal('a long enough password');
    expect(await piped('a long enough password\r\n')).to.equal('a long enough password');
    expect(await piped('  spaces kept, ünïcode too  ')).to.equal('  spaces kept, ünïcode too  ');
  });

  it('refuses an empty pipe, several lines and more than a password could be', async () => {
    const refusal = (text: string) =>
      piped(text).then(
        () => 'read',
        (err: Error) => err.message,
      );
    expect(await refusal('')).to.match(/^no password on stdin: run the command in a terminal/);
    expect(await refusal('\n')).to.match(/^no password on stdin/);
    expect(await refusal('first line\nsecond line\n')).to.equal(
      'stdin holds several lines: pipe the password alone, on one line',
    );
    expect(await refusal('x'.repeat(9000))).to.equal('stdin holds more than a password: pipe one line');
  });
});

// The users command of a generated app, as `npm run users` runs it.
describe('users command of a generated app (password piped or typed, never an argument)', function () {
  this.timeout(120_000);
  let appDir: string;
  let dbFile: string;
  const users = (args: string[], stdin: string) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'src/users.ts', ...args], {
      cwd: appDir,
      encoding: 'utf8',
      env: { ...process.env, DATABASE_URL: `file:${dbFile}` },
      input: stdin,
    });
  const hashOf = (email: string) => {
    const other = new BetterSqlite3(dbFile, { readonly: true });
    try {
      return (
        other.prepare('SELECT passwordHash FROM _bp_users WHERE email = ?').get(email) as
          { passwordHash: string } | undefined
      )?.passwordHash;
    } finally {
      other.close();
    }
  };

  before(async () => {
    appDir = path.join(freshDir('users-command'), 'app');
    await generate(path.join(ROOT, 'test/fixtures/valid/closed-signup/app.toml'), appDir);
    dbFile = path.join(appDir, 'data', 'users.db');
  });

  it('reads the password from stdin when piped, and prints nothing of it', async () => {
    const r = users(['add', '--email', 'piped@example.com', '--role', 'admin'], `${PASSWORD}\n`);
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stdout).to.equal('added piped@example.com (roles: admin)\n');
    expect(r.stdout + r.stderr).to.not.contain(PASSWORD);
    expect(await verifyPassword(PASSWORD, hashOf('piped@example.com') as string)).to.equal(true);
  });

  it('refuses --password with exit 2 and the way to pass it, adding no one', () => {
    const r = users(['add', '--email', 'argv@example.com', '--password', PASSWORD], '');
    expect(r.status).to.equal(2);
    expect(r.stderr.split('\n')[0]).to.equal(`error: ${PASSWORD_ARGUMENT_REFUSED}`);
    expect(hashOf('argv@example.com')).to.equal(undefined);
  });

  it('asks twice at a terminal without echoing, and refuses two different passwords', async function () {
    const SCRIPT = '/usr/bin/script';
    /** Runs `add` under a pseudo-terminal, answering each prompt when it appears. */
    const typedAt = (email: string, answers: string[]): Promise<{ code: number | null; output: string }> =>
      new Promise((resolve, reject) => {
        const command = `'${process.execPath}' --import tsx src/users.ts add --email ${email}`;
        const child = spawn(SCRIPT, ['-qefc', command, '/dev/null'], {
          cwd: appDir,
          env: { ...process.env, DATABASE_URL: `file:${dbFile}` },
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let output = '';
        let answered = 0;
        const timer = setTimeout(
          () => (child.kill(), reject(new Error(`no prompt answered in time:\n${output}`))),
          30_000,
        );
        child.stdout.on('data', (d: Buffer) => {
          output += d.toString();
          const prompts = (output.match(/Password: |Repeat the password: /g) ?? []).length;
          // Typed only once the prompt is up, that is once the terminal no longer echoes.
          while (answered < prompts && answered < answers.length) child.stdin.write(`${answers[answered++]}\r`);
        });
        child.stderr.on('data', (d: Buffer) => (output += d.toString()));
        child.on('error', reject);
        child.on('exit', (code) => {
          clearTimeout(timer);
          child.stdin.end();
          resolve({ code, output });
        });
      });
    const ok = await typedAt('typed@example.com', [PASSWORD, PASSWORD]);
    expect(ok.code, ok.output).to.equal(0);
    expect(ok.output).to.contain('Password: ');
    expect(ok.output).to.contain('Repeat the password: ');
    expect(ok.output).to.contain('added typed@example.com (no roles)');
    expect(ok.output, 'the terminal echoed the password').to.not.contain(PASSWORD);
    expect(await verifyPassword(PASSWORD, hashOf('typed@example.com') as string)).to.equal(true);

    const differ = await typedAt('differ@example.com', [PASSWORD, `${PASSWORD}!`]);
    expect(differ.code).to.equal(1);
    expect(differ.output).to.contain('error: the two passwords differ; nothing was changed');
    expect(hashOf('differ@example.com')).to.equal(undefined);
  });
});
