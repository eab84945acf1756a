// The rows of a generated app's database as a test sees them, whichever database the app runs on:
// a second connection of the test's own (better-sqlite3 on the file, `pg` on the database), for
// suites that run once per database (support/databases.ts) and look past the API at what was
// stored. SQL is written once, with `?` placeholders and double-quoted identifiers; on PostgreSQL
// the placeholders become $1, $2, … Values come back as each driver reads them: a DateTime is a
// number or text on SQLite and a Date on PostgreSQL, a Boolean 0/1 on SQLite and false/true on
// PostgreSQL, so a test compares through the API's shapes, or normalizes with `plain`.

import Database from 'better-sqlite3';
import pg from 'pg';
import { sqliteFile } from '../../runtime-lib/data/sqlite.ts';

export type Row = Record<string, unknown>;

export interface AppRows {
  all(sql: string, params?: unknown[]): Promise<Row[]>;
  /** The first row, or undefined. */
  get(sql: string, params?: unknown[]): Promise<Row | undefined>;
  /** Runs a statement that returns no rows; resolves to the number of rows it changed. */
  run(sql: string, params?: unknown[]): Promise<number>;
  /** How many rows of `table` match `where` (what follows WHERE, with `?` placeholders), if given. */
  count(table: string, where?: string, params?: unknown[]): Promise<number>;
  close(): Promise<void>;
}

const POSTGRES_URL = /^postgres(ql)?:\/\//;

/** `?` placeholders as PostgreSQL's `$n`, outside string literals. */
function numbered(sql: string): string {
  let n = 0;
  let quoted = false;
  let out = '';
  for (const ch of sql) {
    if (ch === "'") quoted = !quoted;
    out += ch === '?' && !quoted ? `$${++n}` : ch;
  }
  return out;
}

const TIMESTAMP = 1114;

/** `pg`'s parsers, but a `timestamp` (no zone: the app stores UTC) read as UTC, whatever the test's time zone. */
const typeParser = ((oid: number, format?: 'text' | 'binary') =>
  oid === TIMESTAMP && format !== 'binary'
    ? (text: string) => new Date(`${text.replace(' ', 'T')}Z`)
    : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser;

/** Opens the database of `databaseUrl` (a `file:` URL is resolved against `appDir`, as the app does). */
export async function appRows(databaseUrl: string, appDir: string): Promise<AppRows> {
  const rows = POSTGRES_URL.test(databaseUrl) ? await postgresRows(databaseUrl) : sqliteRows(databaseUrl, appDir);
  return {
    ...rows,
    // PostgreSQL's count is a bigint, which `pg` reads as text.
    count: async (table, where, params) =>
      Number(
        (
          await rows.get(
            `SELECT COUNT(*) AS "n" FROM "${table}"${where === undefined ? '' : ` WHERE ${where}`}`,
            params,
          )
        )?.n,
      ),
  };
}

/** Runs `use` with a connection of its own, opened for it and closed after: it sees what was committed. */
export async function withAppRows<T>(
  databaseUrl: string,
  appDir: string,
  use: (rows: AppRows) => Promise<T>,
): Promise<T> {
  const rows = await appRows(databaseUrl, appDir);
  try {
    return await use(rows);
  } finally {
    await rows.close();
  }
}

type Driver = Omit<AppRows, 'count'>;

async function postgresRows(databaseUrl: string): Promise<Driver> {
  const client = new pg.Client({ connectionString: databaseUrl, types: { getTypeParser: typeParser } });
  await client.connect();
  const all = async (sql: string, params: unknown[] = []) => (await client.query(numbered(sql), params)).rows as Row[];
  return {
    all,
    get: async (sql, params) => (await all(sql, params))[0],
    run: async (sql, params = []) => (await client.query(numbered(sql), params)).rowCount ?? 0,
    close: () => client.end(),
  };
}

function sqliteRows(databaseUrl: string, appDir: string): Driver {
  const db = new Database(sqliteFile(databaseUrl, appDir));
  db.pragma('busy_timeout = 5000');
  return {
    all: async (sql, params = []) => db.prepare(sql).all(...params) as Row[],
    get: async (sql, params = []) => db.prepare(sql).get(...params) as Row | undefined,
    run: async (sql, params = []) => db.prepare(sql).run(...params).changes,
    close: async () => void db.close(),
  };
}

/**
 * A row's values as plain JSON values, the same on both databases: a Date as its ISO text, a
 * bigint as a number. (SQLite's own DateTime and Boolean forms are left as stored: compare
 * those through the API.)
 */
export function plain(row: Row): Row {
  return Object.fromEntries(
    Object.entries(row).map(([k, v]) => [
      k,
      v instanceof Date ? v.toISOString() : typeof v === 'bigint' ? Number(v) : v,
    ]),
  );
}
