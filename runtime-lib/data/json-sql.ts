// A record's JSON made by PostgreSQL itself, for a change whose audit record and key's stored
// answer are written by the change's own statement (EntityStore.lockAndChange). The values are the
// API's (a DateTime as toISOString, a Float that JSON has no number for as null), so the JSON parses
// to what the app's own JSON.stringify parses to; only its spacing and a Float's exponent can
// differ, which no reader sees: a replay and the audit trail parse what they read and send it as
// the app writes JSON. Floats are written shortest-exact: the connections set
// extra_float_digits = 1 (data/postgres.ts).

import type { FieldSpec } from './fields.ts';

type Field = Pick<FieldSpec, 'name' | 'type'>;

/** `'text'`: a string literal of SQL. */
function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** A field's value in a row of `source` as the API shows it. */
function apiValue(f: Field, source: string): string {
  const column = `${source}."${f.name}"`;
  // The columns hold UTC to the millisecond, years 1 to 9999: toISOString() to the letter.
  if (f.type === 'DateTime') return `to_char(${column}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  // JSON.stringify writes NaN and the infinities as null.
  if (f.type === 'Float') return `CASE WHEN ${column} IN ('NaN', 'Infinity', '-Infinity') THEN NULL ELSE ${column} END`;
  return column;
}

/** The JSON text of the row of `source`: every field, in the order of `fields`. */
export function recordJson(fields: readonly Field[], source: string): string {
  const columns = fields.map((f) => `${apiValue(f, source)} AS "${f.name}"`);
  return `(SELECT row_to_json(bp_row) FROM (SELECT ${columns.join(', ')}) AS bp_row)::text`;
}

/**
 * The JSON text of the audit record's changes (audit.ts diffRecords) of an UPDATE that set the
 * fields `changed`, from the row as it was (`before`) and as it is (`after`): each of them whose
 * value differs, in the order of `fields`, as `"title":{"before":...,"after":...}`.
 */
export function changesJson(fields: readonly Field[], changed: ReadonlySet<string>, before: string, after: string) {
  const members = fields
    .filter((f) => changed.has(f.name))
    .map(
      (f) =>
        `CASE WHEN ${before}."${f.name}" IS DISTINCT FROM ${after}."${f.name}" ` +
        `THEN ${literal(`${JSON.stringify(f.name)}:`)} || ` +
        `json_build_object('before', ${apiValue(f, before)}, 'after', ${apiValue(f, after)})::text END`,
    );
  return members.length ? `'{' || concat_ws(',', ${members.join(', ')}) || '}'` : `'{}'`;
}
