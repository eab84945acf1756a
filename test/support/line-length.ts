// `npm run lint` runs this after Prettier: no line of bp's own tracked source is over 120 columns.
// Prettier wraps code at printWidth 120 (.prettierrc.json) but leaves strings and comments alone, so
// this catches what it cannot. Prints `file:line: N columns` for each line over and exits 1 if any.
//
// Checked: TypeScript, JavaScript (with bin/bp, the CLI's launcher) and Handlebars under git. Left out:
// - test/golden/: generated trees, compared byte for byte with the generator's output;
// - test/fixtures/invalid/: blueprints and handlers wrong on purpose, left as written (ESLint and
//   Prettier skip them too);
// - TOML blueprints: an inline table `{ ... }` must stay on one line (TOML 1.0), and a step or a
//   field is one inline table, so many fixture lines are long by the format's grammar.

import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const MAX_COLUMNS = 120;
const CHECKED = ['*.ts', '*.js', '*.mjs', '*.hbs', 'bin/bp'];
const LEFT_OUT = ['test/golden/', 'test/fixtures/invalid/'];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tracked = execFileSync('git', ['ls-files', '-z', '--', ...CHECKED], { cwd: root, encoding: 'utf8' })
  .split('\0')
  .filter((file) => file !== '' && !LEFT_OUT.some((dir) => file.startsWith(dir)));

// Fail closed: outside a git checkout (or with a wrong pattern) nothing would be checked.
if (tracked.length === 0) {
  console.log('no tracked source found: run this in a git checkout of bp');
  process.exit(1);
}

let over = 0;
for (const file of tracked) {
  // A tracked file deleted in the working tree is git's business, not a long line.
  if (!fs.existsSync(path.join(root, file))) continue;
  const lines = fs.readFileSync(path.join(root, file), 'utf8').split(/\r?\n/);
  lines.forEach((line, index) => {
    // Columns as an editor counts them: code points, so `★` is one column, not two UTF-16 units.
    const columns = [...line].length;
    if (columns > MAX_COLUMNS) {
      console.log(`${file}:${index + 1}: ${columns} columns`);
      over++;
    }
  });
}
if (over > 0) {
  console.log(`${over} line(s) over ${MAX_COLUMNS} columns: wrap them (Prettier does not wrap strings or comments).`);
  process.exit(1);
}
