// An entity's database indexes: the ones its `indexes` declare, which of them repeat an index
// the entity already has (reported as REDUNDANT_INDEX and not generated), and the names they
// get in the database.

import { TEXT_KEY_MAX_LENGTH } from '../../runtime-lib/core/ids.ts';
import { EMAIL_MAX_LENGTH, INDEXED_TEXT_MAX_BYTES, type FieldType } from '../../runtime-lib/core/values.ts';
import { refTarget, refValueType } from './keys.ts';
import type { Blueprint, Entity, Field, Index } from './types.ts';

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

/**
 * Whether a unique constraint holds `field` (not the primary key, which no update changes): its
 * own `unique`, or a unique entry of `indexes` naming it. A write of such a field may be refused
 * by the database itself, which the runtime must allow for (data/entity-store.ts lockAndChange).
 */
export function heldUnique(entity: Entity, field: Field): boolean {
  if (field.primaryKey) return false;
  return field.unique || generatedIndexes(entity).some((i) => i.unique && i.fields.includes(field.name));
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Types stored as text of any length: what an index's share of bytes limits. */
const FREE_TEXT: ReadonlySet<FieldType> = new Set(['Text', 'LongText', 'Email', 'file']);

/**
 * The most bytes of UTF-8 a value of `field` may hold, when an index holds the field: its share
 * of INDEXED_TEXT_MAX_BYTES in each index it is part of (its own unique or `index = true`, and
 * each generated entry of `indexes`), the smallest. Undefined when no index holds it, or when
 * its values are not free text (ids of a fixed form, numbers, dates, Enum values).
 */
export function indexedTextMaxBytes(bp: Blueprint, entity: Entity, field: Field): number | undefined {
  const freeText = (f: Field) => FREE_TEXT.has(f.type === 'Ref' ? refValueType(bp, f) : f.type);
  if (!freeText(field)) return undefined;
  const shares = field.unique || field.index ? [INDEXED_TEXT_MAX_BYTES] : [];
  for (const index of generatedIndexes(entity)) {
    if (!index.fields.includes(field.name)) continue;
    const texts = entity.fields.filter((f) => index.fields.includes(f.name) && freeText(f)).length;
    shares.push(Math.floor(INDEXED_TEXT_MAX_BYTES / texts));
  }
  if (!shares.length) return undefined;
  const most = Math.min(...shares);
  // A UTF-16 unit takes at most 3 bytes of UTF-8: an e-mail address or a Text id (a key, or a
  // Ref to one), bounded in length already, may need no limit of bytes.
  const units = field.type === 'Email' ? EMAIL_MAX_LENGTH : textIdOf(bp, field) ? TEXT_KEY_MAX_LENGTH : Infinity;
  return units * 3 <= most ? undefined : most;
}

/** Whether `field` holds Text ids: it is a Text key, or a Ref to one. */
function textIdOf(bp: Blueprint, field: Field): boolean {
  const key = field.type === 'Ref' ? refTarget(bp, field)?.field : field;
  return key?.primaryKey === true && key.type === 'Text';
}
