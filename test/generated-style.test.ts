// Generated code reads like hand-written code: every file bp generates for every fixture keeps
// its lines within 120 characters, and every TypeScript and JavaScript file it writes (the app's
// own and the runtime copied into src/runtime/) is already as Prettier formats it with bp's own
// .prettierrc.json, so that one run of Prettier over the app changes nothing; rules appear as the
// blueprint wrote them, and what the app derives from them at load is exactly what the generator
// validated; the literal layout evaluates to the value it lays out; blueprint text cannot escape a
// generated comment.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { createTwoFilesPatch } from 'diff';
import fc from 'fast-check';
import * as prettier from 'prettier';
import ts from 'typescript';
import { validateBlueprint } from '../generator/compile.ts';
import { effectiveAccess } from '../generator/model/access-defaults.ts';
import type { Blueprint, Rule } from '../generator/model/types.ts';
import { nodeSourceHost } from '../generator/source.ts';
import { Call, call, clauses, code, tsAssign, tsLiteral } from '../generator/emit/ts-literal.ts';
import { rule } from '../runtime-lib/rules/conditions.ts';
import { bp, freshDir, generate, ROOT } from './support/apps.ts';
import { listTree } from './support/goldens.ts';

const WIDTH = 120;

/** Fixtures that exist to fail validation: they generate nothing to check. */
const INVALID = ['test/fixtures/commands/operation-id-collision/app.toml'];

function fixtures(): string[] {
  const inFolder = (dir: string) =>
    fs
      .readdirSync(path.join(ROOT, dir))
      .sort()
      .map((name) => `${dir}/${name}/app.toml`);
  return [
    'fixtures/helpdesk/helpdesk.toml',
    'fixtures/catalog/catalog.toml',
    ...inFolder('test/fixtures/valid'),
    ...inFolder('test/fixtures/commands'),
    // The Zebric constructs' fixtures (test/fixtures/zebric/invalid holds folders, not an app.toml).
    ...inFolder('test/fixtures/zebric').filter((f) => fs.existsSync(path.join(ROOT, f))),
  ].filter((f) => !INVALID.includes(f));
}

/**
 * `file:line (length)` for every line of every file under `dir` longer than WIDTH. blueprint.json
 * holds the blueprint's own strings as written, and JSON cannot break a string.
 */
function longLines(dir: string): string[] {
  return listTree(dir)
    .filter((file) => file !== 'blueprint.json')
    .flatMap((file) =>
      fs
        .readFileSync(path.join(dir, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (line.length > WIDTH ? [`${file}:${i + 1} (${line.length})`] : [])),
    );
}

const slug = (fixture: string) => fixture.replace(/\/(app|[a-z]+)\.toml$/, '').replace(/[^a-z0-9]+/gi, '-');

/** Each fixture generated once, into a folder of its own under test/.tmp. */
const generated = new Map<string, string>();
async function appOf(fixture: string): Promise<string> {
  let dir = generated.get(fixture);
  if (!dir) {
    dir = path.join(freshDir(`style-${slug(fixture)}`), 'app');
    await generate(path.join(ROOT, fixture), dir);
    generated.set(fixture, dir);
  }
  return dir;
}

describe('generated code style', function () {
  this.timeout(120_000);

  describe('no line over 120 characters', () => {
    for (const fixture of fixtures()) {
      it(`in every file generated for ${fixture}`, async () => {
        const offenders = longLines(await appOf(fixture));
        expect(offenders.length, `lines over ${WIDTH} characters:\n  ${offenders.join('\n  ')}\n`).to.equal(0);
      });
    }

    it('leaves out only fixtures that are meant to fail validation', () => {
      for (const fixture of INVALID) {
        const r = bp(['validate', fixture]);
        expect(r.status, `${fixture} should fail validation`).to.equal(1);
      }
    });
  });

  describe('formatted as Prettier would, with .prettierrc.json', () => {
    /** Texts already checked, by content: the runtime copy is the same in every app. */
    const checked = new Map<string, string | undefined>();
    /** Where Prettier's output differs from the file, as a unified diff; undefined when it does not. */
    const unformatted = async (file: string, text: string): Promise<string | undefined> => {
      if (checked.has(text)) return checked.get(text);
      const config = await prettier.resolveConfig(path.join(ROOT, '.prettierrc.json'));
      const formatted = await prettier.format(text, { ...config, filepath: file });
      const diff = formatted === text ? undefined : createTwoFilesPatch(file, 'prettier', text, formatted, '', '');
      checked.set(text, diff);
      return diff;
    };

    for (const fixture of fixtures()) {
      it(`every .ts and .js file generated for ${fixture}`, async () => {
        const app = await appOf(fixture);
        const code = listTree(app).filter((f) => /\.(ts|js)$/.test(f));
        expect(code).to.include.members(['src/app.ts', 'src/runtime/commands/handler.ts', 'scripts/build.js']);
        const diffs: string[] = [];
        for (const file of code) {
          const diff = await unformatted(file, fs.readFileSync(path.join(app, file), 'utf8'));
          if (diff !== undefined) diffs.push(diff);
        }
        expect(diffs.length, `not as Prettier formats them:\n${diffs.join('\n')}`).to.equal(0);
      });
    }
  });

  describe('rules as their blueprint source, parsed at load', () => {
    const conditions = <K extends string>(rules: Partial<Record<K, Rule>>) =>
      Object.fromEntries(Object.entries(rules).map(([k, r]) => [k, (r as Rule).condition]));

    interface LoadedSpec {
      name: string;
      access?: { rules?: unknown; fields?: unknown };
      policy?: unknown;
      availableWhen?: unknown;
    }

    for (const fixture of fixtures()) {
      it(`${fixture}: the app's conditions are the ones the generator validated`, async () => {
        const app = await appOf(fixture);
        const model = validateBlueprint(path.join(ROOT, fixture), nodeSourceHost()).model as Blueprint;
        const load = (file: string) => import(pathToFileURL(path.join(app, 'src', file)).href);

        const entitySpecs: LoadedSpec[] = [];
        for (const file of fs.readdirSync(path.join(app, 'src/entities'))) {
          const module: Record<string, unknown> = await load(`entities/${file}`);
          entitySpecs.push(...Object.values(module).filter((v): v is LoadedSpec => typeof v === 'object'));
        }
        for (const entity of model.entities) {
          const spec = entitySpecs.find((s) => s.name === entity.name);
          // Without [auth], the generator writes `public` for the missing rules (model/access-defaults.ts).
          // No rules at all are left out of the module, as are no field rules: the runtime reads them as empty.
          expect(spec?.access?.rules ?? {}, entity.name).to.deep.equal(conditions(effectiveAccess(model, entity)));
          const fieldRules = entity.fields.filter((f) => f.access.read || f.access.write);
          expect(spec?.access?.fields ?? {}, `${entity.name} fields`).to.deep.equal(
            Object.fromEntries(fieldRules.map((f) => [f.name, conditions(f.access)])),
          );
        }

        const { COMMANDS } = (await load('commands.ts')) as { COMMANDS: LoadedSpec[] };
        expect(COMMANDS.map((c) => c.name)).to.deep.equal(model.commands.map((c) => c.name));
        for (const command of model.commands) {
          const spec = COMMANDS.find((c) => c.name === command.name);
          expect(spec?.policy, `${command.name} policy`).to.deep.equal(command.policy?.condition);
          expect(spec?.availableWhen, `${command.name} availableWhen`).to.deep.equal(command.availableWhen?.condition);
        }

        // Without [auth.permissions] there is no src/permissions.ts.
        const declared = model.auth.permissions;
        expect(fs.existsSync(path.join(app, 'src', 'permissions.ts')), 'src/permissions.ts').to.equal(
          declared !== undefined,
        );
        const { permissions } = declared ? await load('permissions.ts') : { permissions: undefined };
        const expected =
          declared &&
          Object.fromEntries(
            Object.entries(declared).map(([role, { allow, deny }]) => {
              const parsed = (rules: typeof allow) => rules.map((r) => ({ ...r, condition: r.condition?.condition }));
              return [role, { allow: parsed(allow), deny: parsed(deny) }];
            }),
          );
        // Through JSON: a rule without a condition has none in the app, `condition: undefined` in the model.
        const plain = (value: unknown) => JSON.parse(JSON.stringify(value ?? null));
        expect(plain(permissions)).to.deep.equal(plain(expected));

        for (const file of listTree(path.join(app, 'src')).filter((f) => !f.startsWith('runtime/'))) {
          const text = fs.readFileSync(path.join(app, 'src', file), 'utf8');
          const parsedForm = /kind: '(expr|match|authenticated|const|and|or)'/;
          expect(text, `${file} holds a parsed condition`).not.to.match(parsedForm);
        }
      });
    }

    it('reads in the helpdesk as the blueprint wrote it, with no comment repeating a rule', async () => {
      const app = await appOf('fixtures/helpdesk/helpdesk.toml');
      const ticket = fs.readFileSync(path.join(app, 'src/entities/ticket.ts'), 'utf8');
      const update = `rule("actor.roles contains 'agent' || actor.roles contains 'admin'")`;
      expect(ticket).to.include(`      update: ${update},\n`);
      expect(ticket).to.include(`      delete: rule({ '$currentUser.role': 'admin' }),\n`);
      const commands = fs.readFileSync(path.join(app, 'src/commands.ts'), 'utf8');
      expect(commands).to.include(`  availableWhen: rule("record.status == 'resolved'"),\n`);
      expect(commands).not.to.match(/\/\/ (policy|availableWhen):/);
    });

    it('rule() parses every form and names a source it cannot parse', () => {
      const literal = (value: string) => ({ kind: 'literal', value });
      expect(rule(true)).to.deep.equal({ kind: 'const', value: true });
      expect(rule('authenticated')).to.deep.equal({ kind: 'authenticated' });
      expect(rule({ or: [{ '$currentUser.role': 'agent' }, { status: 'open' }] })).to.deep.equal({
        kind: 'or',
        items: [
          { kind: 'match', pairs: [{ left: { kind: 'actor', key: 'role' }, right: literal('agent') }] },
          { kind: 'match', pairs: [{ left: { kind: 'record', keys: ['status'] }, right: literal('open') }] },
        ],
      });
      expect(() => rule('actor.roles contains')).to.throw(Error, /the rule "actor\.roles contains" does not parse: /);
      expect(() => rule({ or: [] })).to.throw(
        Error,
        /the rule \{"or":\[\]\} does not parse: or: "or" must be a non-empty/,
      );
    });
  });

  describe('literal layout', () => {
    const awkward = ['a', ' ', "'", '"', '\\', '\n', '\r', '\t', '`', '${', '\u2028', '\uD83D', '\0'];
    const text = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.string({ unit: fc.constantFrom(...awkward), maxLength: 200 }),
    );
    const key = fc.oneof(fc.constantFrom('__proto__', 'constructor', '$ok', 'x-y', '1a'), fc.string({ maxLength: 20 }));
    const { value } = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', maxDepth: 4 },
        text,
        fc.integer(),
        fc.double(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 6 }),
        fc.array(fc.tuple(key, tie('value')), { maxLength: 6 }).map((entries) => Object.fromEntries(entries)),
        tie('value').map((v) => call('same', v)),
      ),
    }));
    const place = fc.record({
      indent: fc.integer({ min: 0, max: 10 }).map((n) => 2 * n),
      extra: fc.integer({ min: 10, max: 40 }),
      trail: fc.integer({ min: 1, max: 3 }),
    });
    const words = ['SELECT', '${COLUMNS}', 'FROM', '"T"', '@a,', 'WHERE', '"id" = ?', '(x, y)'];
    const clause = fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 40 }).map((w) => w.join(' '));

    /** What a literal evaluates to in the test module, where `same` returns its argument. */
    const evaluated = (v: unknown): unknown => {
      if (v instanceof Call) return evaluated(v.args[0]);
      if (Array.isArray(v)) return v.map(evaluated);
      if (v !== null && typeof v === 'object') {
        return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, evaluated(x)]));
      }
      return v;
    };

    it('evaluates to the value it lays out, within 120 columns, whatever the place', async () => {
      const samples = fc.sample(fc.tuple(value, place), { numRuns: 300, seed: 8 });
      const statement = fc.array(clause, { minLength: 1, maxLength: 4 });
      const sql = fc.sample(fc.tuple(statement, place), { numRuns: 100, seed: 9 });
      // Each value starts `extra` columns into a line indented by `indent`, followed by `trail` characters.
      const lines = [
        'const COLUMNS = "C";',
        'const same = (v) => v;',
        'export const values = [];',
        'const set = (i, v) => { values[i] = v; };',
      ];
      const write = (i: number, v: unknown, p: { indent: number; extra: number; trail: number }) => {
        const head = `set(${i},`.padEnd(p.extra);
        const literal = tsLiteral(v, { indent: p.indent, lead: p.indent + p.extra, trail: p.trail });
        lines.push(`${' '.repeat(p.indent)}${head}${literal})${';'.repeat(p.trail - 1)}`);
      };
      samples.forEach(([v, p], i) => write(i, v, p));
      sql.forEach(([parts, p], j) => write(samples.length + j, clauses(...parts), p));
      const file = path.join(freshDir('style-layout'), 'layout.mjs');
      fs.writeFileSync(file, `${lines.join('\n')}\n`);

      const { values } = (await import(pathToFileURL(file).href)) as { values: unknown[] };
      samples.forEach(([v], i) => expect(values[i], `sample ${i}: ${tsLiteral(v)}`).to.deep.equal(evaluated(v)));
      sql.forEach(([parts], j) => {
        expect(values[samples.length + j]).to.equal(parts.join(' ').replaceAll('${COLUMNS}', 'C'));
      });
      // Strings break after spaces only: a line may run past 120 columns only to hold one string
      // piece that has no other place to break (its one word, its spaces all inside {{ ... }}).
      const unbreakable = /^\s*(?:set\(\d+,\s*)?(['"`])((?:\{\{.*?\}\}|\$\{[^}]*\}|[^ ])*) ?\1( \+)?[,)\];]*$/;
      const long = lines.flatMap((l) => l.split('\n')).filter((l) => l.length > WIDTH && !unbreakable.test(l));
      expect(long, 'lines over 120 characters').to.deep.equal([]);
    });

    it('lays out values as Prettier does, wherever they start', async () => {
      // The values generated code holds: words, quotes and templates in text, identifiers and
      // quoted keys, numbers, one-argument calls, nested as deep as the specs nest them.
      const word = fc.constantFrom(
        'a',
        'ticket',
        "it's",
        '"quoted"',
        '{{ variables.data.id }}',
        'x'.repeat(30),
        '-',
        // Longer than any line: it stays whole.
        `https://${'y'.repeat(110)}`,
      );
      const prose = fc.array(word, { maxLength: 40 }).map((w) => w.join(' '));
      const key = fc.constantFrom('id', 'url', 'name', 'message', 'roleFields', 'x-y', '1a', '$ok', 'a b');
      const { item } = fc.letrec<{ item: unknown }>((tie) => ({
        item: fc.oneof(
          { depthSize: 'small', maxDepth: 4 },
          prose,
          fc.integer(),
          fc.constantFrom(0.5, 1e21, -0, 1.25),
          fc.boolean(),
          fc.constant(null),
          fc.array(tie('item'), { maxLength: 5 }),
          fc.array(fc.tuple(key, tie('item')), { maxLength: 5 }).map((entries) => Object.fromEntries(entries)),
          tie('item').map((v) => call('rule', v)),
          // Rows and pairs, which Prettier breaks one per line even where they fit on one.
          fc.array(fc.record({ id: fc.integer(), name: word }), { minLength: 1, maxLength: 3 }),
          fc.array(fc.tuple(word, fc.integer()), { minLength: 1, maxLength: 3 }),
          // SQL statements, `${NAME}` interpolations making template literals.
          fc.array(clause, { minLength: 1, maxLength: 4 }).map((parts) => clauses(...parts)),
        ),
      }));
      const samples = fc.sample(fc.tuple(item, fc.integer({ min: 1, max: 60 }), fc.boolean()), {
        numRuns: 400,
        seed: 27,
      });
      const config = await prettier.resolveConfig(path.join(ROOT, '.prettierrc.json'));
      const mismatches: string[] = [];
      for (const [i, [v, width, nested]] of samples.entries()) {
        const name = `v${i}`.padEnd(width, '_');
        // A declaration, or the property of an object one level in.
        const text = nested
          ? `export const ${name} = {\n  ${tsAssign(`${name}:`, v, 2, 1)},\n};\n`
          : `${tsAssign(`export const ${name} =`, v, 0, 1)};\n`;
        const formatted = await prettier.format(text, { ...config, parser: 'typescript' });
        if (formatted !== text) mismatches.push(createTwoFilesPatch('written', 'prettier', text, formatted, '', ''));
      }
      expect(mismatches.length, mismatches.slice(0, 3).join('\n')).to.equal(0);
    });

    it('breaks strings after spaces, never inside a word or a {{ ... }} template', () => {
      const message =
        'Ticket {{ variables.data.record.id }} escalated by {{ variables.data.attribution.agentId }}: ' +
        '{{ variables.data.payload.reason }}';
      expect(tsLiteral({ message }, { indent: 8, lead: 8 })).to.equal(
        [
          '{',
          '          message:',
          "            'Ticket {{ variables.data.record.id }} escalated by " +
            "{{ variables.data.attribution.agentId }}: ' +",
          "            '{{ variables.data.payload.reason }}',",
          '        }',
        ].join('\n'),
      );
      // One word longer than the line stays whole, past the width.
      const word = 'x'.repeat(150);
      expect(tsLiteral(`${word} and more`, { indent: 0, lead: 10 })).to.equal(`\n  '${word} ' +\n  'and more'`);
    });

    it('keeps what fits on one line and breaks the rest one entry per line', () => {
      const spec = { name: 'id', tags: ['a', 'b'], rule: call('rule', { or: [{ a: 1 }] }), ref: code('COLUMNS') };
      const oneLine = "{ name: 'id', tags: ['a', 'b'], rule: rule({ or: [{ a: 1 }] }), ref: COLUMNS }";
      expect(tsLiteral(spec, { indent: 4 })).to.equal(oneLine);
      expect(tsLiteral(spec, { indent: 4, lead: 120 - oneLine.length, trail: 1 })).to.equal(
        [
          '{',
          "      name: 'id',",
          "      tags: ['a', 'b'],",
          '      rule: rule({ or: [{ a: 1 }] }),',
          '      ref: COLUMNS,',
          '    }',
        ].join('\n'),
      );
      expect(tsLiteral(call('rule', { or: ['x'.repeat(50), 'y'.repeat(50)] }), { indent: 2, lead: 20 })).to.equal(
        ['rule({', `    or: ['${'x'.repeat(50)}', '${'y'.repeat(50)}'],`, '  })'].join('\n'),
      );
    });
  });

  describe('blueprint text in generated comments', () => {
    /** Free text that would end a comment early: an Enum value and a command label. */
    let app: string | undefined;
    const escapeApp = async (): Promise<string> => {
      if (app) return app;
      const dir = freshDir('style-comment-escape');
      fs.writeFileSync(
        path.join(dir, 'app.toml'),
        [
          'version = "1.0"',
          '[project]',
          // Backticks, ${...} and line breaks: the name must stay text in server.ts and extend.ts.
          'name = "Escape `${process.exit(7)}`\\n process.exit(8) // \\u2028 process.exit(9)"',
          'version = "0.1.0"',
          '[entity.Ticket]',
          'fields = [',
          '  { name = "id", type = "ULID", primary_key = true },',
          '  { name = "status", type = "Enum", values = ["open", "closed\\n  evil String?"], default = "open" },',
          ']',
          '[command.Close]',
          'entity = "Ticket"',
          'label = "Close */ export const pwned = 1; /*"',
          'mutations = { status = "open" }',
          '',
        ].join('\n'),
      );
      app = path.join(dir, 'app');
      await generate(path.join(dir, 'app.toml'), app);
      return app;
    };

    it('an Enum value with a line break cannot add a column through schema.prisma', async () => {
      const schema = fs.readFileSync(path.join(await escapeApp(), 'prisma/schema.prisma'), 'utf8');
      const start = schema.indexOf('model Ticket {');
      const body = schema.slice(start, schema.indexOf('}', start)).split('\n').slice(1);
      const fields = body.map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('//'));
      expect(fields.map((l) => l.split(/\s+/)[0])).to.deep.equal(['id', 'status']);
      const migration = fs.readFileSync(
        path.join(await escapeApp(), 'prisma/migrations/0001_init/migration.sql'),
        'utf8',
      );
      expect(migration).not.to.include('evil');
    });

    it('a command label cannot close its doc comment and add code to commands.ts', async () => {
      const commands = fs.readFileSync(path.join(await escapeApp(), 'src/commands.ts'), 'utf8');
      const source = ts.createSourceFile('commands.ts', commands, ts.ScriptTarget.Latest);
      const declared = source.statements.flatMap((s) =>
        ts.isVariableStatement(s) ? s.declarationList.declarations.map((d) => d.name.getText(source)) : [],
      );
      expect(declared).to.deep.equal(['close', 'COMMANDS']);
    });

    it('the project name stays text: a string literal in server.ts, whole comment lines in extend.ts', async () => {
      const dir = await escapeApp();
      const server = ts.createSourceFile(
        'server.ts',
        fs.readFileSync(path.join(dir, 'src/server.ts'), 'utf8'),
        ts.ScriptTarget.Latest,
      );
      const calls: string[] = [];
      const visit = (node: ts.Node): void => {
        if (ts.isCallExpression(node) && node.expression.getText(server) === 'process.exit')
          calls.push(node.arguments.map((a) => a.getText(server)).join());
        ts.forEachChild(node, visit);
      };
      visit(server);
      // The server's own exits only (1 on bad configuration, 0 on shutdown): none of the name's 7, 8 or 9.
      expect([...new Set(calls)].sort()).to.deep.equal(['0', '1']);
      const name = server.statements.flatMap((s) =>
        ts.isVariableStatement(s)
          ? s.declarationList.declarations.filter((d) => d.name.getText(server) === 'APP_NAME')
          : [],
      )[0];
      expect(name?.initializer && ts.isStringLiteral(name.initializer) ? name.initializer.text : undefined).to.equal(
        'Escape `${process.exit(7)}`\n process.exit(8) // \u2028 process.exit(9)',
      );
      const extend = ts.createSourceFile(
        'extend.ts',
        fs.readFileSync(path.join(dir, 'src/extend.ts'), 'utf8'),
        ts.ScriptTarget.Latest,
      );
      const exits: string[] = [];
      const inExtend = (node: ts.Node): void => {
        if (ts.isCallExpression(node) && node.expression.getText(extend) === 'process.exit')
          exits.push(node.getText(extend));
        ts.forEachChild(node, inExtend);
      };
      inExtend(extend);
      expect(exits).to.deep.equal([]);
    });
  });
});
