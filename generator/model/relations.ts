// Relation fields derived from Ref fields, named once here for every emitter (Prisma schema
// now; includes and page queries later). A Ref field F on entity E to T gives E a singular
// relation and T a back-relation, named after the blueprint's relations when it declares them.
// A declared hasMany/hasOne on a plain field is an equality match (matchRelations).

import type { Blueprint, Entity, Field } from './types.ts';

export interface RefRelation {
  /** Prisma relation name, unique per pair: `Ticket_customerId`. */
  name: string;
  from: Entity;
  field: Field;
  to: Entity;
  /** Relation field on `from` (e.g. `customer`). */
  forward: string;
  /** Relation field on `to` (e.g. `tickets`). */
  back: string;
  /** The back side holds one record (a declared hasOne on a unique key), else a list. */
  backIsOne: boolean;
}

/**
 * A declared hasMany or hasOne whose foreign key is a plain field, not a Ref (a polymorphic
 * subject such as `relatedEntityId`): the records of `to` whose `field` equals the primary key of
 * a `from` record. No foreign-key constraint and no Prisma relation (Prisma's need a real foreign
 * key); the app loads it where it loads relations (a command's policy and availableWhen).
 */
export interface MatchRelation {
  /** The relation's declared name, on `from`. */
  name: string;
  from: Entity;
  to: Entity;
  field: Field;
  kind: 'one' | 'many';
}

export function matchRelations(bp: Blueprint): MatchRelation[] {
  return bp.entities.flatMap((from) =>
    from.relations.flatMap((rel): MatchRelation[] => {
      if (rel.type !== 'hasMany' && rel.type !== 'hasOne') return [];
      const to = bp.entities.find((e) => e.name === rel.entity);
      const field = to?.fields.find((f) => f.name === rel.foreignKey);
      if (!to || !field || field.type === 'Ref') return [];
      return [{ name: rel.name, from, to, field, kind: rel.type === 'hasOne' ? 'one' : 'many' }];
    }),
  );
}

export function refRelations(bp: Blueprint): RefRelation[] {
  // Field names, and the names of declared relations matched on plain fields, are taken.
  const taken = new Map<string, Set<string>>(bp.entities.map((e) => [e.name, new Set(e.fields.map((f) => f.name))]));
  for (const m of matchRelations(bp)) taken.get(m.from.name)?.add(m.name);
  const claim = (entity: string, wanted: string): string => {
    const names = taken.get(entity) as Set<string>;
    let name = wanted;
    for (let i = 2; names.has(name); i++) name = `${wanted}${i}`;
    names.add(name);
    return name;
  };
  const out: RefRelation[] = [];
  for (const from of bp.entities) {
    for (const field of from.fields) {
      const to = field.ref && bp.entities.find((e) => e.name === field.ref?.entity);
      if (!to) continue;
      const declaredForward = from.relations.find(
        (r) => r.type === 'belongsTo' && r.foreignKey === field.name && r.entity === to.name,
      );
      const declaredBack = to.relations.find(
        (r) => (r.type === 'hasMany' || r.type === 'hasOne') && r.foreignKey === field.name && r.entity === from.name,
      );
      const sameTarget = from.fields.filter((f) => f.ref?.entity === to.name).length > 1;
      const plural = pluralize(lowerFirst(from.name));
      out.push({
        name: `${from.name}_${field.name}`,
        from,
        field,
        to,
        forward: claim(from.name, declaredForward?.name ?? (field.name.replace(/_?[Ii]d$/, '') || `${field.name}Ref`)),
        back: claim(to.name, declaredBack?.name ?? (sameTarget ? `${plural}By${upperFirst(field.name)}` : plural)),
        backIsOne: declaredBack?.type === 'hasOne' && field.unique,
      });
    }
  }
  return out;
}

export const lowerFirst = (s: string): string => s.charAt(0).toLowerCase() + s.slice(1);
export const upperFirst = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/** English plural for relation names (the REST path keeps the spec's plain trailing "s"). */
export function pluralize(word: string): string {
  if (/[^aeiou]y$/i.test(word)) return `${word.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/i.test(word)) return `${word}es`;
  return `${word}s`;
}

/**
 * How the app loads relation `name` of `entity`'s records (runtime's IncludeSpec): a Ref forward
 * (one) or back (one or many), or a declared plain-field relation. Undefined when it names none.
 */
export function relationInclude(
  entity: Entity,
  name: string,
  relations: readonly RefRelation[],
  matches: readonly MatchRelation[],
): RelationInclude | undefined {
  const forward = relations.find((r) => r.from === entity && r.forward === name);
  if (forward) {
    const foreignKey = forward.field.ref?.field ?? forward.to.primaryKey.name;
    return { name, entity: forward.to.name, kind: 'one', localKey: forward.field.name, foreignKey };
  }
  const back = relations.find((r) => r.to === entity && r.back === name);
  if (back) {
    const localKey = back.field.ref?.field ?? entity.primaryKey.name;
    return {
      name,
      entity: back.from.name,
      kind: back.backIsOne ? 'one' : 'many',
      localKey,
      foreignKey: back.field.name,
    };
  }
  // A plain-field relation: the records whose foreign key equals this record's primary key.
  const match = matches.find((m) => m.from === entity && m.name === name);
  if (match) {
    return {
      name,
      entity: match.to.name,
      kind: match.kind,
      localKey: entity.primaryKey.name,
      foreignKey: match.field.name,
    };
  }
  return undefined;
}

export interface RelationInclude {
  name: string;
  entity: string;
  kind: 'one' | 'many';
  localKey: string;
  foreignKey: string;
}
