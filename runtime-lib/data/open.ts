// The app's database, chosen by DATABASE_URL when it starts: `file:` (or unset) opens the embedded
// SQLite file, `postgres://` or `postgresql://` a PostgreSQL server. Either way the migrations the
// generator wrote for it (prisma/migrations or prisma/postgres/migrations) are applied first, and
// the keys of unique e-mail fields filled where a row has none (data/email-keys.ts).

import * as path from 'node:path';
import type { Database } from './database.ts';
import { fillEmailKeys } from './email-keys.ts';
import { applyMigrations } from './migrate.ts';
import { openSqlite } from './sqlite.ts';

export const DEFAULT_DATABASE_URL = 'file:./data/app.db';

export interface OpenedDatabase {
  db: Database;
  /** One line for the start-up log: which database, with its settings. */
  description: string;
  /** Migrations applied now. */
  applied: string[];
}

/** Opens the database of `env.DATABASE_URL` and applies pending migrations. Throws with a reason. */
export async function openDatabase(appDir: string, env: NodeJS.ProcessEnv): Promise<OpenedDatabase> {
  const url = env.DATABASE_URL || DEFAULT_DATABASE_URL;
  if (url.startsWith('file:')) {
    const db = openSqlite(url, appDir, { synchronous: env.DATABASE_SYNC });
    try {
      // Before the app serves anything, so waiting for another instance's migration may block.
      const migrations = path.join(appDir, 'prisma', 'migrations');
      const { applied } = db.blocking((connection) => applyMigrations(connection, migrations));
      await fillEmailKeys(db);
      return { db, description: `SQLite, synchronous ${db.synchronous}`, applied };
    } catch (err) {
      await db.close();
      throw err;
    }
  }
  if (isPostgresUrl(url)) {
    // Loaded only for PostgreSQL: the pg driver costs an app on SQLite about 50 ms of its start
    // and 15 MB of memory (the production build puts these modules in a chunk of their own).
    const { openPostgres } = await import('./postgres.ts');
    const { postgresOptionsFromEnv } = await import('./postgres-options.ts');
    const { applyPostgresMigrations } = await import('./postgres-migrate.ts');
    const db = await openPostgres(url, postgresOptionsFromEnv(env));
    const migrations = path.join(appDir, 'prisma', 'postgres', 'migrations');
    try {
      // Several instances may start together: the migrations' advisory lock lets one apply them.
      const { applied } = await applyPostgresMigrations(db.pool, migrations);
      await fillEmailKeys(db);
      const version = await db.identifyServer();
      return { db, description: `PostgreSQL ${version}, a pool of ${db.pool.options.max} connections`, applied };
    } catch (err) {
      await db.close();
      throw new Error(`PostgreSQL at ${serverOf(url)}: ${reasonOf(err)}`, { cause: err });
    }
  }
  // Only the scheme: the rest of a URL may hold a password.
  throw new Error(
    'DATABASE_URL must start with file: (SQLite) or postgres:// or postgresql:// (PostgreSQL); ' +
      `got "${url.split(':')[0]}:"`,
  );
}

/** Where a PostgreSQL URL points, without its credentials. */
function serverOf(url: string): string {
  try {
    const { hostname, port, pathname } = new URL(url);
    return `${hostname}:${port || 5432}${pathname}`;
  } catch {
    return 'DATABASE_URL (not a valid URL)';
  }
}

/** The reason itself: a driver's error wraps the network failure (ECONNREFUSED...) as its cause. */
function reasonOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  return cause && cause !== message ? `${message} (${cause})` : message;
}

/** As prisma.config.ts decides which migrations folder the Prisma CLI uses. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}
