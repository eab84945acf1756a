// Fields of an entity as the app sees them: the declaration the generator wrote, and how a JSON
// value is checked against it, stored in SQLite and read back.

import { AppError, type ErrorDetail } from '../core/errors.ts';
import { KEY_TYPES, keyProblem, type KeyProblem, type KeyType, TEXT_PROBLEMS } from '../core/ids.ts';
import {
  emailKey,
  type FieldType,
  inIntegerRange,
  INTEGER_MAX,
  INTEGER_MIN,
  isBlank,
  isCalendarDate,
  isEmail,
  jsonProblem,
  loadedDateTime,
  parseDateTime,
  storableDateTime,
  storedDateTime,
  textProblem,
} from '../core/values.ts';

export type Row = Record<string, unknown>;

export interface FieldSpec {
  name: string;
  type: FieldType;
  required: boolean;
  nullable: boolean;
  primaryKey?: true;
  commandOnly?: true;
  /** Commands allowed to write this command-only field; absent: any command of the entity. */
  commands?: readonly string[];
  default?: { now: true } | { value: unknown };
  values?: readonly string[];
  /** Text an index holds: at most this many bytes of UTF-8, its share (core/values.ts INDEXED_TEXT_MAX_BYTES). */
  maxBytes?: number;
  /** A unique constraint holds the field (alone or with others): the database may refuse a write of it. */
  unique?: true;
  /**
   * A unique Email field's key column (`_bp_key_<field>`), unique: the address as compared
   * (core/values.ts emailKey), written with the field on every insert and update, so both
   * databases refuse the same addresses whatever their lower() folds.
   */
  key?: string;
  /** For Ref fields: the target and the generated existence query. */
  ref?: RefTarget & { entity: string; exists: string };
  /** For file fields: the largest upload in bytes (under the app's 50 MB), and the MIME types taken. */
  upload?: { max?: number; accept?: readonly string[] };
  /** Plugin field validators ([[plugins]]) that check every value written to the field. */
  validators?: readonly string[];
}

/**
 * A file the app stored from an upload (runtime/uploads): the only value a `file` field takes on
 * a write, besides null. A string is refused, so that no write can point a record at a file
 * someone else uploaded; JSON cannot make this object. `path` (`/uploads/<stored-name>`, what
 * the field stores) is not enumerable: an Idempotency-Key's request hash sees the file's digest,
 * size and type, so a retry of the same upload (stored under another random name) is the same
 * request.
 */
export class StoredFile {
  declare readonly path: string;
  constructor(
    path: string,
    readonly sha256: string,
    readonly size: number,
    readonly type: string,
  ) {
    Object.defineProperty(this, 'path', { value: path, enumerable: false });
  }
}

/**
 * What a Ref value must be: the type of the field it points at, and whether that field is the
 * target's primary key (then the key's rules apply: an Integer, a ULID, a UUID or a Text id).
 */
export interface RefTarget {
  idType: FieldType;
  primaryKey?: true;
}

/** Keys that could reach or replace an object's prototype: refused wherever they appear. */
export const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** A request body (or handler changes): a JSON object without prototype keys. */
export function checkBody(body: unknown): Row {
  const problems = bodyProblems(body);
  if (problems) throw validationError(problems);
  return body as Row;
}

/** Why `body` is not a JSON object of fields, as checkBody refuses it; undefined when it is one. */
export function bodyProblems(body: unknown): ErrorDetail[] | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return [{ code: 'NOT_AN_OBJECT', message: 'the body must be a JSON object' }];
  const forbidden = Object.keys(body).filter((k) => PROTOTYPE_KEYS.has(k));
  if (!forbidden.length) return undefined;
  return forbidden.map((k) => ({ field: k, code: 'FORBIDDEN_KEY', message: `"${k}" is not allowed` }));
}

/** Checks one value against its field and returns the form stored in SQLite. */
export function encodeField(f: FieldSpec, value: unknown, issues: ErrorDetail[]): unknown {
  const before = issues.length;
  const normalized = normalizeValue(f, value, issues);
  if (issues.length > before) return null;
  if (f.type === 'Boolean') return normalized ? 1 : 0;
  if (f.type === 'JSON') return JSON.stringify(normalized);
  if (f.type === 'DateTime') return storedDateTime(new Date(normalized as string));
  return normalized;
}

export function decodeRow(decoded: readonly FieldSpec[], row: Row): Row {
  for (const f of decoded) {
    const v = row[f.name];
    if (v === null || v === undefined) continue;
    if (f.type === 'Boolean') row[f.name] = v === 1;
    else if (f.type === 'JSON') row[f.name] = JSON.parse(v as string);
    else row[f.name] = loadedDateTime(v as string | number);
  }
  return row;
}

/** What `jsonProblem` finds in a JSON value, as the app words it. */
const JSON_PROBLEMS = {
  NUL_CHARACTER: 'must not contain the character U+0000 in a string or key',
  LONE_SURROGATE: 'must not contain unpaired UTF-16 surrogates in a string or key',
  OUT_OF_RANGE: 'must not contain a number beyond ±1.7976931348623157e308',
} as const;

/** Types whose values are text a person wrote or chose: `required` means not blank for them. */
const TEXT_TYPES: ReadonlySet<FieldType> = new Set(['Text', 'LongText', 'Email', 'Enum', 'file']);

/**
 * Checks a JSON value against a field (or command input) declaration and returns it in its
 * canonical JSON form (date-times as toISOString); problems are added to `issues`. Every string
 * value is first checked for control characters and lone surrogates (whatever its type, so the
 * answer does not depend on which format check would have failed), and never altered. A JSON
 * value is checked through (core/values.ts jsonProblem): it is stored the same on both databases.
 */
export function normalizeValue(
  f: Pick<FieldSpec, 'name' | 'type' | 'values' | 'maxBytes'> & { required?: boolean; ref?: RefTarget },
  value: unknown,
  issues: ErrorDetail[],
): unknown {
  const bad = (message: string, code = 'INVALID_TYPE') => {
    issues.push({ field: f.name, code, message: `${f.name} ${message}` });
    return null;
  };
  if (typeof value === 'string' && f.type !== 'JSON') {
    const problem = textProblem(value, f.type === 'LongText');
    if (problem) return bad(TEXT_PROBLEMS[problem], problem);
    if (f.required && TEXT_TYPES.has(f.type) && isBlank(value)) return bad('must not be blank', 'REQUIRED');
    // A UTF-16 unit takes at most 3 bytes of UTF-8 (a pair, two units, takes 4): most values need no count.
    if (f.maxBytes !== undefined && value.length * 3 > f.maxBytes && Buffer.byteLength(value) > f.maxBytes)
      return bad(`must be at most ${f.maxBytes} bytes long in UTF-8 (an index holds it)`, 'TOO_LONG');
  }
  switch (f.type) {
    case 'Text':
    case 'LongText':
      return typeof value === 'string' ? value : bad('must be a string');
    case 'file':
      if (value instanceof StoredFile) return value.path;
      return bad('takes an uploaded file (a multipart/form-data file part) or null', 'NOT_AN_UPLOAD');
    case 'Email':
      return typeof value === 'string' && isEmail(value) ? value : bad('must be an e-mail address');
    case 'Integer':
      if (!Number.isSafeInteger(value)) return bad('must be an integer');
      if (inIntegerRange(value as number)) return value;
      return bad(`must be from ${INTEGER_MIN} to ${INTEGER_MAX}`, 'OUT_OF_RANGE');
    case 'Float':
      return typeof value === 'number' && Number.isFinite(value) ? value : bad('must be a number');
    case 'Boolean':
      return typeof value === 'boolean' ? value : bad('must be true or false');
    case 'Date':
      return typeof value === 'string' && isCalendarDate(value) ? value : bad('must be a date (YYYY-MM-DD)');
    case 'DateTime':
      if (typeof value === 'string') {
        const instant = parseDateTime(value);
        if (instant && !storableDateTime(instant))
          return bad('must fall from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z in UTC', 'OUT_OF_RANGE');
        if (instant) return instant.toISOString();
      }
      return bad('must be an RFC 3339 date-time with a time zone, like 2026-01-02T03:04:05Z');
    case 'JSON': {
      const problem = jsonProblem(value);
      return problem ? bad(JSON_PROBLEMS[problem], problem) : value;
    }
    case 'Enum':
      return typeof value === 'string' && f.values?.includes(value)
        ? value
        : bad(`must be one of ${f.values?.join(', ')}`);
    case 'ULID':
    case 'UUID': {
      const problem = keyProblem(f.type, value);
      return problem ? bad(problem.message, problem.code) : value;
    }
    case 'Ref': {
      const problem = refProblem(f.ref, value);
      return problem ? bad(problem.message, problem.code) : value;
    }
  }
}

const isKeyType = (type: FieldType): type is KeyType => (KEY_TYPES as readonly string[]).includes(type);

/**
 * A Ref value against what it points at: a key's own rules, or a string for another unique
 * field. Without a known target (a command input no mutation writes to a Ref) any id will do.
 */
function refProblem(ref: RefTarget | undefined, value: unknown): KeyProblem | undefined {
  if (!ref) {
    if (typeof value === 'string' || Number.isSafeInteger(value)) return undefined;
    return { code: 'INVALID_TYPE', message: 'must be a record id (a string or an integer)' };
  }
  if (isKeyType(ref.idType) && (ref.primaryKey || ref.idType !== 'Text')) return keyProblem(ref.idType, value);
  return typeof value === 'string' ? undefined : { code: 'INVALID_TYPE', message: 'must be a record id (string)' };
}

export function defaultNow(f: FieldSpec, now: Date): string {
  return f.type === 'Date' ? now.toISOString().slice(0, 10) : now.toISOString();
}

export function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === 'object' && typeof b === 'object' && JSON.stringify(a) === JSON.stringify(b));
}

export function validationError(details: ErrorDetail[]): AppError {
  return new AppError('VALIDATION_FAILED', details.map((d) => d.message).join('; '), { details });
}

export function protectedError(fields: string[]): AppError {
  return new AppError('PROTECTED_FIELD_MUTATION', `${fields.join(', ')} can be changed only through commands`, {
    details: fields.map((field) => ({ field, code: 'COMMAND_ONLY', message: `${field} is command-only` })),
  });
}

/** The key columns' prefix: what follows it is the field (the generator names them so). */
const KEY_COLUMN_PREFIX = '_bp_key_';

/** The field a column of a unique violation stands for: a key column stands for its field. */
export function fieldOfColumn(column: string): string {
  return column.startsWith(KEY_COLUMN_PREFIX) ? column.slice(KEY_COLUMN_PREFIX.length) : column;
}

/** A key column's value for its field's stored value. */
function keyOf(value: unknown): unknown {
  return typeof value === 'string' ? emailKey(value) : null;
}

/** The values of every key column of a new row (`params` by field), in the order the insert lists them. */
export function rowKeys(fields: readonly FieldSpec[], params: Row): unknown[] {
  return fields.filter((f) => f.key).map((f) => keyOf(params[f.name]));
}

/**
 * The key columns an update of `changed` sets with them, `"<key>" = ?` each, in the order
 * `changedKeys` gives their values: after the fields' own assignments and values.
 */
export function keyAssignments(byName: ReadonlyMap<string, FieldSpec>, changed: readonly string[]): string[] {
  return changed.flatMap((name) => {
    const key = byName.get(name)?.key;
    return key ? [`"${key}" = ?`] : [];
  });
}

/** The values of keyAssignments's columns, from the changed fields' `values`. */
export function changedKeys(
  byName: ReadonlyMap<string, FieldSpec>,
  changed: readonly string[],
  values: readonly unknown[],
): unknown[] {
  return changed.flatMap((name, i) => (byName.get(name)?.key ? [keyOf(values[i])] : []));
}
