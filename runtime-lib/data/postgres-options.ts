// The settings of the PostgreSQL driver's pool (data/postgres.ts): read from the environment once
// when the app starts, checked, and turned into `pg`'s pool configuration.

import type pg from 'pg';
import { POSTGRES_TYPES } from './postgres-types.ts';

export interface PostgresOptions {
  /** Connections the pool opens at most (DATABASE_POOL_MAX, default 10). */
  poolMax?: number;
  /** How long a unit of work waits for a connection, pooled or new (DATABASE_CONNECT_TIMEOUT_MS, default 5,000). */
  connectionTimeoutMs?: number;
  /** How long one statement may run before PostgreSQL cancels it (DATABASE_STATEMENT_TIMEOUT_MS, default 10,000). */
  statementTimeoutMs?: number;
  /** How long a transaction may sit idle between statements before PostgreSQL ends it (default 30,000). */
  idleInTransactionTimeoutMs?: number;
  /** The name the connections show in pg_stat_activity (default "bp-app"); the URL's application_name wins. */
  applicationName?: string;
}

/** The largest timeout PostgreSQL (a 32-bit integer of milliseconds) and Node's timers accept. */
const MAX_TIMEOUT_MS = 2_147_483_647;
const MAX_POOL = 1000;

/** The environment variables of the pool, read by the caller once at start. */
const ENV_OPTIONS = [
  ['DATABASE_POOL_MAX', 'poolMax', MAX_POOL],
  ['DATABASE_CONNECT_TIMEOUT_MS', 'connectionTimeoutMs', MAX_TIMEOUT_MS],
  ['DATABASE_STATEMENT_TIMEOUT_MS', 'statementTimeoutMs', MAX_TIMEOUT_MS],
] as const;

/**
 * The pool options set in `env`. A value that is not a whole number in range throws, so a typo
 * refuses to start rather than silently meaning the default.
 */
export function postgresOptionsFromEnv(env: Readonly<Record<string, string | undefined>>): PostgresOptions {
  const options: PostgresOptions = {};
  for (const [name, key, max] of ENV_OPTIONS) {
    const text = env[name];
    if (text === undefined) continue;
    if (!/^\d{1,10}$/.test(text) || Number(text) < 1 || Number(text) > max)
      throw new Error(`${name} must be a whole number from 1 to ${max} (got "${text}")`);
    options[key] = Number(text);
  }
  return options;
}

function wholeNumber(name: string, value: number, max: number): number {
  if (!Number.isInteger(value) || value < 1 || value > max)
    throw new Error(`${name} must be a whole number from 1 to ${max} (got ${value})`);
  return value;
}

/**
 * The configuration of `pg`'s pool for a `postgres://` or `postgresql://` URL and `options`; a URL
 * of another scheme, one that sets the timeouts the options set, or an option out of range throws.
 */
export function poolConfig(url: string, options: PostgresOptions): pg.PoolConfig {
  if (!/^postgres(?:ql)?:\/\//.test(url)) {
    // Only the scheme is shown: the rest of a URL may hold a password.
    throw new Error(
      `a PostgreSQL DATABASE_URL starts with postgres:// or postgresql:// (got "${/^[^:/]*:?/.exec(url)?.[0]}")`,
    );
  }
  // Query parameters of the URL override the pool's settings in `pg`: a timeout set there would
  // silently win over the DATABASE_*_MS variables.
  const conflict = /[?&](statement_timeout|idle_in_transaction_session_timeout)=/.exec(url)?.[1];
  if (conflict) throw new Error(`DATABASE_URL may not set ${conflict}: use DATABASE_STATEMENT_TIMEOUT_MS`);
  return {
    connectionString: url,
    max: wholeNumber('the pool size', options.poolMax ?? 10, MAX_POOL),
    connectionTimeoutMillis: wholeNumber('the connect timeout', options.connectionTimeoutMs ?? 5000, MAX_TIMEOUT_MS),
    statement_timeout: wholeNumber('the statement timeout', options.statementTimeoutMs ?? 10_000, MAX_TIMEOUT_MS),
    idle_in_transaction_session_timeout: wholeNumber(
      'the idle-in-transaction timeout',
      options.idleInTransactionTimeoutMs ?? 30_000,
      MAX_TIMEOUT_MS,
    ),
    application_name: options.applicationName ?? 'bp-app',
    // Times with a time zone are converted in the session's zone (and now() is written in it to a
    // column without one): UTC, whatever the server's default, as the stored form is. The type
    // parsers read dates in ISO style, whatever the server's DateStyle. A Float reads back as the
    // number written (shortest exact), even where the server's default asks for fewer digits.
    options: '-c TimeZone=UTC -c DateStyle=ISO -c extra_float_digits=1',
    // Finds connections a vanished server or a NAT left dead while idle in the pool.
    keepAlive: true,
    // Queries go out as they are issued, without waiting for the answers of those before them
    // (https://node-postgres.com/features/pipelining): a unit's statements share round trips.
    pipeline: true,
    // Rows in the stored form, for this pool's connections only (data/postgres-types.ts).
    types: POSTGRES_TYPES,
  };
}
