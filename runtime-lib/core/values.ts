// The value formats every part agrees on: what an e-mail address is, what a date and a
// date-time are, and how a date-time is stored. The generator checks blueprint defaults with
// these, the app checks request bodies, sign-up checks addresses: one definition each.

// local@domain.tld: no spaces, controls or characters that need quoting in the local part; a
// dotted domain of letters, digits and hyphens (any script) ending in a letters-only label.
const EMAIL = /^[^\s\p{Cc}@"<>(),;:\\[\]]{1,64}@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)+\p{L}{2,63}$/u;
export const EMAIL_MAX_LENGTH = 254;

/** Whether `value` is a plausible e-mail address (not a deliverability check). */
export function isEmail(value: string): boolean {
  return value.length <= EMAIL_MAX_LENGTH && EMAIL.test(value);
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2}))$/;

/** A calendar date, YYYY-MM-DD, that exists (no February 30th). */
export function isCalendarDate(value: string): boolean {
  const m = DATE.exec(value);
  return m !== null && dayExists(Number(m[1]), Number(m[2]), Number(m[3]));
}

/**
 * Parses an ISO 8601 date-time with a time zone (`2026-01-02T03:04:05Z`, `...+02:00`) into its
 * instant, or undefined when it is malformed or names a time that does not exist: February 29th
 * of a common year, hour 24, minute 60, an offset beyond ±23:59. Never rolls a value over into
 * another day, as `Date.parse` does.
 */
export function parseDateTime(value: string): Date | undefined {
  const m = DATE_TIME.exec(value);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0));
  if (!dayExists(year, month, day) || hour > 23 || minute > 59 || second > 59) return undefined;
  if (m[8] !== 'Z' && (Number(m[9]) > 23 || Number(m[10]) > 59)) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
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
