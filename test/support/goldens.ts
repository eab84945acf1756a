// Golden trees: each fixture's generated app, committed under test/golden/<name>/ with a sorted
// FILES.txt. `npm run goldens` regenerates them; the golden test fails on any difference.

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
