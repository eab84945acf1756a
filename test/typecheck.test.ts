// The repository itself type-checks in strict mode (with no unused locals): CI enforces what
// `npm run typecheck` says, so a type error cannot land just because no test ran that line.

import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { expect } from 'chai';
import { ROOT } from './support/apps.ts';

describe('the repository', function () {
  this.timeout(120_000);
  it('type-checks (tsc --noEmit -p .)', () => {
    const r = spawnSync(
      process.execPath,
      [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '-p', ROOT],
      { encoding: 'utf8' },
    );
    expect(r.stdout + r.stderr).to.equal('');
    expect(r.status).to.equal(0);
  });
});
