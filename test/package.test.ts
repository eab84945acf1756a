// bp installs as a package: `npm pack`, an offline install of the tarball into an empty project, and
// `npx bp generate` there writes what the checkout writes. The tarball holds what generation needs
// (bin/, generator/, runtime-lib/, templates/) and no tests; everything generation loads is a
// dependency, since only dependencies are installed.
//
// Two concessions to this offline machine, neither of which bp's packaging can hide behind:
// - npm 11 resolves a new dependency from the registry's full package documents, which its cache
//   here does not hold (it holds the tarballs and the abbreviated documents), so `npm install
//   <tarball>` cannot run offline. The project gets a lockfile instead: bp's own entries minus its
//   devDependencies (the same versions and integrity hashes), and `npm ci --offline` installs from
//   it. A module generation needs that is only a devDependency is therefore missing, as it would be
//   for a user.
// - better-sqlite3 (the schema engine's SQLite connection) compiles from source in its install
//   script, which takes one to two minutes here. The install runs with --ignore-scripts, and the
//   addon the checkout already compiled for this Node is copied in, once its version is checked
//   equal. Without it, generation fails: that it runs proves nothing compiled is missing besides.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';
import { bp, ROOT } from './support/apps.ts';
import { listTree } from './support/goldens.ts';

interface PackageJson {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  bin: Record<string, string>;
  engines: Record<string, string>;
}
interface LockEntry {
  version?: string;
  dev?: boolean;
}

function run(command: string, args: string[], cwd: string) {
  const r = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
  });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${r.status}):\n${r.stdout}${r.stderr}`);
  return r;
}

const read = <T>(file: string): T => JSON.parse(fs.readFileSync(file, 'utf8')) as T;

function snapshot(dir: string): Record<string, string> {
  return Object.fromEntries(
    listTree(dir).map((f) => [
      f,
      createHash('sha256')
        .update(fs.readFileSync(path.join(dir, f)))
        .digest('hex'),
    ]),
  );
}

describe('bp as an npm package', function () {
  this.timeout(180_000);
  let root: string;
  let tarball: string;
  let files: string[];
  const pkg = read<PackageJson>(path.join(ROOT, 'package.json'));

  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-package-'));
    const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', root], ROOT).stdout) as Array<{
      filename: string;
      files: Array<{ path: string }>;
    }>;
    tarball = path.join(root, packed[0].filename);
    files = packed[0].files.map((f) => f.path);
  });

  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('packs what generation needs, and no tests, goldens, fixtures, benchmarks or screenshots', () => {
    expect(files).to.include.members([
      'bin/bp',
      'bin/cli.ts',
      'generator/compile.ts',
      'runtime-lib/commands/handler.ts',
      'templates/app/src/extend.ts.hbs',
      'package.json',
      'README.md',
    ]);
    expect(
      files.filter((f) => /^(test|bench|fixtures|out|docs\/screenshots)\//.test(f) || f.includes('node_modules')),
    ).to.deep.equal([]);
    expect(fs.statSync(tarball).size).to.be.below(1_000_000);
  });

  it('installs offline into an empty project, and `npx bp generate` writes what the checkout writes', () => {
    const project = path.join(root, 'project');
    fs.mkdirSync(project);
    const spec = `file:${path.relative(project, tarball)}`;
    fs.writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'team-service', version: '1.0.0', private: true, dependencies: { bp: spec } }, null, 2),
    );
    const lock = read<{ packages: Record<string, LockEntry> }>(path.join(ROOT, 'package-lock.json'));
    const packages: Record<string, unknown> = {
      '': { name: 'team-service', version: '1.0.0', dependencies: { bp: spec } },
      'node_modules/bp': {
        version: pkg.version,
        resolved: spec,
        dependencies: pkg.dependencies,
        bin: pkg.bin,
        engines: pkg.engines,
      },
    };
    for (const [where, entry] of Object.entries(lock.packages)) if (where !== '' && !entry.dev) packages[where] = entry;
    fs.writeFileSync(
      path.join(project, 'package-lock.json'),
      JSON.stringify({ name: 'team-service', version: '1.0.0', lockfileVersion: 3, requires: true, packages }, null, 2),
    );

    const started = Date.now();
    run('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], project);
    const seconds = (Date.now() - started) / 1000;
    expect(seconds, 'npm ci of the tarball').to.be.below(60);

    const installed = path.join(project, 'node_modules');
    for (const name of Object.keys(pkg.dependencies))
      expect(fs.existsSync(path.join(installed, name)), `dependency ${name}`).to.equal(true);
    // Packages only bp's tests and bench use are not there to lean on.
    for (const name of ['typescript', 'mocha', 'express', 'prisma', '@prisma/client'])
      expect(fs.existsSync(path.join(installed, name)), name).to.equal(false);

    const sqlite = path.join(installed, 'better-sqlite3');
    expect(read<{ version: string }>(path.join(sqlite, 'package.json')).version).to.equal(
      read<{ version: string }>(path.join(ROOT, 'node_modules', 'better-sqlite3', 'package.json')).version,
    );
    const addon = path.join('build', 'Release', 'better_sqlite3.node');
    fs.mkdirSync(path.dirname(path.join(sqlite, addon)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, 'node_modules', 'better-sqlite3', addon), path.join(sqlite, addon));

    fs.cpSync(path.join(ROOT, 'fixtures', 'helpdesk'), path.join(project, 'helpdesk'), { recursive: true });
    const generated = run(
      'npx',
      ['--offline', 'bp', 'generate', 'helpdesk/helpdesk.toml', '-o', 'helpdesk/app'],
      project,
    );
    expect(generated.stdout).to.match(/generated helpdesk\/app: \d+ written/);
    // The checkout's CLI on the same blueprint, into a sibling folder: handler imports are relative,
    // so the two outputs sit at the same depth.
    const fromCheckout = bp(['generate', 'helpdesk/helpdesk.toml', '-o', 'helpdesk/checkout'], project);
    expect(fromCheckout.status, fromCheckout.stderr).to.equal(0);
    expect(snapshot(path.join(project, 'helpdesk', 'app'))).to.deep.equal(
      snapshot(path.join(project, 'helpdesk', 'checkout')),
    );
    expect(run('npx', ['--offline', 'bp', '--version'], project).stdout.trim()).to.equal(pkg.version);
  });
});
