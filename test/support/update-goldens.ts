// `npm run goldens`: regenerates every golden tree and its FILES.txt.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { GOLDEN_DIR, GOLDEN_FIXTURES, generateFresh, listTree } from './goldens.ts';

for (const [name, fixture] of Object.entries(GOLDEN_FIXTURES)) {
  const dir = path.join(GOLDEN_DIR, name);
  generateFresh(fixture, path.join(dir, 'tree'));
  fs.writeFileSync(path.join(dir, 'FILES.txt'), `${listTree(path.join(dir, 'tree')).join('\n')}\n`);
  console.log(`updated test/golden/${name}`);
}
