// Cross-reference rules of entities: collections, Ref targets, relations, command-only protection.

import type { CompileContext } from '../../context.ts';
import { indexedTextMaxBytes, indexName, redundancy } from '../../model/indexes.ts';
import { isIntegerKey, refValueProblem } from '../../model/keys.ts';
import { showLiteral } from '../../model/literals.ts';
import type { Blueprint, Entity, Field, Index, Relation } from '../../model/types.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';
import { entityNamed, fieldNamed, names, unknownEntity, unknownField } from './common.ts';

export function entityCollections(ctx: CompileContext, bp: Blueprint): void {
  const seen = new Map<string, string>();
  for (const e of bp.entities) {
    const other = seen.get(e.collection);
    if (other)
      ctx.report(
        'DUPLICATE_COLLECTION',
        e.path,
        `entities "${other}" and "${e.name}" would both be served at /api/${e.collection}`,
      );
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
        // A target without a primary key has its own error (MISSING_PRIMARY_KEY).
        if (!target.primaryKey?.primaryKey) continue;
      }
      const targetField = fieldNamed(target, field.ref.field);
      if (!targetField) unknownField(ctx, target, [...field.path, 'ref'], field.ref.field);
      else if (!targetField.unique) {
        ctx.report(
          'REF_NOT_UNIQUE',
          [...field.path, 'ref'],
          `Ref to ${target.name}.${targetField.name}, which is neither the primary key nor unique`,
        );
      } else if (field.default?.kind === 'value' && targetField.unknownType === undefined) {
        // The default is an id of the target: it must be one its key (or unique field) can hold.
        const problem = refValueProblem({ entity: target, field: targetField }, field.default.value);
        if (problem)
          ctx.report(
            'INVALID_DEFAULT',
            [...field.path, 'default'],
            `default ${showLiteral(field.default.value)} does not fit the ${problem}`,
          );
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
        if (!rel.through)
          ctx.report(
            'MISSING_KEY',
            [...rel.path, 'through'],
            `manyToMany relation "${rel.name}" needs through = "JoinEntity"`,
          );
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
      else if (!hasOwnError(bp, key)) foreignKey(ctx, rel, holder, key, pointee);
      if (fieldNamed(entity, rel.name)) {
        ctx.report(
          'INVALID_RELATION',
          rel.path,
          `relation "${rel.name}" has the same name as a field of ${entity.name}`,
        );
      }
    }
  }
}

/**
 * A belongsTo holds a Ref to its target. A hasMany or hasOne matches `child.<foreign_key> =
 * parent.<primary key>`: through a Ref to the parent, or through a plain field that can hold the
 * parent's ids (a polymorphic subject, e.g. `relatedEntityId`), without a foreign-key constraint.
 */
function foreignKey(ctx: CompileContext, rel: Relation, holder: Entity, key: Field, pointee: Entity): void {
  const at: KeyPath = [...rel.path, 'foreign_key'];
  const shown = `${holder.name}.${key.name}`;
  if (key.type === 'Ref') {
    if (key.ref?.entity !== pointee.name) {
      ctx.report(
        'INVALID_RELATION',
        at,
        `${shown} is a Ref to ${key.ref?.entity}, not to ${pointee.name}: it cannot hold this ${rel.type} relation`,
      );
    }
    return;
  }
  if (rel.type === 'belongsTo') {
    ctx.report('INVALID_RELATION', at, `${shown} must be a Ref to ${pointee.name} for this belongsTo relation`, {
      hint: 'a belongsTo foreign key is a Ref on this entity; only hasMany and hasOne may match a plain field',
    });
    return;
  }
  const parentKey = pointee.primaryKey;
  // A parent without a primary key has its own error.
  if (!parentKey?.primaryKey || parentKey.unknownType !== undefined) return;
  const fits = isIntegerKey(parentKey.type)
    ? key.type === 'Integer'
    : key.type === 'Text' || key.type === 'ULID' || key.type === 'UUID';
  if (!fits) {
    ctx.report(
      'INVALID_RELATION',
      at,
      `${shown} is ${key.type}: it cannot hold ids of ${pointee.name} (${parentKey.type})`,
      {
        hint: isIntegerKey(parentKey.type)
          ? `make it a Ref to ${pointee.name}, or an Integer field`
          : `make it a Ref to ${pointee.name}, or a Text, ULID or UUID field`,
      },
    );
  }
}

/** A field of unknown type, or a Ref whose target is missing or unknown: reported with the field. */
function hasOwnError(bp: Blueprint, field: Field): boolean {
  return (
    field.unknownType !== undefined || (field.type === 'Ref' && (!field.ref || !entityNamed(bp, field.ref.entity)))
  );
}

/** Index names share SQLite's one namespace with tables and the other indexes. */
const INDEX_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `indexes` entries: known fields, each once, at least one; names that Prisma can map and that
 * no other table or index of the database has; entries that repeat an index are warnings.
 */
export function indexes(ctx: CompileContext, bp: Blueprint): void {
  // SQLite compares names ignoring the case of ASCII letters.
  const taken = new Map<string, string>(
    bp.entities.map((e) => [e.name.toLowerCase(), `the table of entity ${e.name}`]),
  );
  const take = (name: string, what: string) => taken.set(name.toLowerCase(), what);
  for (const entity of bp.entities) {
    // The indexes bp writes for the fields, as Prisma names them.
    for (const f of entity.fields) {
      if (f.unique && !f.primaryKey)
        take(indexName(entity, { fields: [f.name], unique: true }), `the unique index of ${entity.name}.${f.name}`);
      else if (f.index && !f.unique)
        take(indexName(entity, { fields: [f.name], unique: false }), `the index of ${entity.name}.${f.name}`);
    }
  }
  for (const entity of bp.entities) {
    entity.indexes.forEach((index, i) => {
      if (!indexFields(ctx, entity, index)) return;
      const redundant = redundancy(entity, index);
      if (redundant) {
        ctx.report('REDUNDANT_INDEX', index.path, `this index adds nothing: ${redundant}; it is not generated`, {
          severity: 'warning',
        });
        return;
      }
      const name = indexName(entity, index);
      const at: KeyPath = index.name === undefined ? index.path : [...index.path, 'name'];
      const other = taken.get(name.toLowerCase());
      if (!INDEX_NAME.test(name)) {
        ctx.report(
          'INVALID_INDEX',
          at,
          `index name "${name}" may hold only letters, digits and _, and not start with a digit`,
        );
      } else if (/^(sqlite_|_bp_)/i.test(name)) {
        ctx.report(
          'INVALID_INDEX',
          at,
          `index name "${name}" is reserved: names starting with sqlite_ are SQLite's, with _bp_ bp's`,
        );
      } else if (other) {
        ctx.report(
          'DUPLICATE_DEFINITION',
          at,
          `index name "${name}" is already ${other}: tables and indexes share one namespace`,
        );
      }
      take(name, `the name of ${entity.name}'s index ${i}`);
    });
  }
  for (const entity of bp.entities) for (const field of entity.fields) indexedDefault(ctx, bp, entity, field);
}

/**
 * A text default longer than its field's share of an index (model/indexes.ts): every write relying
 * on it would fail.
 */
function indexedDefault(ctx: CompileContext, bp: Blueprint, entity: Entity, field: Field): void {
  const value = field.default?.kind === 'value' ? field.default.value : undefined;
  if (typeof value !== 'string') return;
  const most = indexedTextMaxBytes(bp, entity, field);
  const bytes = Buffer.byteLength(value);
  if (most === undefined || bytes <= most) return;
  ctx.report(
    'INVALID_DEFAULT',
    [...field.path, 'default'],
    `default is ${bytes} bytes long in UTF-8; an index holds ${field.name}, which takes at most ${most}`,
  );
}

/** Reports what is wrong with the fields of an index; true when they are all fine. */
function indexFields(ctx: CompileContext, entity: Entity, index: Index): boolean {
  if (index.fields.length === 0) {
    ctx.report('INVALID_INDEX', [...index.path, 'fields'], 'an index needs at least one field');
    return false;
  }
  let ok = true;
  index.fields.forEach((name, i) => {
    const at: KeyPath = [...index.path, 'fields', i];
    if (index.fields.indexOf(name) < i) {
      ctx.report('INVALID_INDEX', at, `field "${name}" is listed twice in this index`);
      ok = false;
    } else if (!fieldNamed(entity, name)) {
      unknownField(ctx, entity, at, name);
      ok = false;
    }
  });
  return ok;
}

export function protection(ctx: CompileContext, bp: Blueprint): void {
  for (const entity of bp.entities) {
    entity.protection.fields.forEach((name, i) => {
      if (!fieldNamed(entity, name)) unknownField(ctx, entity, [...entity.path, 'protection', 'fields', i], name);
    });
    entity.protection.commands?.forEach((name, i) =>
      checkCommandOf(ctx, bp, entity, [...entity.path, 'protection', 'commands', i], name),
    );
    for (const field of entity.fields) {
      if (field.commandOnly && field.primaryKey) {
        ctx.report('INVALID_PROTECTION', field.path, 'a primary key cannot be command-only: it is generated');
      }
      // Only the field's own list: one inherited from [protection] was checked above.
      const at = field.commands && ctx.declaredAt.get(field.commands);
      if (!field.commands || !at) continue;
      if (!field.commandOnly) {
        ctx.report(
          'OPTION_NOT_APPLICABLE',
          at,
          `"commands" of field "${field.name}" applies only to write = "command-only" fields`,
          { severity: 'warning' },
        );
      }
      field.commands.forEach((name, i) => checkCommandOf(ctx, bp, entity, [...at, i], name));
    }
  }
}

function checkCommandOf(ctx: CompileContext, bp: Blueprint, entity: Entity, at: KeyPath, name: string): void {
  const command = bp.commands.find((c) => c.name === name);
  if (!command)
    ctx.report('UNKNOWN_COMMAND', at, `command "${name}" does not exist`, {
      hint: didYouMean(name, names(bp.commands)),
    });
  else if (command.entity !== entity.name) {
    ctx.report(
      'COMMAND_OF_OTHER_ENTITY',
      at,
      `command "${name}" belongs to entity "${command.entity}", not "${entity.name}"`,
    );
  }
}
