// The `if` of a condition step, as Zebric reads it: context path -> the value it must hold, or an
// operator table ({ "$gt" = 5 }: $eq, $ne, $gt, $gte, $lt, $lte), and `$and` / `$or` lists of such
// tables. Preconditions and entity trigger conditions read their values the same way (valueHolds):
// a list of values means any of them, 5 and "5" are the same, and a path that does not resolve
// holds nothing.

import { AppError } from '../core/errors.ts';
import { lookup } from './templates.ts';

/** Whether `condition` holds in `context`; a malformed condition is WORKFLOW_STEP_INVALID. */
export function ifHolds(condition: unknown, context: unknown): boolean {
  if (!isTable(condition)) throw invalid('a condition step needs `if`, a table of context paths and values');
  for (const [key, expected] of Object.entries(condition)) {
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(expected)) throw invalid(`${key} takes a list of conditions`);
      const each = (c: unknown) => ifHolds(c, context);
      const holds = key === '$and' ? expected.every(each) : expected.some(each);
      if (!holds) return false;
      continue;
    }
    if (!valueHolds(valueAt(context, key), expected)) return false;
  }
  return true;
}

/**
 * Whether a value meets what a condition expects of it: any value of a list, every operator of an
 * operator table ({ "$ne" = "" }), else the value itself. Preconditions, entity trigger conditions
 * and condition steps read values alike.
 */
export function valueHolds(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) return expected.some((e) => same(actual, e));
  if (isOperatorTable(expected)) {
    return Object.entries(expected).every(([op, operand]) => operator(op, actual, operand));
  }
  return same(actual, expected);
}

/** A table whose every key is an operator ($eq...); any other table is a value to compare with. */
function isOperatorTable(value: unknown): value is Record<string, unknown> {
  if (!isTable(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((k) => k.startsWith('$'));
}

/** Equality as preconditions and conditional updates use it: null and absent are alike, scalars compare as text. */
export function same(actual: unknown, expected: unknown): boolean {
  if (actual === undefined || actual === null || expected === null) return (actual ?? null) === expected;
  if (typeof actual === 'object') return JSON.stringify(actual) === JSON.stringify(expected);
  return String(actual) === String(expected);
}

function operator(op: string, actual: unknown, operand: unknown): boolean {
  switch (op) {
    case '$eq':
      return same(actual, operand);
    case '$ne':
      return !same(actual, operand);
    case '$gt':
      return order(actual, operand, (d) => d > 0);
    case '$gte':
      return order(actual, operand, (d) => d >= 0);
    case '$lt':
      return order(actual, operand, (d) => d < 0);
    case '$lte':
      return order(actual, operand, (d) => d <= 0);
    default:
      throw invalid(`unknown operator "${op}" (expected $eq, $ne, $gt, $gte, $lt or $lte)`);
  }
}

/** Numbers compare as numbers (a numeric string included), strings as strings; anything else holds nothing. */
function order(actual: unknown, operand: unknown, holds: (difference: number) => boolean): boolean {
  if (typeof operand === 'number') {
    const numeric = typeof actual === 'string' && actual.trim() !== '';
    const n = typeof actual === 'number' ? actual : numeric ? Number(actual) : NaN;
    return Number.isFinite(n) && holds(n - operand);
  }
  if (typeof operand === 'string' && typeof actual === 'string') {
    return holds(actual < operand ? -1 : actual > operand ? 1 : 0);
  }
  return false;
}

function valueAt(context: unknown, path: string): unknown {
  try {
    return lookup(context, path);
  } catch {
    return undefined;
  }
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string): AppError {
  return new AppError('WORKFLOW_STEP_INVALID', message);
}
