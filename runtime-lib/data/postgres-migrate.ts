/**
 * Applies the app's PostgreSQL migrations (prisma/postgres/migrations/<name>/migration.sql) at start-up and
 * records them in `_prisma_migrations` exactly as Prisma Migrate does on PostgreSQL, so that `prisma migrate
 * status` / `prisma migrate deploy` run later agree with what was applied here. The SQLite counterpart, with
 * the rules both follow (folder order, checksums, failed and edited migrations), is migrate.ts.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import {
  editedMigrationError,
  failedMigrationsError,
  messageOf,
  readMigrations,
  scriptMatchesChecksum,
  type Migration,
  type MigrationResult,
} from './migrate.ts';

/**
 * The advisory lock Prisma Migrate takes on PostgreSQL while it migrates ("72707369 is a unique number we chose
 * to identify Migrate"): taking the same one, app instances that start together migrate one at a time, and
 * never at the same time as `prisma migrate deploy`. prisma-engines,
 * schema-engine/connectors/sql-schema-connector/src/flavour/postgres.rs (`acquire_lock`).
 */
export const PRISMA_MIGRATE_LOCK = 72707369;

/** How long a start waits for another process's migrations by default, before it fails with a clear error. */
const DEFAULT_LOCK_TIMEOUT_MS = 60_000;

/**
 * Prisma's DDL for the table on PostgreSQL, verbatim from prisma-engines,
 * schema-engine/connectors/sql-schema-connector/src/flavour/postgres.rs (`create_migrations_table`):
 * https://github.com/prisma/prisma-engines/blob/main/
 *   schema-engine/connectors/sql-schema-connector/src/flavour/postgres.rs
 * test/postgres-migrations.test.ts checks that it gives the table Prisma's engine creates.
 */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             TIMESTAMPTZ,
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          TIMESTAMPTZ,
    started_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    applied_steps_count     INTEGER NOT NULL DEFAULT 0
);
`;

/** PostgreSQL's SQLSTATE for lock_not_available: here, lock_timeout expired. */
const LOCK_NOT_AVAILABLE = '55P03';

export interface PostgresMigrationOptions {
  /** How long to wait for the migration lock another process holds (default 60 s). */
  lockTimeoutMs?: number;
}

/**
 * Applies, in folder-name order, the migrations `_prisma_migrations` does not record yet, each in its own
 * transaction, and stops with an Error at the first problem (nothing of the failing migration stays applied,
 * and no row records it). `database` is a connection URL (a connection of its own, closed at the end) or the
 * app's pool (one connection taken from it, then discarded: the session's lock and settings leave with it).
 * The whole run holds Prisma Migrate's advisory lock, so that of several instances starting together one
 * applies and the others, once it is done, find everything applied.
 */
export async function applyPostgresMigrations(
  database: string | pg.Pool,
  migrationsDir: string,
  options: PostgresMigrationOptions = {},
): Promise<MigrationResult> {
  const migrations = readMigrations(migrationsDir);
  const { client, close } = await connect(database);
  // A connection lost between two statements makes the next one fail; without a listener the 'error'
  // event would end the process instead.
  const ignore = () => {};
  client.on('error', ignore);
  try {
    await lock(client, options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS);
    // A migration may rewrite a large table: the request-sized statement timeout a URL or pool may set does
    // not apply to it.
    await client.query('SET statement_timeout = 0');
    await transaction(client, async () => {
      const exists = await client.query<{ exists: boolean }>(
        "SELECT to_regclass('_prisma_migrations') IS NOT NULL AS exists",
      );
      if (!exists.rows[0].exists) await client.query(CREATE_MIGRATIONS_TABLE);
      await refuseFailedMigrations(client);
    });
    const applied: string[] = [];
    let alreadyApplied = 0;
    for (const migration of migrations) {
      const wasApplied = await transaction(client, async () => {
        if (await isApplied(client, migration)) return true;
        await runMigration(client, migration);
        return false;
      });
      if (wasApplied) alreadyApplied += 1;
      else applied.push(migration.name);
    }
    return { applied, alreadyApplied };
  } finally {
    // Ending the session releases the advisory lock, whatever state the connection is in.
    await close().catch(ignore);
  }
}

async function connect(database: string | pg.Pool): Promise<{ client: pg.ClientBase; close: () => Promise<void> }> {
  if (typeof database !== 'string') {
    const client = await database.connect();
    // Released as broken: the pool closes it rather than hand a session with changed settings to a request.
    return { client, close: async () => client.release(true) };
  }
  const client = new pg.Client({ connectionString: database });
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
  return { client, close: () => client.end() };
}

/** Waits at most `timeoutMs` for the lock (lock_timeout applies to advisory locks too), then says who may hold it. */
async function lock(client: pg.ClientBase, timeoutMs: number): Promise<void> {
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
    throw new Error(`lockTimeoutMs must be a positive whole number of milliseconds, not ${timeoutMs}`);
  }
  await client.query(`SET lock_timeout = ${timeoutMs}`);
  try {
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK]);
  } catch (error) {
    if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw error;
    throw new Error(
      `Waited ${timeoutMs} ms for the migration lock (pg_advisory_lock(${PRISMA_MIGRATE_LOCK}), Prisma Migrate's): ` +
        'another app instance or `prisma migrate` is still migrating this database. Start again once it is done.',
      { cause: error },
    );
  }
  await client.query('RESET lock_timeout');
}

async function transaction<T>(client: pg.ClientBase, body: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await body();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** Unfinished and not rolled back: a migration `prisma migrate deploy` failed to apply (error P3009 in Prisma). */
async function refuseFailedMigrations(client: pg.ClientBase): Promise<void> {
  const failed = await client.query<{ migration_name: string }>(
    'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NULL AND rolled_back_at IS NULL ' +
      'ORDER BY started_at',
  );
  if (failed.rows.length > 0) throw failedMigrationsError(failed.rows.map((row) => row.migration_name));
}

/** Applied = recorded and not rolled back, as Prisma counts it; an edited script is an error. */
async function isApplied(client: pg.ClientBase, migration: Migration): Promise<boolean> {
  const rows = await client.query<{ checksum: string }>(
    'SELECT checksum FROM _prisma_migrations WHERE migration_name = $1 AND rolled_back_at IS NULL',
    [migration.name],
  );
  const edited = rows.rows.find((row) => !scriptMatchesChecksum(migration.script, row.checksum));
  if (edited !== undefined) throw editedMigrationError(migration, edited.checksum);
  return rows.rows.length > 0;
}

/**
 * Runs the script (simple query protocol: several statements, no parameters) and records the row as Prisma's
 * `apply_migrations` leaves it after a success: a v4 UUID id, the sha256 hex of the script, started_at when the
 * transaction began, finished_at when the script was done, logs NULL, applied_steps_count 1 (a script is one
 * step). Prisma writes the row before the script and completes it after; here it is written once, with the
 * script, so that a failed migration leaves no row (the next start tries again).
 */
async function runMigration(client: pg.ClientBase, migration: Migration): Promise<void> {
  try {
    await client.query(migration.script);
  } catch (error) {
    throw new Error(`Migration "${migration.name}" failed and was rolled back: ${messageOf(error)}`, { cause: error });
  }
  if (client.getTransactionStatus() !== 'T') {
    throw new Error(
      `Migration "${migration.name}" ended the transaction it runs in (it must not contain COMMIT, END or ROLLBACK)`,
    );
  }
  await client.query(
    'INSERT INTO _prisma_migrations ' +
      '(id, checksum, started_at, finished_at, migration_name, logs, rolled_back_at, applied_steps_count) ' +
      'VALUES ($1, $2, now(), clock_timestamp(), $3, NULL, NULL, 1)',
    [randomUUID(), migration.checksum, migration.name],
  );
}
