// Builds the typed model from shape-checked sections: pure normalization (names resolved,
// defaults applied, deterministic order), no reporting. The declaration rules
// (validate/declarations/) have reported what is wrong with each declaration; here a wrong value
// is read as absent, except where keeping it stops a cascade (a field of an unknown type stays,
// so references to it resolve).

import * as path from 'node:path';
import type { CompileContext } from '../context.ts';
import { isTable } from '../parse/load.ts';
import type { KeyPath } from '../parse/locate.ts';
import {
  buildAuth,
  buildCommand,
  buildNotifications,
  buildPage,
  buildService,
  buildSkill,
  buildWorkflow,
} from './build-sections.ts';
import { ACCESS_ROOTS, parseRule } from './conditions.ts';
import { defaultProblem, normalizeDefault } from './literals.ts';
import { IDENTIFIER, kebab } from './names.ts';
import { list, namedSections, singleSection, str, strList, table, text, type Raw } from './raw.ts';
import {
  type Blueprint,
  type Entity,
  type EntityAction,
  type Field,
  type FieldDefault,
  type Plugin,
  type Rule,
} from './types.ts';
import { FIELD_TYPES, type FieldType } from '../../runtime-lib/core/values.ts';

const RELATION_TYPES = ['belongsTo', 'hasOne', 'hasMany', 'manyToMany'] as const;
const REF_TARGET = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)?$/;

/** Reads the parsed sections only; records where items without a path were written in `ctx.declaredAt`. */
export function buildModel(ctx: CompileContext): Blueprint {
  const { parsed } = ctx;
  const projectRaw = singleSection(parsed, 'project');
  const projectName = str(projectRaw.name) ?? path.basename(parsed.rootFile.absPath).replace(/\.toml$/, '');
  const versionSection = parsed.sections.find((s) => s.kind === 'version');
  const entityNames = namedSections(parsed, 'entity').map((s) => s.name);
  const entities = namedSections(parsed, 'entity').map((s) => buildEntity(ctx, s.name, s.value, entityNames));

  return {
    version: typeof versionSection?.value === 'string' ? versionSection.value : undefined,
    project: {
      name: projectName,
      version: str(projectRaw.version) ?? '0.0.0',
      description: str(projectRaw.description),
    },
    slug: kebab(projectName) || 'app',
    entities,
    commands: namedSections(parsed, 'command').map((s) => buildCommand(s)),
    auth: buildAuth(ctx, singleSection(parsed, 'auth'), entities),
    skills: namedSections(parsed, 'skill').map((s) => buildSkill(s.name, s.value, entities)),
    workflows: namedSections(parsed, 'workflow').map((s) => buildWorkflow(ctx, s.name, s.value)),
    pages: namedSections(parsed, 'page').map((s) => buildPage(s.name, s.value, parsed.templateFiles)),
    notifications: buildNotifications(singleSection(parsed, 'notifications')),
    services: namedSections(parsed, 'service').map((s) => buildService(s.name, s.value)),
    plugins: namedSections(parsed, 'plugin')
      .filter((s) => s.value.enabled === true)
      .map((s) => buildPlugin(s.name, s.value, parsed.rootDir)),
  };
}

/**
 * A `file:` version is a folder relative to the root blueprint's folder; package.json and the app
 * name it relative to the app's folder, so the generator rewrites it once it knows where the app
 * goes (emit: pluginDependency).
 */
function buildPlugin(name: string, raw: Raw, rootDir: string): Plugin {
  const version = str(raw.version);
  // Zebric also names a local module by its path (`./plugins/audit.js`): no package to depend on.
  const byPath = name.startsWith('./') || name.startsWith('../');
  const local = byPath
    ? path.resolve(rootDir, name)
    : version?.startsWith('file:')
      ? path.resolve(rootDir, version.slice('file:'.length))
      : undefined;
  return {
    name,
    dependency: byPath ? undefined : (version ?? '*'),
    localPath: local,
    trustLevel: raw.trust_level === 'full' ? 'full' : 'limited',
    capabilities: strList(raw.capabilities) as Plugin['capabilities'],
    config: table(raw.config),
  };
}

function buildEntity(ctx: CompileContext, name: string, raw: Raw, entityNames: readonly string[]): Entity {
  const at: KeyPath = ['entity', name];
  const protection = table(raw.protection);
  const protectedFields = strList(protection.fields);
  const protectionCommands = protection.commands === undefined ? undefined : strList(protection.commands);

  const fields: Field[] = [];
  list(raw.fields).forEach((f, i) => {
    if (!isTable(f)) return;
    const field = buildField(ctx, [...at, 'fields', i], f, entityNames);
    // A second field of the same name is reported (DUPLICATE_FIELD); the first one counts.
    if (fields.some((x) => x.name === field.name)) return;
    if (protectedFields.includes(field.name)) {
      field.commandOnly = true;
      field.commands ??= protectionCommands;
    }
    fields.push(field);
  });

  const keys = fields.filter((f) => f.primaryKey);
  const access: Partial<Record<EntityAction, Rule>> = {};
  const rawAccess = table(raw.access);
  for (const action of ['read', 'create', 'update', 'delete'] as const) {
    const rule = parseRule(rawAccess[action], ACCESS_ROOTS);
    if (rule) access[action] = rule;
  }

  // A relation of unknown type has its shape error; reading its keys would guess at its meaning.
  const relations = Object.entries(table(raw.relations))
    .filter(([, r]) => isTable(r) && (RELATION_TYPES as readonly unknown[]).includes(r.type))
    .map(([relName, r]) => {
      const rel = r as Raw;
      return {
        name: relName,
        type: rel.type as Entity['relations'][number]['type'],
        entity: text(rel.entity),
        foreignKey: str(rel.foreign_key),
        through: str(rel.through),
        path: [...at, 'relations', relName],
      };
    });

  const indexes = list(raw.indexes).flatMap((x, i): Entity['indexes'] => {
    if (!isTable(x)) return [];
    return [{ fields: strList(x.fields), unique: x.unique === true, name: str(x.name), path: [...at, 'indexes', i] }];
  });

  const scopes = table(raw.scopes);
  return {
    name,
    path: at,
    description: str(raw.description),
    collection: `${name.toLowerCase()}s`,
    fields,
    primaryKey: keys[0] ?? fields[0],
    relations,
    indexes,
    access,
    protection: { fields: protectedFields, commands: protectionCommands },
    scopes: { read: strList(scopes.read), write: strList(scopes.write) },
  };
}

export const isFieldType = (type: string): type is FieldType => (FIELD_TYPES as readonly string[]).includes(type);

function buildField(ctx: CompileContext, at: KeyPath, raw: Raw, entityNames: readonly string[]): Field {
  const name = text(raw.name);
  const written = text(raw.type);
  const known = isFieldType(written);
  const type: FieldType = known ? written : 'JSON';
  const primaryKey = raw.primary_key === true;
  const values = type === 'Enum' ? strList(raw.values) : undefined;
  const ref = type === 'Ref' && typeof raw.ref === 'string' ? parseRef(raw.ref, entityNames) : undefined;

  let fieldDefault: FieldDefault | undefined;
  const defaultFits = () =>
    known &&
    !(type === 'Enum' && values?.length === 0) &&
    !defaultProblem(type, raw.default, values, { primaryKey, required: raw.required === true });
  if (raw.default !== undefined && defaultFits()) {
    fieldDefault =
      raw.default === 'now' && (type === 'DateTime' || type === 'Date')
        ? { kind: 'now' }
        : { kind: 'value', value: normalizeDefault(type, raw.default) };
  }

  const required = raw.required === true || primaryKey;
  const explicitNullable = typeof raw.nullable === 'boolean' ? raw.nullable : undefined;
  const access: Field['access'] = {};
  const rawAccess = table(raw.access);
  for (const key of ['read', 'write'] as const) {
    const rule = parseRule(rawAccess[key], ACCESS_ROOTS);
    if (rule) access[key] = rule;
  }

  return {
    name,
    type,
    ...(known ? {} : { unknownType: written }),
    path: at,
    primaryKey,
    required,
    nullable: explicitNullable ?? !(required || fieldDefault !== undefined),
    unique: raw.unique === true || primaryKey,
    index: raw.index === true,
    default: fieldDefault,
    values,
    ref,
    commandOnly: raw.write === 'command-only',
    commands: ownCommands(ctx, at, raw.commands),
    max: typeof raw.max === 'number' ? raw.max : undefined,
    accept: raw.accept === undefined ? undefined : strList(raw.accept),
    validators: raw.validators === undefined ? undefined : strList(raw.validators),
    access,
    label: str(raw.label),
    description: str(raw.description),
  };
}

/**
 * `Entity` or `Entity.field`, or undefined when it is neither. An entity name is taken as
 * declared even when it is not an identifier: that name has its own error, its Refs none.
 */
export function parseRef(target: string, entityNames: readonly string[]): Field['ref'] {
  if (entityNames.includes(target)) return { entity: target, field: '' };
  const dot = target.lastIndexOf('.');
  const [entity, field] = [target.slice(0, dot), target.slice(dot + 1)];
  if (dot > 0 && entityNames.includes(entity) && IDENTIFIER.test(field)) return { entity, field };
  if (!REF_TARGET.test(target)) return undefined;
  return dot < 0 ? { entity: target, field: '' } : { entity, field };
}

/** A field's own `commands` list, remembered with its position: protection may add one later. */
function ownCommands(ctx: CompileContext, at: KeyPath, raw: unknown): string[] | undefined {
  if (raw === undefined) return undefined;
  const commands = strList(raw);
  ctx.declaredAt.set(commands, [...at, 'commands']);
  return commands;
}
