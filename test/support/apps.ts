// Test support: generate a fixture (in process, through the CLI's own `generate`), boot the
// generated app as its own process (as `npm run dev` or `npm start` does), and talk to it over HTTP.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateApp } from '../../bin/generate.ts';
import { START_NODE_FLAGS } from '../../generator/emit/index.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BP = path.join(ROOT, 'bin', 'bp');
export const TMP = path.join(ROOT, 'test', '.tmp');

export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `bp` CLI. */
export function bp(args: string[], cwd = ROOT): RunResult {
  const r = spawnSync(process.execPath, [BP, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * A fresh folder under test/.tmp (inside the repo, so generated apps resolve its node_modules),
 * per process so that concurrent test runs never share one.
 */
export function freshDir(name: string): string {
  const dir = path.join(TMP, `${name}-${process.pid}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * `bp generate blueprint -o outDir`, run in this process by the function the CLI runs (a CLI start
 * costs seconds, and the suite generates an app a hundred times); test/cli-generate.test.ts and
 * the other CLI tests run the real command.
 */
export async function generate(blueprint: string, outDir: string): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const print = { out: (text: string) => void (stdout += text), err: (text: string) => void (stderr += text) };
  const status = await generateApp(blueprint, { out: outDir }, print);
  if (status !== 0) throw new Error(`bp generate failed (${status}):\n${stderr}`);
  return { status, stdout, stderr };
}

export function typecheck(appDir: string): RunResult {
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', appDir], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export interface RunningApp {
  url: string;
  port: number;
  process: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** `npm run dev`'s command: the app straight from src/ through tsx. */
export const DEV_COMMAND = ['--import', 'tsx', 'src/server.ts'];
/** `npm start`'s command: the production build in dist/, built first when missing or stale. */
export const START_COMMAND = [...START_NODE_FLAGS, 'scripts/start.js', 'server'];

/** Starts the app (by default `npm run dev`'s command) on a free port and waits until it listens. */
export async function startApp(
  appDir: string,
  env: Record<string, string> = {},
  args = DEV_COMMAND,
): Promise<RunningApp> {
  const child = spawn(process.execPath, args, {
    cwd: appDir,
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`app did not start in 30 s:\n${output}`)), 30_000);
    const check = () => {
      const m = /listening on http:\/\/localhost:(\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout?.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`app exited with ${code}:\n${output}`));
    });
  });
  child.removeAllListeners('exit');
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    process: child,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

export async function request(
  base: string,
  method: string,
  urlPath: string,
  options: { json?: unknown; body?: string; headers?: Record<string, string> } = {},
): Promise<HttpResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined = options.body;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  }
  return readResponse(await fetch(base + urlPath, { method, headers, body }));
}

/** Status, headers, text and (when it is JSON) the parsed body of a fetch response. */
export async function readResponse(res: Response): Promise<HttpResponse> {
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

/** Adds a person with the generated app's users command (`npm run users -- add ...`), the password piped on stdin. */
export function addUser(
  appDir: string,
  env: Record<string, string>,
  email: string,
  password: string,
  roles: string[] = [],
): void {
  const args = ['--import', 'tsx', 'src/users.ts', 'add', '--email', email, ...roles.flatMap((r) => ['--role', r])];
  const r = spawnSync(process.execPath, args, {
    cwd: appDir,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    input: `${password}\n`,
  });
  if (r.status !== 0) throw new Error(`users add failed (${r.status}): ${r.stdout}${r.stderr}`);
}

export interface Session {
  cookie: string;
  csrfToken: string;
}

/** Signs in over the JSON login route and returns the session cookie and its CSRF token. */
export async function login(base: string, email: string, password: string): Promise<Session> {
  const res = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  const body = (await res.json()) as { csrfToken: string };
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(body)}`);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0];
  return { cookie, csrfToken: body.csrfToken };
}

let keyCounter = 0;
/** A fresh Idempotency-Key for a test request. */
export function freshKey(): string {
  keyCounter += 1;
  return `test-${process.pid}-${Date.now()}-${keyCounter}`;
}

/**
 * Polls a workflow job (GET /api/jobs/<id>, as the credential in `headers`) until it has finished,
 * completed or failed; every 50 ms, `tries` times at most.
 */
export async function jobFinished<T = Record<string, unknown>>(
  base: string,
  headers: Record<string, string>,
  url: string,
  tries = 100,
): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const res = await request(base, 'GET', url, { headers });
    if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${res.text}`);
    const job = res.body as { status: string };
    if (job.status === 'completed' || job.status === 'failed') return job as T;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`job ${url} did not finish`);
}
