// Model build of the sections other than entities: commands, auth, skills, workflows, pages and
// notifications. Pure normalization like build.ts; the declaration rules report.

import * as path from 'node:path';
import type { CompileContext } from '../context.ts';
import { isTable, type Section } from '../parse/load.ts';
import type { KeyPath } from '../parse/locate.ts';
import { type TemplateFile, templateKey } from '../parse/templates.ts';
import { ACCESS_ROOTS, COMMAND_ROOTS, parseRule } from './conditions.ts';
import { IDENTIFIER, snakeCase } from './names.ts';
import { list, str, strList, strTable, table, text, type Raw } from './raw.ts';
import { AUTH_PAGE_NAMES } from './types.ts';
import type {
  ActionBar,
  ActionBarAction,
  ApiKey,
  Auth,
  Blueprint,
  Board,
  Command,
  CommandInput,
  Entity,
  MutationValue,
  Page,
  PageTemplate,
  PermissionRule,
  Service,
  ServiceValue,
  Skill,
  SkillAction,
  SkillQueryParam,
  SkillRisk,
  UserRecords,
  Workflow,
  WorkflowStep,
  WorkflowStepType,
  WorkflowTrigger,
} from './types.ts';
import { FIELD_TYPES, type FieldType } from '../../runtime-lib/core/values.ts';

export function buildCommand(section: Section & { value: Raw }): Command {
  const { name, value: raw } = section;
  const input: CommandInput[] = Object.entries(table(raw.input))
    .filter(([, def]) => isTable(def))
    .map(([inputName, def]) => {
      const d = def as Raw;
      const written = text(d.type);
      const known = isInputType(written);
      return {
        name: inputName,
        type: known ? written : 'JSON',
        ...(known ? {} : { unknownType: written }),
        required: d.required === true,
        label: str(d.label),
        description: str(d.description),
        values: d.values === undefined ? undefined : strList(d.values),
      };
    });
  return {
    name,
    path: ['command', name],
    operationId: snakeCase(name),
    entity: text(raw.entity),
    label: str(raw.label) ?? name,
    description: str(raw.description),
    policy: parseRule(raw.policy, COMMAND_ROOTS),
    availableWhen: parseRule(raw.availableWhen, COMMAND_ROOTS),
    confirm: str(raw.confirm),
    style: str(raw.style) as Command['style'],
    input,
    mutations: Object.entries(table(raw.mutations)).map(([field, value]) => ({
      field,
      value: mutationValue(value as string | number | boolean),
    })),
    handler: typeof raw.handler === 'string' ? parseHandler(raw.handler, section.origin.file.absPath) : undefined,
    scopes: strList(raw.scopes),
  };
}

/** Command inputs take every field type but `file`: a command body is JSON. */
export const isInputType = (type: string): type is FieldType =>
  type !== 'file' && (FIELD_TYPES as readonly string[]).includes(type);

/** `path/to/module.ts` or `path/to/module.ts#exportName`, resolved against the declaring file; undefined otherwise. */
export function parseHandler(written: string, declaringFile: string): Command['handler'] {
  const [file, ...rest] = written.split('#');
  const exportName = rest.join('#');
  if (file === '' || rest.length > 1 || (rest.length === 1 && !IDENTIFIER.test(exportName))) return undefined;
  return {
    file: path.resolve(path.dirname(declaringFile), file),
    exportName: exportName || 'default',
    source: written,
  };
}

/**
 * Mutation values are not expressions: a reference, `now`, or a literal (format contract). An
 * actor reference may read a key of its metadata (`actor.metadata.email`, as in Zebric).
 */
function mutationValue(value: string | number | boolean): MutationValue {
  if (value === 'now') return { kind: 'now' };
  if (typeof value === 'string') {
    const m =
      /^(input|actor|record)\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(value) ??
      /^(actor)\.(metadata\.[A-Za-z_][A-Za-z0-9_]*)$/.exec(value);
    if (m) return { kind: 'ref', root: m[1] as 'input' | 'actor' | 'record', key: m[2] };
  }
  return { kind: 'literal', value };
}

/**
 * `entities` are the blueprint's, built already: when people are `User` records, the login field
 * is made unique here (unique in any letter case: the lower() index of unique Email fields).
 */
export function buildAuth(ctx: CompileContext, raw: Raw, entities: readonly Entity[]): Auth {
  const session = table(raw.session);
  const apiKeys: ApiKey[] = list(raw.apiKeys).flatMap((k, i) => {
    if (!isTable(k)) return [];
    const name = text(k.name);
    // Zebric 0.6's defaults: the key's name stands for whatever it does not say.
    const key = {
      name,
      keyEnv: text(k.keyEnv),
      agentId: str(k.agentId) ?? name,
      credentialId: str(k.credentialId) ?? name,
      displayName: str(k.displayName) ?? name,
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
  const providers = strList(raw.providers);
  return {
    declared: ctx.parsed.sections.some((s) => s.kind === 'auth'),
    providers,
    loginPath: str(raw.loginPath) ?? '/login',
    signup: raw.signup !== false,
    trustedOrigins: strList(raw.trustedOrigins),
    session: {
      duration: typeof session.duration === 'number' ? session.duration : 86400,
      idleTimeout: typeof session.idle_timeout === 'number' ? session.idle_timeout : 3600,
    },
    apiKeys,
    permissions,
    userRecords: providers.includes('email') ? userRecordsOf(entities) : undefined,
    pages: Object.fromEntries(
      Object.entries(table(raw.pages)).flatMap(([name, t]) =>
        isTable(t) && (AUTH_PAGE_NAMES as readonly string[]).includes(name)
          ? [[name, pageTemplate(t, 'file', ['auth', 'pages', name], ctx.parsed.templateFiles)]]
          : [],
      ),
    ),
  };
}

/** People are the records of `User` when it has an Email field; its login field becomes unique. */
function userRecordsOf(entities: readonly Entity[]): UserRecords | undefined {
  const user = entities.find((e) => e.name === 'User');
  const emails = user?.fields.filter((f) => f.type === 'Email' && f.unknownType === undefined && !f.primaryKey) ?? [];
  const login = emails.find((f) => f.name === 'email') ?? emails[0];
  if (!user || !login) return undefined;
  login.unique = true;
  const named = (name: string) => user.fields.some((f) => f.name === name);
  return {
    entity: user.name,
    loginField: login.name,
    roleFields: ['role', 'roles'].filter(named),
    nameField: named('name') ? 'name' : undefined,
  };
}

/** `Entity.action` as [entity, action], or undefined when the string is not that pattern. */
export function permissionPattern(entry: string): [string, string] | undefined {
  const parts = entry.split('.');
  return parts.length === 2 && parts[0] && parts[1] ? [parts[0], parts[1]] : undefined;
}

function permissionRules(ctx: CompileContext, at: KeyPath, raw: unknown): PermissionRule[] {
  return list(raw).flatMap((entry, i): PermissionRule[] => {
    let rule: PermissionRule;
    if (typeof entry === 'string') {
      const pattern = permissionPattern(entry);
      if (!pattern) return [];
      rule = { entity: pattern[0], actions: [pattern[1]] };
    } else if (isTable(entry)) {
      rule = {
        entity: text(entry.entity),
        actions: strList(entry.actions),
        condition: parseRule(entry.condition, ACCESS_ROOTS),
      };
    } else return [];
    ctx.declaredAt.set(rule, [...at, i]);
    return [rule];
  });
}

/**
 * The query parameters of a skill action that filter on a field its entity lacks (`limit` and
 * `offset` page instead). An entity that does not exist is another error's.
 */
export function unknownQueryFields(action: SkillAction, entities: readonly Entity[]): SkillQueryParam[] {
  const entity = entities.find((e) => e.name === action.entity);
  if (!entity) return [];
  return action.query.filter(
    (p) => p.name !== 'limit' && p.name !== 'offset' && !entity.fields.some((f) => f.name === p.field),
  );
}

export function buildSkill(name: string, raw: Raw, entities: readonly Entity[]): Skill {
  const actions = buildSkillActions(name, raw);
  const notServed = actions.filter((a) => unknownQueryFields(a, entities).length > 0);
  return {
    name,
    description: str(raw.description),
    auth: raw.auth === 'none' ? 'none' : 'required',
    actions: actions.filter((a) => !notServed.includes(a)),
    notServed,
  };
}

function buildSkillActions(name: string, raw: Raw): SkillAction[] {
  // Indexes are taken before malformed entries are left out, so paths match the source.
  return list(raw.actions).flatMap((a, i) =>
    isTable(a)
      ? [
          {
            name: text(a.name),
            path: ['skill', name, 'actions', i],
            description: str(a.description),
            method: str(a.method) as SkillAction['method'],
            route: str(a.path) ?? '',
            body: strTable(a.body),
            query: Object.entries(table(a.query)).flatMap(([param, q]) => (isTable(q) ? [queryParam(param, q)] : [])),
            entity: str(a.entity),
            action: str(a.action) as SkillAction['action'],
            workflow: str(a.workflow),
            mapParams: strTable(a.mapParams),
            scopes: strList(a.scopes),
            risk: str(a.risk) as SkillRisk | undefined,
          },
        ]
      : [],
  );
}

function queryParam(name: string, q: Raw): SkillQueryParam {
  const type = text(q.type);
  const value = q.default;
  return {
    name,
    // An unknown type has its error; the parameter stays so that its field still resolves.
    type: isInputType(type) ? type : 'Text',
    field: str(q.field) ?? name,
    values: q.values === undefined ? undefined : strList(q.values),
    required: q.required === true,
    default: typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : undefined,
    description: str(q.description),
  };
}

/** The trigger forms (manual, entity event, webhook, schedule) a trigger table uses. */
export function triggerForms(t: Raw): Array<'manual' | 'entity' | 'webhook' | 'schedule'> {
  const forms: Array<'manual' | 'entity' | 'webhook' | 'schedule'> = [];
  if (t.manual !== undefined) forms.push('manual');
  if (t.entity !== undefined || t.event !== undefined) forms.push('entity');
  if (t.webhook !== undefined) forms.push('webhook');
  if (t.schedule !== undefined) forms.push('schedule');
  return forms;
}

export function buildWorkflow(ctx: CompileContext, name: string, raw: Raw): Workflow {
  const at: KeyPath = ['workflow', name];
  const t = table(raw.trigger);
  const forms = triggerForms(t);
  let trigger: WorkflowTrigger = { kind: 'manual' };
  if (forms.length === 1 && forms[0] === 'webhook') {
    trigger = { kind: 'webhook', route: text(t.webhook), secretEnv: str(t.webhookSecretEnv) };
  } else if (forms.length === 1 && forms[0] === 'entity') {
    trigger = {
      kind: 'entity',
      entity: text(t.entity),
      event: str(t.event) as 'create',
      condition: table(t.condition),
    };
  } else if (forms.length === 1 && forms[0] === 'schedule') {
    trigger = { kind: 'schedule', cron: text(t.schedule) };
  }
  return {
    name,
    path: at,
    description: str(raw.description),
    trigger,
    precondition: table(raw.precondition),
    transactional: raw.transactional === true,
    retries: typeof raw.retries === 'number' ? raw.retries : 3,
    maxConcurrent: typeof raw.maxConcurrent === 'number' ? raw.maxConcurrent : 10,
    steps: buildSteps(ctx, [...at, 'steps'], raw.steps),
  };
}

/** Steps as written, each registered where it was declared; nested branches the same way. */
function buildSteps(ctx: CompileContext, at: KeyPath, raw: unknown): WorkflowStep[] {
  return list(raw).flatMap((s, i) => {
    if (!isTable(s)) return [];
    const branches: WorkflowStep['branches'] = {};
    for (const key of ['then', 'else', 'do'] as const) {
      if (Array.isArray(s[key])) branches[key] = buildSteps(ctx, [...at, i, key], s[key]);
    }
    // A plugin step's `action` is its action_name (validate: ALTERNATE_KEY); the app reads one key.
    const { action, ...rest } = s;
    const spec =
      s.type === 'plugin' && s.action_name === undefined && action !== undefined ? { ...rest, action_name: action } : s;
    const step: WorkflowStep = { type: str(s.type) as WorkflowStepType, spec, branches };
    ctx.declaredAt.set(step, [...at, i]);
    return [step];
  });
}

/** `templateFiles`: the template files the parse stage read (ParsedBlueprint.templateFiles). */
export function buildPage(route: string, raw: Raw, templateFiles: ReadonlyMap<string, TemplateFile>): Page {
  const form = isTable(raw.form) ? raw.form : undefined;
  return {
    route,
    path: ['page', route],
    title: str(raw.title),
    auth: (str(raw.auth) as Page['auth']) ?? 'required',
    layout: str(raw.layout) ?? 'list',
    queries: Object.entries(table(raw.query))
      .filter(([, q]) => isTable(q))
      .map(([name, q]) => {
        const query = q as Raw;
        return {
          name,
          entity: text(query.entity),
          where: table(query.where),
          orderBy: Object.entries(table(query.orderBy)).map(([field, dir]) => ({
            field,
            direction: str(dir) as 'asc' | 'desc',
          })),
          limit: typeof query.limit === 'number' ? query.limit : undefined,
          offset: typeof query.offset === 'number' ? query.offset : undefined,
          include: strList(query.include),
        };
      }),
    actionBar: isTable(raw.actionBar) ? actionBar(raw.actionBar) : undefined,
    board: isTable(raw.board) ? board(raw.board) : undefined,
    widget: isTable(raw.widget) ? raw.widget : undefined,
    template: isTable(raw.template)
      ? pageTemplate(raw.template, 'file', ['page', route, 'template'], templateFiles)
      : undefined,
    // Slot templates are inline unless they say otherwise (Zebric).
    layoutSlots: Object.fromEntries(
      Object.entries(table(raw.layoutSlots)).flatMap(([slot, t]) =>
        isTable(t) ? [[slot, pageTemplate(t, 'inline', ['page', route, 'layoutSlots', slot], templateFiles)]] : [],
      ),
    ),
    behavior: isTable(raw.behavior) ? raw.behavior : undefined,
    form: form && {
      entity: text(form.entity),
      method: (str(form.method) as 'create') ?? 'create',
      fields: list(form.fields).filter(isTable),
      mode: str(form.mode) as 'page' | undefined,
      sections: list(form.sections)
        .filter(isTable)
        .map((section) => ({
          title: str(section.title),
          description: str(section.description),
          layout: str(section.layout),
          fields: list(section.fields).flatMap((f) => (isTable(f) && typeof f.name === 'string' ? [f.name] : [])),
        })),
      interaction: isTable(form.interaction)
        ? {
            validation: str(form.interaction.validation) as 'inline' | undefined,
            save_behavior: str(form.interaction.save_behavior) as 'standard' | undefined,
          }
        : undefined,
      onSuccess: isTable(form.onSuccess)
        ? { redirect: str(form.onSuccess.redirect), message: str(form.onSuccess.message) }
        : undefined,
      onError: isTable(form.onError) ? { message: str(form.onError.message) } : undefined,
    },
  };
}

/** A template declared at `at`; a file's text is what the parse stage read ('' if it could not). */
function pageTemplate(
  raw: Raw,
  defaultType: PageTemplate['type'],
  at: KeyPath,
  templateFiles: ReadonlyMap<string, TemplateFile>,
): PageTemplate {
  const type = (str(raw.type) as PageTemplate['type']) ?? defaultType;
  const source = text(raw.source);
  return {
    // Liquid unless told otherwise, as in Zebric.
    engine: raw.engine === 'handlebars' ? 'handlebars' : 'liquid',
    source,
    type,
    text: type === 'file' ? (templateFiles.get(templateKey(at))?.text ?? '') : source,
    name: type === 'file' ? source : templateKey(at),
  };
}

function actionBar(raw: Raw): ActionBar {
  const actions = (v: unknown): ActionBarAction[] =>
    list(v)
      .filter(isTable)
      .map((a) => ({
        label: text(a.label),
        href: str(a.href),
        method: str(a.method) as ActionBarAction['method'],
        style: str(a.style) as ActionBarAction['style'],
        confirm: str(a.confirm),
        target: str(a.target) as ActionBarAction['target'],
        icon: str(a.icon),
        workflow: str(a.workflow),
        payload: table(a.payload),
        visibleWhen: isTable(a.visibleWhen) ? a.visibleWhen : undefined,
        enabledWhen: isTable(a.enabledWhen) ? a.enabledWhen : undefined,
        redirect: str(a.redirect),
        successMessage: str(a.successMessage),
        errorMessage: str(a.errorMessage),
      }));
  return {
    title: str(raw.title),
    description: str(raw.description),
    statusField: str(raw.statusField),
    statusLabel: str(raw.statusLabel),
    showStatus: raw.showStatus !== false,
    actions: actions(raw.actions),
    secondaryActions: actions(raw.secondaryActions),
  };
}

function board(raw: Raw): Board {
  const card = table(raw.card);
  const move = isTable(raw.move) ? raw.move : undefined;
  return {
    query: text(raw.query),
    groupBy: text(raw.groupBy),
    orderBy: str(raw.orderBy),
    columns: list(raw.columns)
      .filter(isTable)
      .map((c) => ({ value: text(c.value), label: text(c.label), description: str(c.description) })),
    card: {
      title: text(card.title),
      description: str(card.description),
      href: str(card.href),
      fields: strList(card.fields),
    },
    move: move && {
      workflow: text(move.workflow),
      payloadField: str(move.payloadField),
      successMessage: str(move.successMessage),
      errorMessage: str(move.errorMessage),
    },
  };
}

export function buildService(name: string, raw: Raw): Service {
  return {
    name,
    description: str(raw.description),
    operations: Object.entries(table(raw.operations))
      .filter(([, op]) => isTable(op))
      .map(([opName, op]) => {
        const def = table(op);
        return {
          name: opName,
          description: str(def.description),
          input: Object.fromEntries(Object.entries(table(def.input)).map(([k, v]) => [k, serviceValue(v)])),
          ...(def.result === undefined ? {} : { result: serviceValue(def.result) }),
        };
      }),
  };
}

function serviceValue(raw: unknown): ServiceValue {
  const v = table(raw);
  return {
    type: text(v.type),
    ...(typeof v.required === 'boolean' ? { required: v.required } : {}),
    ...(v.values === undefined ? {} : { values: strList(v.values) }),
    ...(v.fields === undefined
      ? {}
      : { fields: Object.fromEntries(Object.entries(table(v.fields)).map(([k, f]) => [k, serviceValue(f)])) }),
    ...(v.items === undefined ? {} : { items: serviceValue(v.items) }),
    ...(typeof v.allowUnknown === 'boolean' ? { allowUnknown: v.allowUnknown } : {}),
  };
}

export function buildNotifications(raw: Raw): Blueprint['notifications'] {
  return {
    default: str(raw.default),
    adapters: list(raw.adapters)
      .filter(isTable)
      .map((a) => ({ name: text(a.name), type: text(a.type), config: table(a.config) })),
  };
}
