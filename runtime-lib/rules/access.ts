// Who may do what to which records: entity and field `access` conditions, role permissions
// ([auth.permissions]) and API-key scopes, decided in one place for every entity route.
// Fails closed: a missing rule allows authenticated actors only (the generator writes `public`
// for the missing rules of an app without [auth]); anonymous refusals are 401, authenticated ones
// 403, and records the actor may not read are simply not found (404). Writes are checked twice,
// like PostgreSQL's row security: on the stored record (USING) and on the record as the write
// leaves it (WITH CHECK, checkWrite). The app's own trusted work (the SYSTEM actor) passes every
// check, as Zebric's system session does.

import { isAuthenticated, type Actor, requireScopes } from '../core/actor.ts';
import type { Dialect } from '../core/dialect.ts';
import {
  andFilters,
  type ColumnType,
  type ConditionScope,
  conditionToSql,
  notFilter,
  orFilters,
  type RowFilter,
} from './condition-sql.ts';
import { checkCondition, type Condition, conditionReadsRecord, ownerField } from './conditions.ts';
import { AppError, type ErrorDetail } from '../core/errors.ts';
import { type Expr, pathsOf } from './expression-parse.ts';

export type EntityAction = 'read' | 'create' | 'update' | 'delete';

export interface PermissionRule {
  entity: string;
  actions: readonly string[];
  condition?: Condition;
}

export type Permissions = Readonly<
  Record<string, { allow: readonly PermissionRule[]; deny: readonly PermissionRule[] }>
>;

export interface AccessPolicy {
  entity: string;
  /** Missing, or without an action: that action is for signed-in callers only. */
  rules?: Readonly<Partial<Record<EntityAction, Condition>>>;
  fields?: Readonly<Record<string, { read?: Condition; write?: Condition }>>;
  /** API-key scopes each read or write needs; missing: none. */
  scopes?: { read?: readonly string[]; write?: readonly string[] };
  /** Present when the blueprint declares [auth.permissions]. */
  permissions?: Permissions;
}

const AUTHENTICATED: Condition = { kind: 'authenticated' };
const conditionActor = (actor: Actor) => (isAuthenticated(actor) ? actor : null);
const isSystem = (actor: Actor) => actor.kind === 'system';

/**
 * Permission roles of an actor without roles (an anonymous caller, an API key declaring none), as
 * Zebric's permission manager reads them: the `anonymous` entry of [auth.permissions], else the
 * `public` one.
 */
const ROLELESS = ['anonymous', 'public'] as const;

export class Access {
  /** Actions whose rule does not read the record: decided per actor without building SQL. */
  private readonly actorOnly: ReadonlySet<EntityAction>;
  /** Actions whose rule reads `now`; the others skip formatting the time on every request. */
  private readonly readsNow: ReadonlySet<EntityAction>;

  constructor(
    readonly policy: AccessPolicy,
    private readonly columns: ReadonlyMap<string, ColumnType>,
    private readonly dialect: Dialect = 'sqlite',
  ) {
    const actions: EntityAction[] = ['read', 'create', 'update', 'delete'];
    this.actorOnly = new Set(actions.filter((a) => !conditionReadsRecord(this.rule(a))));
    this.readsNow = new Set(actions.filter((a) => mentionsNow(this.rule(a))));
    this.hasFieldReadRules = Object.values(policy.fields ?? {}).some((f) => f.read !== undefined);
    const readRules = [this.rule('read'), ...this.permissionConditions('read')];
    const owner = ownerField((name) => columns.has(name));
    this.ownershipFields = [...new Set(readRules.flatMap((rule) => actorComparedFields(rule, owner)))].sort();
    const permissions = policy.permissions ?? {};
    const roleless = ROLELESS.find((r) => Object.prototype.hasOwnProperty.call(permissions, r));
    this.roleless = roleless === undefined ? [] : [roleless];
  }

  /** The permission role of an actor without roles (ROLELESS), when [auth.permissions] declares one. */
  private readonly roleless: readonly string[];

  /**
   * The fields the read rule (or a read permission) compares with the actor: `authorId` in
   * `record.authorId == actor.id`, `{ authorId = "$currentUser.id" }`, `userId` or `ownerId` for "owner".
   * They say whose a record is, so a write that changes one is held to the read rule.
   */
  readonly ownershipFields: readonly string[];

  /**
   * Checks everything that does not depend on a record (scopes, whether any rule can pass) and
   * returns the SQL filter of the records the actor may act on.
   */
  filter(actor: Actor, action: EntityAction): RowFilter {
    if (isSystem(actor)) return true;
    this.requireScopes(actor, action);
    const who = conditionActor(actor);
    const rule = this.actorOnly.has(action)
      ? checkCondition(this.rule(action), {
          actor: who,
          record: null,
          now: this.readsNow.has(action) ? new Date().toISOString() : undefined,
        })
      : conditionToSql(this.rule(action), who, this.columns, this.dialect);
    const granted = this.permissionFilter(actor, action);
    if (rule === undefined || granted === undefined) {
      // The generator only accepts conditions it can translate; refuse rather than guess.
      throw new AppError('INTERNAL_ERROR', `the ${action} rule of ${this.policy.entity} cannot run in the database`);
    }
    const filter = andFilters([rule, granted]);
    if (filter === false) throw this.refusal(actor, action);
    return filter;
  }

  /**
   * The records for which a command's `condition` (its policy, its availableWhen) holds for
   * `actor`, as SQL, with the command's input and time: the same answer as checkCondition on
   * each record. Undefined when the condition cannot be written as SQL.
   */
  commandFilter(condition: Condition, actor: Actor, scope: ConditionScope): RowFilter | undefined {
    return conditionToSql(condition, actor, this.columns, this.dialect, scope);
  }

  /** Checks a concrete record (the stored one for update/delete, the new one for create). */
  check(actor: Actor, action: EntityAction, record: Record<string, unknown>): void {
    if (isSystem(actor)) return;
    this.requireScopes(actor, action);
    if (!this.holds(actor, action, record)) throw this.refusal(actor, action);
  }

  /**
   * The row rules hold for the record as the write leaves it (`after`), as PostgreSQL's WITH
   * CHECK, so that nobody moves a record out of their own reach or into someone else's:
   * - an update (`before` is the stored record, already checked) must pass the update rule and
   *   update permissions again on `after`;
   * - a write that changes an ownership field must leave the record readable by the actor
   *   under the read rule and read permissions. `written` are the fields the actor wrote; an
   *   update changes a field when its value differs from `before`, a create when it gives it a
   *   value (a create that leaves every ownership field empty makes nobody's record; defaults
   *   and generated ids are the blueprint's doing, not the actor's). A change to other fields
   *   is not held to the read rule, so an author may still archive a note that the read rule
   *   hides once archived.
   * Scopes are not asked again: they were checked before the record was looked at.
   */
  checkWrite(
    actor: Actor,
    before: Record<string, unknown> | null,
    after: Record<string, unknown>,
    written: readonly string[],
  ): void {
    if (isSystem(actor)) return;
    const entity = this.policy.entity;
    const failed: ErrorDetail[] = [];
    if (before !== null && !this.holds(actor, 'update', after)) {
      failed.push({ code: 'ROW_CHECK', message: `the ${entity} as this change leaves it fails the update rule` });
    }
    const moved = this.ownershipFields.filter(
      (f) =>
        written.includes(f) && (before === null ? after[f] !== null && after[f] !== undefined : before[f] !== after[f]),
    );
    if (moved.length > 0 && !this.holds(actor, 'read', after)) {
      for (const field of moved) {
        const message = `with this ${field} you could not read the ${entity}: the read rule must still hold`;
        failed.push({ field, code: 'ROW_CHECK', message });
      }
    }
    if (failed.length === 0) return;
    const details = { details: failed };
    if (!isAuthenticated(actor)) throw new AppError('UNAUTHENTICATED', 'sign in or present an API key', details);
    throw new AppError('FORBIDDEN', `you may not leave this ${entity} in that state`, details);
  }

  /** Whether the action's rule and the actor's permissions allow it on `record`. */
  private holds(actor: Actor, action: EntityAction, record: Record<string, unknown>): boolean {
    const who = conditionActor(actor);
    return (
      checkCondition(this.rule(action), { actor: who, record, now: new Date().toISOString() }) &&
      this.permitted(actor, action, record)
    );
  }

  /** Fields of `record` the actor may not read are removed (field `access.read`). */
  hideFields(actor: Actor, record: Record<string, unknown>): Record<string, unknown> {
    for (const name of this.hiddenFields(actor, record)) delete record[name];
    return record;
  }

  /** The fields of `record` whose `access.read` the actor does not pass, in declaration order. */
  hiddenFields(actor: Actor, record: Record<string, unknown>): string[] {
    if (isSystem(actor)) return [];
    const who = conditionActor(actor);
    return Object.entries(this.policy.fields ?? {})
      .filter(([, rules]) => rules.read && !checkCondition(rules.read, { actor: who, record }))
      .map(([name]) => name);
  }

  /**
   * Where records may be compared on `fields` (a list's filters) by `actor`, as SQL: a field whose
   * read rule the actor does not pass is refused (403 naming it), else a filter on it would tell
   * its value by which records it returns. A rule that does not read the record is decided for the
   * actor alone; one that does (`record.ownerId == actor.id`) becomes part of the filter, so that
   * the comparison only matches records whose field the actor may read, and no record the actor
   * may not read the field of is told apart by its value. Untranslatable rules are refused.
   */
  comparableWhere(actor: Actor, fields: readonly string[]): RowFilter {
    if (isSystem(actor)) return true;
    const who = conditionActor(actor);
    const refused: string[] = [];
    const filters: RowFilter[] = [];
    for (const name of new Set(fields)) {
      const rule = this.policy.fields?.[name]?.read;
      if (!rule) continue;
      // Decided as hiddenFields decides it, so that a field shown is a field that may be compared.
      const filter = conditionReadsRecord(rule)
        ? conditionToSql(rule, who, this.columns, this.dialect)
        : checkCondition(rule, { actor: who, record: null });
      if (filter === undefined || filter === false) refused.push(name);
      else filters.push(filter);
    }
    if (refused.length) throw this.fieldReadRefusal(actor, refused, 'filter on');
    return andFilters(filters);
  }

  /**
   * Refuses a write that sets a unique field the actor may not read on the record as written: the
   * database's answer (409, the value is taken) would tell whether another record holds the value.
   */
  checkUniqueWrites(
    actor: Actor,
    written: readonly string[],
    unique: (name: string) => boolean,
    record: Record<string, unknown>,
  ): void {
    const hidden = new Set(this.hiddenFields(actor, record));
    const refused = written.filter((name) => unique(name) && hidden.has(name));
    if (refused.length) throw this.fieldReadRefusal(actor, refused, 'set the unique');
  }

  /**
   * Refuses conditions (a command's policy and availableWhen) that read a field the actor may not
   * read on `record`: their answer (403, 409 or done) would tell how its value compares.
   */
  checkConditionReads(
    actor: Actor,
    conditions: ReadonlyArray<Condition | undefined>,
    record: Record<string, unknown>,
  ): void {
    this.checkReads(actor, conditions, [record]);
  }

  /**
   * checkConditionReads for the records of this entity that conditions of another entity's
   * command read through its relation `relation` (`record.<relation>.<field>`), loaded as `rows`.
   */
  checkRelationReads(
    actor: Actor,
    conditions: ReadonlyArray<Condition | undefined>,
    relation: string,
    rows: ReadonlyArray<Record<string, unknown>>,
  ): void {
    this.checkReads(actor, conditions, rows, relation);
  }

  private checkReads(
    actor: Actor,
    conditions: ReadonlyArray<Condition | undefined>,
    rows: ReadonlyArray<Record<string, unknown>>,
    relation?: string,
  ): void {
    if (!this.hasFieldReadRules || isSystem(actor)) return;
    // "owner" reads the command's own record only.
    const owner = relation === undefined ? ownerField((name) => this.columns.has(name)) : '';
    const paths = conditions.flatMap((c) => (c ? recordPaths(c, owner) : []));
    const read = new Set(
      relation === undefined
        ? paths.map((keys) => keys[0])
        : paths.filter((keys) => keys[0] === relation && keys.length > 1).map((keys) => keys[1]),
    );
    if (read.size === 0) return;
    const hidden = new Set(rows.flatMap((row) => this.hiddenFields(actor, row)));
    const named = (f: string) => (relation === undefined ? f : `${relation}.${f}`);
    const refused = [...hidden].filter((f) => read.has(f)).map(named);
    if (refused.length) throw this.fieldReadRefusal(actor, refused, 'run a command whose rules compare');
  }

  /** 403 (401 when anonymous) naming fields the actor may not read, for a use that would reveal them. */
  fieldReadRefusal(actor: Actor, fields: readonly string[], use: string): AppError {
    const details = fields.map((field) => ({
      field,
      code: 'FIELD_READ_DENIED',
      message: `${field} is not readable for you`,
    }));
    if (!isAuthenticated(actor))
      return new AppError('UNAUTHENTICATED', `sign in or present an API key to ${use} ${fields.join(', ')}`, {
        details,
      });
    const why = fields.length > 1 ? 'they are not readable for you' : 'it is not readable for you';
    return new AppError('FORBIDDEN', `you may not ${use} ${fields.join(', ')}: ${why}`, { details });
  }

  /** Refuses a write to any field whose `access.write` the actor does not pass. */
  checkFieldWrites(actor: Actor, fields: readonly string[], record: Record<string, unknown>): void {
    if (isSystem(actor)) return;
    const who = conditionActor(actor);
    const refused = fields.filter((name) => {
      const write = this.policy.fields?.[name]?.write;
      return write !== undefined && !checkCondition(write, { actor: who, record });
    });
    if (refused.length === 0) return;
    if (!isAuthenticated(actor))
      throw new AppError('UNAUTHENTICATED', 'sign in or present an API key to write these fields');
    throw new AppError('FORBIDDEN', `you may not write ${refused.join(', ')}`, {
      details: refused.map((field) => ({
        field,
        code: 'FIELD_WRITE_DENIED',
        message: `${field} is not writable for you`,
      })),
    });
  }

  /** Whether any field has a read rule: decided once, asked for every record presented. */
  readonly hasFieldReadRules: boolean;

  private rule(action: EntityAction): Condition {
    return this.policy.rules?.[action] ?? AUTHENTICATED;
  }

  /** Scopes narrow the credential whatever the record: checked before any record is looked up. */
  requireScopes(actor: Actor, action: EntityAction): void {
    const scopes = action === 'read' ? this.policy.scopes?.read : this.policy.scopes?.write;
    requireScopes(actor, scopes ?? [], 'this API key');
  }

  /** Rules of the actor's roles that match this entity and action. */
  private rulesFor(
    actor: Actor,
    action: EntityAction,
  ): { allow: PermissionRule[]; deny: PermissionRule[] } | undefined {
    const permissions = this.policy.permissions;
    if (!permissions) return undefined;
    const matches = (r: PermissionRule) =>
      (r.entity === '*' || r.entity === this.policy.entity) && (r.actions.includes('*') || r.actions.includes(action));
    const allow: PermissionRule[] = [];
    const deny: PermissionRule[] = [];
    // Permissions grant to roles; a caller without any is held to the rules of the roleless.
    const held = isAuthenticated(actor) ? actor.roles : [];
    const roles = held.length ? held : this.roleless;
    for (const role of roles) {
      const entry = Object.prototype.hasOwnProperty.call(permissions, role) ? permissions[role] : undefined;
      if (!entry) continue;
      allow.push(...entry.allow.filter(matches));
      deny.push(...entry.deny.filter(matches));
    }
    return { allow, deny };
  }

  /** The conditions of every permission rule, of any role, for this entity and action. */
  private permissionConditions(action: EntityAction): Condition[] {
    const rules = Object.values(this.policy.permissions ?? {}).flatMap((p) => [...p.allow, ...p.deny]);
    return rules
      .filter((r) => r.entity === '*' || r.entity === this.policy.entity)
      .filter((r) => r.actions.includes('*') || r.actions.includes(action))
      .flatMap((r) => (r.condition ? [r.condition] : []));
  }

  private permissionFilter(actor: Actor, action: EntityAction): RowFilter | undefined {
    const rules = this.rulesFor(actor, action);
    if (!rules) return true;
    const who = conditionActor(actor);
    const toFilter = (r: PermissionRule) =>
      r.condition ? conditionToSql(r.condition, who, this.columns, this.dialect) : true;
    const allows = rules.allow.map(toFilter);
    const denies = rules.deny.map(toFilter);
    if ([...allows, ...denies].some((f) => f === undefined)) return undefined;
    return andFilters([orFilters(allows as RowFilter[]), notFilter(orFilters(denies as RowFilter[]))]);
  }

  private permitted(actor: Actor, action: EntityAction, record: Record<string, unknown>): boolean {
    const rules = this.rulesFor(actor, action);
    if (!rules) return true;
    const who = conditionActor(actor);
    const holds = (r: PermissionRule) => !r.condition || checkCondition(r.condition, { actor: who, record });
    return rules.allow.some(holds) && !rules.deny.some(holds);
  }

  private refusal(actor: Actor, action: EntityAction): AppError {
    if (!isAuthenticated(actor)) return new AppError('UNAUTHENTICATED', 'sign in or present an API key');
    return new AppError('FORBIDDEN', `you may not ${action} ${this.policy.entity} records`);
  }
}

function mentionsNow(condition: Condition): boolean {
  if (condition.kind === 'expr') return pathsOf(condition.expr).some((p) => p.root === 'now');
  if (condition.kind === 'and' || condition.kind === 'or') return condition.items.some(mentionsNow);
  return false;
}

/**
 * The record fields a condition compares with the actor. A comparison counts when one side
 * reads the record and the other the actor; `&&`, `||` and `!` are looked through, so each
 * comparison of `record.a == actor.id || actor.roles contains 'admin'` is taken alone.
 */
function actorComparedFields(condition: Condition, owner: string): string[] {
  switch (condition.kind) {
    case 'owner':
      return [owner];
    case 'match':
      return condition.pairs.flatMap(({ left, right }) => {
        if (left.kind === 'record' && right.kind === 'actor') return [left.keys[0]];
        if (right.kind === 'record' && left.kind === 'actor') return [right.keys[0]];
        return [];
      });
    case 'and':
    case 'or':
      return condition.items.flatMap((item) => actorComparedFields(item, owner));
    case 'expr':
      return exprActorComparedFields(condition.expr);
    default:
      return [];
  }
}

/** The keys of each `record.<...>` path a condition reads (`owner`: its owner field, when named). */
function recordPaths(condition: Condition, owner: string): string[][] {
  switch (condition.kind) {
    case 'owner':
      return owner ? [[owner]] : [];
    case 'match':
      return condition.pairs.flatMap(({ left, right }) =>
        [left, right].flatMap((o) => (o.kind === 'record' ? [o.keys] : [])),
      );
    case 'and':
    case 'or':
      return condition.items.flatMap((item) => recordPaths(item, owner));
    case 'expr':
      return pathsOf(condition.expr).flatMap((p) => (p.root === 'record' && p.keys.length ? [p.keys] : []));
    default:
      return [];
  }
}

function exprActorComparedFields(expr: Expr): string[] {
  if (expr.kind === 'binary' && (expr.op === '&&' || expr.op === '||'))
    return [...exprActorComparedFields(expr.left), ...exprActorComparedFields(expr.right)];
  if (expr.kind === 'unary' && expr.op === '!') return exprActorComparedFields(expr.operand);
  const paths = pathsOf(expr);
  if (!paths.some((p) => p.root === 'actor')) return [];
  return paths.filter((p) => p.root === 'record' && p.keys.length > 0).map((p) => p.keys[0]);
}
