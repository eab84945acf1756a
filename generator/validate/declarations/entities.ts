// Rules on one entity declaration and its fields, each a small function that reports: names,
// field types and the options that depend on them, defaults, the primary key, conditions.

import type { CompileContext } from '../../context.ts';
import { isFieldType, parseRef } from '../../model/build.ts';
import { ACCESS_ROOTS } from '../../model/conditions.ts';
import { isKeyType } from '../../model/keys.ts';
import { defaultProblem } from '../../model/literals.ts';
import { list, strList, table, text, type Raw } from '../../model/raw.ts';
import { FIELD_TYPES, type FieldType } from '../../../runtime-lib/core/values.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { didYouMean } from '../../suggest.ts';
import { checkIdentifier, checkMimeTypes, isIdentifier } from './common.ts';
import { checkCondition } from './conditions.ts';

export function checkEntity(ctx: CompileContext, name: string, raw: Raw, entityNames: readonly string[]): void {
  const at: KeyPath = ['entity', name];
  checkIdentifier(ctx, at, name, 'entity');
  const fields = list(raw.fields).flatMap((f, i) =>
    isTable(f) ? [{ raw: f, at: [...at, 'fields', i] as KeyPath }] : [],
  );
  for (const field of fields) checkField(ctx, field.at, field.raw, entityNames);
  const counted = uniqueFields(ctx, fields);
  primaryKeys(ctx, name, at, counted);
  const access = table(raw.access);
  for (const action of ['read', 'create', 'update', 'delete'] as const)
    checkCondition(ctx, [...at, 'access', action], access[action], ACCESS_ROOTS);
}

type FieldDeclaration = { raw: Raw; at: KeyPath };

/** A name declared twice is reported at the second; the first declaration is the one that counts. */
function uniqueFields(ctx: CompileContext, fields: FieldDeclaration[]): FieldDeclaration[] {
  const seen = new Set<string>();
  return fields.filter(({ raw, at }) => {
    const name = text(raw.name);
    if (!seen.has(name)) {
      seen.add(name);
      return true;
    }
    // A name that is not an identifier has its own error.
    if (isIdentifier(name)) ctx.report('DUPLICATE_FIELD', [...at, 'name'], `field "${name}" is declared twice`);
    return false;
  });
}

function primaryKeys(ctx: CompileContext, entity: string, at: KeyPath, fields: FieldDeclaration[]): void {
  const keys = fields.filter((f) => f.raw.primary_key === true);
  if (keys.length === 0) {
    ctx.report('MISSING_PRIMARY_KEY', [...at, 'fields'], `entity "${entity}" has no primary key`, {
      hint: 'add { name = "id", type = "ULID", primary_key = true }',
    });
  } else if (keys.length > 1) {
    ctx.report('MULTIPLE_PRIMARY_KEYS', keys[1].at, `entity "${entity}" declares more than one primary key`);
  }
}

function checkField(ctx: CompileContext, at: KeyPath, raw: Raw, entityNames: readonly string[]): void {
  const name = text(raw.name);
  checkIdentifier(ctx, [...at, 'name'], name, 'field');
  const type = text(raw.type);
  if (isFieldType(type)) {
    primaryKeyType(ctx, at, raw, name, type);
    enumValues(ctx, at, raw, name, type);
    refTarget(ctx, at, raw, name, type, entityNames);
    fileOptions(ctx, at, raw, type);
    fieldDefault(ctx, at, raw, type);
  } else {
    // The field stays in the model with an unknown type: checks that depend on the type skip it.
    ctx.report('UNKNOWN_FIELD_TYPE', [...at, 'type'], `unknown field type "${type}"`, {
      hint: didYouMean(type, FIELD_TYPES) ?? `field types: ${FIELD_TYPES.join(', ')}`,
    });
  }
  checkMimeTypes(ctx, [...at, 'accept'], raw.accept);
  if (raw.required === true && raw.nullable === true && raw.primary_key !== true) {
    ctx.report('CONFLICTING_OPTIONS', [...at, 'nullable'], `field "${name}" cannot be both required and nullable`);
  }
  const access = table(raw.access);
  for (const key of ['read', 'write'] as const) checkCondition(ctx, [...at, 'access', key], access[key], ACCESS_ROOTS);
}

function primaryKeyType(ctx: CompileContext, at: KeyPath, raw: Raw, name: string, type: FieldType): void {
  if (raw.primary_key === true && !isKeyType(type)) {
    ctx.report(
      'INVALID_PRIMARY_KEY',
      [...at, 'type'],
      `primary key "${name}" must be ULID, UUID, Text or Integer, not ${type}`,
    );
  }
}

function enumValues(ctx: CompileContext, at: KeyPath, raw: Raw, name: string, type: FieldType): void {
  if (type !== 'Enum') {
    if (raw.values !== undefined)
      ctx.report('OPTION_NOT_APPLICABLE', [...at, 'values'], `"values" applies only to Enum fields, not ${type}`);
    return;
  }
  const values = strList(raw.values);
  if (values.length === 0) {
    ctx.report(
      'ENUM_WITHOUT_VALUES',
      raw.values === undefined ? at : [...at, 'values'],
      `Enum field "${name}" has no values`,
      {
        hint: 'add values = ["a", "b"]',
      },
    );
  } else if (new Set(values).size !== values.length) {
    ctx.report('DUPLICATE_ENUM_VALUE', [...at, 'values'], `Enum field "${name}" lists a value twice`);
  }
}

function refTarget(
  ctx: CompileContext,
  at: KeyPath,
  raw: Raw,
  name: string,
  type: FieldType,
  entityNames: readonly string[],
): void {
  if (type !== 'Ref') {
    if (raw.ref !== undefined)
      ctx.report('OPTION_NOT_APPLICABLE', [...at, 'ref'], `"ref" applies only to Ref fields, not ${type}`);
    return;
  }
  if (typeof raw.ref !== 'string') {
    ctx.report('MISSING_REF', at, `Ref field "${name}" needs ref = "Entity" or "Entity.field"`);
  } else if (!parseRef(raw.ref, entityNames)) {
    ctx.report('INVALID_REF', [...at, 'ref'], `ref "${raw.ref}" of field "${name}" is not "Entity" or "Entity.field"`, {
      hint: 'e.g. ref = "Customer" or ref = "Customer.id"',
    });
  }
}

function fileOptions(ctx: CompileContext, at: KeyPath, raw: Raw, type: FieldType): void {
  for (const key of ['max', 'accept'] as const) {
    if (raw[key] !== undefined && type !== 'file') {
      ctx.report('FILE_OPTION_ON_NON_FILE', [...at, key], `"${key}" applies only to file fields, not ${type}`);
    }
  }
}

function fieldDefault(ctx: CompileContext, at: KeyPath, raw: Raw, type: FieldType): void {
  const values = type === 'Enum' ? strList(raw.values) : undefined;
  // An Enum without values already has its error; every default would "not fit" it.
  if (raw.default === undefined || (type === 'Enum' && values?.length === 0)) return;
  const problem = defaultProblem(type, raw.default, values, {
    primaryKey: raw.primary_key === true,
    required: raw.required === true,
  });
  if (problem) ctx.report('INVALID_DEFAULT', [...at, 'default'], problem);
}
