// Callers of a generated app for the access tests: people added with the app's own users command
// and signed in over HTTP (cookie + CSRF token), API keys (bearer + Idempotency-Key), anonymous.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readResponse } from '../apps.ts';

export interface UserSpec {
  email: string;
  password: string;
  roles: string[];
  /** Fields of the User record, when people are its records (`--field name=value`). */
  fields?: Record<string, string>;
}

/**
 * `node --import tsx src/users.ts add ...` in the app folder, as `npm run users -- add` runs it,
 * the password piped.
 */
export function addUser(appDir: string, env: Record<string, string>, user: UserSpec): Promise<string> {
  const fields = Object.entries(user.fields ?? {}).flatMap(([name, value]) => ['--field', `${name}=${value}`]);
  const args = [
    '--import',
    'tsx',
    'src/users.ts',
    'add',
    '--email',
    user.email,
    ...fields,
    ...user.roles.flatMap((r) => ['--role', r]),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: appDir,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end(`${user.password}\n`);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`users add ${user.email} exited with ${code}: ${out}`)),
    );
  });
}

/** The cookie pair (`name=value`) a response sets under `name`, if any. */
export function setCookie(res: Response, name: string): string | undefined {
  const line = res.headers.getSetCookie().find((l) => l.startsWith(`${name}=`));
  return line?.split(';')[0];
}

export interface SignedIn {
  cookie: string;
  csrfToken: string;
  actor: { kind: string; id: string; email?: string; roles: string[]; delegatedBy?: unknown };
}

/** JSON sign-in; keeps the session cookie and the token the answer carries. */
export async function signIn(base: string, cookieName: string, email: string, password: string): Promise<SignedIn> {
  const res = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`sign-in of ${email} failed: ${res.status} ${text}`);
  const cookie = setCookie(res, cookieName);
  if (!cookie) throw new Error(`sign-in of ${email} set no ${cookieName} cookie`);
  const body = JSON.parse(text) as { actor: SignedIn['actor']; csrfToken: string };
  return { cookie, csrfToken: body.csrfToken, actor: body.actor };
}

export const idempotencyKey = (): string => `access-${randomUUID()}`;

/** A browser-like client for one person: keeps the cookies the server sets and sends them back. */
export class CookieClient {
  readonly cookies = new Map<string, string>();
  lastSetCookie: string[] = [];

  constructor(readonly base: string) {}

  get cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async send(
    method: string,
    url: string,
    send: { json?: unknown; form?: Record<string, string>; headers?: Record<string, string> } = {},
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read answers' fields directly
  ): Promise<{ status: number; headers: Headers; text: string; body: any }> {
    const headers: Record<string, string> = { ...send.headers };
    if (this.cookies.size && headers.cookie === undefined) headers.cookie = this.cookieHeader;
    let body: string | undefined;
    if (send.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(send.json);
    } else if (send.form) {
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
      body = new URLSearchParams(send.form).toString();
    }
    const res = await fetch(this.base + url, { method, headers, body, redirect: 'manual' });
    this.lastSetCookie = res.headers.getSetCookie();
    for (const line of this.lastSetCookie) {
      const [pair] = line.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return readResponse(res);
  }
}

/** `bp generate` without blocking the event loop, so several apps can be prepared at once. */
export function generateApp(bpPath: string, blueprint: string, outDir: string, cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bpPath, 'generate', blueprint, '-o', outDir], {
      cwd,
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`bp generate ${blueprint} failed (${code}):\n${out}`)),
    );
  });
}
