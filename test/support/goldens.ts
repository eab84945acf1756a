// Golden trees: each fixture's generated app, committed under test/golden/<name>/: tree/ holds the
// app's own files, FILES.txt the sorted list of every generated file, and RUNTIME.sha256 one hash of
// the runtime copied into src/runtime/ (a copy of runtime-lib/, which its own tests cover: the
// goldens need to see that it changed, not hold it twice). `npm run goldens` regenerates them; the
// golden test fails on any difference.

import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bp, ROOT } from './apps.ts';

export const GOLDEN_DIR = path.join(ROOT, 'test', 'golden');

export const GOLDEN_FIXTURES: Record<string, string> = {
  helpdesk: 'fixtures/helpdesk/helpdesk.toml',
  catalog: 'fixtures/catalog/catalog.toml',
};

/** Every file under `dir`, relative, sorted by code point. */
export function listTree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else out.push(path.relative(dir, full).split(path.sep).join('/'));
    }
  };
  walk(dir);
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Generates `fixture` from scratch into `outDir` with the real CLI (run from the repo root, so paths are stable). */
export function generateFresh(fixture: string, outDir: string): void {
  fs.rmSync(outDir, { recursive: true, force: true });
  const r = bp(['generate', fixture, '-o', path.relative(ROOT, outDir)]);
  if (r.status !== 0) throw new Error(`bp generate ${fixture} failed:\n${r.stderr}`);
}

/** Where the generated app holds its copy of runtime-lib/. */
export const RUNTIME_DIR = 'src/runtime/';

/** The files the golden tree holds: all but the runtime copy. */
export function ownFiles(files: readonly string[]): string[] {
  return files.filter((f) => !f.startsWith(RUNTIME_DIR));
}

/**
 * sha256 over the runtime copy of the app in `appDir`: for each file under src/runtime/ in sorted
 * order, its path relative to src/runtime/, a NUL, its byte length, a NUL, then its bytes.
 */
export function runtimeHash(appDir: string): string {
  const hash = createHash('sha256');
  const dir = path.join(appDir, RUNTIME_DIR);
  for (const file of listTree(dir)) {
    const bytes = fs.readFileSync(path.join(dir, file));
    hash.update(`${file}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return hash.digest('hex');
}

/** RUNTIME.sha256's text: the hash and what it is over. */
export function runtimeHashFile(appDir: string): string {
  return `${runtimeHash(appDir)}  ${RUNTIME_DIR}\n`;
}
