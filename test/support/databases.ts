// The databases a generated app runs on, for suites that run once per database: SQLite (a file in
// the app's folder) and PostgreSQL (a fresh database on the throwaway embedded server).

import { freshPostgresDatabase } from './postgres.ts';

export const DATABASES = ['sqlite', 'postgres'] as const;
export type DatabaseKind = (typeof DATABASES)[number];

/** A DATABASE_URL of `kind` nobody else uses: `name` names the SQLite file or the database. */
export async function databaseUrl(kind: DatabaseKind, name: string): Promise<string> {
  return kind === 'sqlite' ? `file:./data/${name}.db` : freshPostgresDatabase(name);
}
