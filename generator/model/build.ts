// Builds the typed model from shape-checked sections. Checks that need only one declaration
// (a field's type, a default that fits it, a condition that parses) report here, at the exact
// path; checks across declarations live in validate/references.ts.

import * as path from 'node:path';
import { isCalendarDate, isEmail, parseDateTime } from '../../runtime-lib/core/values.ts';
import { parseCondition } from '../../runtime-lib/rules/conditions.ts';
import { EXPRESSION_ROOTS, parseExpression } from '../../runtime-lib/rules/expression-parse.ts';
import type { CompileContext } from '../context.ts';
import { isTable, type Section } from '../parse/load.ts';
import type { KeyPath } from '../parse/locate.ts';
import { didYouMean } from '../suggest.ts';
import {
  FIELD_TYPES,
  type ApiKey,
  type Auth,
  type Blueprint,
  type Command,
  type CommandInput,
  type Entity,
  type EntityAction,
  type Field,
  type FieldDefault,
  type FieldType,
  type MutationValue,
  type Page,
  type PermissionRule,
  type Rule,
  type Skill,
  type Workflow,
  type WorkflowTrigger,
} from './types.ts';

type Raw = Record<string, unknown>;

/** Names that would reach prototypes or clash with generated code if used as identifiers. */
const RESERVED_NAMES = new Set(['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty']);
const RELATION_TYPES = ['belongsTo', 'hasOne', 'hasMany', 'manyToMany'] as const;
const IDENTIFIER = /^[A-Za-z][A-Za-z0-9_]*$/;
const REF_TARGET = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)?$/;
const MIME_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/(\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*)$/;
/** Roots an entity or field access expression may read: there is no command input there. */
const ACCESS_ROOTS = ['actor', 'record', 'now'];

export function buildModel(ctx: CompileContext): Blueprint {
  const sections = ctx.parsed.sections;
  const of = (kind: string): Section[] =>
    sections.filter((s) => s.kind === kind && isTable(s.value)).sort((a, b) => compare(a.name, b.name));
  const single = (kind: string): Raw => {
    const s = sections.find((x) => x.kind === kind);
    return s && isTable(s.value) ? s.value : {};
  };

  const projectRaw = single('project');
  const projectName = str(projectRaw.name) ?? path.basename(ctx.parsed.rootFile.absPath).replace(/\.toml$/, '');
  const versionSection = sections.find((s) => s.kind === 'version');

  return {
    version: typeof versionSection?.value === 'string' ? versionSection.value : undefined,
    project: { name: projectName, version: str(projectRaw.version) ?? '0.0.0', description: str(projectRaw.description) },
    slug: kebab(projectName) || 'app',
    entities: of('entity').map((s) => buildEntity(ctx, s.name, s.value as Raw)),
    commands: of('command').map((s) => buildCommand(ctx, s)),
    auth: buildAuth(ctx, single('auth')),
    skills: of('skill').map((s) => buildSkill(s.name, s.value as Raw)),
    workflows: of('workflow').map((s) => buildWorkflow(ctx, s.name, s.value as Raw)),
    pages: of('page').map((s) => buildPage(ctx, s.name, s.value as Raw)),
    notifications: buildNotifications(single('notifications')),
  };
}

function buildEntity(ctx: CompileContext, name: string, raw: Raw): Entity {
  const at: KeyPath = ['entity', name];
  checkIdentifier(ctx, at, name, 'entity');
  const protection = isTable(raw.protection) ? raw.protection : {};
  const protectedFields = strList(protection.fields);
  const protectionCommands = protection.commands === undefined ? undefined : strList(protection.commands);

  const fields: Field[] = [];
  list(raw.fields).forEach((f, i) => {
    if (!isTable(f)) return;
    const field = buildField(ctx, [...at, 'fields', i], f);
    if (!field) return;
    if (fields.some((x) => x.name === field.name)) {
      ctx.report('DUPLICATE_FIELD', [...at, 'fields', i, 'name'], `field "${field.name}" is declared twice`);
      return;
    }
    if (protectedFields.includes(field.name)) {
      field.commandOnly = true;
      field.commands ??= protectionCommands;
    }
    fields.push(field);
  });

  const keys = fields.filter((f) => f.primaryKey);
  if (keys.length === 0) {
    ctx.report('MISSING_PRIMARY_KEY', [...at, 'fields'], `entity "${name}" has no primary key`, {
      hint: 'add { name = "id", type = "ULID", primary_key = true }',
    });
  } else if (keys.length > 1) {
    ctx.report('MULTIPLE_PRIMARY_KEYS', keys[1].path, `entity "${name}" declares more than one primary key`);
  }

  const access: Partial<Record<EntityAction, Rule>> = {};
  const rawAccess = isTable(raw.access) ? raw.access : {};
  for (const action of ['read', 'create', 'update', 'delete'] as const) {
    if (rawAccess[action] === undefined) continue;
    const c = condition(ctx, [...at, 'access', action], rawAccess[action], ACCESS_ROOTS);
    if (c) access[action] = c;
  }

  // A relation of unknown type has its shape error; checking its keys would guess at its meaning.
  const relations = Object.entries(isTable(raw.relations) ? raw.relations : {})
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

  const scopes = isTable(raw.scopes) ? raw.scopes : {};
  return {
    name,
    path: at,
    description: str(raw.description),
    collection: `${name.toLowerCase()}s`,
    fields,
    primaryKey: keys[0] ?? fields[0],
    relations,
    access,
    protection: { fields: protectedFields, commands: protectionCommands },
    scopes: { read: strList(scopes.read), write: strList(scopes.write) },
  };
}

function buildField(ctx: CompileContext, at: KeyPath, raw: Raw): Field | undefined {
  const name = text(raw.name);
  const rawType = text(raw.type);
  if (!checkIdentifier(ctx, [...at, 'name'], name, 'field')) return undefined;
  if (!(FIELD_TYPES as readonly string[]).includes(rawType)) {
    ctx.report('UNKNOWN_FIELD_TYPE', [...at, 'type'], `unknown field type "${rawType}"`, {
      hint: didYouMean(rawType, FIELD_TYPES) ?? `field types: ${FIELD_TYPES.join(', ')}`,
    });
    return undefined;
  }
  const type = rawType as FieldType;
  const primaryKey = raw.primary_key === true;
  if (primaryKey && type !== 'ULID' && type !== 'UUID') {
    ctx.report('INVALID_PRIMARY_KEY', [...at, 'type'], `primary key "${name}" must be ULID or UUID, not ${type}`);
  }

  let values: string[] | undefined;
  if (type === 'Enum') {
    values = strList(raw.values);
    if (values.length === 0) {
      ctx.report('ENUM_WITHOUT_VALUES', raw.values === undefined ? at : [...at, 'values'], `Enum field "${name}" has no values`, {
        hint: 'add values = ["a", "b"]',
      });
    } else if (new Set(values).size !== values.length) {
      ctx.report('DUPLICATE_ENUM_VALUE', [...at, 'values'], `Enum field "${name}" lists a value twice`);
    }
  } else if (raw.values !== undefined) {
    ctx.report('OPTION_NOT_APPLICABLE', [...at, 'values'], `"values" applies only to Enum fields, not ${type}`);
  }

  let ref: Field['ref'];
  if (type === 'Ref') {
    const target = str(raw.ref);
    if (target === undefined) ctx.report('MISSING_REF', at, `Ref field "${name}" needs ref = "Entity" or "Entity.field"`);
    else if (!REF_TARGET.test(target)) {
      ctx.report('INVALID_REF', [...at, 'ref'], `ref "${target}" of field "${name}" is not "Entity" or "Entity.field"`, {
        hint: 'e.g. ref = "Customer" or ref = "Customer.id"',
      });
    } else {
      const [entity, field] = target.split('.');
      ref = { entity, field: field ?? '' };
    }
  } else if (raw.ref !== undefined) {
    ctx.report('OPTION_NOT_APPLICABLE', [...at, 'ref'], `"ref" applies only to Ref fields, not ${type}`);
  }

  for (const key of ['max', 'accept'] as const) {
    if (raw[key] !== undefined && type !== 'file') {
      ctx.report('FILE_OPTION_ON_NON_FILE', [...at, key], `"${key}" applies only to file fields, not ${type}`);
    }
  }
  const accept = raw.accept === undefined ? undefined : strList(raw.accept);
  checkMimeTypes(ctx, [...at, 'accept'], raw.accept);

  let fieldDefault: FieldDefault | undefined;
  // An Enum without values already has its error; every default would "not fit" it.
  if (raw.default !== undefined && !(type === 'Enum' && values?.length === 0)) {
    const problem = defaultProblem(type, raw.default, values, primaryKey);
    if (problem) ctx.report('INVALID_DEFAULT', [...at, 'default'], problem);
    else fieldDefault = raw.default === 'now' && (type === 'DateTime' || type === 'Date') ? { kind: 'now' } : { kind: 'value', value: normalizeDefault(type, raw.default) };
  }

  const required = raw.required === true || primaryKey;
  const explicitNullable = typeof raw.nullable === 'boolean' ? raw.nullable : undefined;
  if (required && explicitNullable === true && !primaryKey) {
    ctx.report('CONFLICTING_OPTIONS', [...at, 'nullable'], `field "${name}" cannot be both required and nullable`);
  }
  const access: Field['access'] = {};
  const rawAccess = isTable(raw.access) ? raw.access : {};
  for (const key of ['read', 'write'] as const) {
    if (rawAccess[key] === undefined) continue;
    const c = condition(ctx, [...at, 'access', key], rawAccess[key], ACCESS_ROOTS);
    if (c) access[key] = c;
  }

  return {
    name,
    type,
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
    accept,
    access,
    label: str(raw.label),
    description: str(raw.description),
  };
}

/** Why a default does not fit its field's type, or undefined when it does. */
function defaultProblem(type: FieldType, value: unknown, values: string[] | undefined, primaryKey: boolean): string | undefined {
  if (primaryKey) return 'a primary key has no default: ids are generated';
  if (type === 'file') return 'file fields have no default';
  const expected = expectedLiteral(type, value, values);
  return expected && `default ${showLiteral(value)} does not fit ${type}: expected ${expected}`;
}

/** What a literal for a field of `type` must look like, or undefined when `value` fits. */
export function expectedLiteral(type: FieldType, value: unknown, values: readonly string[] | undefined): string | undefined {
  switch (type) {
    case 'Text':
    case 'LongText':
    case 'file':
      return typeof value === 'string' ? undefined : 'a string';
    case 'Email':
      return typeof value === 'string' && isEmail(value) ? undefined : 'an e-mail address';
    case 'Integer':
      return Number.isSafeInteger(value) ? undefined : 'an integer';
    case 'Float':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'a number';
    case 'Boolean':
      return typeof value === 'boolean' ? undefined : 'true or false';
    case 'Date':
      return value === 'now' || value instanceof Date || (typeof value === 'string' && isCalendarDate(value)) ? undefined : '"now" or a date (YYYY-MM-DD)';
    case 'DateTime':
      return value === 'now' || value instanceof Date || (typeof value === 'string' && parseDateTime(value) !== undefined)
        ? undefined
        : '"now" or an ISO 8601 date-time';
    case 'JSON':
      return undefined;
    case 'Enum':
      return typeof value === 'string' && (values ?? []).includes(value) ? undefined : `one of ${(values ?? []).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'Ref':
    case 'ULID':
    case 'UUID':
      return typeof value === 'string' ? undefined : 'a string id';
  }
}

/** A value as it appears in a message: JSON, cut short so a large table cannot swamp the line. */
export function showLiteral(value: unknown): string {
  const json = value instanceof Date ? value.toISOString() : JSON.stringify(value);
  return json.length > 40 ? `${json.slice(0, 39)}…` : json;
}

function normalizeDefault(type: FieldType, value: unknown): unknown {
  if (value instanceof Date) return type === 'Date' ? value.toISOString().slice(0, 10) : value.toISOString();
  if (type === 'DateTime' && typeof value === 'string') return (parseDateTime(value) as Date).toISOString();
  return value;
}

function buildCommand(ctx: CompileContext, section: Section): Command {
  const { name } = section;
  const raw = section.value as Raw;
  const at: KeyPath = ['command', name];
  checkIdentifier(ctx, at, name, 'command');
  const input: CommandInput[] = [];
  for (const [inputName, def] of Object.entries(isTable(raw.input) ? raw.input : {})) {
    if (!isTable(def) || !checkIdentifier(ctx, [...at, 'input', inputName], inputName, 'input')) continue;
    const type = text(def.type);
    if (!(FIELD_TYPES as readonly string[]).includes(type) || type === 'file') {
      ctx.report('UNKNOWN_FIELD_TYPE', [...at, 'input', inputName, 'type'], `unknown input type "${type}"`, {
        hint: didYouMean(type, FIELD_TYPES) ?? `input types: ${FIELD_TYPES.filter((t) => t !== 'file').join(', ')}`,
      });
      continue;
    }
    const values = def.values === undefined ? undefined : strList(def.values);
    if (type === 'Enum' && !values?.length) {
      ctx.report('ENUM_WITHOUT_VALUES', [...at, 'input', inputName], `Enum input "${inputName}" has no values`);
    }
    input.push({ name: inputName, type: type as FieldType, required: def.required === true, label: str(def.label), description: str(def.description), values });
  }

  const mutations = Object.entries(isTable(raw.mutations) ? raw.mutations : {}).map(([field, value]) => ({
    field,
    value: mutationValue(value as string | number | boolean),
  }));
  // Malformed mutations already have a shape error; "neither" would be a second report.
  if (raw.handler === undefined && (raw.mutations === undefined || (isTable(raw.mutations) && mutations.length === 0))) {
    ctx.report('COMMAND_WITHOUT_EFFECT', at, `command "${name}" has neither mutations nor a handler`, {
      hint: 'add mutations = { field = value } or handler = "./handlers/file.ts#name"',
    });
  }

  let handler: Command['handler'];
  if (typeof raw.handler === 'string') {
    const [file, ...rest] = raw.handler.split('#');
    const exportName = rest.join('#');
    if (file === '' || rest.length > 1 || (rest.length === 1 && !IDENTIFIER.test(exportName))) {
      ctx.report('INVALID_HANDLER', [...at, 'handler'], `handler "${raw.handler}" is not "path/to/module.ts" or "path/to/module.ts#exportName"`, {
        hint: 'e.g. handler = "./handlers/tickets.ts#closeTicket"',
      });
    } else {
      handler = { file: path.resolve(path.dirname(section.origin.file.absPath), file), exportName: exportName || 'default', source: raw.handler };
    }
  }

  return {
    name,
    path: at,
    operationId: snakeCase(name),
    entity: text(raw.entity),
    label: str(raw.label) ?? name,
    description: str(raw.description),
    policy: raw.policy === undefined ? undefined : condition(ctx, [...at, 'policy'], raw.policy, EXPRESSION_ROOTS),
    availableWhen: raw.availableWhen === undefined ? undefined : condition(ctx, [...at, 'availableWhen'], raw.availableWhen, EXPRESSION_ROOTS),
    confirm: str(raw.confirm),
    style: str(raw.style) as Command['style'],
    input,
    mutations,
    handler,
    scopes: strList(raw.scopes),
  };
}

/** Mutation values are not expressions: a reference, `now`, or a literal (format contract). */
function mutationValue(value: string | number | boolean): MutationValue {
  if (value === 'now') return { kind: 'now' };
  if (typeof value === 'string') {
    const m = /^(input|actor|record)\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(value);
    if (m) return { kind: 'ref', root: m[1] as 'input' | 'actor' | 'record', key: m[2] };
  }
  return { kind: 'literal', value };
}

function buildAuth(ctx: CompileContext, raw: Raw): Auth {
  const session = isTable(raw.session) ? raw.session : {};
  const apiKeys: ApiKey[] = list(raw.apiKeys).flatMap((k, i) => {
    if (!isTable(k)) return [];
    const key = {
      name: text(k.name),
      keyEnv: text(k.keyEnv),
      agentId: text(k.agentId),
      credentialId: str(k.credentialId) ?? `cred-${text(k.name)}`,
      displayName: str(k.displayName),
      roles: strList(k.roles),
      scopes: strList(k.scopes),
    };
    ctx.declaredAt.set(key, ['auth', 'apiKeys', i]);
    return [key];
  });
  let permissions: Auth['permissions'];
  if (isTable(raw.permissions)) {
    permissions = {};
    for (const [role, rules] of Object.entries(raw.permissions)) {
      if (!isTable(rules)) continue;
      const at: KeyPath = ['auth', 'permissions', role];
      permissions[role] = {
        allow: permissionRules(ctx, [...at, 'allow'], rules.allow),
        deny: permissionRules(ctx, [...at, 'deny'], rules.deny),
      };
    }
  }
  return {
    providers: strList(raw.providers),
    loginPath: str(raw.loginPath) ?? '/login',
    signup: raw.signup !== false,
    trustedOrigins: strList(raw.trustedOrigins),
    session: {
      duration: typeof session.duration === 'number' ? session.duration : 86400,
      idleTimeout: typeof session.idle_timeout === 'number' ? session.idle_timeout : 3600,
    },
    apiKeys,
    permissions,
  };
}

function permissionRules(ctx: CompileContext, at: KeyPath, raw: unknown): PermissionRule[] {
  return list(raw).flatMap((entry, i): PermissionRule[] => {
    let rule: PermissionRule;
    if (typeof entry === 'string') {
      const parts = entry.split('.');
      if (parts.length !== 2 || !parts[0] || !parts[1]) {
        ctx.report('INVALID_PERMISSION', [...at, i], `"${entry}" is not an Entity.action pattern`, { hint: 'write e.g. "Ticket.read" or "*.*"' });
        return [];
      }
      rule = { entity: parts[0], actions: [parts[1]] };
    } else if (isTable(entry)) {
      const c = entry.condition === undefined ? undefined : condition(ctx, [...at, i, 'condition'], entry.condition, ACCESS_ROOTS);
      rule = { entity: text(entry.entity), actions: strList(entry.actions), condition: c };
    } else return [];
    ctx.declaredAt.set(rule, [...at, i]);
    return [rule];
  });
}

function buildSkill(name: string, raw: Raw): Skill {
  return {
    name,
    description: str(raw.description),
    // Indexes are taken before malformed entries are left out, so paths match the source.
    actions: list(raw.actions).flatMap((a, i) =>
      isTable(a)
        ? [
            {
              name: text(a.name),
              path: ['skill', name, 'actions', i],
              description: str(a.description),
              method: str(a.method) as Skill['actions'][number]['method'],
              route: str(a.path) ?? '',
              body: strTable(a.body),
              entity: str(a.entity),
              action: str(a.action) as Skill['actions'][number]['action'],
              workflow: str(a.workflow),
              mapParams: strTable(a.mapParams),
              scopes: strList(a.scopes),
            },
          ]
        : [],
    ),
  };
}

function buildWorkflow(ctx: CompileContext, name: string, raw: Raw): Workflow {
  const at: KeyPath = ['workflow', name];
  const t = isTable(raw.trigger) ? raw.trigger : {};
  const forms = [t.manual !== undefined, t.entity !== undefined || t.event !== undefined, t.webhook !== undefined].filter(Boolean).length;
  let trigger: WorkflowTrigger = { kind: 'manual' };
  if (forms !== 1) {
    ctx.report('INVALID_TRIGGER', [...at, 'trigger'], 'a trigger is exactly one of { manual = true }, { entity, event } or { webhook = "/webhooks/..." }');
  } else if (t.webhook !== undefined) {
    trigger = { kind: 'webhook', route: text(t.webhook), secretEnv: str(t.webhookSecretEnv) };
  } else if (t.entity !== undefined || t.event !== undefined) {
    if (t.entity === undefined || t.event === undefined) {
      ctx.report('INVALID_TRIGGER', [...at, 'trigger'], 'an entity trigger needs both entity and event');
    }
    trigger = { kind: 'entity', entity: text(t.entity), event: str(t.event) as 'create', condition: isTable(t.condition) ? t.condition : {} };
  } else if (t.manual !== true) {
    ctx.report('INVALID_TRIGGER', [...at, 'trigger', 'manual'], 'manual must be true when given');
  }
  return {
    name,
    path: at,
    description: str(raw.description),
    trigger,
    precondition: isTable(raw.precondition) ? raw.precondition : {},
    transactional: raw.transactional === true,
    maxConcurrent: typeof raw.maxConcurrent === 'number' ? raw.maxConcurrent : 10,
    steps: list(raw.steps).flatMap((s, i) => {
      if (!isTable(s)) return [];
      const step = { type: str(s.type) as Workflow['steps'][number]['type'], spec: s };
      ctx.declaredAt.set(step, [...at, 'steps', i]);
      return [step];
    }),
  };
}

function buildPage(ctx: CompileContext, route: string, raw: Raw): Page {
  const rawQueries = isTable(raw.query) ? raw.query : {};
  const form = isTable(raw.form) ? raw.form : undefined;
  list(form?.fields).forEach((f, i) => {
    if (isTable(f)) checkMimeTypes(ctx, ['page', route, 'form', 'fields', i, 'accept'], f.accept);
  });
  return {
    route,
    path: ['page', route],
    title: str(raw.title),
    auth: (str(raw.auth) as Page['auth']) ?? 'required',
    layout: (str(raw.layout) as Page['layout']) ?? 'list',
    queries: Object.entries(rawQueries)
      .filter(([, q]) => isTable(q))
      .map(([name, q]) => {
        const query = q as Raw;
        return {
          name,
          entity: text(query.entity),
          where: isTable(query.where) ? query.where : {},
          orderBy: Object.entries(isTable(query.orderBy) ? query.orderBy : {}).map(([field, dir]) => ({ field, direction: str(dir) as 'asc' | 'desc' })),
          limit: typeof query.limit === 'number' ? query.limit : undefined,
          include: strList(query.include),
        };
      }),
    actionBar: isTable(raw.actionBar) ? { statusField: text(raw.actionBar.statusField) } : undefined,
    form: form && {
      entity: text(form.entity),
      method: (str(form.method) as 'create') ?? 'create',
      fields: list(form.fields).filter(isTable),
      onSuccess: isTable(form.onSuccess) ? { redirect: str(form.onSuccess.redirect), message: str(form.onSuccess.message) } : undefined,
    },
  };
}

function buildNotifications(raw: Raw): Blueprint['notifications'] {
  return {
    default: str(raw.default),
    adapters: list(raw.adapters)
      .filter(isTable)
      .map((a) => ({ name: text(a.name), type: text(a.type) })),
  };
}

function condition(ctx: CompileContext, at: KeyPath, value: unknown, roots: readonly string[]): Rule | undefined {
  const result = parseCondition(value, { allowedRoots: roots });
  if (result.ok) return { source: value as Rule['source'], condition: result.condition };
  for (const issue of result.issues) {
    ctx.report('INVALID_CONDITION', [...at, ...issue.keys], issue.message, { hint: rootHint(valueAt(value, issue.keys), roots) });
  }
  return undefined;
}

/** "did you mean" for an expression that fails at a name that is not one of its roots. */
function rootHint(source: unknown, roots: readonly string[]): string | undefined {
  if (typeof source !== 'string') return undefined;
  const parsed = parseExpression(source, roots);
  if (parsed.ok) return undefined;
  const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(parsed.error.offset))?.[0];
  return name === undefined || roots.includes(name) ? undefined : didYouMean(name, roots);
}

function valueAt(value: unknown, keys: readonly (string | number)[]): unknown {
  let current = value;
  for (const key of keys) {
    current = (isTable(current) || Array.isArray(current)) && Object.hasOwn(current, key) ? (current as Record<string | number, unknown>)[key] : undefined;
  }
  return current;
}

function checkMimeTypes(ctx: CompileContext, at: KeyPath, accept: unknown): void {
  list(accept).forEach((mime, i) => {
    if (typeof mime !== 'string' || MIME_TYPE.test(mime)) return;
    ctx.report('INVALID_MIME_TYPE', [...at, i], `accept entry "${mime}" is not a MIME type`, {
      hint: mime.startsWith('.') ? 'accept lists MIME types such as "application/pdf", not file extensions' : 'write type/subtype, e.g. "image/png"',
    });
  });
}

/** A field's own `commands` list, remembered with its position: protection may add one later. */
function ownCommands(ctx: CompileContext, at: KeyPath, raw: unknown): string[] | undefined {
  if (raw === undefined) return undefined;
  const commands = strList(raw);
  ctx.declaredAt.set(commands, [...at, 'commands']);
  return commands;
}

function checkIdentifier(ctx: CompileContext, at: KeyPath, name: string, what: string): boolean {
  if (RESERVED_NAMES.has(name)) {
    ctx.report('RESERVED_NAME', at, `"${name}" cannot be used as a ${what} name`);
    return false;
  }
  if (!IDENTIFIER.test(name)) {
    ctx.report('INVALID_NAME', at, `${what} name "${name}" must start with a letter and use only letters, digits and _`);
    return false;
  }
  return true;
}

/** `ApproveExpense` -> `approve_expense`, `HTTPRetry` -> `http_retry`: the stable operation id. */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
}

function kebab(name: string): string {
  return snakeCase(name).replace(/_/g, '-');
}

/** Code-point order, independent of the machine's locale: output must not depend on where bp runs. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
/**
 * A string value, or '' for anything else, which has its shape error already. Not String(v):
 * TOML tables have no prototype, so String(table) throws.
 */
const text = (v: unknown): string => str(v) ?? '';
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const strList = (v: unknown): string[] => list(v).filter((x): x is string => typeof x === 'string');
const strTable = (v: unknown): Record<string, string> =>
  Object.fromEntries(Object.entries(isTable(v) ? v : {}).filter(([, x]) => typeof x === 'string')) as Record<string, string>;
