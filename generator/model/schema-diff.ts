// The schema diff object of spec 2.10 between two normalized blueprint models: what the data of
// the app gains or loses when one is replaced by the other. `bp dev` computes it on every valid
// save, to apply additive changes at once and hold destructive ones until the developer confirms.

import type { Blueprint, Field } from './types.ts';

export interface FieldRef {
  entity: string;
  field: string;
  fieldType: string;
}

export interface FieldChange {
  entity: string;
  field: string;
  /** The field's type before and after. */
  from: string;
  to: string;
}

/** Spec 2.10, plus `entitiesRemoved` (each removed entity's fields are in `fieldsRemoved` too). */
export interface SchemaDiff {
  hasChanges: boolean;
  /** A field (or an entity) removed, or a field's type changed: applying it loses data. */
  hasBreakingChanges: boolean;
  entitiesAdded: string[];
  entitiesRemoved: string[];
  fieldsAdded: FieldRef[];
  fieldsRemoved: FieldRef[];
  fieldsChanged: FieldChange[];
}

/**
 * A field's type as the database stores it: an enum's values and a reference's target are part
 * of it, since changing them can leave stored values that no longer fit.
 */
function typeOf(field: Field): string {
  if (field.ref) return `${field.type} -> ${field.ref.entity}.${field.ref.field}`;
  if (field.values) return `${field.type}(${field.values.join(', ')})`;
  return field.type;
}

const ref = (entity: string, field: Field): FieldRef => ({ entity, field: field.name, fieldType: typeOf(field) });

/** What changes in the stored data when `before` is replaced by `after`; fields in declaration order. */
export function schemaDiff(before: Blueprint, after: Blueprint): SchemaDiff {
  const diff: SchemaDiff = {
    hasChanges: false,
    hasBreakingChanges: false,
    entitiesAdded: [],
    entitiesRemoved: [],
    fieldsAdded: [],
    fieldsRemoved: [],
    fieldsChanged: [],
  };
  const old = new Map(before.entities.map((e) => [e.name, e]));
  const now = new Map(after.entities.map((e) => [e.name, e]));
  for (const entity of after.entities) {
    const previous = old.get(entity.name);
    if (!previous) {
      diff.entitiesAdded.push(entity.name);
      diff.fieldsAdded.push(...entity.fields.map((f) => ref(entity.name, f)));
      continue;
    }
    const oldFields = new Map(previous.fields.map((f) => [f.name, f]));
    const newNames = new Set(entity.fields.map((f) => f.name));
    for (const field of entity.fields) {
      const was = oldFields.get(field.name);
      if (!was) diff.fieldsAdded.push(ref(entity.name, field));
      else if (typeOf(was) !== typeOf(field)) {
        diff.fieldsChanged.push({ entity: entity.name, field: field.name, from: typeOf(was), to: typeOf(field) });
      }
    }
    for (const field of previous.fields)
      if (!newNames.has(field.name)) diff.fieldsRemoved.push(ref(entity.name, field));
  }
  for (const entity of before.entities) {
    if (now.has(entity.name)) continue;
    diff.entitiesRemoved.push(entity.name);
    diff.fieldsRemoved.push(...entity.fields.map((f) => ref(entity.name, f)));
  }
  diff.hasBreakingChanges = diff.fieldsRemoved.length > 0 || diff.fieldsChanged.length > 0;
  diff.hasChanges = diff.hasBreakingChanges || diff.fieldsAdded.length > 0;
  return diff;
}

/** One line per destructive change, for the terminal and the overlay. */
export function describeBreaking(diff: SchemaDiff): string[] {
  const lines: string[] = [];
  for (const name of diff.entitiesRemoved) lines.push(`entity ${name} removed: its table and all its rows are dropped`);
  const removedEntities = new Set(diff.entitiesRemoved);
  for (const f of diff.fieldsRemoved) {
    if (!removedEntities.has(f.entity))
      lines.push(`${f.entity}.${f.field} (${f.fieldType}) removed: its values are dropped`);
  }
  for (const f of diff.fieldsChanged) {
    lines.push(`${f.entity}.${f.field} changes type from ${f.from} to ${f.to}: stored values may be lost`);
  }
  return lines;
}
