// Generate-time checks of filters on hidden fields (generator/validate/hidden-field-filters.ts):
// a list action that filters on a field no caller of it may read is an error, a filtered field
// whose rule reads the record must be SQL, and a unique field whose rule reads the record, an
// entity rule or a command condition that compares a hidden field warn.

import * as path from 'node:path';
import { expect } from 'chai';
import { validateBlueprint } from '../generator/compile.ts';
import type { SourceHost } from '../generator/source.ts';

/** Diagnostics of a one-file blueprint held in memory, as [code, severity, path] (OPEN_SIGNUP aside). */
function diagnostics(text: string): Array<[string, string, string]> {
  const host: SourceHost = {
    readFile: (p) => (p === '/bp/app.toml' ? text : undefined),
    realPath: (p) => (p === '/bp/app.toml' || p === '/bp' ? p : undefined),
    display: (p) => path.basename(p),
  };
  return validateBlueprint('/bp/app.toml', host)
    .diagnostics.filter((d) => d.code !== 'OPEN_SIGNUP' && d.code !== 'UNSCOPED_WRITE')
    .map((d) => [d.code, d.severity, d.path]);
}

/** A blueprint whose Employee.salary has `read` as its read rule, listed by a skill action. */
function blueprint(options: { read: string; auth?: string; keys?: string; unique?: boolean; path?: string }): string {
  return `
[project]
name = "Staff"

${options.auth ?? '[auth]\nproviders = ["email"]'}
${options.keys ?? ''}

[entity.Employee]
fields = [
  { name = "id", type = "ULID", primary_key = true },
  { name = "name", type = "Text" },
  { name = "ownerId", type = "Text" },
  { name = "rank", type = "Integer" },
  { name = "salary", type = "Integer"${options.unique ? ', unique = true' : ''}, access = { read = ${options.read} } },
]

[skill.people]
[[skill.people.actions]]
name = "staff"
method = "GET"
path = "${options.path ?? '/api/skills/people/staff'}"
entity = "Employee"
action = "list"
query = { pay = { type = "Integer", field = "salary" } }
scopes = ["staff.read"]
`;
}

const KEYS = (roles: string) => `
[[auth.apiKeys]]
name = "bot"
keyEnv = "BOT_API_KEY"
roles = [${roles}]
scopes = ["staff.read"]
`;

describe('generate-time checks of filters on hidden fields', () => {
  it('refuses a filter on a field nobody may read', () => {
    expect(diagnostics(blueprint({ read: 'false' }))).to.deep.equal([
      ['HIDDEN_FIELD_FILTER', 'error', 'skill.people.actions.0.query.pay'],
    ]);
  });

  it('accepts a filter on a field a person may read once given a role', () => {
    expect(diagnostics(blueprint({ read: `"actor.roles contains 'hr'"` }))).to.deep.equal([]);
  });

  it("judges API keys by their roles, and only keys that hold the action's scopes", () => {
    const keysOnly = { auth: '[auth]\nproviders = []', read: `"actor.roles contains 'hr'"` };
    expect(diagnostics(blueprint({ ...keysOnly, keys: KEYS(`"clerk"`) }))).to.deep.equal([
      ['HIDDEN_FIELD_FILTER', 'error', 'skill.people.actions.0.query.pay'],
    ]);
    expect(diagnostics(blueprint({ ...keysOnly, keys: KEYS(`"hr"`) }))).to.deep.equal([]);
    const unscoped = KEYS(`"hr"`).replace('scopes = ["staff.read"]', 'scopes = ["other"]');
    expect(diagnostics(blueprint({ ...keysOnly, keys: unscoped }))).to.deep.equal([
      ['HIDDEN_FIELD_FILTER', 'error', 'skill.people.actions.0.query.pay'],
    ]);
  });

  it('checks path parameters of a list action too', () => {
    const text = blueprint({ read: 'false', path: '/api/skills/people/pay/{salary}/staff' }).replace(
      'query = { pay = { type = "Integer", field = "salary" } }',
      '',
    );
    expect(diagnostics(text)).to.deep.equal([['HIDDEN_FIELD_FILTER', 'error', 'skill.people.actions.0.path']]);
  });

  it('needs the read rule of a filtered field that reads the record to be SQL', () => {
    expect(diagnostics(blueprint({ read: `"record.ownerId == actor.id"` }))).to.deep.equal([]);
    expect(diagnostics(blueprint({ read: `"record.rank * 2 > 10"` }))).to.deep.equal([
      ['READ_RULE_NOT_SQL', 'error', 'skill.people.actions.0.query.pay'],
    ]);
  });

  it('warns of entity rules and command conditions that compare a hidden field', () => {
    const base = blueprint({ read: `"actor.roles contains 'hr'"` }).replace(/query = .*\n/, '');
    const text = base.replace(
      '\n[skill.people]',
      `access = { read = "record.salary < 100000", update = "authenticated" }

[entity.Bonus]
fields = [
  { name = "id", type = "ULID", primary_key = true },
  { name = "employeeId", type = "Ref", ref = "Employee.id" },
  { name = "amount", type = "Integer" },
]

[command.Grant]
entity = "Bonus"
availableWhen = "record.employee.salary > 1 && record.amount == 0"
mutations = { amount = 5 }

[command.Raise]
entity = "Employee"
policy = "record.rank > 2"
availableWhen = "record.salary < 5"
mutations = { rank = 3 }

[skill.people]`,
    );
    expect(diagnostics(text)).to.deep.equal([
      ['RULE_READS_HIDDEN_FIELD', 'warning', 'entity.Employee.access.read'],
      ['RULE_READS_HIDDEN_FIELD', 'warning', 'command.Grant.availableWhen'],
      ['RULE_READS_HIDDEN_FIELD', 'warning', 'command.Raise.availableWhen'],
    ]);
  });

  it('warns of a unique field whose read rule reads the record', () => {
    const text = blueprint({ read: `"record.ownerId == actor.id"`, unique: true }).replace(/query = .*\n/, '');
    expect(diagnostics(text)).to.deep.equal([
      ['UNIQUE_FIELD_READ_RULE', 'warning', 'entity.Employee.fields.4.access.read'],
    ]);
    const byRole = blueprint({ read: `"actor.roles contains 'hr'"`, unique: true }).replace(/query = .*\n/, '');
    expect(diagnostics(byRole)).to.deep.equal([]);
  });
});
