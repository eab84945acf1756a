// `npx mocha test/x.test.ts` runs that file alone. Mocha merges a config file's `spec` with the
// files named on the command line, so .mocharc.json must name none (npm test passes its glob):
// otherwise asking for one file ran the whole suite.

import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { expect } from 'chai';
import { ROOT } from './support/apps.ts';

describe('one test file runs alone', function () {
  this.timeout(60_000);

  it('mocha with one file named loads that file only', () => {
    const mocha = path.join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
    const r = spawnSync(process.execPath, [mocha, '--dry-run', '--reporter', 'json', 'test/locate.test.ts'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).to.equal(0);
    const report = JSON.parse(r.stdout) as { tests: Array<{ file: string }> };
    const files = [...new Set(report.tests.map((t) => path.relative(ROOT, t.file)))];
    expect(files).to.deep.equal(['test/locate.test.ts']);
  });
});
