// The app as bp dev's child process: `node dist/dev-server.js` in the app folder, its output
// passed through to the terminal. Ready when it prints that it listens; stopped with SIGTERM (the
// app closes its server and database), SIGKILL after 10 s, and always waited for, so that no
// process outlives bp dev.

import { type ChildProcess, spawn } from 'node:child_process';
import { DEV_ENTRY } from './app-build.ts';

export interface AppStart {
  /** Resolves when the app listens; rejects with its output's tail when it exits first. */
  ready: Promise<void>;
  process: ChildProcess;
}

const STOP_GRACE_MS = 10_000;

export function startAppProcess(appDir: string, env: NodeJS.ProcessEnv, echo: (text: string) => void): AppStart {
  const child = spawn(process.execPath, ['--enable-source-maps', DEV_ENTRY], {
    cwd: appDir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const seen = (chunk: Buffer) => {
    const text = chunk.toString();
    echo(text);
    tail = (tail + text).slice(-4000);
  };
  child.stdout.on('data', seen);
  child.stderr.on('data', seen);
  const ready = new Promise<void>((resolve, reject) => {
    const listening = () => {
      if (/ listening on http:\/\//.test(tail)) {
        child.stdout.off('data', listening);
        resolve();
      }
    };
    child.stdout.on('data', listening);
    child.once('exit', (code, signal) => reject(new Error(`the app exited (${signal ?? `code ${code}`}):\n${tail}`)));
    child.once('error', reject);
  });
  // Nobody may be waiting when it fails later: the dev loop watches 'exit' itself.
  ready.catch(() => {});
  return { ready, process: child };
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
