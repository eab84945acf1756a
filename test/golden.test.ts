// The generated tree of each fixture must equal its committed golden copy: the file list, every
// file of the app's own, and the hash of the runtime it copied (test/support/goldens.ts).
// After an intended change to the output: `npm run goldens`, then review the diff.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { freshDir } from './support/apps.ts';
import {
  GOLDEN_DIR,
  GOLDEN_FIXTURES,
  generateFresh,
  listTree,
  ownFiles,
  RUNTIME_DIR,
  runtimeHashFile,
} from './support/goldens.ts';

const AFTER_CHANGE = 'run npm run goldens after an intended change';

describe('golden output', function () {
  this.timeout(60_000);
  for (const [name, fixture] of Object.entries(GOLDEN_FIXTURES)) {
    describe(`${fixture} generates test/golden/${name}`, () => {
      const golden = path.join(GOLDEN_DIR, name);
      let out: string;
      let files: string[];
      before(() => {
        out = path.join(freshDir(`golden-${name}`), 'tree');
        generateFresh(fixture, out);
        files = listTree(out);
      });

      it('the same files (FILES.txt), the runtime copy among them', () => {
        expect(`${files.join('\n')}\n`, `file list (${AFTER_CHANGE})`).to.equal(
          fs.readFileSync(path.join(golden, 'FILES.txt'), 'utf8'),
        );
        const kept = listTree(path.join(golden, 'tree'));
        expect(kept, `the golden tree holds no runtime copy (${AFTER_CHANGE})`).to.deep.equal(ownFiles(files));
      });

      it("the app's own files, byte for byte", () => {
        for (const file of ownFiles(files)) {
          expect(fs.readFileSync(path.join(out, file), 'utf8'), `${file} (${AFTER_CHANGE})`).to.equal(
            fs.readFileSync(path.join(golden, 'tree', file), 'utf8'),
          );
        }
      });

      it(`the runtime copy in ${RUNTIME_DIR} (RUNTIME.sha256)`, () => {
        expect(runtimeHashFile(out), `the runtime copied into ${RUNTIME_DIR} (${AFTER_CHANGE})`).to.equal(
          fs.readFileSync(path.join(golden, 'RUNTIME.sha256'), 'utf8'),
        );
      });
    });
  }
});
