// The key columns of unique Email fields (`_bp_key_<field>`, data/fields.ts), filled where they
// are empty. The app writes a key with every address it stores; a key is empty only in rows from
// before the migration that added the column, or written by another program. The key is
// JavaScript's (core/values.ts emailKey), which no SQL can compute on both databases, so the app
// fills them at start, after its migrations and before it serves anything.

import { AppError } from '../core/errors.ts';
import { emailKey } from '../core/values.ts';
import { all, type Database, get, run } from './database.ts';
import { fieldOfColumn } from './fields.ts';

/** Key columns, found by their prefix: the database says which tables have them. */
const KEY_COLUMNS = {
  sqlite:
    `SELECT m."name" AS "table", p."name" AS "column" FROM sqlite_master m, pragma_table_info(m."name") p ` +
    `WHERE m."type" = 'table' AND p."name" LIKE '\\_bp\\_key\\_%' ESCAPE '\\' ORDER BY 1, 2`,
  postgres:
    `SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns ` +
    `WHERE table_schema = current_schema() AND column_name LIKE '\\_bp\\_key\\_%' ESCAPE '\\' ORDER BY 1, 2`,
};

/**
 * Fills every empty key of a stored address, in one transaction; how many rows it filled. Throws
 * (the app does not start) when two rows hold addresses with the same key: the unique field
 * holds one address twice, and only a person can decide which record keeps it.
 */
export async function fillEmailKeys(db: Database): Promise<number> {
  const columns = (await db.read(all(KEY_COLUMNS[db.dialect]))) as Array<{ table: string; column: string }>;
  let filled = 0;
  for (const { table, column } of columns) {
    const field = fieldOfColumn(column);
    const [t, k, f] = [`"${table}"`, `"${column}"`, `"${field}"`];
    const empty = `${k} IS NULL AND ${f} IS NOT NULL`;
    if (!(await db.read(get(`SELECT 1 AS "one" FROM ${t} WHERE ${empty} LIMIT 1`)))) continue;
    const values = (await db.read(all(`SELECT DISTINCT ${f} AS "v" FROM ${t} WHERE ${empty}`))).map((r) => String(r.v));
    try {
      filled += await db.write(function* () {
        let n = 0;
        const fill = `UPDATE ${t} SET ${k} = ? WHERE ${f} = ? AND ${empty}`;
        for (const v of values) n += (yield* run(fill, [emailKey(v), v])).changes;
        return n;
      });
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'UNIQUE_CONFLICT')) throw err;
      const rows = await db.read(all(`SELECT ${f} AS "v" FROM ${t} WHERE ${f} IS NOT NULL`));
      const stored = rows.map((r) => String(r.v));
      throw new Error(
        `${table}.${field} is unique, yet holds one address more than once: ${sameAddresses(stored).join('; ')}. ` +
          'Addresses are compared in Unicode lower case and NFC (É is é); ' +
          'change or remove all but one of each, then start again.',
        { cause: err },
      );
    }
  }
  return filled;
}

/** The addresses among `stored` that share a key, each group as `"a" = "b"`; the first five groups. */
function sameAddresses(stored: readonly string[]): string[] {
  const byKey = new Map<string, string[]>();
  for (const address of stored) byKey.set(emailKey(address), [...(byKey.get(emailKey(address)) ?? []), address]);
  return [...byKey.values()]
    .filter((group) => group.length > 1)
    .slice(0, 5)
    .map((group) => group.map((a) => JSON.stringify(a)).join(' = '));
}
