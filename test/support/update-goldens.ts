// `npm run goldens`: regenerates every golden tree (the app's own files), its FILES.txt and the
// hash of its runtime copy (RUNTIME.sha256).

import * as fs from 'node:fs';
import * as path from 'node:path';
import { freshDir } from './apps.ts';
import { GOLDEN_DIR, GOLDEN_FIXTURES, generateFresh, listTree, ownFiles, runtimeHashFile } from './goldens.ts';

for (const [name, fixture] of Object.entries(GOLDEN_FIXTURES)) {
  const dir = path.join(GOLDEN_DIR, name);
  const out = path.join(freshDir(`goldens-${name}`), 'tree');
  generateFresh(fixture, out);
  const files = listTree(out);
  fs.rmSync(path.join(dir, 'tree'), { recursive: true, force: true });
  for (const file of ownFiles(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, 'tree', file)), { recursive: true });
    fs.copyFileSync(path.join(out, file), path.join(dir, 'tree', file));
  }
  fs.writeFileSync(path.join(dir, 'FILES.txt'), `${files.join('\n')}\n`);
  fs.writeFileSync(path.join(dir, 'RUNTIME.sha256'), runtimeHashFile(out));
  fs.rmSync(path.dirname(out), { recursive: true, force: true });
  console.log(`updated test/golden/${name}`);
}
