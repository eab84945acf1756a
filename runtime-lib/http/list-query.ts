// The paging parameters of a list route: `limit` (1 to 1000, default 100) and `offset`.

import { AppError, type ErrorDetail } from '../core/errors.ts';
import type { ListQuery } from '../data/entity-store.ts';

const LIST_DEFAULT_LIMIT = 100;
const LIST_MAX_LIMIT = 1000;

/** Each paging parameter's default and range (`offset` up to 2^53-1, which JSON clients read exactly). */
const PAGING = {
  limit: { fallback: LIST_DEFAULT_LIMIT, min: 1, max: LIST_MAX_LIMIT },
  offset: { fallback: 0, min: 0, max: Number.MAX_SAFE_INTEGER },
} as const;

/**
 * `limit` or `offset` from its text, its default when not given; a value that is not an integer in
 * range is added to `issues` (the caller answers 400), never rounded or clamped. Shared by the
 * entity lists and a skill's list actions.
 */
export function pagingValue(name: keyof typeof PAGING, text: unknown, issues: ErrorDetail[]): number {
  const { fallback, min, max } = PAGING[name];
  if (text === undefined) return fallback;
  if (typeof text !== 'string' || !/^\d{1,16}$/.test(text) || Number(text) < min || Number(text) > max) {
    issues.push({ field: name, code: 'OUT_OF_RANGE', message: `${name} must be an integer from ${min} to ${max}` });
    return fallback;
  }
  return Number(text);
}

/** Parses `limit` and `offset`; anything else, or a bad value, is a 400 rather than a guess. */
export function parseListQuery(q: Record<string, unknown>): ListQuery {
  const issues: ErrorDetail[] = [];
  const result = { limit: pagingValue('limit', q.limit, issues), offset: pagingValue('offset', q.offset, issues) };
  for (const key of Object.keys(q)) {
    if (key !== 'limit' && key !== 'offset')
      issues.push({ field: key, code: 'UNKNOWN_PARAMETER', message: `unknown query parameter "${key}"` });
  }
  if (issues.length) throw new AppError('INVALID_QUERY', issues.map((i) => i.message).join('; '), { details: issues });
  return result;
}
