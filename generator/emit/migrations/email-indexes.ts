/**
 * E-mail addresses unique ignoring letter case: CAROL@x.io and carol@x.io are one address. The
 * database enforces it with a unique index on lower("field") for every unique Email field.
 * Prisma's schema language cannot express an index on an expression, so bp adds these indexes
 * to the SQL Prisma's engine writes, and marks the fields in schema.prisma: the schema bp wrote
 * last is the record of which indexes the database already has.
 *
 * The SQL is the same in SQLite and PostgreSQL, and so are the index names. SQLite's lower() folds
 * ASCII letters only (SQLite is built without ICU), so the comparison ignores the case of A to Z:
 * the letters of almost every address in practice. PostgreSQL's folds every letter its database's
 * locale knows (É and é too).
 */

/**
 * The key column beside a unique Email field, `_bp_key_<field>` (no blueprint name starts with
 * `_`), or undefined for other fields. It holds the address as compared (runtime core/values.ts
 * emailKey: NFC, Unicode lower case), written by the app with the field, under a unique index: the
 * comparison no database's lower() gives the same everywhere. The lower() index stays for the
 * lookups of sign-in; where it folds, the key folds too.
 */
export function emailKeyColumn(field: {
  name: string;
  type: string;
  unique: boolean;
  primaryKey: boolean;
}): string | undefined {
  return field.type === 'Email' && field.unique && !field.primaryKey ? `_bp_key_${field.name}` : undefined;
}

export interface EmailIndex {
  table: string;
  field: string;
}

/**
 * The doc line right above a field of schema.prisma whose migrations carry its lower() index. A
 * line of its own, exactly this text: no blueprint value (an Enum's values, a description) can
 * produce it, so reading it back is unambiguous.
 */
export const EMAIL_INDEX_MARKER = '/// bp: unique ignoring letter case (an index on lower() in the migrations)';

/**
 * `Table.field_lower_key`: identifiers never contain a dot, so the index a unique violation names
 * (SQLite's "UNIQUE constraint failed: index '...'", PostgreSQL's `constraint` of error 23505)
 * gives the field unambiguously (runtime-lib/data/sqlite.ts).
 */
export function emailIndexName(index: EmailIndex): string {
  return `${index.table}.${index.field}_lower_key`;
}

/** The marked fields of a schema.prisma that bp wrote, sorted. */
export function emailIndexesOf(schema: string): EmailIndex[] {
  const found: EmailIndex[] = [];
  let table: string | undefined;
  let marked = false;
  for (const line of schema.split('\n')) {
    const model = /^model (\w+) \{$/.exec(line);
    if (model) table = model[1];
    else if (line === '}') table = undefined;
    else if (table !== undefined && marked) {
      // The field is the first line after the marker that is not documentation.
      const field = /^ {2}(\w+) /.exec(line)?.[1];
      if (field) found.push({ table, field });
    }
    if (line === `  ${EMAIL_INDEX_MARKER}`) marked = true;
    else if (!line.startsWith('  ///')) marked = false;
  }
  return found.sort((a, b) => compare(emailIndexName(a), emailIndexName(b)));
}

/**
 * Adds to one migration's SQL what keeps the lower() indexes in step with the schema: `before`
 * holds the indexes the database has (those of the schema the previous migration came from),
 * `after` those it must have. Drops come first (SQLite refuses to drop a column an index uses,
 * PostgreSQL drops the index with the column, and a DROP INDEX after that would fail);
 * creations come last, for new indexes and for every index of a table the migration rebuilds
 * (Prisma's SQLite migrations recreate a table as "new_X", drop "X" with its indexes, and
 * rename "new_X" to "X", so its indexes must be made again).
 */
export function withEmailIndexes(sql: string, before: readonly EmailIndex[], after: readonly EmailIndex[]): string {
  const names = (list: readonly EmailIndex[]) => new Set(list.map(emailIndexName));
  const had = names(before);
  const has = names(after);
  const dropped = new Set([...sql.matchAll(/^DROP TABLE "([^"]+)";$/gm)].map((m) => m[1]));
  const drops = before.filter((i) => !has.has(emailIndexName(i)));
  const creates = after.filter((i) => !had.has(emailIndexName(i)) || dropped.has(i.table));
  if (drops.length === 0 && creates.length === 0) return sql;
  const dropSql = drops.map(
    (i) => `-- DropIndex (unique e-mail, any letter case)\nDROP INDEX "${emailIndexName(i)}";\n`,
  );
  const createSql = creates.map(
    (i) =>
      `-- CreateIndex (unique e-mail, any letter case)\n` +
      `CREATE UNIQUE INDEX "${emailIndexName(i)}" ON "${i.table}"(lower("${i.field}"));\n`,
  );
  const body = sql === '' || sql.endsWith('\n') ? sql : `${sql}\n`;
  return [...dropSql, body, ...createSql].filter((part) => part !== '').join('\n');
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
