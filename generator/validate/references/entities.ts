// Cross-reference rules of entities: collections, Ref targets, relations, command-only protection.

import type { CompileContext } from '../../context.ts';
import type { Blueprint, Entity, Field } from '../../model/types.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';
import { entityNamed, fieldNamed, names, unknownEntity, unknownField } from './common.ts';

export function entityCollections(ctx: CompileContext, bp: Blueprint): void {
  const seen = new Map<string, string>();
  for (const e of bp.entities) {
    const other = seen.get(e.collection);
    if (other) ctx.report('DUPLICATE_COLLECTION', e.path, `entities "${other}" and "${e.name}" would both be served at /api/${e.collection}`);
    seen.set(e.collection, e.name);
  }
}

export function refTargets(ctx: CompileContext, bp: Blueprint): void {
  for (const entity of bp.entities) {
    for (const field of entity.fields) {
      if (!field.ref) continue;
      const target = entityNamed(bp, field.ref.entity);
      if (!target) {
        unknownEntity(ctx, bp, [...field.path, 'ref'], field.ref.entity, 'Ref target entity');
        continue;
      }
      if (field.ref.field === '') {
        field.ref.field = target.primaryKey?.name ?? 'id';
        continue;
      }
      const targetField = fieldNamed(target, field.ref.field);
      if (!targetField) unknownField(ctx, target, [...field.path, 'ref'], field.ref.field);
      else if (!targetField.unique) {
        ctx.report('REF_NOT_UNIQUE', [...field.path, 'ref'], `Ref to ${target.name}.${targetField.name}, which is neither the primary key nor unique`);
      }
    }
  }
}

export function relations(ctx: CompileContext, bp: Blueprint): void {
  for (const entity of bp.entities) {
    for (const rel of entity.relations) {
      const target = entityNamed(bp, rel.entity);
      if (!target) {
        unknownEntity(ctx, bp, [...rel.path, 'entity'], rel.entity);
        continue;
      }
      if (rel.type === 'manyToMany') {
        if (!rel.through) ctx.report('MISSING_KEY', [...rel.path, 'through'], `manyToMany relation "${rel.name}" needs through = "JoinEntity"`);
        else if (!entityNamed(bp, rel.through)) unknownEntity(ctx, bp, [...rel.path, 'through'], rel.through);
        continue;
      }
      if (!rel.foreignKey) {
        ctx.report('MISSING_KEY', [...rel.path, 'foreign_key'], `${rel.type} relation "${rel.name}" needs foreign_key`);
        continue;
      }
      // belongsTo holds the key itself; hasOne/hasMany point at the key on the other side.
      const holder = rel.type === 'belongsTo' ? entity : target;
      const pointee = rel.type === 'belongsTo' ? target : entity;
      const key = fieldNamed(holder, rel.foreignKey);
      if (!key) unknownField(ctx, holder, [...rel.path, 'foreign_key'], rel.foreignKey);
      // A key of unknown type or with a broken Ref has its own error; the relation follows it.
      else if (!hasOwnError(bp, key) && (key.type !== 'Ref' || key.ref?.entity !== pointee.name)) {
        ctx.report('INVALID_RELATION', [...rel.path, 'foreign_key'], `${holder.name}.${key.name} must be a Ref to ${pointee.name} for this ${rel.type} relation`);
      }
      if (fieldNamed(entity, rel.name)) {
        ctx.report('INVALID_RELATION', rel.path, `relation "${rel.name}" has the same name as a field of ${entity.name}`);
      }
    }
  }
}

/** A field of unknown type, or a Ref whose target is missing or unknown: reported with the field. */
function hasOwnError(bp: Blueprint, field: Field): boolean {
  return field.unknownType !== undefined || (field.type === 'Ref' && (!field.ref || !entityNamed(bp, field.ref.entity)));
}

export function protection(ctx: CompileContext, bp: Blueprint): void {
  for (const entity of bp.entities) {
    entity.protection.fields.forEach((name, i) => {
      if (!fieldNamed(entity, name)) unknownField(ctx, entity, [...entity.path, 'protection', 'fields', i], name);
    });
    entity.protection.commands?.forEach((name, i) => checkCommandOf(ctx, bp, entity, [...entity.path, 'protection', 'commands', i], name));
    for (const field of entity.fields) {
      if (field.commandOnly && field.primaryKey) {
        ctx.report('INVALID_PROTECTION', field.path, 'a primary key cannot be command-only: it is generated');
      }
      // Only the field's own list: one inherited from [protection] was checked above.
      const at = field.commands && ctx.declaredAt.get(field.commands);
      if (!field.commands || !at) continue;
      if (!field.commandOnly) {
        ctx.report('OPTION_NOT_APPLICABLE', at, `"commands" of field "${field.name}" applies only to write = "command-only" fields`, { severity: 'warning' });
      }
      field.commands.forEach((name, i) => checkCommandOf(ctx, bp, entity, [...at, i], name));
    }
  }
}

function checkCommandOf(ctx: CompileContext, bp: Blueprint, entity: Entity, at: KeyPath, name: string): void {
  const command = bp.commands.find((c) => c.name === name);
  if (!command) ctx.report('UNKNOWN_COMMAND', at, `command "${name}" does not exist`, { hint: didYouMean(name, names(bp.commands)) });
  else if (command.entity !== entity.name) {
    ctx.report('COMMAND_OF_OTHER_ENTITY', at, `command "${name}" belongs to entity "${command.entity}", not "${entity.name}"`);
  }
}
