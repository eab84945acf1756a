// `npm run users -- ...` of generated apps: runUsersCli against a real SQLite database with the
// auth tables, checking its output lines and exit codes (0 done, 1 bad input, 2 bad usage).

import { expect } from 'chai';
import Database from 'better-sqlite3';
import type { Db } from '../runtime-lib/data/db.ts';
import { verifyPassword } from '../runtime-lib/auth/email/password.ts';
import { USERS_USAGE, runUsersCli } from '../runtime-lib/auth/email/users-cli.ts';

// The auth tables as the app's migrations create them (same DDL as test/auth-email.test.ts).
const AUTH_DDL = `
CREATE TABLE "_bp_users" (id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, passwordHash TEXT NOT NULL, roles TEXT NOT NULL DEFAULT '[]', createdAt DATETIME NOT NULL);
CREATE TABLE "_bp_sessions" (sid TEXT PRIMARY KEY, data TEXT NOT NULL, expiresAt INTEGER NOT NULL);
CREATE INDEX "_bp_sessions_expiresAt_idx" ON "_bp_sessions"("expiresAt");
`;
const PASSWORD = 'a long enough password';

describe('users CLI', () => {
  let db: Db;
  let lines: string[];
  const run = (...argv: string[]): number => {
    lines = [];
    return runUsersCli(db, argv, (line) => lines.push(line));
  };
  const user = (email: string) => db.prepare('SELECT * FROM _bp_users WHERE email = ?').get(email) as Record<string, string> | undefined;

  beforeEach(() => {
    db = new Database(':memory:');
    db.exec(AUTH_DDL);
  });

  afterEach(() => db.close());

  it('adds a user with a normalized e-mail, a hashed password and its roles', async () => {
    expect(run('add', '--email', ' Admin@Example.com', '--password', PASSWORD, '--role', 'admin', '--role', 'agent', '--role', 'admin')).to.equal(0);
    expect(lines).to.deep.equal(['added admin@example.com (roles: admin, agent)']);
    const row = user('admin@example.com');
    expect(row?.roles).to.equal('["admin","agent"]');
    expect(row?.createdAt).to.match(/\+00:00$/);
    expect(row?.passwordHash).to.not.contain(PASSWORD);
    expect(await verifyPassword(PASSWORD, row?.passwordHash as string)).to.equal(true);

    expect(run('add', '--email', 'plain@example.com', '--password', PASSWORD)).to.equal(0);
    expect(lines).to.deep.equal(['added plain@example.com (no roles)']);
  });

  it('lists e-mails, roles and creation times, never hashes', () => {
    expect(run('list')).to.equal(0);
    expect(lines).to.deep.equal(['no users']);
    run('add', '--email', 'b@example.com', '--password', PASSWORD, '--role', 'admin');
    run('add', '--email', 'a@example.com', '--password', PASSWORD);
    expect(run('list')).to.equal(0);
    expect(lines).to.have.length(3);
    expect(lines[0]).to.match(/^EMAIL\s+ROLES\s+CREATED$/);
    expect(lines[1]).to.match(/^a@example\.com\s+-\s+\d{4}-\d\d-\d\dT[\d:.]+\+00:00$/);
    expect(lines[2]).to.match(/^b@example\.com\s+admin\s+\d{4}-/);
    expect(lines.join('\n')).to.not.contain('scrypt');
  });

  it('replaces roles, and removes them all without --role', () => {
    run('add', '--email', 'a@example.com', '--password', PASSWORD, '--role', 'viewer');
    expect(run('set-roles', '--email', 'A@example.com', '--role', 'admin', '--role', 'agent')).to.equal(0);
    expect(lines).to.deep.equal(['a@example.com now has roles: admin, agent']);
    expect(user('a@example.com')?.roles).to.equal('["admin","agent"]');
    expect(run('set-roles', '--email', 'a@example.com')).to.equal(0);
    expect(lines).to.deep.equal(['a@example.com now has no roles']);
    expect(user('a@example.com')?.roles).to.equal('[]');
  });

  it("removes a user and ends that user's sessions only", () => {
    run('add', '--email', 'a@example.com', '--password', PASSWORD);
    run('add', '--email', 'b@example.com', '--password', PASSWORD);
    const ids = ['a', 'b'].map((n) => user(`${n}@example.com`)?.id);
    const insert = db.prepare('INSERT INTO _bp_sessions (sid, data, expiresAt) VALUES (?, ?, ?)');
    insert.run('s1', JSON.stringify({ cookie: {}, userId: ids[0] }), Date.now() + 60_000);
    insert.run('s2', JSON.stringify({ cookie: {}, userId: ids[0] }), Date.now() + 60_000);
    insert.run('s3', JSON.stringify({ cookie: {}, userId: ids[1] }), Date.now() + 60_000);
    insert.run('s4', 'not json', Date.now() + 60_000);

    expect(run('remove', '--email', 'a@example.com')).to.equal(0);
    expect(lines).to.deep.equal(['removed a@example.com (2 sessions ended)']);
    expect(user('a@example.com')).to.equal(undefined);
    expect((db.prepare('SELECT sid FROM _bp_sessions ORDER BY sid').all() as { sid: string }[]).map((r) => r.sid)).to.deep.equal(['s3', 's4']);
  });

  it('exits 1 with a clear message on bad input', () => {
    run('add', '--email', 'a@example.com', '--password', PASSWORD);
    const cases: [string[], string][] = [
      [['add', '--email', 'A@example.com', '--password', PASSWORD], 'error: a user with the e-mail a@example.com already exists (use set-roles to change their roles)'],
      [['add', '--email', 'b@example.com', '--password', 'short'], 'error: the password must be at least 12 characters long'],
      [['add', '--email', 'nope', '--password', PASSWORD], 'error: "nope" is not a valid e-mail address'],
      [['add', '--email', 'b@example.com', '--password', PASSWORD, '--role', 'bad role'], 'error: "bad role" is not a valid role name (a letter, then letters, digits, _ . : or -)'],
      [['set-roles', '--email', 'ghost@example.com', '--role', 'admin'], 'error: no user with the e-mail ghost@example.com'],
      [['remove', '--email', 'ghost@example.com'], 'error: no user with the e-mail ghost@example.com'],
    ];
    for (const [argv, message] of cases) {
      expect(run(...argv), argv.join(' ')).to.equal(1);
      expect(lines).to.deep.equal([message]);
    }
    expect((db.prepare('SELECT COUNT(*) AS n FROM _bp_users').get() as { n: number }).n).to.equal(1);
  });

  it('exits 2 with the usage on bad usage, 0 for help', () => {
    const cases: [string[], string][] = [
      [[], 'error: missing command'],
      [['frobnicate'], 'error: unknown command "frobnicate"'],
      [['add', '--email', 'a@example.com'], 'error: add needs --password'],
      [['list', '--email', 'a@example.com'], 'error: list does not take --email'],
      [['remove', '--email', 'a@example.com', '--role', 'x'], 'error: remove does not take --role'],
      [['list', 'extra'], 'error: unexpected argument "extra"'],
    ];
    for (const [argv, message] of cases) {
      expect(run(...argv), argv.join(' ')).to.equal(2);
      expect(lines).to.deep.equal([message, USERS_USAGE]);
    }
    expect(run('add', '--bogus')).to.equal(2);
    expect(lines[0]).to.match(/^error: Unknown option '--bogus'/);
    expect(run('--help')).to.equal(0);
    expect(lines).to.deep.equal([USERS_USAGE]);
  });

  it('sends errors to the error stream when one is given', () => {
    const out: string[] = [];
    const err: string[] = [];
    expect(runUsersCli(db, ['remove', '--email', 'ghost@example.com'], (l) => out.push(l), (l) => err.push(l))).to.equal(1);
    expect(out).to.deep.equal([]);
    expect(err).to.deep.equal(['error: no user with the e-mail ghost@example.com']);
  });
});
