// A page's queries, run for one viewer: each through its entity's store (data/entity-store.ts),
// so the rows and fields a page shows are exactly those the API would show this viewer, and the
// relations it includes through their own entity's rules.

import type { Actor } from '../core/actor.ts';
import { AppError } from '../core/errors.ts';
import type { IncludeSpec } from '../commands/executor.ts';
import type { Row, Work } from '../data/database.ts';
import type { EntityStore, RequestContext } from '../data/entity-store.ts';
import type { PageQuerySpec } from './page-spec.ts';

/** The records of a query, one page of them. */
export interface QueryResult {
  entity: string;
  records: Row[];
  limit: number;
  offset: number;
  hasMore: boolean;
}

/** A page query's default size: the API's list default (spec 8). */
export const PAGE_QUERY_LIMIT = 100;
/** At most this many records of a to-many relation are shown with each record. */
const INCLUDE_LIMIT = 100;

/**
 * Runs the queries in the blueprint's order. `skip` moves the first query on by whole pages (a
 * list page's pagination). A `where` naming what this request does not have (a `$currentUser`
 * key of an anonymous viewer, a path parameter that is no key of the entity) matches nothing.
 */
export function* runPageQueries(
  stores: ReadonlyMap<string, EntityStore>,
  queries: readonly PageQuerySpec[],
  ctx: RequestContext,
  params: Readonly<Record<string, string>>,
  skip = 0,
): Work<Record<string, QueryResult>> {
  const results: Record<string, QueryResult> = {};
  for (const [i, query] of queries.entries()) {
    const store = stores.get(query.entity) as EntityStore;
    const limit = query.limit ?? PAGE_QUERY_LIMIT;
    const offset = (query.offset ?? 0) + (i === 0 ? skip * limit : 0);
    const where = resolveWhere(query.where ?? [], ctx.actor, params);
    const empty: QueryResult = { entity: query.entity, records: [], limit, offset, hasMore: false };
    if (where === undefined) {
      results[query.name] = empty;
      continue;
    }
    const page = yield* matchingNothingOnBadValues(
      store.list(ctx, { limit, offset, where, orderBy: query.orderBy }),
      params,
    );
    if (page === undefined) {
      results[query.name] = empty;
      continue;
    }
    for (const record of page.items) {
      for (const include of query.include ?? []) record[include.name] = yield* related(stores, ctx, include, record);
    }
    results[query.name] = { entity: query.entity, records: page.items, limit, offset, hasMore: page.hasMore };
  }
  return results;
}

/** The value each `where` key compares with, or undefined when one has no value for this request. */
function resolveWhere(
  where: ReadonlyArray<{ field: string; value: unknown }>,
  actor: Actor,
  params: Readonly<Record<string, string>>,
): Array<{ field: string; value: unknown }> | undefined {
  const out: Array<{ field: string; value: unknown }> = [];
  for (const { field, value } of where) {
    const resolved = resolveValue(value, actor, params);
    if (resolved === undefined) return undefined;
    out.push({ field, value: resolved });
  }
  return out;
}

function resolveValue(value: unknown, actor: Actor, params: Readonly<Record<string, string>>): unknown {
  if (typeof value !== 'string') return value;
  if (value.startsWith('$params.')) {
    const name = value.slice('$params.'.length);
    return Object.hasOwn(params, name) ? params[name] : undefined;
  }
  if (value.startsWith('$currentUser.')) {
    // Nobody signed in is nobody's records.
    if (actor.kind === 'anonymous') return undefined;
    const key = value.slice('$currentUser.'.length);
    const own = (actor as unknown as Record<string, unknown>)[key];
    return own !== undefined && key !== 'metadata' ? own : actor.metadata?.[key];
  }
  return value;
}

/**
 * A path parameter that is no value of its field (`/tickets/abc` for an Integer key) is a page
 * that does not exist, not a bad request: the query matches nothing. Other refusals stand.
 */
function* matchingNothingOnBadValues<T>(work: Work<T>, params: Readonly<Record<string, string>>): Work<T | undefined> {
  try {
    return yield* work;
  } catch (err) {
    if (err instanceof AppError && err.code === 'VALIDATION_FAILED' && Object.keys(params).length > 0) return undefined;
    throw err;
  }
}

/** A record's relation, read as the viewer reads its entity: null or a list when there is none to read. */
function* related(
  stores: ReadonlyMap<string, EntityStore>,
  ctx: RequestContext,
  include: IncludeSpec,
  record: Row,
): Work<Row | Row[] | null> {
  const key = record[include.localKey];
  const none = include.kind === 'one' ? null : [];
  // A key the viewer may not read leads nowhere.
  if (key === undefined || key === null) return none;
  const store = stores.get(include.entity) as EntityStore;
  const limit = include.kind === 'one' ? 1 : INCLUDE_LIMIT;
  try {
    const { items } = yield* store.list(ctx, { limit, offset: 0, where: [{ field: include.foreignKey, value: key }] });
    return include.kind === 'one' ? (items[0] ?? null) : items;
  } catch (err) {
    // A foreign key the viewer may not compare on: the relation is not theirs to see.
    if (err instanceof AppError && (err.code === 'FORBIDDEN' || err.code === 'UNAUTHENTICATED')) return none;
    throw err;
  }
}
