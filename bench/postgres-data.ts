// The contents of the PostgreSQL section's databases: the schema from a folder of Prisma
// migrations, the same seed rows as the SQLite section's, and the checks the section makes on them.

import * as fs from 'node:fs';
import * as path from 'node:path';
import pg from 'pg';
import { insertSql, type SeedRows } from './prepare.ts';

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Runs `<dir>/<name>/migration.sql` in folder-name order, each in its own transaction. */
export function applyMigrations(url: string, dir: string): Promise<void> {
  const scripts = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  if (!scripts.length) throw new Error(`no migrations in ${dir}`);
  return withClient(url, async (client) => {
    for (const name of scripts) {
      await client.query('BEGIN');
      await client.query(fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8'));
      await client.query('COMMIT');
    }
  });
}

/** Rows per INSERT: the seed goes in a few statements, well below PostgreSQL's 65,535 parameters. */
const BATCH = 1_000;

/**
 * Inserts the seed rows, then VACUUM ANALYZE: the planner's statistics and the visibility map are
 * what a database that has been running a while has, and every copy of this one inherits them.
 */
export function seedPostgres(url: string, rows: SeedRows): Promise<void> {
  return withClient(url, async (client) => {
    // The seed's DateTimes carry their offset (+00:00); in UTC, a timestamp column without time
    // zone then holds the UTC time, as Prisma stores it.
    await client.query("SET TIME ZONE 'UTC'");
    await client.query('BEGIN');
    for (const [table, all] of [
      ['Customer', rows.customers],
      ['Ticket', rows.tickets],
    ] as const) {
      for (let i = 0; i < all.length; i += BATCH) {
        const batch = all.slice(i, i + BATCH);
        await client.query(
          insertSql(table, batch.length, (n) => `$${n}`),
          batch.flat(),
        );
      }
    }
    await client.query('COMMIT');
    await client.query('VACUUM ANALYZE');
  });
}

/** The Ticket table's columns, sorted: the fields every server must answer with. */
export function ticketColumns(url: string): Promise<string[]> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ name: string }>(
      'SELECT column_name AS name FROM information_schema.columns ' +
        "WHERE table_schema = current_schema() AND table_name = 'Ticket'",
    );
    return rows.map((r) => r.name).sort();
  });
}

/** Whether the ticket is in the database: proof that a server writes to the database it was given. */
export function hasTicket(url: string, id: string): Promise<boolean> {
  return withClient(
    url,
    async (client) => (await client.query('SELECT 1 FROM "Ticket" WHERE "id" = $1', [id])).rowCount === 1,
  );
}
