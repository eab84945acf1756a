// Wall time per test file, for finding what makes the suite slow: with BP_FILE_TIMES=<path> set,
// the root hooks note when each test ends, and at the end write one line per file, slowest first.
// In a serial run a file's time runs from the previous file's last test to its own last test, so
// its before hooks (generating and booting apps) count, as they should. In a parallel run each
// worker appends a file's line when the file ends (unsorted: `sort -rn` them).

import * as fs from 'node:fs';
import * as path from 'node:path';

const times = new Map<string, number>();
let last = Date.now();

/** Called once the test files are loaded, before the first test. */
export function startTiming(): void {
  last = Date.now();
}

/** Called after every test: the time since the previous test ended goes to this one's file. */
export function noteTestEnd(file: string | undefined): void {
  const now = Date.now();
  if (file) times.set(file, (times.get(file) ?? 0) + (now - last));
  last = now;
}

/** Writes the per-file times to `out`, slowest first, as "<seconds> <file>". */
export function writeFileTimes(out: string, root: string): void {
  const lines = [...times]
    .sort((a, b) => b[1] - a[1])
    .map(([file, ms]) => `${(ms / 1000).toFixed(1).padStart(7)} ${path.relative(root, file)}`);
  fs.writeFileSync(out, `${lines.join('\n')}\n`);
}

/** In a parallel run's worker: appends the file that just ended (the only one timed) to `out`. */
export function appendFileTime(out: string, root: string): void {
  for (const [file, ms] of times)
    fs.appendFileSync(out, `${(ms / 1000).toFixed(1).padStart(7)} ${path.relative(root, file)}\n`);
  times.clear();
}
