// docs/zebric-compatibility.md says in its tables where bp warns NOT_GENERATED; this keeps those
// claims in step with what `bp validate` reports (issue 26: the page still called webhook, entity
// and schedule triggers, workflow skill actions, non-console notifications and service steps
// NOT_GENERATED after they ran). Each row whose notes name `NOT_GENERATED` must be the key some
// warning is reported at (or an element or a key inside it), and each warning must land on such a
// row. The warnings come from blueprints that between them draw every kind of NOT_GENERATED.

import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(import.meta.dirname, '..');
const DOC = fs.readFileSync(path.join(ROOT, 'docs/zebric-compatibility.md'), 'utf8');
const GRAMMAR = JSON.parse(fs.readFileSync(path.join(ROOT, 'test/fixtures/zebric/grammar-0.6.json'), 'utf8')) as {
  sections: Array<{ name: string; at: string[]; keys: string[] }>;
};
/** Root keys that name sections: their row is about each declaration, `<key>.<name>`. */
const NAMED = new Set(['entity', 'command', 'service', 'page', 'workflow', 'plugin', 'skill']);

interface Row {
  section: string;
  key: string;
  notes: string;
  patterns: string[][];
}

/** `a.b[].c` as segments, `[]` standing for any element of a list. */
const segments = (dotted: string): string[] =>
  dotted === '' ? [] : dotted.split('.').flatMap((s) => (s.endsWith('[]') ? [s.slice(0, -2), '[]'] : [s]));

/** The rows of the table under `### <section>`: key, notes, and the key paths the row is about. */
function rows(section: { name: string; at: string[] }): Row[] {
  const start = DOC.indexOf(`\n### ${section.name}\n`);
  expect(start, `### ${section.name}`).to.be.greaterThan(-1);
  const rest = DOC.slice(start + section.name.length + 6);
  const end = rest.search(/\n#{2,3} /);
  const body = end < 0 ? rest : rest.slice(0, end);
  return [...body.matchAll(/^\| `([^`]+)` \| [^|]+ \| (.*) \|$/gm)].map(([, key, notes]) => ({
    section: section.name,
    key,
    notes,
    patterns: section.at.map((at) => [
      ...segments(at),
      ...segments(key),
      ...(at === '' && NAMED.has(key) ? ['*'] : []),
    ]),
  }));
}

/** A rendered diagnostic path (`page."/x".query`) as its segments. */
const pathSegments = (rendered: string): string[] =>
  [...rendered.matchAll(/"(?:[^"\\]|\\.)*"|[^.]+/g)].map(([s]) => (s.startsWith('"') ? (JSON.parse(s) as string) : s));

const fits = (pattern: string, segment: string) =>
  pattern === '[]' ? /^\d+$/.test(segment) : pattern === '*' || pattern === segment;

/**
 * Whether a warning at `at` is about the key of `pattern`: reported at that key, at an element of
 * the list the key holds, or at a table that encloses the key (a warning on `auth.pages` is about
 * `auth.pages.signIn`; one on a list element is not about the keys of every element).
 */
function about(pattern: string[], at: string[]): boolean {
  const prefix = (n: number) => pattern.slice(0, n).every((p, i) => fits(p, at[i]));
  if (at.length === pattern.length) return prefix(pattern.length);
  if (at.length === pattern.length + 1) return prefix(pattern.length) && /^\d+$/.test(at[at.length - 1]);
  return at.length < pattern.length && !/^\d+$/.test(at[at.length - 1]) && at.every((s, i) => fits(pattern[i], s));
}

/** The paths `bp validate` (the real CLI) reports NOT_GENERATED at. */
function warnedAt(file: string): string[] {
  const run = spawnSync(process.execPath, [path.join(ROOT, 'bin/bp'), 'validate', file], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  expect(run.status, run.stderr).to.equal(0);
  return run.stderr.split('\n').flatMap((line) => {
    const m = /^\S+:\d+:\d+ (\S+): .* \[warning NOT_GENERATED\]$/.exec(line);
    return m ? [m[1]] : [];
  });
}

describe('docs/zebric-compatibility.md and the NOT_GENERATED warnings', () => {
  let warnings: string[];
  const all = GRAMMAR.sections.flatMap(rows);
  const claims = all.filter((r) => r.notes.includes('`NOT_GENERATED`'));

  before(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-not-generated-'));
    try {
      // A provider other than email, and sign-in pages nobody serves without it: the kinds of warning
      // the two fixtures below do not draw.
      const providers = path.join(dir, 'providers.toml');
      fs.writeFileSync(
        providers,
        '[auth]\nproviders = ["github"]\n' +
          ['signIn', 'signUp', 'signOut', 'loginRequired']
            .map((page) => `\n[auth.pages.${page}]\nsource = "<p>${page}</p>"\ntype = "inline"\n`)
            .join(''),
      );
      warnings = [
        ...warnedAt('test/fixtures/zebric/grammar/app.toml'),
        ...warnedAt('test/fixtures/invalid/not-generated/app.toml'),
        ...warnedAt(providers),
      ];
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it(
    // Enabled plugins are loaded (test/plugins.test.ts): they draw no NOT_GENERATED any more.
    'draws every kind of warning: services, plugin steps without [[plugins]], adapters, ' +
      'entity-started skill actions, providers, auth.pages',
    () => {
      const kinds = new Set(
        warnings.map(
          (w) =>
            pathSegments(w)
              .filter((s) => !/^\d+$/.test(s))
              .slice(0, 1)
              .join('.') + (w.includes('steps') ? '.steps' : ''),
        ),
      );
      expect([...kinds].sort()).to.deep.equal(['auth', 'notifications', 'service', 'skill', 'workflow.steps']);
      expect(warnings.filter((w) => w.startsWith('auth.')).sort()).to.deep.equal([
        'auth.pages.loginRequired',
        'auth.pages.signIn',
        'auth.pages.signOut',
        'auth.pages.signUp',
        'auth.providers.0',
      ]);
    },
  );

  it('says NOT_GENERATED only in rows some warning is about', () => {
    const stale = claims.filter((row) => !warnings.some((w) => row.patterns.some((p) => about(p, pathSegments(w)))));
    expect(stale.map((r) => `${r.section}: ${r.key}`)).to.deep.equal([]);
  });

  it('has a row saying NOT_GENERATED for each warning', () => {
    const undocumented = warnings.filter(
      (w) => !claims.some((row) => row.patterns.some((p) => about(p, pathSegments(w)))),
    );
    expect(undocumented).to.deep.equal([]);
  });
});
