// src/entities/<entity>.ts: one route module per entity. The generator writes every SQL
// statement here, at compile time, so the app prepares them once and never builds queries.

import type { Condition } from '../../runtime-lib/rules/conditions.ts';
import type { Blueprint, Entity, Field, Rule } from '../model/types.ts';
import { lowerFirst } from './relations.ts';
import { render } from './templates.ts';
import { tsLiteral } from './ts-literal.ts';

const q = (name: string): string => `"${name}"`;

export function entityFileName(entity: Entity): string {
  return entity.name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

export function routesName(entity: Entity): string {
  return `${lowerFirst(entity.name)}Routes`;
}

/**
 * The entity's SQL as TypeScript expressions over a COLUMNS constant, laid out to be read:
 * the statements are fixed at generate time, so the app only prepares them. Updates name only
 * the changed columns; the runtime builds them from `table` and `columns` and prepares each
 * distinct set once.
 */
export function entitySql(entity: Entity): { columns: string; statements: Array<{ key: string; value: string }> } {
  const table = q(entity.name);
  const pk = q(entity.primaryKey.name);
  return {
    columns: tsLiteral(entity.fields.map((f) => q(f.name)).join(', ')),
    statements: [
      { key: 'table', value: tsLiteral(table) },
      { key: 'columns', value: 'COLUMNS' },
      { key: 'select', value: `\`SELECT \${COLUMNS} FROM ${table}\`` },
      { key: 'orderBy', value: tsLiteral(pk) },
      { key: 'get', value: `\`SELECT \${COLUMNS} FROM ${table} WHERE ${pk} = ?\`` },
      // Ordered by primary key: stable across pages, and creation order for ULIDs.
      { key: 'list', value: `\`SELECT \${COLUMNS} FROM ${table} ORDER BY ${pk} LIMIT ? OFFSET ?\`` },
      {
        key: 'insert',
        value: `\`INSERT INTO ${table} (\${COLUMNS}) VALUES (${entity.fields.map((f) => `@${f.name}`).join(', ')}) RETURNING \${COLUMNS}\``,
      },
      { key: 'delete', value: tsLiteral(`DELETE FROM ${table} WHERE ${pk} = ?`) },
    ],
  };
}

function fieldSpec(bp: Blueprint, field: Field): string {
  const target = field.ref && bp.entities.find((e) => e.name === field.ref?.entity);
  const targetField = target?.fields.find((f) => f.name === field.ref?.field);
  return tsLiteral({
    name: field.name,
    type: field.type,
    required: field.required,
    nullable: field.nullable,
    primaryKey: field.primaryKey || undefined,
    commandOnly: field.commandOnly || undefined,
    commands: field.commandOnly ? field.commands : undefined,
    default: field.default && (field.default.kind === 'now' ? { now: true } : { value: field.default.value }),
    values: field.values,
    ref: target && targetField && {
      entity: target.name,
      idType: targetField.type,
      exists: `SELECT 1 FROM ${q(target.name)} WHERE ${q(targetField.name)} = ?`,
    },
  });
}

export function tsType(field: Field): string {
  const base: Record<Field['type'], string> = {
    ULID: 'string', UUID: 'string', Text: 'string', LongText: 'string', Email: 'string', Date: 'string', DateTime: 'string',
    Ref: 'string', file: 'string', Integer: 'number', Float: 'number', Boolean: 'boolean', JSON: 'unknown',
    Enum: (field.values ?? []).map((v) => tsLiteral(v)).join(' | ') || 'string',
  };
  const t = base[field.type];
  return field.nullable && t !== 'unknown' ? `${t} | null` : t;
}

/** The parsed conditions of a set of rules (the generated code's form, until it carries their source). */
function conditionsOf<K extends string>(rules: Partial<Record<K, Rule>>): Partial<Record<K, Condition>> {
  return Object.fromEntries(Object.entries(rules).map(([k, r]) => [k, (r as Rule).condition])) as Partial<Record<K, Condition>>;
}

export function emitEntityModule(bp: Blueprint, entity: Entity): string {
  const sql = entitySql(entity);
  return render('app/src/entities/_entity.ts.hbs', {
    name: entity.name,
    collection: entity.collection,
    primaryKey: entity.primaryKey.name,
    idType: entity.primaryKey.type,
    specName: `${lowerFirst(entity.name)}Spec`,
    routesName: routesName(entity),
    fields: entity.fields.map((f) => ({ name: f.name, tsType: tsType(f), spec: fieldSpec(bp, f) })),
    columns: sql.columns,
    sql: sql.statements,
    access: {
      rules: tsLiteral(conditionsOf(entity.access)),
      fields: tsLiteral(Object.fromEntries(entity.fields.filter((f) => f.access.read || f.access.write).map((f) => [f.name, conditionsOf(f.access)]))),
      scopes: tsLiteral(entity.scopes),
    },
  });
}
