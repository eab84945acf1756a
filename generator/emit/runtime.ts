// src/runtime/: the runtime library, copied into every app so it stands alone. The copies are
// the files of bp's runtime-lib/ with the generated header on top.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GENERATED_HEADER } from './header.ts';

const RUNTIME_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../runtime-lib');

export function emitRuntime(): Map<string, string> {
  const files = new Map<string, string>();
  for (const name of fs.readdirSync(RUNTIME_DIR).filter((f) => f.endsWith('.ts')).sort()) {
    const source = fs.readFileSync(path.join(RUNTIME_DIR, name), 'utf8');
    files.set(`src/runtime/${name}`, `// ${GENERATED_HEADER} (copied from bp's runtime-lib)\n${source}`);
  }
  return files;
}
