// The paging parameters of a list route: `limit` (1 to 1000, default 100) and `offset`.

import { AppError, type ErrorDetail } from '../core/errors.ts';
import type { ListQuery } from '../data/entity-store.ts';

export const LIST_DEFAULT_LIMIT = 100;
export const LIST_MAX_LIMIT = 1000;

/** Parses `limit` and `offset`; anything else, or a bad value, is a 400 rather than a guess. */
export function parseListQuery(q: Record<string, unknown>): ListQuery {
  const issues: ErrorDetail[] = [];
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = q[name];
    if (raw === undefined) return fallback;
    if (typeof raw !== 'string' || !/^\d{1,16}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      issues.push({ field: name, code: 'OUT_OF_RANGE', message: `${name} must be an integer from ${min} to ${max}` });
      return fallback;
    }
    return Number(raw);
  };
  const result = {
    limit: int('limit', LIST_DEFAULT_LIMIT, 1, LIST_MAX_LIMIT),
    offset: int('offset', 0, 0, Number.MAX_SAFE_INTEGER),
  };
  for (const key of Object.keys(q)) {
    if (key !== 'limit' && key !== 'offset')
      issues.push({ field: key, code: 'UNKNOWN_PARAMETER', message: `unknown query parameter "${key}"` });
  }
  if (issues.length) throw new AppError('INVALID_QUERY', issues.map((i) => i.message).join('; '), { details: issues });
  return result;
}
