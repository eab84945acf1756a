// Lookups and reports shared by the cross-reference rules.

import type { CompileContext } from '../../context.ts';
import type { Blueprint, Entity, Field } from '../../model/types.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';

export type ReferenceRule = (ctx: CompileContext, bp: Blueprint) => void;

export const entityNamed = (bp: Blueprint, name: string): Entity | undefined =>
  bp.entities.find((e) => e.name === name);
export const fieldNamed = (entity: Entity, name: string): Field | undefined =>
  entity.fields.find((f) => f.name === name);
export const names = <T extends { name: string }>(items: readonly T[]): string[] => items.map((i) => i.name);

export function unknownEntity(ctx: CompileContext, bp: Blueprint, at: KeyPath, name: string, what = 'entity'): void {
  ctx.report('UNKNOWN_ENTITY', at, `${what} "${name}" does not exist`, { hint: didYouMean(name, names(bp.entities)) });
}

export function unknownField(ctx: CompileContext, entity: Entity, at: KeyPath, name: string): void {
  ctx.report('UNKNOWN_FIELD', at, `entity "${entity.name}" has no field "${name}"`, {
    hint: didYouMean(name, names(entity.fields)),
  });
}
