// Record ids. ULIDs sort by creation time, so the stable list order (by id) is also creation
// order; within one millisecond they stay monotonic by incrementing the random part.

import { randomFillSync, randomUUID } from 'node:crypto';
import { inIntegerRange, INTEGER_MAX, INTEGER_MIN, textProblem } from './values.ts';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
let lastTime = -1;
const lastRandom = new Uint8Array(16);
/** Random bytes for 64 ids at a time: one system call per 64 new milliseconds, not one per id. */
const pool = Buffer.alloc(16 * 64);
let poolOffset = pool.length;

export function ulid(now: number = Date.now()): string {
  if (now <= lastTime) {
    // Same (or an earlier, after a clock step back) millisecond: keep the last time and add one.
    for (let i = 15; i >= 0; i--) {
      lastRandom[i] = (lastRandom[i] + 1) & 31;
      if (lastRandom[i] !== 0) break;
    }
    now = lastTime;
  } else {
    if (poolOffset === pool.length) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    for (let i = 0; i < 16; i++) lastRandom[i] = pool[poolOffset + i] & 31;
    poolOffset += 16;
    lastTime = now;
  }
  let time = '';
  for (let i = 0, t = now; i < 10; i++, t = Math.floor(t / 32)) time = ALPHABET[t % 32] + time;
  let random = '';
  for (let i = 0; i < 16; i++) random += ALPHABET[lastRandom[i]];
  return time + random;
}

export const uuid = (): string => randomUUID();

export const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The types a primary key may have; Refs to a key take its type. */
export const KEY_TYPES = ['ULID', 'UUID', 'Text', 'Integer'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

/** A record id as the database holds it: a number for Integer keys, else text. */
export type RecordKey = string | number;

export const TEXT_KEY_MAX_LENGTH = 255;

/** The messages of core/values.ts textProblem's findings, as the app words them. */
export const TEXT_PROBLEMS = {
  CONTROL_CHARACTER: 'must not contain control characters',
  LONE_SURROGATE: 'must not contain unpaired UTF-16 surrogates',
} as const;

/** Why a value cannot be a record id, with the detail code the app answers. */
export interface KeyProblem {
  code: 'INVALID_TYPE' | 'OUT_OF_RANGE' | 'CONTROL_CHARACTER' | 'LONE_SURROGATE' | 'TOO_LONG';
  /** What the id must be instead, e.g. "must be an integer". */
  message: string;
}

/**
 * Why `value` cannot be an id of a key of `type`, or undefined when it can. A Text id is named
 * in URLs, logs and audit records, so it must stay printable and unambiguous there: not empty,
 * at most 255 characters, no control characters or lone surrogates, no white space at either end
 * (invisible, and lost by any client that trims), and not "." or ".." (URL clients collapse
 * such path segments, percent-encoded or not, so the record could never be addressed).
 */
export function keyProblem(type: KeyType, value: unknown): KeyProblem | undefined {
  const invalid = (message: string): KeyProblem => ({ code: 'INVALID_TYPE', message });
  switch (type) {
    case 'Integer':
      if (!Number.isSafeInteger(value)) return invalid('must be an integer');
      return inIntegerRange(value as number)
        ? undefined
        : { code: 'OUT_OF_RANGE', message: `must be an integer from ${INTEGER_MIN} to ${INTEGER_MAX}` };
    case 'ULID':
      return typeof value === 'string' && ULID_PATTERN.test(value) ? undefined : invalid('must be a ULID');
    case 'UUID':
      return typeof value === 'string' && UUID_PATTERN.test(value) ? undefined : invalid('must be a UUID');
    case 'Text': {
      if (typeof value !== 'string' || value === '') return invalid('must be a non-empty string');
      const problem = textProblem(value, false);
      if (problem) return { code: problem, message: TEXT_PROBLEMS[problem] };
      if (value.length > TEXT_KEY_MAX_LENGTH) {
        return { code: 'TOO_LONG', message: `must be at most ${TEXT_KEY_MAX_LENGTH} characters long` };
      }
      if (value.trim() !== value) return invalid('must not begin or end with white space');
      if (value === '.' || value === '..') return invalid('must not be "." or ".."');
      return undefined;
    }
  }
}

/** A decimal integer as JSON writes it: no "+", no leading zeros, no "-0", no fraction or exponent. */
const DECIMAL = /^(0|-?[1-9][0-9]{0,15})$/;

/**
 * The id a URL path (or a handler) names, in the form the key column holds; undefined when no
 * record can have it (the route answers 404, as for an id that does not exist). An Integer id
 * must be written canonically ("7", not "07" or "7.0"): one record has one URL, and the id's
 * text is what audit records hold. Other ids must be ones a create takes (keyProblem): the
 * database is not asked about others, and PostgreSQL would refuse some outright (a NUL byte).
 */
export function recordKey(type: KeyType, id: RecordKey): RecordKey | undefined {
  if (type !== 'Integer') return typeof id === 'string' && keyProblem(type, id) === undefined ? id : undefined;
  if (typeof id === 'number') return Number.isSafeInteger(id) && inIntegerRange(id) ? id : undefined;
  if (!DECIMAL.test(id)) return undefined;
  const n = Number(id);
  return Number.isSafeInteger(n) && inIntegerRange(n) ? n : undefined;
}
