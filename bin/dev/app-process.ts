// The app as bp dev's child process, in the app folder, its output passed through to the
// terminal. Most of an app's start is Node loading its packages (Express, the MCP SDK…: about a
// second on a busy machine), so bp dev keeps the next process warm: a launcher
// (dist/dev-launcher.mjs) that imports the packages the last build imports, then waits; on a
// save, "start" on its standard input makes it import dist/dev-server.js, which finds them loaded.
// The launcher also stops the app when its standard input closes: when bp dev is gone, even killed,
// no app outlives it. Ready when the app prints that it listens; stopped with SIGTERM (the app
// closes its server and database), SIGKILL after 10 s, and always waited for.

import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEV_ENTRY } from './app-build.ts';

const LAUNCHER = 'dist/dev-launcher.mjs';

const LAUNCHER_SOURCE = `// Written by bp dev (bin/dev/app-process.ts): the app's packages now, the app on "start".
const packages = JSON.parse(process.env.BP_DEV_PRELOAD || '[]');
delete process.env.BP_DEV_PRELOAD;
// A package that fails to load here fails again, with its error, when the app imports it.
await Promise.all(packages.map((name) => import(name).catch(() => {})));
let started = false;
process.stdin.setEncoding('utf8');
process.stdin.on('data', (text) => {
  if (started || !text.includes('start')) return;
  started = true;
  import(${JSON.stringify(`./${path.basename(DEV_ENTRY)}`)});
});
// bp dev is gone: stop as Ctrl-C would (the app's own handler), or at once before the app started.
process.stdin.on('end', () => (started ? process.kill(process.pid, 'SIGTERM') : process.exit(0)));
`;

export interface AppProcess {
  process: ChildProcess;
  /** Tells the launcher to start the app; resolves when it listens, rejects with its output's tail if it exits. */
  start(): Promise<void>;
  /** Whether it exited (a spare that died cannot be started). */
  exited(): boolean;
}

const STOP_GRACE_MS = 10_000;

/** A launched process, the packages of `preload` loading; the app starts on start(). */
export function launchAppProcess(
  appDir: string,
  env: NodeJS.ProcessEnv,
  preload: readonly string[],
  echo: (text: string) => void,
): AppProcess {
  const launcher = path.join(appDir, LAUNCHER);
  if (!fs.existsSync(launcher) || fs.readFileSync(launcher, 'utf8') !== LAUNCHER_SOURCE) {
    fs.writeFileSync(launcher, LAUNCHER_SOURCE);
  }
  const child = spawn(process.execPath, ['--enable-source-maps', LAUNCHER], {
    cwd: appDir,
    env: { ...env, BP_DEV_PRELOAD: JSON.stringify(preload) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let tail = '';
  let exited = false;
  const seen = (chunk: Buffer) => {
    const text = chunk.toString();
    echo(text);
    tail = (tail + text).slice(-4000);
  };
  child.stdout.on('data', seen);
  child.stderr.on('data', seen);
  // Writing "start" to a process that just died must not throw.
  child.stdin.on('error', () => {});
  const ready = new Promise<void>((resolve, reject) => {
    const listening = () => {
      if (/ listening on http:\/\//.test(tail)) {
        child.stdout.off('data', listening);
        resolve();
      }
    };
    child.stdout.on('data', listening);
    child.once('exit', (code, signal) => {
      exited = true;
      reject(new Error(`the app exited (${signal ?? `code ${code}`}):\n${tail}`));
    });
    child.once('error', reject);
  });
  // Nobody may be waiting when it fails later: the dev loop watches 'exit' itself.
  ready.catch(() => {});
  return {
    process: child,
    exited: () => exited,
    start: () => {
      child.stdin.write('start\n');
      return ready;
    },
  };
}

/** SIGTERM, then SIGKILL after the grace period; resolves once the process is gone. */
export function stopAppProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
