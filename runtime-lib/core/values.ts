// The value formats every part agrees on: what an e-mail address is, what a date and a
// date-time are, how a date-time is stored, and which text may be stored at all. The generator
// checks blueprint defaults with these, the app checks request bodies and command inputs,
// sign-up checks addresses: one definition each.

/** The field types of the format contract, in the order it lists them. */
export const FIELD_TYPES = [
  'ULID',
  'UUID',
  'Text',
  'LongText',
  'Email',
  'Integer',
  'Float',
  'Boolean',
  'Date',
  'DateTime',
  'JSON',
  'Enum',
  'Ref',
  'file',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/**
 * An Integer's range: Prisma's Int, a 32-bit column on PostgreSQL (SQLite's would hold more). One
 * range on both databases, so a value one takes the other takes too.
 */
export const INTEGER_MIN = -2147483648;
export const INTEGER_MAX = 2147483647;

/**
 * The text one row may put in an index: PostgreSQL refuses an index entry over 2,704 bytes (a
 * third of a page, after compression, which random text escapes), SQLite has no such limit. The
 * text fields of an index share this many bytes of UTF-8 evenly (a field in several indexes takes
 * its smallest share), with room left for the other columns and the entry's own headers. One
 * limit on both databases, so a value one takes the other takes too.
 */
export const INDEXED_TEXT_MAX_BYTES = 2000;

/** Whether `value` is an integer an Integer column holds. */
export function inIntegerRange(value: number): boolean {
  return value >= INTEGER_MIN && value <= INTEGER_MAX;
}

/**
 * Whether a DateTime can be stored: its UTC year from 0001 to 9999. PostgreSQL refuses year 0
 * and a five-digit year in the stored form; SQLite would keep either as text.
 */
export function storableDateTime(date: Date): boolean {
  const year = date.getUTCFullYear();
  return year >= 1 && year <= 9999;
}

// local@domain.tld: no spaces, controls or characters that need quoting in the local part; a
// dotted domain of letters, digits and hyphens (any script) ending in a letters-only label.
export const EMAIL =
  /^[^\s\p{Cc}@"<>(),;:\\[\]]{1,64}@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)+\p{L}{2,63}$/u;
export const EMAIL_MAX_LENGTH = 254;

/** Whether `value` is a plausible e-mail address (not a deliverability check). */
export function isEmail(value: string): boolean {
  return value.length <= EMAIL_MAX_LENGTH && EMAIL.test(value);
}

/**
 * The form in which two e-mail addresses are compared, the same on every database: NFC (é
 * composed or as e + U+0301 is one letter), trimmed, and lower-cased by JavaScript's full Unicode
 * mapping, which no database's lower() matches everywhere (SQLite's folds A to Z only,
 * PostgreSQL's depends on the database's collation): É is é, the Kelvin sign K is k, ẞ is ß; ß
 * stays ß (lower-casing never makes it ss, and IDNA2008 keeps ß and ss apart in domains too).
 * Sign-in finds people by it, and a unique Email field compares it (a key column beside the field).
 */
export function emailKey(address: string): string {
  return address.normalize('NFC').trim().toLowerCase();
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
// RFC 3339 `date-time`, the OpenAPI `date-time` format: seconds required, a fraction of 1 to 9
// digits, an offset or Z; "t" and "z" may be lower case (RFC 3339 section 5.6).
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|([+-])(\d{2}):(\d{2}))$/;

/** A calendar date, YYYY-MM-DD, that exists (no February 30th). */
export function isCalendarDate(value: string): boolean {
  const m = DATE.exec(value);
  return m !== null && dayExists(Number(m[1]), Number(m[2]), Number(m[3]));
}

/**
 * Parses an RFC 3339 date-time (`2026-01-02T03:04:05Z`, `...05.123+02:00`) into its instant, or
 * undefined when it is malformed or names a time that does not exist: February 29th of a common
 * year, April 31st, hour 24, minute 60, second 60 (a leap second: an instant JavaScript cannot
 * hold), an offset beyond ±23:59. Never rolls a value over into another day, as `Date.parse`
 * does. Fractions finer than a millisecond are cut to the millisecond, as `Date` keeps them.
 */
export function parseDateTime(value: string): Date | undefined {
  const m = DATE_TIME.exec(value);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [1, 2, 3, 4, 5, 6, 10, 11].map((i) =>
    Number(m[i] ?? 0),
  );
  if (!dayExists(year, month, day) || hour > 23 || minute > 59 || second > 59) return undefined;
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;
  // Date.UTC reads years 0 to 99 as 1900 to 1999; setUTCFullYear takes the year as written.
  const date = new Date(Date.UTC(2000, 0, 1, hour, minute, second, Number((m[7] ?? '.').slice(1, 4).padEnd(3, '0'))));
  date.setUTCFullYear(year, month - 1, day);
  const offset = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  date.setTime(date.getTime() - offset * 60_000);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** Why a text value may not be stored as given: a control character, or half a surrogate pair. */
export type TextProblem = 'CONTROL_CHARACTER' | 'LONE_SURROGATE';

/** Anything `textProblem` must look at closely: C0 controls, DEL, C1 controls, surrogates. */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const SUSPECT = /[\u0000-\u001f\u007f-\u009f\ud800-\udfff]/;

/**
 * Whether a text value may be stored as given. Control characters (C0, DEL, C1) are refused:
 * they corrupt logs, terminals and CSV exports and hide text from whoever reads it; tab,
 * newline and carriage return are allowed where `lineBreaks` (LongText). A lone UTF-16
 * surrogate is refused: it is not text, and SQLite would store it as U+FFFD, silently changed.
 * One pass finds both (String.prototype.isWellFormed would be a second pass for the surrogates).
 */
export function textProblem(value: string, lineBreaks: boolean): TextProblem | undefined {
  if (!SUSPECT.test(value)) return undefined;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
      if (lineBreaks && (c === 0x09 || c === 0x0a || c === 0x0d)) continue;
      return 'CONTROL_CHARACTER';
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      if (loneSurrogateAt(value, i)) return 'LONE_SURROGATE';
      i++;
    }
  }
  return undefined;
}

/** Whether the surrogate at `i` is not the first half of a pair (a low one, or a high one alone). */
function loneSurrogateAt(text: string, i: number): boolean {
  const next = text.charCodeAt(i + 1);
  return text.charCodeAt(i) > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff);
}

/** Why a JSON value may not be stored as given: see `jsonProblem`. */
export type JsonProblem = 'NUL_CHARACTER' | 'LONE_SURROGATE' | 'OUT_OF_RANGE';

/** What `jsonProblem` must look at closely in a string: NUL and surrogates. */
// eslint-disable-next-line no-control-regex -- NUL is what it looks for
const JSON_SUSPECT = /[\u0000\ud800-\udfff]/;

/**
 * Whether a JSON value (a field's or an input's) may be stored as given, on either database. A
 * string or key with U+0000 is refused: PostgreSQL's jsonb cannot hold it. So is a lone surrogate
 * (not text; jsonb refuses it too), and a number past ±1.8e308, which JSON.parse reads as
 * Infinity and JSON would store as null, silently changed. Other control characters are data in
 * JSON and stay. The value comes from a body nested at most 64 levels deep (http/body.ts).
 */
export function jsonProblem(value: unknown): JsonProblem | undefined {
  const pending: unknown[] = [value];
  // A handler's value may hold an object twice, or within itself: each is looked at once (and
  // JSON.stringify refuses a cycle when the value is stored).
  const seen = new Set<object>();
  while (pending.length) {
    const item = pending.pop();
    if (typeof item === 'string') {
      const problem = jsonTextProblem(item);
      if (problem) return problem;
    } else if (typeof item === 'number') {
      if (!Number.isFinite(item)) return 'OUT_OF_RANGE';
    } else if (item !== null && typeof item === 'object' && !seen.has(item)) {
      seen.add(item);
      // One push per member: spreading a long array into push() would pass more arguments than
      // a call takes.
      for (const [key, member] of Object.entries(item)) {
        if (!Array.isArray(item)) {
          const problem = jsonTextProblem(key);
          if (problem) return problem;
        }
        pending.push(member);
      }
    }
  }
  return undefined;
}

function jsonTextProblem(text: string): JsonProblem | undefined {
  if (!JSON_SUSPECT.test(text)) return undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0) return 'NUL_CHARACTER';
    if (c >= 0xd800 && c <= 0xdfff) {
      if (loneSurrogateAt(text, i)) return 'LONE_SURROGATE';
      i++;
    }
  }
  return undefined;
}

/**
 * Whether a value counts as empty for a `required` text field: "" or white space only (what
 * String.prototype.trim removes). A value of spaces carries nothing and shows as blank.
 */
export function isBlank(value: string): boolean {
  return value.trim() === '';
}

function dayExists(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const days = [31, isLeapYear(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  return day <= days[month - 1];
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** Prisma's SQLite adapter stores DateTime as ISO 8601 with "+00:00"; bp stores the same, so both agree. */
export function storedDateTime(date: Date): string {
  return date.toISOString().replace('Z', '+00:00');
}

/** The API form of a stored DateTime: toISOString(). */
export function loadedDateTime(stored: string | number): string {
  // Prisma's stored form, 2026-01-02T03:04:05.678+00:00, is toISOString() with another suffix.
  if (typeof stored === 'string' && stored.length === 29 && stored.endsWith('+00:00')) return `${stored.slice(0, 23)}Z`;
  return new Date(stored).toISOString();
}

/** The largest uploaded file of a `file` field, whatever its `max` (spec 8): 50 MB (runtime/uploads). */
export const UPLOAD_LIMIT = 50 * 1024 * 1024;
