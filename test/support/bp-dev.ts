// Test (and bench) support for `bp dev`: the real CLI as a child process on a copy of the helpdesk
// fixture, its ports chosen by the system (--port 0 --admin-port 0) and read from what it prints.

import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BP, ROOT } from './apps.ts';

export interface RunningDev {
  /** The folder bp dev runs in: bp/ (the blueprint's copy) and app/ (the output). */
  dir: string;
  blueprint: string;
  appUrl: string;
  adminUrl: string;
  process: ChildProcess;
  output(): string;
  /** Resolves when the output (from now on, or from `from`) matches. */
  waitFor(pattern: RegExp, timeoutMs?: number, from?: number): Promise<RegExpExecArray>;
  /** The pid of the running app, from bp dev's latest "app ready … (pid N)" line. */
  appPid(): number;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Copies fixtures/helpdesk into `dir`/bp and starts `bp dev bp/helpdesk.toml -o app` there, with
 * `env` added to this process's environment.
 */
export async function startDev(
  dir: string,
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<RunningDev> {
  fs.cpSync(path.join(ROOT, 'fixtures', 'helpdesk'), path.join(dir, 'bp'), { recursive: true });
  const child = spawn(
    process.execPath,
    [BP, 'dev', 'bp/helpdesk.toml', '-o', 'app', '--port', '0', '--admin-port', '0', ...extraArgs],
    { cwd: dir, env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let output = '';
  const listeners = new Set<() => void>();
  const seen = (d: Buffer) => {
    output += d.toString();
    for (const l of listeners) l();
  };
  child.stdout.on('data', seen);
  child.stderr.on('data', seen);
  const waitFor = (pattern: RegExp, timeoutMs = 60_000, from = 0) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(output.slice(from));
        if (!m) return false;
        listeners.delete(check);
        clearTimeout(timer);
        resolve(m);
        return true;
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`bp dev did not print ${pattern} in ${timeoutMs} ms:\n${output}`));
      }, timeoutMs);
      if (!check()) listeners.add(check);
    });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Without hot reload there is nothing to watch: ready when the app is.
  await waitFor(extraArgs.includes('--no-hot-reload') ? /bp dev: app ready/ : /bp dev: watching/);
  const app = /bp dev: app: (http:\S+)/.exec(output);
  const admin = /bp dev: admin: (http:\S+)/.exec(output);
  if (!app || !admin) throw new Error(`bp dev printed no URLs:\n${output}`);
  return {
    dir,
    blueprint: path.join(dir, 'bp', 'helpdesk.toml'),
    appUrl: app[1],
    adminUrl: admin[1],
    process: child,
    output: () => output,
    waitFor,
    appPid: () => {
      const pids = [...output.matchAll(/app ready in \d+ ms \(pid (\d+);/g)];
      if (!pids.length) throw new Error(`bp dev started no app:\n${output}`);
      return Number(pids[pids.length - 1][1]);
    },
    stop: async (signal = 'SIGINT') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Replaces `from` (which must occur) by `to` in the file. */
export function edit(file: string, from: string, to: string): void {
  const text = fs.readFileSync(file, 'utf8');
  if (!text.includes(from)) throw new Error(`${file} does not contain ${from}`);
  fs.writeFileSync(file, text.replace(from, to));
}

/** Polls `probe` every 25 ms until it returns something other than undefined. */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
