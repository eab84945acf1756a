// The normalized, typed blueprint every emitter reads. Built once from the parsed sections;
// names resolved, defaults applied, lists in a deterministic order (declaration order for
// fields, name order for sections).

import type { Condition } from '../../runtime-lib/rules/conditions.ts';
import type { KeyPath } from '../parse/locate.ts';

import type { FieldType } from '../../runtime-lib/core/values.ts';

/**
 * A condition as the blueprint wrote it (`source`: true/false, a string or a table) and parsed.
 * Generated code carries the source, so a reviewer reads the rule as written; the app parses it
 * at load.
 */
export interface Rule {
  source: boolean | string | Record<string, unknown>;
  condition: Condition;
}

export type FieldDefault = { kind: 'now' } | { kind: 'value'; value: unknown };

export interface Field {
  name: string;
  type: FieldType;
  /**
   * The type as written when it is not a field type (reported as UNKNOWN_FIELD_TYPE). The field
   * stays in the model so that references to it resolve; `type` is then 'JSON', which any value
   * fits, and checks that depend on the type skip the field. Never set in a model that is emitted.
   */
  unknownType?: string;
  /** Where the field is declared, e.g. entity.Ticket.fields.2 */
  path: KeyPath;
  primaryKey: boolean;
  required: boolean;
  /** The column accepts NULL: optional fields without a default, or `nullable = true`. */
  nullable: boolean;
  unique: boolean;
  index: boolean;
  default?: FieldDefault;
  values?: string[];
  ref?: { entity: string; field: string };
  commandOnly: boolean;
  /** Commands allowed to write a command-only field; undefined means any command of the entity. */
  commands?: string[];
  max?: number;
  accept?: string[];
  /** Plugin field validators ([[plugins]] fieldValidators) run on every write of the field. */
  validators?: string[];
  access: { read?: Rule; write?: Rule };
  label?: string;
  description?: string;
}

export type RelationType = 'belongsTo' | 'hasOne' | 'hasMany' | 'manyToMany';

export interface Relation {
  name: string;
  type: RelationType;
  entity: string;
  foreignKey?: string;
  through?: string;
  path: KeyPath;
}

export type EntityAction = 'read' | 'create' | 'update' | 'delete';

/** An entry of an entity's `indexes`: a database index, or a unique constraint when `unique`. */
export interface Index {
  fields: string[];
  unique: boolean;
  /** The index's name in the database; Prisma's default (`Entity_a_b_idx` / `_key`) when absent. */
  name?: string;
  /** Where the entry is declared, e.g. entity.Card.indexes.0 */
  path: KeyPath;
}

export interface Entity {
  name: string;
  path: KeyPath;
  description?: string;
  /** Collection segment of the REST path: the lower-case name plus "s" (spec 4.1). */
  collection: string;
  fields: Field[];
  primaryKey: Field;
  relations: Relation[];
  indexes: Index[];
  access: Partial<Record<EntityAction, Rule>>;
  /** Entity-level command-only protection as written (already applied to the fields). */
  protection: { fields: string[]; commands?: string[] };
  scopes: { read: string[]; write: string[] };
}

export interface CommandInput {
  name: string;
  type: FieldType;
  /** As Field.unknownType: the input stays so that `input.<name>` resolves. */
  unknownType?: string;
  required: boolean;
  label?: string;
  description?: string;
  values?: string[];
}

export type MutationValue =
  | { kind: 'literal'; value: string | number | boolean }
  | { kind: 'ref'; root: 'input' | 'actor' | 'record'; key: string }
  | { kind: 'now' };

export interface Command {
  name: string;
  path: KeyPath;
  operationId: string;
  entity: string;
  label: string;
  description?: string;
  policy?: Rule;
  availableWhen?: Rule;
  confirm?: string;
  style?: 'primary' | 'secondary' | 'danger' | 'ghost';
  input: CommandInput[];
  mutations: Array<{ field: string; value: MutationValue }>;
  handler?: { file: string; exportName: string; source: string };
  scopes: string[];
}

/** An API key with Zebric's defaults applied: agentId, credentialId and displayName default to its name. */
export interface ApiKey {
  name: string;
  keyEnv: string;
  agentId: string;
  credentialId: string;
  displayName: string;
  roles: string[];
  scopes: string[];
}

/**
 * People as the records of the blueprint's `User` entity: present when it has an Email field and
 * the email provider is on (runtime-lib/auth/email/user-records.ts).
 */
export interface UserRecords {
  entity: string;
  /** The field people sign in with: `email` when it is an Email field, else the first Email field. */
  loginField: string;
  /** The record's fields that give roles: `role` and `roles`, those the entity has. */
  roleFields: string[];
  /** `name`, when the entity has it: what `actor.metadata.name` reads. */
  nameField?: string;
}

export interface PermissionRule {
  entity: string;
  actions: string[];
  condition?: Rule;
}

export interface Auth {
  /**
   * Whether the blueprint has an [auth] section. Without one nobody signs in, and an entity's
   * missing access rules are public (model/access-defaults.ts); with one they allow authenticated
   * actors only.
   */
  declared: boolean;
  providers: string[];
  loginPath: string;
  /** Whether people may create their own account (auth.signup, default true); else only the users command adds them. */
  signup: boolean;
  trustedOrigins: string[];
  session: { duration: number; idleTimeout: number };
  apiKeys: ApiKey[];
  /** Present only when the blueprint declares [auth.permissions]. */
  permissions?: Record<string, { allow: PermissionRule[]; deny: PermissionRule[] }>;
  userRecords?: UserRecords;
  /** [auth.pages]: the blueprint's own templates of the provider's pages. */
  pages: Partial<Record<AuthPageName, PageTemplate>>;
}

/** A typed query parameter of a `list` skill action: an equality filter on `field` (default: its name). */
export interface SkillQueryParam {
  name: string;
  type: FieldType;
  field: string;
  values?: string[];
  required: boolean;
  default?: string | number | boolean;
  description?: string;
}

export type SkillRisk = 'read' | 'write' | 'destructive' | 'external';

export interface SkillAction {
  name: string;
  path: KeyPath;
  description?: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  route: string;
  body: Record<string, string>;
  query: SkillQueryParam[];
  entity?: string;
  action?: 'create' | 'list' | 'get' | 'update' | 'delete';
  workflow?: string;
  mapParams: Record<string, string>;
  scopes: string[];
  /** As written; Zebric infers it from the method when absent (GET read, DELETE destructive, else write). */
  risk?: SkillRisk;
}

export interface Skill {
  name: string;
  description?: string;
  /** `none` lets anonymous callers through (scopes and access rules still apply); default `required`. */
  auth: 'required' | 'none';
  /** The actions the app serves. */
  actions: SkillAction[];
  /**
   * Actions left out of the app (SKILL_ACTION_NOT_SERVED): a query parameter filters on a field their entity
   * lacks (unknownQueryFields). Zebric fails them only when called; bp serves the rest of the blueprint.
   */
  notServed: SkillAction[];
}

export type WorkflowTrigger =
  | { kind: 'manual' }
  | { kind: 'entity'; entity: string; event: 'create' | 'update' | 'delete'; condition: Record<string, unknown> }
  | { kind: 'webhook'; route: string; secretEnv?: string }
  | { kind: 'schedule'; cron: string };

export type WorkflowStepType =
  'query' | 'command' | 'notify' | 'webhook' | 'email' | 'plugin' | 'service' | 'condition' | 'loop' | 'delay';

export interface WorkflowStep {
  type: WorkflowStepType;
  /** The step as written: step kinds come with their runtime; the model keeps every key. */
  spec: Record<string, unknown>;
  /** The steps of a condition's `then` / `else` and of a loop's `do`, built like top-level steps. */
  branches: Partial<Record<'then' | 'else' | 'do', WorkflowStep[]>>;
}

export interface Workflow {
  name: string;
  path: KeyPath;
  description?: string;
  trigger: WorkflowTrigger;
  precondition: Record<string, unknown>;
  transactional: boolean;
  /** Maximum attempts of a run (Zebric's `retries`, default 3). */
  retries: number;
  maxConcurrent: number;
  steps: WorkflowStep[];
}

export interface PageQuery {
  name: string;
  entity: string;
  where: Record<string, unknown>;
  orderBy: Array<{ field: string; direction: 'asc' | 'desc' }>;
  limit?: number;
  offset?: number;
  include: string[];
}

export interface PageTemplate {
  engine: 'handlebars' | 'liquid';
  /** As written: the file's path (relative to the declaring TOML file) or the template itself. */
  source: string;
  type: 'file' | 'inline';
  /** The template: the file's contents, read by the parse stage ('' when it cannot be read), or `source`. */
  text: string;
  /** What logs call it: the file as written, or the blueprint path of an inline one (`page."/x".template`). */
  name: string;
}

/** The [auth.pages] a blueprint may give: the sign-in, sign-up, sign-out and login-required pages. */
export const AUTH_PAGE_NAMES = ['signIn', 'signUp', 'signOut', 'loginRequired'] as const;
export type AuthPageName = (typeof AUTH_PAGE_NAMES)[number];

export interface ActionBarAction {
  label: string;
  href?: string;
  method?: 'GET' | 'POST';
  style?: 'primary' | 'secondary' | 'danger' | 'ghost';
  confirm?: string;
  target?: '_self' | '_blank';
  icon?: string;
  workflow?: string;
  payload: Record<string, unknown>;
  visibleWhen?: Record<string, unknown>;
  enabledWhen?: Record<string, unknown>;
  redirect?: string;
  successMessage?: string;
  errorMessage?: string;
}

export interface ActionBar {
  title?: string;
  description?: string;
  statusField?: string;
  statusLabel?: string;
  showStatus: boolean;
  actions: ActionBarAction[];
  secondaryActions: ActionBarAction[];
}

export interface BoardColumn {
  value: string;
  label: string;
  description?: string;
}

export interface Board {
  query: string;
  groupBy: string;
  orderBy?: string;
  columns: BoardColumn[];
  card: { title: string; description?: string; href?: string; fields: string[] };
  move?: { workflow: string; payloadField?: string; successMessage?: string; errorMessage?: string };
}

export interface Page {
  route: string;
  path: KeyPath;
  title?: string;
  auth: 'required' | 'optional' | 'none';
  /** list, detail, form, dashboard, board or auth; any other name is a custom layout. */
  layout: string;
  queries: PageQuery[];
  actionBar?: ActionBar;
  board?: Board;
  /** A client-side widget as written (Zebric passes its keys through to the widget kind). */
  widget?: Record<string, unknown>;
  template?: PageTemplate;
  layoutSlots: Record<string, PageTemplate>;
  /** `intent`, `render` and `on_*` handler paths, as written. */
  behavior?: Record<string, unknown>;
  form?: {
    entity: string;
    method: 'create' | 'update' | 'delete';
    fields: Record<string, unknown>[];
    mode?: 'page' | 'modal' | 'inline';
    sections: Array<{ title?: string; description?: string; layout?: string; fields: string[] }>;
    interaction?: { validation?: 'inline' | 'summary' | 'none'; save_behavior?: 'standard' | 'optimistic' };
    onSuccess?: { redirect?: string; message?: string };
    onError?: { message?: string };
  };
}

export interface Blueprint {
  version?: string;
  project: { name: string; version: string; description?: string };
  /** Path segment for generated names: the project name in kebab case. */
  slug: string;
  entities: Entity[];
  commands: Command[];
  auth: Auth;
  skills: Skill[];
  workflows: Workflow[];
  pages: Page[];
  notifications: { default?: string; adapters: Array<{ name: string; type: string; config: Record<string, unknown> }> };
  services: Service[];
  /** The enabled [[plugins]], in declaration order (disabled ones are not loaded, as in Zebric). */
  plugins: Plugin[];
}

/** An enabled [[plugins]] entry: an npm package the app loads at start (runtime/plugins). */
export interface Plugin {
  /** The package name, also the name workflow plugin steps use. */
  name: string;
  /** `version` as written (its range in package.json), or "*" when absent; none for a module path. */
  dependency?: string;
  /**
   * Absolute: a `file:` plugin's folder (its `version` read relative to the root blueprint's
   * folder), or the module of a plugin named by its path (`./plugins/audit.js`, as Zebric allows).
   */
  localPath?: string;
  trustLevel: 'limited' | 'full';
  capabilities: Array<'database' | 'network' | 'storage' | 'filesystem'>;
  config: Record<string, unknown>;
}

/** A typed value of a service operation (Zebric's ExternalValueSchema): a field type, an Object or an Array. */
export interface ServiceValue {
  type: string;
  required?: boolean;
  values?: string[];
  fields?: Record<string, ServiceValue>;
  items?: ServiceValue;
  allowUnknown?: boolean;
}

/** A declared service: the contract of operations that src/extend.ts implements (`services.<name>`). */
export interface Service {
  name: string;
  description?: string;
  operations: Array<{ name: string; description?: string; input: Record<string, ServiceValue>; result?: ServiceValue }>;
}
