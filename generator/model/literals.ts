// Literal values of a field type: what fits (defaults, mutation literals), how a default is
// stored, and how a value reads in a message.

import {
  inIntegerRange,
  INTEGER_MAX,
  INTEGER_MIN,
  isBlank,
  isCalendarDate,
  isEmail,
  jsonProblem,
  parseDateTime,
  storableDateTime,
  textProblem,
} from '../../runtime-lib/core/values.ts';
import type { FieldType } from '../../runtime-lib/core/values.ts';

/** What a literal for a field of `type` must look like, or undefined when `value` fits. */
export function expectedLiteral(
  type: FieldType,
  value: unknown,
  values: readonly string[] | undefined,
): string | undefined {
  // The app refuses such text in every request (runtime-lib/core/values.ts): a literal must not carry it in.
  if (typeof value === 'string' && type !== 'JSON' && textProblem(value, type === 'LongText')) {
    return type === 'LongText'
      ? 'text without control characters other than tab and line breaks'
      : 'text without control characters';
  }
  switch (type) {
    case 'Text':
    case 'LongText':
    case 'file':
      return typeof value === 'string' ? undefined : 'a string';
    case 'Email':
      return typeof value === 'string' && isEmail(value) ? undefined : 'an e-mail address';
    case 'Integer':
      if (!Number.isSafeInteger(value)) return 'an integer';
      return inIntegerRange(value as number) ? undefined : `an integer from ${INTEGER_MIN} to ${INTEGER_MAX}`;
    case 'Float':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'a number';
    case 'Boolean':
      return typeof value === 'boolean' ? undefined : 'true or false';
    case 'Date':
      return value === 'now' || value instanceof Date || (typeof value === 'string' && isCalendarDate(value))
        ? undefined
        : '"now" or a date (YYYY-MM-DD)';
    case 'DateTime': {
      if (value === 'now') return undefined;
      const instant = value instanceof Date ? value : typeof value === 'string' ? parseDateTime(value) : undefined;
      if (instant === undefined) return '"now" or an ISO 8601 date-time';
      return storableDateTime(instant) ? undefined : 'a date-time from year 0001 to 9999 (in UTC)';
    }
    case 'JSON':
      return jsonProblem(value) ? 'JSON without U+0000, unpaired surrogates or infinite numbers' : undefined;
    case 'Enum':
      return typeof value === 'string' && (values ?? []).includes(value)
        ? undefined
        : `one of ${(values ?? []).map((v) => JSON.stringify(v)).join(', ')}`;
    // A Ref takes its target's ids, strings or integers: the Ref rules check against the target.
    case 'Ref':
      return typeof value === 'string' || Number.isSafeInteger(value)
        ? undefined
        : 'a record id (a string or an integer)';
    case 'ULID':
    case 'UUID':
      return typeof value === 'string' ? undefined : 'a string id';
  }
}

/** Why a default does not fit its field's type, or undefined when it does. */
export function defaultProblem(
  type: FieldType,
  value: unknown,
  values: string[] | undefined,
  options: { primaryKey: boolean; required: boolean },
): string | undefined {
  if (options.primaryKey) return 'a primary key has no default: ids are generated';
  if (type === 'file') return 'file fields have no default';
  // The app answers 400 REQUIRED for a blank value of a required field: so would every create.
  if (options.required && typeof value === 'string' && isBlank(value))
    return 'the default of a required field cannot be blank';
  const expected = expectedLiteral(type, value, values);
  return expected && `default ${showLiteral(value)} does not fit ${type}: expected ${expected}`;
}

/** A default as the app stores it: dates as ISO strings. */
export function normalizeDefault(type: FieldType, value: unknown): unknown {
  if (value instanceof Date) return type === 'Date' ? value.toISOString().slice(0, 10) : value.toISOString();
  if (type === 'DateTime' && typeof value === 'string') return (parseDateTime(value) as Date).toISOString();
  return value;
}

/**
 * A value as it appears in a message: JSON, cut short so a large table cannot swamp the line. The
 * numbers JSON has no word for are written as TOML writes them (JSON would say null).
 */
export function showLiteral(value: unknown): string {
  const json = value instanceof Date ? value.toISOString() : JSON.stringify(value, tomlNumbers);
  return json.length > 40 ? `${json.slice(0, 39)}…` : json;
}

function tomlNumbers(_key: string, value: unknown): unknown {
  if (typeof value !== 'number' || Number.isFinite(value)) return value;
  return Number.isNaN(value) ? 'nan' : value > 0 ? 'inf' : '-inf';
}
