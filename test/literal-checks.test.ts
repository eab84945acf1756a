// Values written in a blueprint that the generated app would refuse in every request are refused
// at generate time instead: impossible TOML dates (which the TOML parser silently rolls over),
// defaults and mutation literals with control characters, and blank defaults of required fields.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { bp, freshDir } from './support/apps.ts';

function validate(toml: string): { status: number | null; lines: string[] } {
  const dir = freshDir('literal-checks');
  const file = path.join(dir, 'app.toml');
  fs.writeFileSync(file, toml);
  const r = bp(['validate', file]);
  // These blueprints have no [auth]: what that means (PUBLIC_ENTITY, COMMAND_WITHOUT_AUTH) is not their subject.
  const noAuth = /\[warning (PUBLIC_ENTITY|COMMAND_WITHOUT_AUTH)\]$/;
  return {
    status: r.status,
    lines: r.stderr.split('\n').filter((l) => /\[(error|warning) /.test(l) && !noAuth.test(l)),
  };
}

const HEAD =
  '[project]\nname = "Literals"\n\n[entity.Event]\nfields = [\n  { name = "id", type = "ULID", primary_key = true },\n';

describe('literals the app would refuse', () => {
  it('refuses unquoted TOML dates that do not exist, where they are written', () => {
    const r = validate(
      `${HEAD}  { name = "at", type = "DateTime", default = 2023-02-29T12:00:00Z },\n` +
        '  { name = "day", type = "Date", default = 2023-04-31 },\n' +
        '  { name = "leap", type = "DateTime", default = 2024-02-29T12:00:00Z },\n]\n',
    );
    expect(r.status).to.equal(1);
    // Pointed at the value itself, not its key.
    expect(r.lines.map((l) => l.replace(/^.*?app\.toml:/, ''))).to.deep.equal([
      '7:47 TOML syntax error: 2023-02-29T12:00:00Z is not a date and time that exists [error TOML_SYNTAX]',
      '8:44 TOML syntax error: 2023-04-31 is not a date and time that exists [error TOML_SYNTAX]',
    ]);
  });

  it('refuses text defaults with control characters, allowing line breaks in LongText only', () => {
    const r = validate(
      `${HEAD}  { name = "title", type = "Text", default = "a\\u0000b" },\n` +
        '  { name = "note", type = "Text", default = "two\\nlines" },\n' +
        '  { name = "body", type = "LongText", default = "two\\nlines\\ttabbed" },\n' +
        '  { name = "bell", type = "LongText", default = "ding\\u0007" },\n]\n',
    );
    expect(r.status).to.equal(1);
    expect(r.lines.map((l) => l.replace(/^.*?app\.toml:/, ''))).to.deep.equal([
      '7:36 entity.Event.fields.1.default: default "a\\u0000b" does not fit Text: ' +
        'expected text without control characters [error INVALID_DEFAULT]',
      '8:35 entity.Event.fields.2.default: default "two\\nlines" does not fit Text: ' +
        'expected text without control characters [error INVALID_DEFAULT]',
      '10:39 entity.Event.fields.4.default: default "ding\\u0007" does not fit LongText: ' +
        'expected text without control characters other than tab and line breaks [error INVALID_DEFAULT]',
    ]);
  });

  it('refuses JSON defaults neither database stores as written: U+0000, inf, nan', () => {
    const r = validate(
      `${HEAD}  { name = "a", type = "JSON", default = { note = "a\\u0000b" } },\n` +
        '  { name = "b", type = "JSON", default = [1, -nan] },\n' +
        '  { name = "c", type = "JSON", default = { n = inf } },\n' +
        '  { name = "d", type = "JSON", default = { tab = "a\\tb", n = 1.5 } },\n]\n',
    );
    expect(r.status).to.equal(1);
    const expected = 'expected JSON without U+0000, unpaired surrogates or infinite numbers [error INVALID_DEFAULT]';
    expect(r.lines.map((l) => l.replace(/^.*?app\.toml:\d+:\d+ /, ''))).to.deep.equal([
      `entity.Event.fields.1.default: default {"note":"a\\u0000b"} does not fit JSON: ${expected}`,
      `entity.Event.fields.2.default: default [1,"nan"] does not fit JSON: ${expected}`,
      `entity.Event.fields.3.default: default {"n":"inf"} does not fit JSON: ${expected}`,
    ]);
  });

  it('refuses a text default longer than the share of an index that holds its field', () => {
    const r = validate(
      `${HEAD}  { name = "code", type = "Text", unique = true, default = "${'€'.repeat(667)}" },\n` +
        `  { name = "a", type = "Text", default = "${'x'.repeat(1001)}" },\n` +
        `  { name = "b", type = "Text", default = "${'x'.repeat(1000)}" },\n` +
        `  { name = "note", type = "LongText", default = "${'x'.repeat(5000)}" },\n]\n` +
        'indexes = [{ fields = ["a", "b"] }]\n',
    );
    expect(r.status).to.equal(1);
    expect(r.lines.map((l) => l.replace(/^.*?app\.toml:\d+:\d+ /, ''))).to.deep.equal([
      'entity.Event.fields.1.default: default is 2001 bytes long in UTF-8; ' +
        'an index holds code, which takes at most 2000 [error INVALID_DEFAULT]',
      'entity.Event.fields.2.default: default is 1001 bytes long in UTF-8; ' +
        'an index holds a, which takes at most 1000 [error INVALID_DEFAULT]',
    ]);
  });

  it('refuses a blank default on a required field, and control characters in mutation literals', () => {
    const r = validate(
      `${HEAD}  { name = "title", type = "Text", required = true, default = "   " },\n` +
        '  { name = "state", type = "Text", default = "" },\n]\n\n' +
        '[command.Ring]\nentity = "Event"\nmutations = { state = "ding\\u0007" }\n',
    );
    expect(r.status).to.equal(1);
    expect(r.lines.map((l) => l.replace(/^.*?app\.toml:/, ''))).to.deep.equal([
      '7:53 entity.Event.fields.1.default: the default of a required field cannot be blank [error INVALID_DEFAULT]',
      '13:15 command.Ring.mutations.state: "ding\\u0007" does not fit Text field "state": ' +
        'expected text without control characters [error INVALID_MUTATION]',
    ]);
  });
});
