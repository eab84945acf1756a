// README.md shows a small blueprint and the tree `bp generate` writes for it. This generates that
// very blueprint with the real CLI and holds the README to what it writes: the files it lists
// outside src/runtime/, and the runtime's folders, file count and line count it summarises.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { ROOT, bp, freshDir } from './support/apps.ts';

const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const SECTION = README.slice(README.indexOf('## A blueprint and what it generates'));

function block(re: RegExp, what: string): string {
  const m = re.exec(SECTION);
  if (!m) throw new Error(`README.md: no ${what} under "A blueprint and what it generates"`);
  return m[1];
}
/** The blueprint: the section's ```toml block. */
const BLUEPRINT = () => block(/^```toml\n([\s\S]*?)^```$/m, 'blueprint');
/** The tree: the block that starts with out/todo/ (its lines after that one). */
const TREE = () => block(/^```\nout\/todo\/\n([\s\S]*?)^```$/m, 'tree');

function filesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[]).filter((f) =>
    fs.statSync(path.join(dir, f)).isFile(),
  );
}

describe('the README example', function () {
  this.timeout(120_000);
  let dir: string;
  let out: string;
  let run: ReturnType<typeof bp>;

  before(() => {
    dir = freshDir('readme-example');
    fs.writeFileSync(path.join(dir, 'todo.toml'), BLUEPRINT());
    out = path.join(dir, 'out', 'todo');
    run = bp(['generate', path.join(dir, 'todo.toml'), '-o', out]);
  });

  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('generates without an error or a warning', () => {
    expect(run.status, run.stderr).to.equal(0);
    expect(run.stderr + run.stdout).to.not.match(/\[(warning|error) /);
  });

  it('lists exactly the files bp writes outside src/runtime/', () => {
    const tree = TREE().split('\n');
    const shown = tree
      .flatMap((line) => line.split('#')[0].trim().split(/\s+/))
      .filter((f) => f && !f.startsWith('src/runtime/'));
    const written = filesUnder(out)
      .filter((f) => !f.startsWith(`src${path.sep}runtime${path.sep}`))
      .map((f) => f.split(path.sep).join('/'));
    expect(shown.sort()).to.deep.equal(written.sort());
  });

  it("summarises the runtime's folders, files and lines as copied", () => {
    const runtime = path.join(out, 'src', 'runtime');
    const files = filesUnder(runtime);
    const lines = files.reduce((n, f) => n + fs.readFileSync(path.join(runtime, f), 'utf8').split('\n').length - 1, 0);
    const folders = fs
      .readdirSync(runtime)
      .filter((f) => fs.statSync(path.join(runtime, f)).isDirectory())
      .sort();
    const summary = /copied: ([\d,]+) files, about ([\d,]+) lines in\n\s+# (.+)\n/.exec(TREE());
    expect(summary, 'the src/runtime/ line of the tree').to.not.equal(null);
    expect(Number(summary![1].replace(/,/g, '')), 'files').to.equal(files.length);
    // "About" a number of lines, so that a comment's edit need not touch the README: within 3%.
    const shownLines = Number(summary![2].replace(/,/g, ''));
    expect(Math.abs(shownLines - lines) / lines, `lines: ${shownLines} shown, ${lines} copied`).to.be.below(0.03);
    expect(summary![3].trim().split(/\s+/)).to.deep.equal(folders.map((f) => `${f}/`));
  });
});
