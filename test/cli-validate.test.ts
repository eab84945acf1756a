import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';

const REPO = path.resolve(import.meta.dirname, '..');
const BIN = path.join(REPO, 'bin', 'bp');
const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string };

/** Runs `bp` from the repository root, so diagnostics show paths relative to it. */
function bp(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const STACK_FRAME = /\n\s+at /;

function expectNoStackTrace(run: { stdout: string; stderr: string }): void {
  expect(run.stdout).not.to.match(STACK_FRAME);
  expect(run.stderr).not.to.match(STACK_FRAME);
}

describe('bp validate', () => {
  it('exits 0 and says so for the reference blueprint, after its warnings', () => {
    const file = 'fixtures/helpdesk/helpdesk.toml';
    const run = bp('validate', file);
    expect(run.status).to.equal(0);
    expect(run.stdout).to.equal(`${file} is valid\n`);
    // validate.test.ts checks each warning; here, that they print as warnings and nothing else does.
    const lines = run.stderr.split('\n');
    expect(lines.filter((l) => l.startsWith(file)).map((l) => /\[warning ([A-Z_]+)\]$/.exec(l)?.[1])).to.deep.equal([
      'OPEN_SIGNUP',
      'UNSCOPED_WRITE',
      'UNSCOPED_WRITE',
    ]);
    expect(lines.slice(-2)).to.deep.equal(['0 error(s), 3 warning(s)', '']);
  });

  it('points at the character where an expression fails, in every kind of TOML string', () => {
    const file = 'test/fixtures/invalid/expression-positions/app.toml';
    const run = bp('validate', file);
    expect(run.status).to.equal(1);
    expect(run.stderr).to.equal(
      [
        `${file}:8:46 entity.Ticket.access.read: expression does not parse: ` +
          'expected expression after "&&" but found "==" [error INVALID_CONDITION]',
        `${file}:9:33 entity.Ticket.access.create: expression does not parse: ` +
          'unexpected character "&" (use "&&") [error INVALID_CONDITION]',
        `${file}:13:5 entity.Ticket.access.update: expression does not parse: ` +
          'expected expression after "contains" but found "==" [error INVALID_CONDITION]',
        `${file}:17:4 entity.Ticket.access.delete: expression does not parse: unexpected character "$" ` +
          '(in expressions the current user is "actor", e.g. actor.id) [error INVALID_CONDITION]',
        '4 error(s), 0 warning(s)',
        '',
      ].join('\n'),
    );
  });

  it('points at a name in a condition that does not resolve, with a "did you mean"', () => {
    const file = 'test/fixtures/invalid/condition-unknown-field/app.toml';
    const run = bp('validate', file);
    expect(run.status).to.equal(1);
    // The blueprint has no [auth]: its PUBLIC_ENTITY warning comes first, then the names.
    expect(run.stderr.split('\n').slice(2, 6)).to.deep.equal([
      `${file}:16:61 entity.Ticket.fields.4.access.read: entity "Ticket" has no field "stauts" [error UNKNOWN_FIELD]`,
      '  hint: did you mean "status"?',
      `${file}:20:10 entity.Ticket.access.read.stauts: entity "Ticket" has no field "stauts" [error UNKNOWN_FIELD]`,
      '  hint: did you mean "status"?',
    ]);
  });

  it('exits 0 for a blueprint with only warnings, and prints them', () => {
    const file = 'test/fixtures/invalid/unknown-key/app.toml';
    const run = bp('validate', file);
    expect(run.status).to.equal(0);
    expect(run.stdout).to.equal(`${file} is valid\n`);
    expect(run.stderr).to.equal(
      [
        `${file}:3:1 project.verison: unknown key "verison" is ignored [warning UNKNOWN_KEY]`,
        '  hint: did you mean "version"?',
        `${file}:5:9 entity.Expense: the blueprint has no [auth], so anyone may read, create, ` +
          'update and delete Expense records [warning PUBLIC_ENTITY]',
        '  hint: add [auth] (people or API keys) and access rules, or write the rules you mean, ' +
          'e.g. access = { read = "public", create = false }',
        `${file}:8:36 entity.Expense.fields.1.requird: unknown key "requird" is ignored [warning UNKNOWN_KEY]`,
        '  hint: did you mean "required"?',
        `${file}:11:17 entity.Expense.acess: unknown key "acess" is ignored [warning UNKNOWN_KEY]`,
        '  hint: did you mean "access"?',
        `${file}:14:2 entitys: unknown top-level key "entitys" is ignored [warning UNKNOWN_KEY]`,
        '  hint: did you mean "entity"?',
        '0 error(s), 5 warning(s)',
        '',
      ].join('\n'),
    );
  });

  it('exits 1 and prints every error in source order as file:line:col path: message [error CODE]', () => {
    const dir = 'test/fixtures/invalid/several-errors';
    const run = bp('validate', `${dir}/app.toml`);
    expect(run.status).to.equal(1);
    expect(run.stdout).to.equal('');
    expect(run.stderr).to.equal(
      [
        `${dir}/app.toml:4:9 entity.Expense: the blueprint has no [auth], so anyone may read, create, ` +
          'update and delete Expense records [warning PUBLIC_ENTITY]',
        '  hint: add [auth] (people or API keys) and access rules, or write the rules you mean, ' +
          'e.g. access = { read = "public", create = false }',
        `${dir}/app.toml:7:38 entity.Expense.fields.1.default: default "zero" does not fit Float: ` +
          'expected a number [error INVALID_DEFAULT]',
        `${dir}/app.toml:9:3 entity.Expense.fields.3: Enum field "kind" has no values [error ENUM_WITHOUT_VALUES]`,
        '  hint: add values = ["a", "b"]',
        `${dir}/app.toml:12:9 entity.Employee: the blueprint has no [auth], so anyone may read, create, ` +
          'update and delete Employee records [warning PUBLIC_ENTITY]',
        '  hint: add [auth] (people or API keys) and access rules, or write the rules you mean, ' +
          'e.g. access = { read = "public", create = false }',
        `${dir}/app.toml:15:20 entity.Employee.fields.1.type: unknown field type "Txt" [error UNKNOWN_FIELD_TYPE]`,
        '  hint: did you mean "Text"?',
        `${dir}/commands.toml:1:10 command.ApproveExpense: the blueprint has no [auth], so nobody can run ` +
          'ApproveExpense: a command needs a signed-in person or an API key [warning COMMAND_WITHOUT_AUTH]',
        '  hint: add [auth] with providers = ["email"] or [[auth.apiKeys]]',
        `${dir}/commands.toml:3:31 command.ApproveExpense.policy: expression does not parse: ` +
          'expected expression after "contains" [error INVALID_CONDITION]',
        `${dir}/commands.toml:4:36 command.ApproveExpense.mutations.approvedAt: ` +
          'entity "Expense" has no field "approvedAt" [error UNKNOWN_FIELD]',
        '5 error(s), 3 warning(s)',
        '',
      ].join('\n'),
    );
  });

  it('reports a TOML syntax error at its position, without a stack trace', () => {
    const file = 'test/fixtures/invalid/toml-syntax/app.toml';
    const run = bp('validate', file);
    expect(run.status).to.equal(1);
    expect(run.stderr).to.equal(
      `${file}:3:32 TOML syntax error: expected comma or end of structure [error TOML_SYNTAX]\n` +
        '1 error(s), 0 warning(s)\n',
    );
    expectNoStackTrace(run);
  });

  it('prints no stack trace for values of odd shapes, broken handlers or import cycles', () => {
    for (const fixture of ['odd-shapes', 'handler-unreadable', 'handler-export-missing', 'import-cycle']) {
      const run = bp('validate', `test/fixtures/invalid/${fixture}/app.toml`);
      expect(run.status, fixture).to.equal(1);
      expectNoStackTrace(run);
    }
  });

  describe('usage errors exit 2 without a stack trace', () => {
    const cases: Array<[string, string[], RegExp]> = [
      ['a missing argument', ['validate'], /missing required argument 'blueprint'/],
      ['an unknown option', ['validate', '--bogus', 'fixtures/helpdesk/helpdesk.toml'], /unknown option '--bogus'/],
      [
        'a missing file',
        ['validate', 'no/such/blueprint.toml'],
        /^bp: blueprint no\/such\/blueprint.toml not found\n$/,
      ],
      ['an unknown command', ['valdiate', 'fixtures/helpdesk/helpdesk.toml'], /unknown command 'valdiate'/],
    ];
    for (const [what, args, stderr] of cases) {
      it(what, () => {
        const run = bp(...args);
        expect(run.status).to.equal(2);
        expect(run.stdout).to.equal('');
        expect(run.stderr).to.match(stderr);
        expectNoStackTrace(run);
      });
    }
  });
});

describe('bp --version and --help', () => {
  it('prints the package version', () => {
    expect(bp('--version')).to.deep.equal({ status: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it('prints usage for bp and for bp validate', () => {
    const top = bp('--help');
    expect(top.status).to.equal(0);
    expect(top.stdout)
      .to.match(/^Usage: bp /)
      .and.to.include('validate <blueprint>');
    const validate = bp('validate', '--help');
    expect(validate.status).to.equal(0);
    expect(validate.stdout).to.match(/^Usage: bp validate \[options\] <blueprint>/);
  });
});
