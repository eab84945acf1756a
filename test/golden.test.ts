// The generated tree of each fixture must equal its committed golden copy, file list included.
// After an intended change to the output: `npm run goldens`, then review the diff.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { freshDir } from './support/apps.ts';
import { GOLDEN_DIR, GOLDEN_FIXTURES, generateFresh, listTree } from './support/goldens.ts';

describe('golden output', function () {
  this.timeout(60_000);
  for (const [name, fixture] of Object.entries(GOLDEN_FIXTURES)) {
    it(`${fixture} generates exactly test/golden/${name}`, () => {
      const out = path.join(freshDir(`golden-${name}`), 'tree');
      generateFresh(fixture, out);
      const golden = path.join(GOLDEN_DIR, name);
      const files = listTree(out);
      expect(`${files.join('\n')}\n`, 'file list (run npm run goldens after an intended change)').to.equal(
        fs.readFileSync(path.join(golden, 'FILES.txt'), 'utf8'),
      );
      for (const file of files) {
        expect(fs.readFileSync(path.join(out, file), 'utf8'), `${file} (run npm run goldens after an intended change)`).to.equal(
          fs.readFileSync(path.join(golden, 'tree', file), 'utf8'),
        );
      }
    });
  }
});
