// The app's database, chosen by DATABASE_URL when it starts: `file:` (or unset) opens the embedded
// SQLite file, `postgres://` or `postgresql://` a PostgreSQL server. Either way the migrations the
// generator wrote for it (prisma/migrations or prisma/postgres/migrations) are applied first.

import * as path from 'node:path';
import type { Database } from './database.ts';
import { applyMigrations } from './migrate.ts';
import { openPostgres, postgresOptionsFromEnv } from './postgres.ts';
import { applyPostgresMigrations } from './postgres-migrate.ts';
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
      const { applied } = applyMigrations(db.connection, path.join(appDir, 'prisma', 'migrations'));
      return { db, description: `SQLite, synchronous ${db.synchronous}`, applied };
    } catch (err) {
      await db.close();
      throw err;
    }
  }
  if (isPostgresUrl(url)) {
    const db = await openPostgres(url, postgresOptionsFromEnv(env));
    try {
      // Several instances may start together: the migrations' advisory lock lets one apply them.
      const { applied } = await applyPostgresMigrations(db.pool, path.join(appDir, 'prisma', 'postgres', 'migrations'));
      return { db, description: `PostgreSQL, a pool of ${db.pool.options.max} connections`, applied };
    } catch (err) {
      await db.close();
      throw err;
    }
  }
  // Only the scheme: the rest of a URL may hold a password.
  throw new Error(
    `DATABASE_URL must start with file: (SQLite) or postgres:// or postgresql:// (PostgreSQL); got "${url.split(':')[0]}:"`,
  );
}

/** As prisma.config.ts decides which migrations folder the Prisma CLI uses. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}
