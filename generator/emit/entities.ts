// src/entities/<entity>.ts: one route module per entity. The generator writes every SQL
// statement here, at compile time, so the app prepares them once and never builds queries.

import { effectiveAccess } from '../model/access-defaults.ts';
import { refTarget, refValueType } from '../model/keys.ts';
import { heldUnique, indexedTextMaxBytes } from '../model/indexes.ts';
import type { Blueprint, Entity, Field } from '../model/types.ts';
import { emailKeyColumn } from './migrations/email-indexes.ts';
import { lowerFirst } from '../model/relations.ts';
import { ruleCalls } from './rules.ts';
import { render } from './templates.ts';
import {
  type Clauses,
  clauses,
  code,
  nonEmpty,
  tsAssign,
  tsLiteral,
  tsProperties,
  tsString,
  tsTypeMember,
} from './ts-literal.ts';

const q = (name: string): string => `"${name}"`;

export function entityFileName(entity: Entity): string {
  return entity.name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

export function routesName(entity: Entity): string {
  return `${lowerFirst(entity.name)}Routes`;
}

/**
 * The entity's SQL over a COLUMNS constant, with `?` placeholders (the PostgreSQL driver numbers
 * them). Updates name only the changed columns; the runtime builds them from `table` and
 * `columns` and prepares each distinct set once. `lock` is SQLite's: nothing, its writer holds
 * the whole file; the PostgreSQL module adds FOR UPDATE (see the template).
 */
function entitySql(entity: Entity): Record<string, unknown> {
  const table = q(entity.name);
  const pk = q(entity.primaryKey.name);
  const fromValues = rowFromValues(entity, 'sqlite');
  return {
    table,
    columns: code('COLUMNS'),
    select: clauses('SELECT ${COLUMNS}', `FROM ${table}`),
    orderBy: pk,
    get: clauses('SELECT ${COLUMNS}', `FROM ${table}`, `WHERE ${pk} = ?`),
    list: clauses('SELECT ${COLUMNS}', `FROM ${table}`, `ORDER BY ${pk}`, 'LIMIT ? OFFSET ?'),
    insert: insertSql(entity, fromValues),
    rowFromValues: fromValues,
    delete: clauses(`DELETE FROM ${table}`, `WHERE ${pk} = ?`),
    lock: '',
  };
}

/**
 * Whether the database stores a new row exactly as the values the app writes: then an insert
 * returns nothing and the app answers with the values, which on PostgreSQL lets the insert go
 * with the COMMIT, one round trip for the whole create. Not where the database makes part of the
 * row: an Integer id it assigns, or PostgreSQL's jsonb, which orders an object's keys its own way
 * (SQLite keeps JSON as the text written).
 */
function rowFromValues(entity: Entity, dialect: 'sqlite' | 'postgres'): boolean {
  if (entity.primaryKey.type === 'Integer') return false;
  return dialect === 'sqlite' || !entity.fields.some((f) => f.type === 'JSON');
}

function insertSql(entity: Entity, fromValues: boolean): Clauses {
  const table = q(entity.name);
  // The database assigns Integer ids: the insert leaves that column out.
  const written = entity.fields.filter((f) => !(f.primaryKey && f.type === 'Integer'));
  // Then the key columns of unique Email fields, whose values the runtime adds (data/fields.ts rowKeys).
  const keys = entity.fields.flatMap((f) => emailKeyColumn(f) ?? []).map(q);
  const values = `VALUES (${[...written, ...keys].map(() => '?').join(', ')})`;
  const insert =
    written.length === 0
      ? [`INSERT INTO ${table} DEFAULT VALUES`]
      : written.length === entity.fields.length
        ? [`INSERT INTO ${table} (\${COLUMNS}${keys.map((k) => `, ${k}`).join('')})`, values]
        : [`INSERT INTO ${table} (${[...written.map((f) => q(f.name)), ...keys].join(', ')})`, values];
  return clauses(...insert, ...(fromValues ? [] : ['RETURNING ${COLUMNS}']));
}

/** PostgreSQL's statements where they are not SQLite's: the insert of an entity with JSON fields. */
function postgresInsert(entity: Entity): Record<string, unknown> | undefined {
  const fromValues = rowFromValues(entity, 'postgres');
  if (fromValues === rowFromValues(entity, 'sqlite')) return undefined;
  return { insert: insertSql(entity, fromValues), rowFromValues: fromValues };
}

function fieldSpec(bp: Blueprint, entity: Entity, field: Field): Record<string, unknown> {
  const resolved = refTarget(bp, field);
  const [target, targetField] = [resolved?.entity, resolved?.field];
  return {
    name: field.name,
    type: field.type,
    required: field.required,
    nullable: field.nullable,
    primaryKey: field.primaryKey || undefined,
    commandOnly: field.commandOnly || undefined,
    commands: field.commandOnly ? field.commands : undefined,
    default: field.default && (field.default.kind === 'now' ? { now: true } : { value: field.default.value }),
    values: field.values,
    maxBytes: indexedTextMaxBytes(bp, entity, field),
    unique: heldUnique(entity, field) || undefined,
    key: emailKeyColumn(field),
    upload: field.type === 'file' ? nonEmptyUpload(field) : undefined,
    validators: field.validators?.length ? field.validators : undefined,
    ref: target &&
      targetField && {
        entity: target.name,
        idType: targetField.type,
        primaryKey: targetField.primaryKey || undefined,
        exists: clauses(`SELECT 1 FROM ${q(target.name)}`, `WHERE ${q(targetField.name)} = ?`),
      },
  };
}

/** A file field's limits as the runtime reads them (runtime/uploads/receive.ts); absent when it has none. */
function nonEmptyUpload(field: Field): Record<string, unknown> | undefined {
  if (field.max === undefined && field.accept === undefined) return undefined;
  return { max: field.max, accept: field.accept };
}

/** Whether an entity has file fields: its routes then take multipart bodies (runtime/uploads). */
export function hasFileFields(entity: Entity): boolean {
  return entity.fields.some((f) => f.type === 'file');
}

/**
 * The TypeScript type of a field's values, as the members of a union. A Ref holds its target's
 * ids (`refType`): numbers for an Integer key; a Ref of unknown target (a command input no
 * mutation ties to a field) takes either.
 */
export function tsTypeMembers(field: Pick<Field, 'type' | 'values' | 'nullable'>, refType?: Field['type']): string[] {
  const ref = refType === undefined ? ['string', 'number'] : refType === 'Integer' ? ['number'] : ['string'];
  const base: Record<Field['type'], string[]> = {
    ULID: ['string'],
    UUID: ['string'],
    Text: ['string'],
    LongText: ['string'],
    Email: ['string'],
    Date: ['string'],
    DateTime: ['string'],
    Ref: ref,
    file: ['string'],
    Integer: ['number'],
    Float: ['number'],
    Boolean: ['boolean'],
    JSON: ['unknown'],
    Enum: field.values?.length ? field.values.map(tsString) : ['string'],
  };
  const members = base[field.type];
  return field.nullable && field.type !== 'JSON' ? [...members, 'null'] : members;
}

export function emitEntityModule(bp: Blueprint, entity: Entity): string {
  // Without [auth], a missing rule is written as `public` (model/access-defaults.ts).
  const rules = ruleCalls(effectiveAccess(bp, entity));
  const postgres = postgresInsert(entity);
  const fieldRules = Object.fromEntries(
    entity.fields.filter((f) => f.access.read || f.access.write).map((f) => [f.name, ruleCalls(f.access)]),
  );
  const scopes = { read: nonEmpty(entity.scopes.read), write: nonEmpty(entity.scopes.write) };
  return render('app/src/entities/_entity.ts.hbs', {
    name: entity.name,
    collection: entity.collection,
    primaryKey: entity.primaryKey.name,
    specName: `${lowerFirst(entity.name)}Spec`,
    routesName: routesName(entity),
    usesRules: Object.keys(rules).length > 0 || Object.keys(fieldRules).length > 0,
    members: entity.fields.map((f) => tsTypeMember(`${f.name}:`, tsTypeMembers(f, refValueType(bp, f)), 2)),
    columns: tsAssign('const COLUMNS =', entity.fields.map((f) => q(f.name)).join(', '), 0, 1),
    head: tsProperties(
      {
        name: entity.name,
        collection: entity.collection,
        primaryKey: entity.primaryKey.name,
        idType: entity.primaryKey.type,
      },
      2,
    ),
    fields: entity.fields.map((f) => tsLiteral(fieldSpec(bp, entity, f), { indent: 4, trail: 1 })),
    sql: tsProperties(entitySql(entity), 2),
    postgresInsert: postgres && tsProperties(postgres, 2),
    // Empty ones say nothing: no rule is the signed-in default, no scope none needed.
    access: tsProperties(
      {
        entity: entity.name,
        rules: nonEmpty(rules),
        fields: nonEmpty(fieldRules),
        scopes: scopes.read || scopes.write ? scopes : undefined,
      },
      4,
    ),
    permissions: bp.auth.permissions !== undefined,
    files: hasFileFields(entity),
  });
}
