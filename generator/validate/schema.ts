// JSON Schema (draft 2020-12 subset that ajv checks) of each blueprint section, in its canonical
// keyed form. It fixes shapes only; meanings (types that exist, references that resolve) are the
// semantic rules' job, so their messages can say more than "must be equal to one of".
// `additionalProperties: false` everywhere: unknown keys surface as warnings with a suggestion.
// The keys are Zebric 0.6's (its schema.ts at f8e7362; docs/zebric-compatibility.md lists each
// with what bp does) plus bp's own. Where Zebric passes unknown keys through (widgets, page
// behaviours, workflow steps), the keys its runtime reads are listed and any other is reported
// as a likely typo.

import { SLOT_NAMES } from '../../runtime-lib/pages/template-context.ts';

type Schema = Record<string, unknown>;

const str: Schema = { type: 'string' };
const nonEmptyStr: Schema = { type: 'string', minLength: 1 };
const bool: Schema = { type: 'boolean' };
const num: Schema = { type: 'number' };
const anyTable: Schema = { type: 'object' };
const strList: Schema = { type: 'array', items: str };
const nonEmptyStrList: Schema = { type: 'array', items: nonEmptyStr };
const enumOf = (...values: string[]): Schema => ({ enum: values });
/** Conditions have several forms; parseCondition checks their inner shape with better messages. */
const condition: Schema = { type: ['boolean', 'string', 'object'] };

const obj = (properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
  ...extra,
});
const tableOf = (item: Schema): Schema => ({ type: 'object', additionalProperties: item });
const listOf = (item: Schema, minItems?: number): Schema => ({
  type: 'array',
  items: item,
  ...(minItems ? { minItems } : {}),
});

const field = obj(
  {
    name: nonEmptyStr,
    type: nonEmptyStr,
    primary_key: bool,
    required: bool,
    nullable: bool,
    unique: bool,
    index: bool,
    default: {},
    values: { type: 'array', items: nonEmptyStr },
    ref: nonEmptyStr,
    write: { enum: ['command-only'] },
    commands: nonEmptyStrList,
    max: { type: 'integer', minimum: 1 },
    accept: strList,
    // bp's: the names of plugin field validators ([[plugins]]) that check the field's writes.
    validators: nonEmptyStrList,
    access: obj({ read: condition, write: condition }),
    label: str,
    description: str,
  },
  ['name', 'type'],
);

const entity = obj(
  {
    description: str,
    fields: { type: 'array', items: field },
    relations: tableOf(
      obj(
        {
          type: { enum: ['belongsTo', 'hasOne', 'hasMany', 'manyToMany'] },
          entity: nonEmptyStr,
          foreign_key: nonEmptyStr,
          through: nonEmptyStr,
        },
        ['type', 'entity'],
      ),
    ),
    access: obj({ read: condition, create: condition, update: condition, delete: condition }),
    indexes: listOf(obj({ fields: nonEmptyStrList, unique: bool, name: nonEmptyStr }, ['fields'])),
    protection: obj({ fields: nonEmptyStrList, commands: nonEmptyStrList }),
    scopes: obj({ read: nonEmptyStrList, write: nonEmptyStrList }),
  },
  ['fields'],
);

const commandInput = obj(
  { type: nonEmptyStr, required: bool, label: str, description: str, values: { type: 'array', items: nonEmptyStr } },
  ['type'],
);

const command = obj(
  {
    entity: nonEmptyStr,
    label: str,
    description: str,
    policy: condition,
    availableWhen: condition,
    confirm: str,
    style: enumOf('primary', 'secondary', 'danger', 'ghost'),
    input: tableOf(commandInput),
    mutations: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
    handler: nonEmptyStr,
    scopes: nonEmptyStrList,
  },
  ['entity'],
);

/** A service's typed value (Zebric's ExternalValueSchema), recursive through `fields` and `items`. */
const VALUE_REF: Schema = { $ref: '#/$defs/value' };
const service = obj(
  {
    description: str,
    plugin: nonEmptyStr,
    operations: {
      ...tableOf(obj({ description: str, input: tableOf(VALUE_REF), result: VALUE_REF, transform: anyTable })),
      minProperties: 1,
    },
  },
  ['operations'],
  {
    $defs: {
      value: obj(
        {
          type: nonEmptyStr,
          required: bool,
          values: nonEmptyStrList,
          fields: tableOf(VALUE_REF),
          items: VALUE_REF,
          allowUnknown: bool,
        },
        ['type'],
      ),
    },
  },
);

const plugin = obj(
  {
    version: str,
    enabled: bool,
    trust_level: enumOf('limited', 'full'),
    capabilities: listOf(enumOf('database', 'network', 'storage', 'filesystem')),
    config: anyTable,
  },
  ['enabled'],
);

const skillQueryParam = obj(
  {
    type: nonEmptyStr,
    field: nonEmptyStr,
    values: nonEmptyStrList,
    required: bool,
    default: { type: ['string', 'number', 'boolean'] },
    description: str,
  },
  ['type'],
);

const skillAction = obj(
  {
    name: nonEmptyStr,
    description: str,
    method: enumOf('GET', 'POST', 'PUT', 'DELETE'),
    path: { type: 'string', pattern: '^/' },
    body: tableOf(nonEmptyStr),
    query: tableOf(skillQueryParam),
    entity: nonEmptyStr,
    action: enumOf('create', 'list', 'get', 'update', 'delete'),
    workflow: nonEmptyStr,
    mapParams: tableOf(nonEmptyStr),
    scopes: nonEmptyStrList,
    risk: enumOf('read', 'write', 'destructive', 'external'),
  },
  ['name', 'method', 'path'],
);

const skill = obj(
  { description: str, auth: enumOf('required', 'none'), actions: { type: 'array', items: skillAction } },
  ['actions'],
);

/** Workflow step types; which keys each reads is STEP_KEYS (validate/declarations/workflow-steps.ts). */
export const STEP_TYPES = [
  'query',
  'command',
  'notify',
  'webhook',
  'email',
  'plugin',
  'service',
  'condition',
  'loop',
  'delay',
] as const;

const templateValue: Schema = {};
const STEP_REF: Schema = { $ref: '#/$defs/step' };
/**
 * Every key a step of some type reads, with its shape. Which keys apply to which type (and which
 * are required) is a declaration rule, so that a key of another type gets a message naming the
 * step's type and a "did you mean" among its own keys.
 */
const step: Schema = {
  type: 'object',
  properties: {
    type: { enum: [...STEP_TYPES] },
    name: str,
    assignTo: nonEmptyStr,
    entity: nonEmptyStr,
    // A query step's operation (create, update, delete, find: declarations/workflow-steps.ts), or
    // a plugin step's action_name as some blueprints spell it.
    action: nonEmptyStr,
    // Zebric also takes the record id itself as a string.
    where: { type: ['object', 'string'] },
    data: anyTable,
    command: nonEmptyStr,
    recordId: str,
    input: anyTable,
    adapter: nonEmptyStr,
    channel: str,
    to: str,
    subject: str,
    body: templateValue,
    message: templateValue,
    template: str,
    params: anyTable,
    metadata: anyTable,
    url: nonEmptyStr,
    method: enumOf('GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
    headers: tableOf(str),
    payload: templateValue,
    plugin: nonEmptyStr,
    action_name: nonEmptyStr,
    service: nonEmptyStr,
    operation: nonEmptyStr,
    if: anyTable,
    then: listOf(STEP_REF),
    else: listOf(STEP_REF),
    items: { type: ['string', 'array'] },
    do: listOf(STEP_REF),
    duration: { anyOf: [{ type: 'integer', minimum: 0 }, nonEmptyStr] },
  },
  required: ['type'],
};

const workflow = obj(
  {
    description: str,
    trigger: obj({
      manual: bool,
      entity: nonEmptyStr,
      event: enumOf('create', 'update', 'delete'),
      condition: anyTable,
      webhook: { type: 'string', pattern: '^/webhooks/' },
      webhookSecretEnv: nonEmptyStr,
      schedule: str,
    }),
    precondition: anyTable,
    transactional: bool,
    retries: { type: 'integer', minimum: 1 },
    maxConcurrent: { type: 'integer', minimum: 1 },
    steps: { type: 'array', items: STEP_REF, minItems: 1 },
  },
  ['trigger', 'steps'],
  { $defs: { step } },
);

const pageQuery = obj(
  {
    entity: nonEmptyStr,
    where: anyTable,
    orderBy: tableOf(enumOf('asc', 'desc')),
    limit: { type: 'integer', minimum: 1, maximum: 1000 },
    offset: { type: 'integer', minimum: 0 },
    include: nonEmptyStrList,
  },
  ['entity'],
);

/** Zebric's lookup control: a form field's `lookup` block, and a `kind = "lookup"` widget's keys. */
const LOOKUP_KEYS: Record<string, Schema> = {
  entity: nonEmptyStr,
  search: listOf(nonEmptyStr, 1),
  display: str,
  limit: { type: 'integer', minimum: 1, maximum: 100 },
  placeholder: str,
  filter: anyTable,
};

export const FORM_FIELD_TYPES = [
  'text',
  'textarea',
  'email',
  'password',
  'number',
  'select',
  'checkbox',
  'radio',
  'file',
  'date',
  'datetime',
  'hidden',
  'lookup',
] as const;

const formField = obj(
  {
    name: nonEmptyStr,
    type: { enum: [...FORM_FIELD_TYPES] },
    required: bool,
    label: str,
    placeholder: str,
    default: {},
    options: { type: 'array' },
    optionsFrom: obj({ query: nonEmptyStr, value: nonEmptyStr, label: nonEmptyStr, emptyLabel: str }, [
      'query',
      'label',
    ]),
    rows: num,
    accept: strList,
    pattern: str,
    min: num,
    // A number input's bound, or a file input's size limit in bytes.
    max: num,
    error_message: str,
    lookup: obj(LOOKUP_KEYS, ['entity', 'search']),
    value: {},
  },
  ['name'],
);

const formSection = obj(
  {
    title: str,
    description: str,
    layout: enumOf('single-column', 'two-column', 'inline', 'card-group'),
    fields: listOf(obj({ name: nonEmptyStr }, ['name'])),
  },
  ['fields'],
);
const formInteraction = obj({
  validation: enumOf('inline', 'summary', 'none'),
  save_behavior: enumOf('standard', 'optimistic'),
});

const pageTemplate = obj({ engine: enumOf('handlebars', 'liquid'), source: str, type: enumOf('file', 'inline') }, [
  'source',
]);
const actionBarAction = obj(
  {
    label: str,
    href: str,
    method: enumOf('GET', 'POST'),
    style: enumOf('primary', 'secondary', 'danger', 'ghost'),
    confirm: str,
    target: enumOf('_self', '_blank'),
    icon: str,
    workflow: nonEmptyStr,
    payload: anyTable,
    visibleWhen: anyTable,
    enabledWhen: anyTable,
    redirect: str,
    successMessage: str,
    errorMessage: str,
  },
  ['label'],
);

const column = obj({ value: str, label: str, description: str }, ['value', 'label']);

const board = obj(
  {
    query: nonEmptyStr,
    groupBy: nonEmptyStr,
    orderBy: nonEmptyStr,
    columns: listOf(column, 1),
    card: obj({ title: nonEmptyStr, description: nonEmptyStr, href: str, fields: nonEmptyStrList }, ['title']),
    move: obj({ workflow: nonEmptyStr, payloadField: nonEmptyStr, successMessage: str, errorMessage: str }, [
      'workflow',
    ]),
  },
  ['query', 'groupBy', 'columns', 'card'],
);

/** A widget event: the update template and the workflow to fire; Zebric passes other keys through. */
const widgetAction = obj({ update: anyTable, workflow: nonEmptyStr });
const widget = obj(
  {
    kind: nonEmptyStr,
    ...LOOKUP_KEYS,
    group_by: nonEmptyStr,
    columns: listOf(column),
    column_entity: nonEmptyStr,
    column_label: nonEmptyStr,
    column_order: nonEmptyStr,
    rank_field: nonEmptyStr,
    card: obj({
      title: nonEmptyStr,
      subtitle: nonEmptyStr,
      meta: nonEmptyStrList,
      href: str,
      toggles: listOf(obj({ field: nonEmptyStr, label: str, label_on: str, label_off: str }, ['field'])),
    }),
    on_move: widgetAction,
    on_edit: widgetAction,
    on_column_rename: widgetAction,
    on_toggle: widgetAction,
    // Zebric's server runs `on_<event>` for any event its client posts; three real blueprints write a select.
    on_select: widgetAction,
  },
  ['kind', 'entity'],
);

const page = obj({
  title: str,
  description: str,
  auth: enumOf('required', 'optional', 'none'),
  // Any string: list, detail, form, dashboard, board and auth are built in; others are custom.
  layout: str,
  query: tableOf(pageQuery),
  queries: tableOf(pageQuery),
  form: obj(
    {
      entity: nonEmptyStr,
      method: enumOf('create', 'update', 'delete'),
      fields: { type: 'array', items: formField },
      mode: enumOf('page', 'modal', 'inline'),
      sections: listOf(formSection),
      interaction: formInteraction,
      onSuccess: obj({ redirect: str, message: str }),
      onError: obj({ message: str }),
    },
    ['entity'],
  ),
  actionBar: obj({
    title: str,
    description: str,
    statusField: nonEmptyStr,
    statusLabel: str,
    showStatus: bool,
    actions: listOf(actionBarAction),
    secondaryActions: listOf(actionBarAction),
  }),
  board,
  widget,
  template: pageTemplate,
  layoutSlots: obj(Object.fromEntries(SLOT_NAMES.map((slot) => [slot, pageTemplate]))),
  // `on_*` keys name handler files as `render` does.
  behavior: obj({ intent: str, render: nonEmptyStr }, [], { patternProperties: { '^on_': nonEmptyStr } }),
  // Presentational: accepted whatever their content, reported once as IGNORED_KEY.
  ux: {},
  meta: {},
});

const apiKey = obj(
  {
    name: nonEmptyStr,
    keyEnv: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
    agentId: nonEmptyStr,
    credentialId: nonEmptyStr,
    displayName: str,
    roles: nonEmptyStrList,
    scopes: nonEmptyStrList,
    // Shape only: carried on the actor (issue 9, identity).
    constraints: tableOf(strList),
  },
  ['name', 'keyEnv'],
);

const permissionEntry: Schema = {
  oneOf: [nonEmptyStr, obj({ entity: nonEmptyStr, actions: nonEmptyStrList, condition }, ['entity', 'actions'])],
};

const auth = obj({
  providers: nonEmptyStrList,
  loginPath: { type: 'string', pattern: '^/' },
  signup: bool,
  trustedOrigins: strList,
  session: obj({ duration: { type: 'integer', minimum: 1 }, idle_timeout: { type: 'integer', minimum: 1 } }),
  apiKeys: { type: 'array', items: apiKey },
  permissions: tableOf(
    obj({ allow: { type: 'array', items: permissionEntry }, deny: { type: 'array', items: permissionEntry } }),
  ),
  pages: obj({ signIn: pageTemplate, signUp: pageTemplate, signOut: pageTemplate, loginRequired: pageTemplate }),
});

const notifications = obj({
  default: nonEmptyStr,
  adapters: { type: 'array', items: obj({ name: nonEmptyStr, type: nonEmptyStr, config: anyTable }, ['name', 'type']) },
});

const project = obj({
  name: nonEmptyStr,
  version: str,
  description: str,
  runtime: obj({ min_version: nonEmptyStr }, ['min_version']),
});

export const SECTION_SCHEMAS: Record<string, Schema> = {
  entity,
  command,
  service,
  plugin,
  skill,
  workflow,
  page,
  auth,
  notifications,
  project,
  version: str,
  hash: str,
};
