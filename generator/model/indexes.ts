// An entity's database indexes: the ones its `indexes` declare, which of them repeat an index
// the entity already has (reported as REDUNDANT_INDEX and not generated), and the names they
// get in the database.

import type { Entity, Index } from './types.ts';

/**
 * Why `index` adds nothing, or undefined when it is generated: it covers the primary key or a
 * unique field (already unique and indexed), a field of its own `index = true`, or the same
 * fields as an earlier entry at least as strong (a unique index also serves lookups).
 */
export function redundancy(entity: Entity, index: Index): string | undefined {
  const [only] = index.fields;
  const field = index.fields.length === 1 ? entity.fields.find((f) => f.name === only) : undefined;
  if (field?.primaryKey) return `"${only}" is the primary key, already unique and indexed`;
  if (field?.unique) return `"${only}" is unique = true, already unique and indexed`;
  if (field?.index && !index.unique) return `"${only}" has index = true, already indexed`;
  const earlier = entity.indexes
    .slice(0, entity.indexes.indexOf(index))
    .find((e) => sameList(e.fields, index.fields) && (e.unique || !index.unique));
  if (earlier) return `entry ${entity.indexes.indexOf(earlier)} already indexes (${index.fields.join(', ')})`;
  return undefined;
}

/** The `indexes` entries the database gets: those that are not redundant. */
export function generatedIndexes(entity: Entity): Index[] {
  return entity.indexes.filter((i) => redundancy(entity, i) === undefined);
}

/**
 * An index's name in the database: its own, else Prisma's default (`Card_boardId_title_key` for
 * a unique one, `_idx` for the others), which follows from the fields, so adding or removing
 * another entry never renames it (Zebric's default, idx_<Entity>_<position>, would).
 */
export function indexName(entity: Entity, index: Pick<Index, 'fields' | 'unique' | 'name'>): string {
  return index.name ?? `${entity.name}_${index.fields.join('_')}_${index.unique ? 'key' : 'idx'}`;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
