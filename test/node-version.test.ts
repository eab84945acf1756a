// bp states the Node.js versions it runs on (package.json "engines", Prisma's own range) and
// bin/bp checks the running version before it loads anything: on another one, a clear message and
// exit code 3. Run through the real bin/bp, with process.versions.node set by a preloaded module.

import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(import.meta.dirname, '..');
const BIN = path.join(ROOT, 'bin', 'bp');
const RANGE = '^20.19 || ^22.12 || >=24.0';

function bpOn(version: string | undefined): { status: number | null; stdout: string; stderr: string } {
  const preload =
    version === undefined
      ? []
      : ['--import', `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"${version}"})`];
  const run = spawnSync(process.execPath, [...preload, BIN, '--version'], { cwd: ROOT, encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

const readJson = (file: string) =>
  JSON.parse(fs.readFileSync(path.join(ROOT, file), 'utf8')) as { version: string; engines: { node: string } };

describe('the Node.js version', () => {
  it("is stated as Prisma's range, in bp's package.json", () => {
    expect(readJson('package.json').engines.node).to.equal(RANGE);
    expect(readJson('node_modules/prisma/package.json').engines.node).to.equal(RANGE);
    expect(readJson('node_modules/@prisma/client/package.json').engines.node).to.equal(RANGE);
  });

  it('is checked by bp at start: another version gets a clear message and exit code 3', () => {
    for (const version of ['18.20.4', '20.18.3', '21.7.3', '22.11.0', '23.11.1']) {
      const run = bpOn(version);
      expect(run.status, version).to.equal(3);
      expect(run.stdout, version).to.equal('');
      expect(run.stderr, version).to.equal(
        'bp needs Node.js 20.19 or later in the 20 line, 22.12 or later in the 22 line, or 24 and later; ' +
          `this is Node.js ${version}\n`,
      );
    }
  });

  it("lets bp run on the versions of the range, this machine's included", () => {
    for (const version of ['20.19.0', '22.12.0', '24.0.0', '26.1.0', undefined]) {
      const run = bpOn(version);
      expect(run.status, `${version}: ${run.stderr}`).to.equal(0);
      expect(run.stdout).to.equal(`${readJson('package.json').version}\n`);
    }
  });
});
