// Where the admin server and the metrics listener listen, read from the environment when the app
// starts: ADMIN_PORT / ADMIN_HOST (development only, loopback only) and METRICS_PORT / METRICS_HOST
// (any mode, any address). Small and free of prom-client: server.ts imports it in every app, and
// loads the listeners themselves only when one is asked for.

import { isLoopbackName } from '../core/loopback.ts';

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
