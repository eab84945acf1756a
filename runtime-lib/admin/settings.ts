// Where the admin server and the metrics listener listen, read from the environment when the app
// starts: ADMIN_PORT / ADMIN_HOST (development only, loopback only) and METRICS_PORT / METRICS_HOST
// (any mode, any address). Small and free of prom-client: server.ts imports it in every app, and
// loads the listeners themselves only when one is asked for.

import { isIPv4 } from 'node:net';

export interface Listen {
  host: string;
  port: number;
}

export interface ObserverSettings {
  /** The admin server (admin-server.ts): set in development when ADMIN_PORT is. */
  admin?: Listen;
  /** GET /metrics alone: set when METRICS_PORT is. */
  metrics?: Listen;
  /** What the app should print as warnings (ADMIN_PORT ignored in production). */
  warnings: string[];
}

/** Throws with the message to print when a setting is unusable: the app must not start then. */
export function observerSettings(env: NodeJS.ProcessEnv): ObserverSettings {
  const warnings: string[] = [];
  let admin: Listen | undefined;
  if (env.ADMIN_PORT !== undefined) {
    if (env.NODE_ENV === 'production') {
      warnings.push('ADMIN_PORT is ignored in production: the admin server runs only in development');
    } else {
      const host = env.ADMIN_HOST ?? '127.0.0.1';
      if (!isLoopbackName(host)) {
        throw new Error(
          `ADMIN_HOST must be a loopback address (127.0.0.0/8, ::1 or localhost), got "${host}": ` +
            'the admin server has no authentication',
        );
      }
      admin = { host, port: port('ADMIN_PORT', env.ADMIN_PORT) };
    }
  }
  const metrics =
    env.METRICS_PORT === undefined
      ? undefined
      : { host: env.METRICS_HOST ?? '127.0.0.1', port: port('METRICS_PORT', env.METRICS_PORT) };
  return { ...(admin ? { admin } : {}), ...(metrics ? { metrics } : {}), warnings };
}

function port(name: string, raw: string): number {
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value > 65535) throw new Error(`${name} must be a number from 0 to 65535 (got "${raw}")`);
  return value;
}

/** localhost, ::1 or an address of 127.0.0.0/8. */
export function isLoopbackName(name: string): boolean {
  const lower = name.toLowerCase();
  if (lower === 'localhost' || lower === '::1') return true;
  return isIPv4(name) && name.startsWith('127.');
}

/**
 * Whether a Host header names this machine's loopback: `localhost`, `127.x.x.x` or `[::1]`, with
 * or without a port. Anything else reached the admin server through a name that is not loopback
 * (DNS rebinding: a page of another site whose name now resolves to 127.0.0.1).
 */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  let name = host;
  let rest = '';
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    if (close < 0) return false;
    name = host.slice(1, close);
    rest = host.slice(close + 1);
    if (name !== '::1') return false;
  } else {
    const colon = host.indexOf(':');
    if (colon >= 0) {
      name = host.slice(0, colon);
      rest = host.slice(colon);
    }
    if (name.toLowerCase() !== 'localhost' && !(isIPv4(name) && name.startsWith('127.'))) return false;
  }
  return rest === '' || /^:\d{1,5}$/.test(rest);
}
