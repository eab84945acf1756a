// Rows of the PostgreSQL driver (data/postgres.ts) in the stored form of data/database.ts: what
// SQLite returns for the same columns. The parsers are handed to the driver's pool alone
// (`types` of its configuration): nothing else in the process is affected.

import pg from 'pg';

/** `2026-01-02 03:04:05.678`, as PostgreSQL writes a timestamp; the fraction has 0 to 6 digits. */
const TIMESTAMP = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?$/;
/** A timestamptz: the same, then the offset of the session's zone: `+00`, `+05:30`, `-03:30:45`. */
const TIMESTAMPTZ = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?$/;

/** Milliseconds: the fraction padded or cut to 3 digits (the DateTime columns are timestamp(3)). */
function millis(fraction: string | undefined): string {
  return fraction === undefined ? '000' : fraction.length >= 3 ? fraction.slice(0, 3) : fraction.padEnd(3, '0');
}

/** A timestamp (UTC by the schema's convention) as Prisma writes a DateTime in SQLite. */
function storedTimestamp(text: string): string {
  const m = TIMESTAMP.exec(text);
  // Years past 9999, BC dates and infinity have no stored form; the runtime never writes them.
  return m ? `${m[1]}T${m[2]}.${millis(m[3])}+00:00` : text;
}

/** A timestamptz converted to UTC, in the same form. */
function storedTimestamptz(text: string): string {
  const m = TIMESTAMPTZ.exec(text);
  if (!m) return text;
  const [, date, time, fraction, sign, hours, minutes = '00', seconds = '00'] = m;
  if (hours === '00' && minutes === '00' && seconds === '00') return `${date}T${time}.${millis(fraction)}+00:00`;
  const offsetMs = (Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds)) * 1000;
  const utc = Date.parse(`${date}T${time}.${millis(fraction)}Z`) - (sign === '-' ? -offsetMs : offsetMs);
  if (Number.isNaN(utc)) return text;
  return `${new Date(utc).toISOString().slice(0, 23)}+00:00`;
}

function asText(text: string): string {
  return text;
}

/** Parsers of text-format values by type OID; every other type keeps pg's own parser. */
const PARSERS: Record<number, (text: string) => unknown> = {
  16: (text) => (text === 't' ? 1 : 0), // bool: 1/0, as SQLite stores it
  20: Number, // int8: COUNT(*), and the epoch-millisecond BigInt columns
  1700: Number, // numeric
  1114: storedTimestamp, // timestamp
  1184: storedTimestamptz, // timestamptz
  114: asText, // json: the text, parsed (or not) by the runtime as with SQLite
  3802: asText, // jsonb
};

/** The type parsers of the driver's pool: those above, and pg's own for every other type. */
export const POSTGRES_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (format ?? 'text') === 'text'
      ? (PARSERS[oid] ?? pg.types.getTypeParser(oid, 'text'))
      : pg.types.getTypeParser(oid, 'binary')) as pg.CustomTypesConfig['getTypeParser'],
};
