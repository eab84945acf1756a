// The app's npm packages. A freshly generated app has none installed, and its first start would
// end on the first import with a module-not-found stack; bp dev installs them instead, as the
// developer would, and again when a save adds a dependency (an e-mail adapter brings nodemailer).

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The dependencies of the app's package.json that Node would not find from its folder. */
export function missingPackages(appDir: string): string[] {
  const manifest = JSON.parse(fs.readFileSync(path.join(appDir, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  return Object.keys(manifest.dependencies ?? {})
    .filter((name) => !installedFrom(appDir, name))
    .sort();
}

/** Node's lookup: node_modules/<name> in the folder or any folder above it. */
function installedFrom(dir: string, name: string): boolean {
  for (let at = dir; ; at = path.dirname(at)) {
    if (fs.existsSync(path.join(at, 'node_modules', name, 'package.json'))) return true;
    if (path.dirname(at) === at) return false;
  }
}

/** Runs `npm install` in the app's folder, its output passed to `print`; resolves to whether it succeeded. */
export function installPackages(appDir: string, print: (text: string) => void): Promise<boolean> {
  return new Promise((resolve) => {
    const npm = spawn('npm', ['install', '--no-audit', '--no-fund'], {
      cwd: appDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    npm.stdout.on('data', (d: Buffer) => print(d.toString()));
    npm.stderr.on('data', (d: Buffer) => print(d.toString()));
    npm.once('error', (err) => {
      print(`${err.message}\n`);
      resolve(false);
    });
    npm.once('close', (code) => resolve(code === 0));
  });
}
