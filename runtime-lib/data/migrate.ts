/**
 * Applies the app's Prisma migrations (prisma/migrations/<name>/migration.sql) at start-up and
 * records them in `_prisma_migrations` exactly as Prisma Migrate does for SQLite, so that
 * `prisma migrate status` / `prisma migrate deploy` run later agree with what was applied here.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';

export interface MigrationResult {
  applied: string[];
  alreadyApplied: number;
}

/**
 * Prisma's DDL for the table on SQLite, verbatim from prisma-engines,
 * schema-engine/connectors/sql-schema-connector/src/flavour/sqlite.rs (`create_migrations_table`):
 * https://github.com/prisma/prisma-engines/blob/main/
 *   schema-engine/connectors/sql-schema-connector/src/flavour/sqlite.rs
 * test/migrations.test.ts checks that it matches, byte for byte, the table Prisma's engine creates.
 */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE "_prisma_migrations" (
    "id"                    TEXT PRIMARY KEY NOT NULL,
    "checksum"              TEXT NOT NULL,
    "finished_at"           DATETIME,
    "migration_name"        TEXT NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        DATETIME,
    "started_at"            DATETIME NOT NULL DEFAULT current_timestamp,
    "applied_steps_count"   INTEGER UNSIGNED NOT NULL DEFAULT 0
)`;

export interface Migration {
  name: string;
  script: string;
  checksum: string;
}

/**
 * Applies, in folder-name order, the migrations `_prisma_migrations` does not record yet, each in
 * its own transaction, and stops with an Error at the first problem (nothing of the failing
 * migration stays applied). Waiting for another process that is migrating the same file is
 * bounded by the connection's busy timeout (data/open.ts runs this under SqliteDatabase.blocking:
 * the app's lock wait, 5 s by default).
 */
export function applyMigrations(db: Database.Database, migrationsDir: string): MigrationResult {
  const migrations = readMigrations(migrationsDir);
  // Prisma's SQLite scripts rebuild tables (create new_X, copy, DROP X, rename) between
  // `PRAGMA foreign_keys=OFF` and `=ON`, but that pragma is a no-op inside a transaction. With
  // enforcement on, `DROP TABLE` of a referenced table would run its ON DELETE actions and null
  // or delete the rows pointing at it. So enforcement is off while migrating, and each
  // migration is checked with `PRAGMA foreign_key_check` before it commits instead, as in
  // SQLite's own procedure for schema changes (https://www.sqlite.org/lang_altertable.html#otheralter).
  const enforcedForeignKeys = db.pragma('foreign_keys', { simple: true }) === 1;
  if (enforcedForeignKeys) db.pragma('foreign_keys = OFF');
  try {
    immediateTransaction(db, () => {
      if (!migrationsTableExists(db)) db.exec(CREATE_MIGRATIONS_TABLE);
      refuseFailedMigrations(db);
    });
    const applied: string[] = [];
    let alreadyApplied = 0;
    for (const migration of migrations) {
      // The applied check runs inside the write transaction: a second process starting at the
      // same time waits on BEGIN IMMEDIATE, then finds the migration recorded by the first.
      const wasApplied = immediateTransaction(db, () => {
        if (isApplied(db, migration)) return true;
        runMigration(db, migration, enforcedForeignKeys);
        return false;
      });
      if (wasApplied) alreadyApplied += 1;
      else applied.push(migration.name);
    }
    return { applied, alreadyApplied };
  } finally {
    if (enforcedForeignKeys) db.pragma('foreign_keys = ON');
  }
}

/** The migration folders of `migrationsDir`, in the order Prisma applies them. */
export function readMigrations(migrationsDir: string): Migration[] {
  let entries: string[];
  try {
    entries = readdirSync(migrationsDir);
  } catch (error) {
    throw new Error(`Cannot read the migrations directory ${migrationsDir}: ${messageOf(error)}`, { cause: error });
  }
  // Plain code-unit order, as the Prisma CLI lists migration folders (timestamp-prefixed names).
  return entries
    .filter((entry) => statSync(join(migrationsDir, entry)).isDirectory())
    .sort()
    .map((name) => {
      const file = join(migrationsDir, name, 'migration.sql');
      let contents: Buffer;
      try {
        contents = readFileSync(file);
      } catch (error) {
        throw new Error(`Migration "${name}" has no readable migration.sql (${file}): ${messageOf(error)}`, {
          cause: error,
        });
      }
      return { name, script: contents.toString('utf8'), checksum: sha256(contents) };
    });
}

function immediateTransaction<T>(db: Database.Database, body: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = body();
    db.exec('COMMIT');
    return result;
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

function migrationsTableExists(db: Database.Database): boolean {
  return (
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_prisma_migrations'").get() !== undefined
  );
}

/**
 * A row that is neither finished nor rolled back is a migration `prisma migrate deploy` failed
 * to apply (this module records nothing on failure). Prisma refuses to go on until it is resolved
 * (error P3009); applying later migrations on top of a half-applied one would be worse.
 */
function refuseFailedMigrations(db: Database.Database): void {
  const failed = db
    .prepare(
      'SELECT migration_name FROM "_prisma_migrations" ' +
        'WHERE finished_at IS NULL AND rolled_back_at IS NULL ORDER BY started_at',
    )
    .pluck()
    .all() as string[];
  if (failed.length > 0) throw failedMigrationsError(failed);
}

export function failedMigrationsError(names: readonly string[]): Error {
  return new Error(
    `The database records failed migrations: ${names.join(', ')}. Fix the database, then mark them with ` +
      '`prisma migrate resolve --applied <name>` or `--rolled-back <name>` before starting the app again.',
  );
}

/** Applied = recorded and not rolled back, as Prisma counts it; an edited script is an error. */
function isApplied(db: Database.Database, migration: Migration): boolean {
  const checksums = db
    .prepare('SELECT checksum FROM "_prisma_migrations" WHERE migration_name = ? AND rolled_back_at IS NULL')
    .pluck()
    .all(migration.name) as string[];
  const edited = checksums.find((checksum) => !scriptMatchesChecksum(migration.script, checksum));
  if (edited !== undefined) throw editedMigrationError(migration, edited);
  return checksums.length > 0;
}

export function editedMigrationError(migration: Migration, appliedChecksum: string): Error {
  return new Error(
    `Migration "${migration.name}" was edited after it was applied to this database: its migration.sql ` +
      `(sha256 ${migration.checksum}) differs from the applied one (sha256 ${appliedChecksum}). Restore the ` +
      'applied file and put the change in a new migration.',
  );
}

/**
 * Prisma compares line-ending-agnostically, so that a checkout that converted LF to CRLF (or
 * back) does not count as an edit: prisma-engines, schema-engine/connectors/schema-connector/src/checksum.rs.
 */
export function scriptMatchesChecksum(script: string, checksum: string): boolean {
  return [script, script.replaceAll('\r\n', '\n'), script.replaceAll('\n', '\r\n')].some(
    (variant) => sha256(variant) === checksum,
  );
}

/**
 * Records the row as Prisma's `apply_migrations` leaves it after a success: a v4 UUID id, the
 * sha256 hex of the script, started_at / finished_at as Prisma's SQLite driver writes
 * DateTimes (Unix milliseconds), logs NULL, applied_steps_count 1 (a script is one step).
 */
function runMigration(db: Database.Database, migration: Migration, checkForeignKeys: boolean): void {
  const startedAt = Date.now();
  try {
    db.exec(migration.script);
  } catch (error) {
    throw new Error(`Migration "${migration.name}" failed and was rolled back: ${messageOf(error)}`, { cause: error });
  }
  if (!db.inTransaction) {
    throw new Error(
      `Migration "${migration.name}" ended the transaction it runs in (it must not contain COMMIT, END or ROLLBACK)`,
    );
  }
  if (checkForeignKeys) {
    const violations = db.prepare('PRAGMA foreign_key_check').all() as { table: string; parent: string }[];
    if (violations.length > 0) {
      const pairs = [...new Set(violations.map((v) => `${v.table} -> ${v.parent}`))].join(', ');
      throw new Error(
        `Migration "${migration.name}" failed and was rolled back: ` +
          `it leaves rows whose foreign keys point nowhere (${pairs})`,
      );
    }
  }
  db.prepare(
    'INSERT INTO "_prisma_migrations" ' +
      '(id, checksum, started_at, finished_at, migration_name, logs, rolled_back_at, applied_steps_count) ' +
      'VALUES (?, ?, ?, ?, ?, NULL, NULL, 1)',
  ).run(randomUUID(), migration.checksum, startedAt, Date.now(), migration.name);
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
