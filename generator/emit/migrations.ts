// Each provider's migrations (prisma/migrations/ for SQLite, prisma/postgres/migrations/ for
// PostgreSQL): the existing ones are kept byte for byte; when the provider's schema differs from the
// one last generated, Prisma's engine writes the next migration, and bp adds the indexes Prisma
// cannot express (migrations/email-indexes.ts).

import { GENERATED_HEADER } from '../header.ts';
import { emailIndexesOf, withEmailIndexes } from './migrations/email-indexes.ts';
import { wrapSqlLines } from './migrations/layout.ts';
import { diffSchemas } from './migrations/schema-engine.ts';
import { PRISMA_DIR, type PrismaProvider } from './prisma-providers.ts';

/** One provider's schema and migrations from the previous generation. */
export interface PreviousMigrations {
  /** The provider's schema.prisma as bp last wrote it, if any. */
  schema?: string;
  /** Existing migrations, name -> migration.sql contents. */
  migrations: Map<string, string>;
}

export type PreviousOutput = Record<PrismaProvider, PreviousMigrations>;

/** `schema`: the provider's schema.prisma as generated now. Returns path -> contents. */
export async function emitMigrations(
  provider: PrismaProvider,
  schema: string,
  previous: PreviousMigrations,
): Promise<Map<string, string>> {
  const dir = `${PRISMA_DIR[provider]}/migrations`;
  const files = new Map<string, string>();
  const names = [...previous.migrations.keys()].sort();
  for (const name of names) files.set(`${dir}/${name}/migration.sql`, previous.migrations.get(name) as string);
  const baseline = names.length > 0 ? (previous.schema ?? null) : null;
  const sql = withEmailIndexes(
    await diffSchemas(baseline, schema),
    baseline === null ? [] : emailIndexesOf(baseline),
    emailIndexesOf(schema),
  );
  if (sql !== '') {
    // Sequence numbers, not timestamps: generating twice must give identical bytes.
    const seq = String(names.length + 1).padStart(4, '0');
    const name = `${seq}_${names.length === 0 ? 'init' : 'blueprint_change'}`;
    files.set(`${dir}/${name}/migration.sql`, `-- ${GENERATED_HEADER}\n${wrapSqlLines(sql)}`);
  }
  const lock = `# ${GENERATED_HEADER}\n# Prisma Migrate reads the provider from here.\nprovider = "${provider}"\n`;
  files.set(`${dir}/migration_lock.toml`, lock);
  return files;
}
