// Rules across declarations: every name a blueprint uses must resolve to something declared,
// of the right kind, in the right place. Each rule is a small function returning nothing but
// reports; they all run, so a user sees every problem at once.

import * as path from 'node:path';
import type { CompileContext } from '../context.ts';
import { expectedLiteral, showLiteral } from '../model/build.ts';
import { isTable } from '../parse/load.ts';
import type { KeyPath } from '../parse/locate.ts';
import { isInside } from '../source.ts';
import { didYouMean } from '../suggest.ts';
import { FIELD_TYPES, type Blueprint, type Command, type Entity, type Field } from '../model/types.ts';
import { moduleExports } from './handler-exports.ts';

type Rule = (ctx: CompileContext, bp: Blueprint) => void;

/** Properties of the actor shape (spec 2.4 plus kind and e-mail) that mutations may copy. */
export const ACTOR_KEYS = ['id', 'credentialId', 'roles', 'role', 'delegatedBy', 'kind', 'email'];

export const RULES: Rule[] = [
  entityCollections,
  refTargets,
  relations,
  protection,
  commandEntities,
  commandMutations,
  commandHandlers,
  operationIds,
  skillActions,
  workflowReferences,
  pageReferences,
  permissionPatterns,
  apiKeyNames,
];

export function checkReferences(ctx: CompileContext, bp: Blueprint): void {
  for (const rule of RULES) rule(ctx, bp);
}

const entityNamed = (bp: Blueprint, name: string): Entity | undefined => bp.entities.find((e) => e.name === name);
const fieldNamed = (entity: Entity, name: string): Field | undefined => entity.fields.find((f) => f.name === name);
const names = <T extends { name: string }>(items: readonly T[]): string[] => items.map((i) => i.name);

function unknownEntity(ctx: CompileContext, bp: Blueprint, at: KeyPath, name: string, what = 'entity'): void {
  ctx.report('UNKNOWN_ENTITY', at, `${what} "${name}" does not exist`, { hint: didYouMean(name, names(bp.entities)) });
}

function unknownField(ctx: CompileContext, entity: Entity, at: KeyPath, name: string): void {
  ctx.report('UNKNOWN_FIELD', at, `entity "${entity.name}" has no field "${name}"`, { hint: didYouMean(name, names(entity.fields)) });
}

function entityCollections(ctx: CompileContext, bp: Blueprint): void {
  const seen = new Map<string, string>();
  for (const e of bp.entities) {
    const other = seen.get(e.collection);
    if (other) ctx.report('DUPLICATE_COLLECTION', e.path, `entities "${other}" and "${e.name}" would both be served at /api/${e.collection}`);
    seen.set(e.collection, e.name);
  }
}

function refTargets(ctx: CompileContext, bp: Blueprint): void {
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

function relations(ctx: CompileContext, bp: Blueprint): void {
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
      else if (key.type !== 'Ref' || key.ref?.entity !== pointee.name) {
        ctx.report('INVALID_RELATION', [...rel.path, 'foreign_key'], `${holder.name}.${key.name} must be a Ref to ${pointee.name} for this ${rel.type} relation`);
      }
      if (fieldNamed(entity, rel.name)) {
        ctx.report('INVALID_RELATION', rel.path, `relation "${rel.name}" has the same name as a field of ${entity.name}`);
      }
    }
  }
}

function protection(ctx: CompileContext, bp: Blueprint): void {
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

function commandEntities(ctx: CompileContext, bp: Blueprint): void {
  for (const c of bp.commands) if (!entityNamed(bp, c.entity)) unknownEntity(ctx, bp, [...c.path, 'entity'], c.entity);
}

function commandMutations(ctx: CompileContext, bp: Blueprint): void {
  for (const command of bp.commands) {
    const entity = entityNamed(bp, command.entity);
    if (!entity) continue;
    for (const { field: name, value } of command.mutations) {
      const at: KeyPath = [...command.path, 'mutations', name];
      const field = fieldNamed(entity, name);
      if (!field) {
        unknownField(ctx, entity, at, name);
        continue;
      }
      if (field.primaryKey) ctx.report('INVALID_MUTATION', at, `command "${command.name}" cannot change the primary key`);
      if (field.commandOnly && field.commands && !field.commands.includes(command.name)) {
        ctx.report('PROTECTED_FIELD_MUTATION', at, `field "${name}" may be written only by ${field.commands.join(', ')}`, {
          hint: `add "${command.name}" to the field's commands list`,
        });
      }
      if (value.kind === 'ref' && value.root === 'input' && !command.input.some((i) => i.name === value.key)) {
        ctx.report('UNKNOWN_INPUT', at, `mutation reads input.${value.key}, which the command does not declare`, {
          hint: didYouMean(value.key, names(command.input)),
        });
      }
      if (value.kind === 'ref' && value.root === 'record' && !fieldNamed(entity, value.key)) {
        ctx.report('UNKNOWN_FIELD', at, `mutation reads record.${value.key}, but entity "${entity.name}" has no field "${value.key}"`, {
          hint: didYouMean(value.key, names(entity.fields)),
        });
      }
      if (value.kind === 'ref' && value.root === 'actor' && !ACTOR_KEYS.includes(value.key)) {
        ctx.report('UNKNOWN_ACTOR_KEY', at, `actor.${value.key} is not part of the actor`, { hint: `actor keys: ${ACTOR_KEYS.join(', ')}` });
      }
      if (value.kind === 'now' && field.type !== 'DateTime' && field.type !== 'Date') {
        ctx.report('INVALID_MUTATION', at, `"now" is a time but ${name} is ${field.type}`);
      }
      const expected = value.kind === 'literal' ? expectedLiteral(field.type, value.value, field.values) : undefined;
      if (value.kind === 'literal' && expected) {
        ctx.report('INVALID_MUTATION', at, `${showLiteral(value.value)} does not fit ${field.type} field "${name}": expected ${expected}`);
      }
    }
  }
}

function commandHandlers(ctx: CompileContext, bp: Blueprint): void {
  for (const command of bp.commands) {
    if (!command.handler) continue;
    const at: KeyPath = [...command.path, 'handler'];
    const { file, exportName } = command.handler;
    const real = ctx.host.realPath(file);
    if (!isInside(ctx.parsed.rootDir, real ?? path.resolve(file))) {
      ctx.report('HANDLER_OUTSIDE_ROOT', at, `handler "${command.handler.source}" leaves the blueprint's root folder ${ctx.host.display(ctx.parsed.rootDir)}`, {
        hint: 'keep handler modules in the folder of the root blueprint or below it',
      });
      continue;
    }
    const source = real === undefined ? undefined : ctx.host.readFile(real);
    if (source === undefined) {
      ctx.report('HANDLER_NOT_FOUND', at, `handler file ${ctx.host.display(file)} does not exist`, {
        hint: 'handler paths are relative to the TOML file that declares the command',
      });
      continue;
    }
    const exports = moduleExports(source, file);
    if (!exports.ok) {
      ctx.report('HANDLER_UNREADABLE', at, `handler ${ctx.host.display(file)} does not parse: ${exports.message}`);
    } else if (!exports.names.includes(exportName)) {
      ctx.report('HANDLER_EXPORT_MISSING', at, `${ctx.host.display(file)} has no ${exportName === 'default' ? 'default export' : `export "${exportName}"`}`, {
        hint: exports.names.length ? `it exports ${exports.names.join(', ')}` : 'it exports nothing',
      });
    }
  }
}

function operationIds(ctx: CompileContext, bp: Blueprint): void {
  const seen = new Map<string, Command>();
  for (const c of bp.commands) {
    const other = seen.get(c.operationId);
    if (other) {
      ctx.report('OPERATION_ID_COLLISION', c.path, `commands "${other.name}" and "${c.name}" share the operation id "${c.operationId}"`, {
        hint: 'an operation id is the snake_case form of the command name; rename one of them',
      });
    }
    seen.set(c.operationId, c);
  }
}

function skillActions(ctx: CompileContext, bp: Blueprint): void {
  const routes = new Map<string, string>();
  for (const skill of bp.skills) {
    const seenNames = new Set<string>();
    for (const action of skill.actions) {
      const at = action.path;
      if (seenNames.has(action.name)) ctx.report('DUPLICATE_DEFINITION', [...at, 'name'], `skill "${skill.name}" has two actions named "${action.name}"`);
      seenNames.add(action.name);
      if (action.route && action.method) {
        const routeKey = `${action.method} ${action.route.replace(/\{[^}]*\}/g, '{}')}`;
        const clash = routes.get(routeKey);
        if (clash) ctx.report('DUPLICATE_ROUTE', [...at, 'path'], `${action.method} ${action.route} is also the route of ${clash}`);
        routes.set(routeKey, `${skill.name}.${action.name}`);
      }

      if (action.action === undefined && action.workflow === undefined) {
        ctx.report('INVALID_SKILL_ACTION', [...at, 'action'], `skill action "${action.name}" needs either action (a CRUD operation) or workflow`, {
          hint: 'add action = "create", "list", "get", "update" or "delete", or workflow = "<workflow name>"',
        });
      } else if (action.action !== undefined && action.workflow !== undefined) {
        ctx.report('INVALID_SKILL_ACTION', at, `skill action "${action.name}" has both action and workflow`, {
          hint: 'an action either runs a CRUD operation or starts a workflow; keep one of the two',
        });
      }
      const entity = action.entity === undefined ? undefined : entityNamed(bp, action.entity);
      if (action.entity !== undefined && !entity) unknownEntity(ctx, bp, [...at, 'entity'], action.entity);
      if (action.action !== undefined && action.entity === undefined) {
        ctx.report('MISSING_KEY', [...at, 'entity'], `CRUD skill action "${action.name}" needs entity`);
      }
      if (action.workflow !== undefined && !bp.workflows.some((w) => w.name === action.workflow)) {
        ctx.report('UNKNOWN_WORKFLOW', [...at, 'workflow'], `workflow "${action.workflow}" does not exist`, { hint: didYouMean(action.workflow, names(bp.workflows)) });
      }
      skillActionParams(ctx, action, entity);
      for (const [key, type] of Object.entries(action.body)) {
        if (!(FIELD_TYPES as readonly string[]).includes(type)) {
          ctx.report('UNKNOWN_FIELD_TYPE', [...at, 'body', key], `unknown field type "${type}" for body key "${key}"`, {
            hint: didYouMean(type, FIELD_TYPES) ?? `field types: ${FIELD_TYPES.join(', ')}`,
          });
        }
      }
    }
  }
}

/** Every `{param}` of the path names a field (through mapParams or by its own name), and only those. */
function skillActionParams(ctx: CompileContext, action: Blueprint['skills'][number]['actions'][number], entity: Entity | undefined): void {
  const at = action.path;
  const params = [...action.route.matchAll(/\{([^}]*)\}/g)].map((m) => m[1]);
  for (const p of params) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(p)) {
      ctx.report('INVALID_PATH_PARAM', [...at, 'path'], `path parameter {${p}} of ${action.route} must be an identifier`);
    } else if (entity && action.mapParams[p] === undefined && !fieldNamed(entity, p)) {
      ctx.report('UNKNOWN_PATH_PARAM', [...at, 'path'], `path parameter {${p}} is not a field of entity "${entity.name}" and has no mapParams entry`, {
        hint: `map it to a field: mapParams = { ${p} = "${entity.primaryKey?.name ?? 'id'}" }`,
      });
    }
  }
  const identifiesRecord = action.action === 'get' || action.action === 'update' || action.action === 'delete';
  if (identifiesRecord && action.route && params.length === 0) {
    ctx.report('MISSING_PATH_PARAM', [...at, 'path'], `a "${action.action}" skill action needs a {param} in its path to find the record`, {
      hint: `e.g. path = "${action.route.replace(/\/$/, '')}/{id}"`,
    });
  }
  for (const [param, fieldName] of Object.entries(action.mapParams)) {
    if (action.route && !params.includes(param)) {
      ctx.report('UNKNOWN_PATH_PARAM', [...at, 'mapParams', param], `mapParams names {${param}}, which is not a parameter of ${action.route}`, {
        hint: didYouMean(param, params) ?? (params.length ? `path parameters: ${params.map((p) => `{${p}}`).join(', ')}` : 'the path has no parameters'),
      });
    }
    if (entity && !fieldNamed(entity, fieldName)) unknownField(ctx, entity, [...at, 'mapParams', param], fieldName);
  }
}

function workflowReferences(ctx: CompileContext, bp: Blueprint): void {
  const adapters = bp.notifications.adapters.map((a) => a.name);
  if (bp.notifications.default && !adapters.includes(bp.notifications.default)) {
    ctx.report('UNKNOWN_ADAPTER', ['notifications', 'default'], `notification adapter "${bp.notifications.default}" is not declared`, {
      hint: didYouMean(bp.notifications.default, adapters),
    });
  }
  for (const wf of bp.workflows) {
    if (wf.trigger.kind === 'entity' && !entityNamed(bp, wf.trigger.entity)) unknownEntity(ctx, bp, [...wf.path, 'trigger', 'entity'], wf.trigger.entity);
    for (const step of wf.steps) {
      const at = ctx.declaredAt.get(step) ?? wf.path;
      const s = step.spec;
      if (step.type === 'query') {
        const entity = typeof s.entity === 'string' ? entityNamed(bp, s.entity) : undefined;
        if (typeof s.entity !== 'string') ctx.report('MISSING_KEY', [...at, 'entity'], 'a query step needs entity');
        else if (!entity) unknownEntity(ctx, bp, [...at, 'entity'], s.entity);
        if (s.action === undefined) ctx.report('MISSING_KEY', [...at, 'action'], 'a query step needs action (create, update, delete or find)');
        for (const key of ['where', 'data'] as const) {
          const table = s[key];
          if (!entity || !isTable(table)) continue;
          for (const name of Object.keys(table)) if (!fieldNamed(entity, name)) unknownField(ctx, entity, [...at, key, name], name);
        }
      } else if (step.type === 'command') {
        if (typeof s.command !== 'string') ctx.report('MISSING_KEY', [...at, 'command'], 'a command step needs command');
        else if (!bp.commands.some((c) => c.name === s.command)) {
          ctx.report('UNKNOWN_COMMAND', [...at, 'command'], `command "${s.command}" does not exist`, { hint: didYouMean(s.command, names(bp.commands)) });
        }
      } else if (step.type === 'notify') {
        const adapter = typeof s.adapter === 'string' ? s.adapter : bp.notifications.default;
        if (adapter === undefined) ctx.report('UNKNOWN_ADAPTER', at, 'a notify step needs adapter, or [notifications] needs default');
        else if (!adapters.includes(adapter)) {
          ctx.report('UNKNOWN_ADAPTER', [...at, typeof s.adapter === 'string' ? 'adapter' : 'type'], `notification adapter "${adapter}" is not declared`, {
            hint: didYouMean(adapter, adapters) ?? 'declare it under [[notifications.adapters]]',
          });
        }
      } else if (step.type === 'webhook' && typeof s.url !== 'string') {
        ctx.report('MISSING_KEY', [...at, 'url'], 'a webhook step needs url');
      }
    }
  }
}

function pageReferences(ctx: CompileContext, bp: Blueprint): void {
  for (const page of bp.pages) {
    if (!page.route.startsWith('/')) ctx.report('INVALID_PAGE_PATH', page.path, `page path "${page.route}" must start with "/"`);
    for (const q of page.queries) {
      const at: KeyPath = [...page.path, 'query', q.name];
      const entity = entityNamed(bp, q.entity);
      if (!entity) {
        unknownEntity(ctx, bp, [...at, 'entity'], q.entity);
        continue;
      }
      for (const key of Object.keys(q.where)) if (!fieldNamed(entity, key)) unknownField(ctx, entity, [...at, 'where', key], key);
      for (const o of q.orderBy) if (!fieldNamed(entity, o.field)) unknownField(ctx, entity, [...at, 'orderBy', o.field], o.field);
      q.include.forEach((rel, i) => {
        if (!entity.relations.some((r) => r.name === rel)) {
          ctx.report('UNKNOWN_RELATION', [...at, 'include', i], `entity "${entity.name}" has no relation "${rel}"`, { hint: didYouMean(rel, names(entity.relations)) });
        }
      });
    }
    const formEntity = page.form && entityNamed(bp, page.form.entity);
    if (page.form && !formEntity) unknownEntity(ctx, bp, [...page.path, 'form', 'entity'], page.form.entity);
    page.form?.fields.forEach((f, i) => {
      if (formEntity && typeof f.name === 'string' && !fieldNamed(formEntity, f.name)) {
        unknownField(ctx, formEntity, [...page.path, 'form', 'fields', i, 'name'], f.name);
      }
    });
    const primary = page.queries[0] && entityNamed(bp, page.queries[0].entity);
    if (page.actionBar && primary && !fieldNamed(primary, page.actionBar.statusField)) {
      unknownField(ctx, primary, [...page.path, 'actionBar', 'statusField'], page.actionBar.statusField);
    }
  }
}

function permissionPatterns(ctx: CompileContext, bp: Blueprint): void {
  const actions = ['read', 'create', 'update', 'delete', '*'];
  for (const [role, rules] of Object.entries(bp.auth.permissions ?? {})) {
    for (const kind of ['allow', 'deny'] as const) {
      rules[kind].forEach((rule) => {
        const at = ctx.declaredAt.get(rule) ?? ['auth', 'permissions', role, kind];
        if (rule.entity !== '*' && !entityNamed(bp, rule.entity)) unknownEntity(ctx, bp, at, rule.entity);
        for (const a of rule.actions) {
          if (!actions.includes(a)) ctx.report('INVALID_PERMISSION', at, `"${a}" is not an entity action (read, create, update, delete or *)`, { hint: didYouMean(a, actions) });
        }
      });
    }
  }
}

function apiKeyNames(ctx: CompileContext, bp: Blueprint): void {
  const keyNames = new Set<string>();
  const credentials = new Set<string>();
  for (const key of bp.auth.apiKeys) {
    const at = ctx.declaredAt.get(key) ?? ['auth', 'apiKeys'];
    if (keyNames.has(key.name)) ctx.report('DUPLICATE_DEFINITION', [...at, 'name'], `two API keys are named "${key.name}"`);
    if (credentials.has(key.credentialId)) ctx.report('DUPLICATE_DEFINITION', [...at, 'credentialId'], `credential id "${key.credentialId}" is used by two API keys`);
    keyNames.add(key.name);
    credentials.add(key.credentialId);
  }
}
