// src/runtime/: the runtime library, copied into every app so it stands alone. The copies are
// the files of bp's runtime-lib/ (its folders kept) with the generated header on top.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GENERATED_HEADER } from './header.ts';

const RUNTIME_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../runtime-lib');

export function emitRuntime(): Map<string, string> {
  const files = new Map<string, string>();
  const entries = fs.readdirSync(RUNTIME_DIR, { recursive: true, encoding: 'utf8' });
  for (const name of entries.filter((f) => f.endsWith('.ts')).map((f) => f.split(path.sep).join('/')).sort()) {
    const source = fs.readFileSync(path.join(RUNTIME_DIR, name), 'utf8');
    files.set(`src/runtime/${name}`, `// ${GENERATED_HEADER} (copied from bp's runtime-lib)\n${source}`);
  }
  return files;
}
