// What `record.<path>` can reach: the entity's own fields and, where the app loads them before a
// condition runs (a command's policy and availableWhen), one relation deep through the relations
// named as generator/model/relations.ts names them and emit/commands.ts loads them.

import { type MatchRelation, matchRelations, refRelations, type RefRelation } from '../../model/relations.ts';
import type { Blueprint, Entity, Field } from '../../model/types.ts';
import { didYouMean } from '../../suggest.ts';

export interface PathProblem {
  /** Which key of the path is wrong. */
  index: number;
  message: string;
  hint?: string;
}

/** A relation of an entity as a condition can read it. */
interface Reachable {
  name: string;
  target: Entity;
}

export class RecordPaths {
  private readonly relations: RefRelation[];
  private readonly matches: MatchRelation[];

  constructor(bp: Blueprint) {
    this.relations = refRelations(bp);
    this.matches = matchRelations(bp);
  }

  /** Relations of `entity` a command condition may read through (`record.customer.name`). */
  relationsOf(entity: Entity): Reachable[] {
    return [
      ...this.relations.filter((r) => r.from === entity).map((r) => ({ name: r.forward, target: r.to })),
      ...this.relations.filter((r) => r.to === entity).map((r) => ({ name: r.back, target: r.from })),
      ...this.matches.filter((m) => m.from === entity).map((m) => ({ name: m.name, target: m.to })),
    ];
  }

  /** Why `keys` does not resolve on `entity`, or undefined when it does. */
  problem(entity: Entity, keys: readonly string[], loadsRelations: boolean): PathProblem | undefined {
    if (keys.length === 0) return undefined;
    const first = keys[0];
    const field = entity.fields.find((f) => f.name === first);
    if (field) return deeper(field, keys, 1);
    const relations = this.relationsOf(entity);
    const relation = relations.find((r) => r.name === first);
    const isRelation = relation !== undefined || entity.relations.some((r) => r.name === first);
    if (isRelation && !loadsRelations) {
      return {
        index: 0,
        message: `"${first}" is a relation of ${entity.name}; only a command's policy and availableWhen load relations`,
      };
    }
    if (relation) {
      const target = relation.target;
      if (keys.length === 1) {
        return {
          index: 0,
          message:
            `"${first}" is a relation of ${entity.name}; ` +
            `read a field of it, e.g. ${first}.${target.primaryKey?.name ?? 'id'}`,
        };
      }
      const targetField = target.fields.find((f) => f.name === keys[1]);
      if (!targetField) return { index: 1, ...noField(target, keys[1]) };
      return deeper(targetField, keys, 2);
    }
    const candidates = [...entity.fields.map((f) => f.name), ...(loadsRelations ? relations.map((r) => r.name) : [])];
    return {
      index: 0,
      message: `entity "${entity.name}" has no field "${first}"`,
      hint: didYouMean(first, candidates),
    };
  }
}

function noField(entity: Entity, name: string): Omit<PathProblem, 'index'> {
  return {
    message: `entity "${entity.name}" has no field "${name}"`,
    hint: didYouMean(
      name,
      entity.fields.map((f) => f.name),
    ),
  };
}

/** Keys after a field: only a JSON value (or a field of unknown type) has any. */
function deeper(field: Field, keys: readonly string[], next: number): PathProblem | undefined {
  if (next >= keys.length || field.type === 'JSON') return undefined;
  return { index: next, message: `"${keys[next - 1]}" is a ${field.type} field: it has no "${keys[next]}"` };
}
