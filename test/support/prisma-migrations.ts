// A migrations folder in the shape Prisma's CLI hands it to the schema engine (applyMigrations,
// diagnoseMigrationHistory): the tests check bp's migration runners against Prisma's own engine.

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export function prismaMigrationsList(migrationsDir: string) {
  const names = readdirSync(migrationsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return {
    baseDir: migrationsDir,
    lockfile: {
      path: 'migration_lock.toml',
      content: readFileSync(join(migrationsDir, 'migration_lock.toml'), 'utf8'),
    },
    shadowDbInitScript: '',
    migrationDirectories: names.map((name) => ({
      path: name,
      migrationFile: {
        path: 'migration.sql',
        content: { tag: 'ok' as const, value: readFileSync(join(migrationsDir, name, 'migration.sql'), 'utf8') },
      },
    })),
  };
}

/** Every diff and apply considers all tables and enums (no prisma.config.ts `tables.external`). */
export const NO_FILTERS = { externalTables: [], externalEnums: [] };
