// OPEN_SIGNUP names everything a self-made account may start, through the real CLI: a person is
// not held to scopes, so a skill action guarded only by a scope is open to anyone who signs up.

import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';

const REPO = path.resolve(import.meta.dirname, '..');
const BIN = path.join(REPO, 'bin', 'bp');
const FILE = 'test/fixtures/invalid/open-signup-actions/app.toml';

function bp(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const EXPECTED = [
  `${FILE}:6:2 auth: anyone may sign up, and a new account (no roles) may write Draft (delete); ` +
    'call skill actions out.send (external), out.discard (destructive); run commands Touch (Draft); ' +
    'start workflows SendOut (by out.send) [warning OPEN_SIGNUP]',
  '  hint: set auth.signup = false and add people with the users command, or require a role in these rules',
  `${FILE}:31:1 skill.out.actions.0: anyone who signs up (no roles) may call out.send, ` +
    'which reaches outside the app (risk "external"): its scopes hold API keys, not people [warning OPEN_SIGNUP_RISK]',
  '  hint: set auth.signup = false and add people with the users command: ' +
    'a workflow action admits every signed-in person',
  `${FILE}:41:1 skill.out.actions.1: anyone who signs up (no roles) may call out.discard, ` +
    'which destroys data (risk "destructive"): its scopes hold API keys, not people [warning OPEN_SIGNUP_RISK]',
  "  hint: set auth.signup = false, or require a role in Draft's access rule for delete",
  '0 error(s), 3 warning(s)',
  '',
];

describe('OPEN_SIGNUP through bp', () => {
  it(
    'bp validate names the skill actions (with their risk), commands and workflows a new account may start, ' +
      'and warns again for each external or destructive one',
    () => {
      const run = bp('validate', FILE);
      expect(run.status).to.equal(0);
      expect(run.stderr.split('\n')).to.deep.equal(EXPECTED);
    },
  );

  it('bp generate prints the same warnings', () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-open-signup-'));
    try {
      const run = bp('generate', FILE, '--out', path.join(out, 'app'));
      expect(run.status, run.stderr).to.equal(0);
      expect(run.stderr.split('\n').filter((l) => /OPEN_SIGNUP/.test(l))).to.deep.equal(
        EXPECTED.filter((l) => /OPEN_SIGNUP/.test(l)),
      );
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });

  it('is silent about what needs a role, and with signup = false', () => {
    const text = fs.readFileSync(path.join(REPO, FILE), 'utf8');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-open-signup-'));
    try {
      // Every skill action, command and delete needs a role: nothing is named.
      const guarded = text
        .replace('delete = "record.ownerId == actor.id"', 'delete = "actor.roles contains \'admin\'"')
        .replace('read = "authenticated", create = false', 'read = "actor.roles contains \'staff\'", create = false')
        .replace('label = "Touch"', 'label = "Touch"\npolicy = "actor.roles contains \'editor\'"');
      fs.writeFileSync(path.join(dir, 'guarded.toml'), guarded);
      fs.writeFileSync(
        path.join(dir, 'closed.toml'),
        text.replace('providers = ["email"]', 'providers = ["email"]\nsignup = false'),
      );
      for (const name of ['guarded.toml', 'closed.toml']) {
        const run = bp('validate', path.join(dir, name));
        expect(run.status).to.equal(0);
        expect(run.stderr, name).not.to.match(/OPEN_SIGNUP/);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
