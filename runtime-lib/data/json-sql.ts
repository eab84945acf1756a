// A record's JSON written by PostgreSQL itself, as the app writes it (JSON.stringify of the record
// the API shows): for a change whose audit record and key's stored answer are written by the
// change's own statement (EntityStore.lockAndChange). Every value comes out as the app's own JSON,
// or as JSON that parses to the same value (a Float with an exponent, a JSON field's spacing), which
// is all a reader needs: an audit trail and a replay parse what they read, and send it as the app
// writes JSON. Floats are written shortest-exact (the connections set extra_float_digits = 1).

import type { FieldSpec } from './fields.ts';

/** `'text'`: a string literal of SQL. */
function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** A DateTime column as toISOString() writes it: the columns hold UTC to the millisecond, years 1 to 9999. */
function toIsoString(column: string): string {
  return `to_char(${column}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** A Float column, NULL where JSON.stringify writes null: NaN and the infinities. */
function finite(column: string): string {
  return `CASE WHEN ${column} IN ('NaN', 'Infinity', '-Infinity') THEN NULL ELSE ${column} END`;
}

/** The JSON of one field's value in a row of `source`, `null` when it is NULL. */
function fieldJson(f: Pick<FieldSpec, 'name' | 'type'>, source: string): string {
  const column = `${source}."${f.name}"`;
  const value = f.type === 'DateTime' ? toIsoString(column) : f.type === 'Float' ? finite(column) : column;
  return `COALESCE(to_json(${value})::text, 'null')`;
}

/**
 * The JSON of the row of `source`: every field, in the order of `fields`, made by row_to_json of
 * the fields as the API shows them (a date-time as toISOString, a Float JSON has no number for as
 * null): the app's own JSON for every type but a Float with an exponent and a JSON field, whose
 * JSON is spaced otherwise and parses to the same value.
 */
export function recordJson(fields: ReadonlyArray<Pick<FieldSpec, 'name' | 'type'>>, source: string): string {
  const columns = fields.map((f) => {
    const column = `${source}."${f.name}"`;
    if (f.type === 'DateTime') return `${toIsoString(column)} AS "${f.name}"`;
    if (f.type === 'Float') return `${finite(column)} AS "${f.name}"`;
    return column;
  });
  return `(SELECT row_to_json(bp_row) FROM (SELECT ${columns.join(', ')}) AS bp_row)::text`;
}

/**
 * The JSON of the audit record's changes (audit.ts diffRecords) of an UPDATE that set the fields
 * `changed` (in the order of `fields`), from the row as it was (`before`) and as it is (`after`):
 * `{"title":{"before":...,"after":...}}` for each field whose value differs.
 */
export function changesJson(
  fields: ReadonlyArray<Pick<FieldSpec, 'name' | 'type'>>,
  changed: ReadonlySet<string>,
  before: string,
  after: string,
): string {
  const members = fields
    .filter((f) => changed.has(f.name))
    .map(
      (f) =>
        `CASE WHEN ${before}."${f.name}" IS DISTINCT FROM ${after}."${f.name}" THEN ` +
        `${literal(`${JSON.stringify(f.name)}:{"before":`)} || ${fieldJson(f, before)} || ',"after":' || ` +
        `${fieldJson(f, after)} || '}' END`,
    );
  return members.length ? `'{' || concat_ws(',', ${members.join(', ')}) || '}'` : `'{}'`;
}
