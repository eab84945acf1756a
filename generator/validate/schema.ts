// JSON Schema (draft 2020-12 subset that ajv checks) of each blueprint section, in its canonical
// keyed form. It fixes shapes only; meanings (types that exist, references that resolve) are the
// semantic rules' job, so their messages can say more than "must be equal to one of".
// `additionalProperties: false` everywhere: unknown keys surface as warnings with a suggestion.

type Schema = Record<string, unknown>;

const str: Schema = { type: 'string' };
const nonEmptyStr: Schema = { type: 'string', minLength: 1 };
const bool: Schema = { type: 'boolean' };
const strList: Schema = { type: 'array', items: str };
const nonEmptyStrList: Schema = { type: 'array', items: nonEmptyStr };
/** Conditions have several forms; parseCondition checks their inner shape with better messages. */
const condition: Schema = { type: ['boolean', 'string', 'object'] };

const obj = (properties: Record<string, Schema>, required: string[] = []): Schema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
const tableOf = (item: Schema): Schema => ({ type: 'object', additionalProperties: item });

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
    style: { enum: ['primary', 'secondary', 'danger', 'ghost'] },
    input: tableOf(commandInput),
    mutations: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
    handler: nonEmptyStr,
    scopes: nonEmptyStrList,
  },
  ['entity'],
);

const skillAction = obj(
  {
    name: nonEmptyStr,
    description: str,
    method: { enum: ['GET', 'POST', 'PUT', 'DELETE'] },
    path: { type: 'string', pattern: '^/' },
    body: tableOf(nonEmptyStr),
    entity: nonEmptyStr,
    action: { enum: ['create', 'list', 'get', 'update', 'delete'] },
    workflow: nonEmptyStr,
    mapParams: tableOf(nonEmptyStr),
    scopes: nonEmptyStrList,
  },
  ['name', 'method', 'path'],
);

const skill = obj({ description: str, actions: { type: 'array', items: skillAction } }, ['actions']);

const templateValue: Schema = {};
const step = obj(
  {
    type: { enum: ['query', 'command', 'notify', 'webhook'] },
    name: str,
    entity: nonEmptyStr,
    action: { enum: ['create', 'update', 'delete', 'find'] },
    where: { type: 'object' },
    data: { type: 'object' },
    assignTo: nonEmptyStr,
    command: nonEmptyStr,
    recordId: str,
    input: { type: 'object' },
    adapter: nonEmptyStr,
    body: templateValue,
    subject: str,
    to: str,
    url: nonEmptyStr,
    method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] },
    headers: tableOf(str),
  },
  ['type'],
);

const workflow = obj(
  {
    description: str,
    trigger: obj({
      manual: bool,
      entity: nonEmptyStr,
      event: { enum: ['create', 'update', 'delete'] },
      condition: { type: 'object' },
      webhook: { type: 'string', pattern: '^/webhooks/' },
      webhookSecretEnv: nonEmptyStr,
    }),
    precondition: { type: 'object' },
    transactional: bool,
    maxConcurrent: { type: 'integer', minimum: 1 },
    steps: { type: 'array', items: step, minItems: 1 },
  },
  ['trigger', 'steps'],
);

const pageQuery = obj(
  {
    entity: nonEmptyStr,
    where: { type: 'object' },
    orderBy: tableOf({ enum: ['asc', 'desc'] }),
    limit: { type: 'integer', minimum: 1, maximum: 1000 },
    include: nonEmptyStrList,
  },
  ['entity'],
);

const formField = obj(
  {
    name: nonEmptyStr,
    type: {
      enum: ['text', 'textarea', 'email', 'password', 'number', 'select', 'checkbox', 'radio', 'file', 'date', 'datetime', 'hidden'],
    },
    required: bool,
    label: str,
    options: { type: 'array' },
    optionsFrom: {},
    accept: strList,
    max: { type: 'integer', minimum: 1 },
    value: {},
    placeholder: str,
  },
  ['name'],
);

const page = obj({
  title: str,
  description: str,
  auth: { enum: ['required', 'optional', 'none'] },
  layout: { enum: ['list', 'detail', 'form', 'dashboard'] },
  query: tableOf(pageQuery),
  queries: tableOf(pageQuery),
  actionBar: obj({ statusField: nonEmptyStr }),
  form: obj(
    {
      entity: nonEmptyStr,
      method: { enum: ['create', 'update', 'delete'] },
      fields: { type: 'array', items: formField },
      onSuccess: obj({ redirect: str, message: str }),
    },
    ['entity'],
  ),
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
  },
  ['name', 'keyEnv'],
);

const permissionEntry: Schema = {
  oneOf: [
    nonEmptyStr,
    obj({ entity: nonEmptyStr, actions: nonEmptyStrList, condition }, ['entity', 'actions']),
  ],
};

const auth = obj({
  providers: { type: 'array', items: { enum: ['email'] } },
  loginPath: { type: 'string', pattern: '^/' },
  signup: bool,
  trustedOrigins: strList,
  session: obj({ duration: { type: 'integer', minimum: 1 }, idle_timeout: { type: 'integer', minimum: 1 } }),
  apiKeys: { type: 'array', items: apiKey },
  permissions: tableOf(obj({ allow: { type: 'array', items: permissionEntry }, deny: { type: 'array', items: permissionEntry } })),
});

const notifications = obj({
  default: nonEmptyStr,
  adapters: { type: 'array', items: obj({ name: nonEmptyStr, type: nonEmptyStr }, ['name', 'type']) },
});

const project = obj({ name: nonEmptyStr, version: str, description: str });

export const SECTION_SCHEMAS: Record<string, Schema> = {
  entity,
  command,
  skill,
  workflow,
  page,
  auth,
  notifications,
  project,
  version: str,
};
