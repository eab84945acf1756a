// The `if` of a condition step, as Zebric reads it: context path -> the value it must hold, or an
// operator table ({ "$gt" = 5 }: $eq, $ne, $gt, $gte, $lt, $lte), and `$and` / `$or` lists of such
// tables. As in preconditions, a list of values means any of them, values compare as the
// precondition does (5 and "5" are the same), and a path that does not resolve holds nothing.

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
    const actual = valueAt(context, key);
    if (Array.isArray(expected)) {
      if (!expected.some((e) => same(actual, e))) return false;
    } else if (isTable(expected)) {
      for (const [op, operand] of Object.entries(expected)) if (!operator(op, actual, operand)) return false;
    } else if (!same(actual, expected)) return false;
  }
  return true;
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
