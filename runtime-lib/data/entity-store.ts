// Data access for one entity: its records read and written through the SQL the generator wrote
// for each database, with the access rules and field checks applied. Every operation is a unit of
// work (data/database.ts): routes run it with `db.read` or `db.write`, alone or inside a larger
// write (a command, an idempotent request), so that all of it commits together.

import { Access, type AccessPolicy } from '../rules/access.ts';
import { type AuditEntry, type AuditLog, diffRecords } from './audit.ts';
import type { Actor } from '../core/actor.ts';
import { andFilters, type RowFilter, type SqlPredicate } from '../rules/condition-sql.ts';
import { AppError, type ErrorDetail } from '../core/errors.ts';
import type { Dialect } from '../core/dialect.ts';
import { all, type Database, get, later, type Outcome, type Query, run, together, type Work } from './database.ts';
import { keyProblem, type KeyType, recordKey, type RecordKey, ulid, uuid } from '../core/ids.ts';
import {
  bodyProblems,
  checkBody,
  changedKeys,
  decodeRow,
  defaultNow,
  encodeField,
  type FieldSpec,
  protectedError,
  type Row,
  rowKeys,
  sameValue,
  validationError,
} from './fields.ts';
import type { ActiveTrace } from '../observe/tracing.ts';
import { EntityUpdates } from './entity-updates.ts';
import type { WriteTail } from './idempotency-store.ts';

export interface EntitySpec {
  name: string;
  collection: string;
  primaryKey: string;
  /**
   * ULID and UUID ids are generated; a Text id is the client's, or a generated ULID when absent;
   * an Integer id is assigned by the database (`sql.insert` leaves its column out).
   */
  idType: KeyType;
  fields: readonly FieldSpec[];
  /** The statements of each database, written by the generator. */
  sql: Readonly<Record<Dialect, EntitySql>>;
  access: AccessPolicy;
}

/**
 * One database's statements for an entity, with `?` placeholders. `select` and `orderBy` compose
 * the row-filtered variants of get and list; `table` and `columns` the updates of the changed
 * fields; `lock` ends a get that must hold the row until the transaction ends (a command's
 * re-read: `FOR UPDATE` on PostgreSQL, nothing on SQLite, whose writer holds the whole file).
 */
export interface EntitySql {
  table: string;
  columns: string;
  select: string;
  orderBy: string;
  get: string;
  list: string;
  insert: string;
  /**
   * The database stores a new row exactly as the values written, so `insert` returns nothing and
   * a create answers with the values: on PostgreSQL the insert then goes with the COMMIT, one
   * round trip for the whole create. False where the database makes part of the row (an Integer
   * id, PostgreSQL's jsonb): `insert` ends in RETURNING.
   */
  rowFromValues: boolean;
  delete: string;
  lock: string;
}

/** How EntityStore.lockAndChange changes a record, and what it checks. */
export interface LockAndChange {
  /** The audit record's operation. */
  operation: string;
  /** The caller's own checks on the row as locked; a throw rolls the change back. */
  check: (current: Row) => void;
  /** Makes `changes` a command's declared mutations, which its policy governs (no field rules). */
  command?: CommandRef;
  detail?: Record<string, unknown>;
  /**
   * A statement sent first, in the same trip (a command handler's hold on its Idempotency-Key),
   * its outcome checked before anything else.
   */
  first?: { query: Query; check: (outcome: Outcome) => void };
  /**
   * For a command's mutations: the rows on which `check` passes, as SQL (its policy and
   * availableWhen). With `tail`, the change may then be one statement (changeInOneStatement).
   */
  checkInSql?: RowFilter;
  /** The rest of the unit, when nothing follows the change but its key's record (runIdempotent). */
  tail?: WriteTail;
  /**
   * The caller read the record before (a command handler's) and `check` compares the locked row
   * with that read: the row is locked without the read filter, and `missing()` is thrown when it
   * is gone.
   */
  reread?: { missing: () => Error };
}

/** Who is asking, where to record spans, and the ids that tie a change to its request. */
export interface RequestContext {
  actor: Actor;
  trace?: ActiveTrace;
  agentRunId?: string;
  idempotencyKey?: string;
  /** An anonymous caller's proven scope (http/request.ts RequestState.sessionId). */
  sessionId?: string;
  /** The workflows, oldest first, whose jobs led to this write through entity events. */
  workflowChain?: readonly string[];
  /**
   * Where a write notes the stored files (`/uploads/<name>` values of file fields) it replaces or
   * deletes, for the caller to remove once the write has committed (runtime/uploads).
   */
  files?: { released: Set<string> };
}

/** What a body changes, from the body alone (EntityStore.changesOf). */
interface Changes {
  /** Stored forms of the changed fields, in `changed` order. */
  values: unknown[];
  changed: string[];
  issues: ErrorDetail[];
}

/** The command whose declared mutations a change makes. */
export interface CommandRef {
  name: string;
  entity: string;
}

/** A record created, updated or deleted, as the write's own unit of work tells it. */
export interface RecordChange {
  entity: string;
  event: 'create' | 'update' | 'delete';
  before: Row | null;
  after: Row | null;
}

/**
 * Runs inside every write's transaction, after the change (workflows/entity-events.ts stores the
 * jobs of entity-triggered workflows there): what it writes commits or rolls back with the change.
 */
export interface ChangeHook {
  (ctx: RequestContext, change: RecordChange): Work<void>;
  /**
   * Whether the hook may do anything for an update of `entity` that sets the fields of `set` (to
   * their values as the API shows them) and leaves every other field as it was: false only when
   * it surely does nothing, whatever the record held. Absent: it may.
   */
  mayAct?: (entity: string, set: Readonly<Row>) => boolean;
}

/**
 * The check of fields that name plugin validators (plugins/host.ts): the problems of one value
 * written to `field`, `data` being the whole body. It answers at once: it runs inside the write.
 */
export type FieldCheck = (entity: EntitySpec, field: FieldSpec, value: unknown, data: Row) => ErrorDetail[];

export interface UpdatePlan {
  id: RecordKey;
  before: Row;
  /** Stored forms of the changed fields, in `changed` order. */
  values: unknown[];
  changed: string[];
}

function correlation(ctx: RequestContext): {
  actor: Actor;
  traceId?: string;
  agentRunId?: string;
  idempotencyKey?: string;
} {
  return {
    actor: ctx.actor,
    traceId: ctx.trace?.traceId,
    agentRunId: ctx.agentRunId,
    idempotencyKey: ctx.idempotencyKey,
  };
}

export interface ListQuery {
  limit: number;
  offset: number;
  /** Equality filters (a skill action's path and query parameters), values in their JSON form. */
  where?: ReadonlyArray<{ field: string; value: unknown }>;
  /** A page query's order; the primary key breaks ties, so pages of a list never overlap. */
  orderBy?: ReadonlyArray<{ field: string; direction: 'asc' | 'desc' }>;
}

export interface ListResult<T> {
  items: T[];
  limit: number;
  offset: number;
  hasMore: boolean;
}

export class EntityStore {
  /** This database's statements. */
  private readonly sql: EntitySql;
  readonly access: Access;
  private readonly byName = new Map<string, FieldSpec>();
  /** Only fields whose stored form differs from their JSON form are converted when read. */
  private readonly decoded: FieldSpec[];
  /** The texts of its UPDATEs, the one statement's among them. */
  private readonly updates: EntityUpdates;
  /** The names of its file fields, whose old values a write releases (RequestContext.files). */
  private readonly fileFields: string[];
  /** Set by checkFieldsWith in an app with plugins; fields naming validators are then checked. */
  private fieldCheck?: FieldCheck;

  constructor(
    readonly db: Database,
    readonly spec: EntitySpec,
    private readonly audit?: AuditLog,
    private readonly onChange?: ChangeHook,
  ) {
    this.sql = spec.sql[db.dialect];
    for (const f of spec.fields) this.byName.set(f.name, f);
    this.decoded = spec.fields.filter((f) => f.type === 'Boolean' || f.type === 'JSON' || f.type === 'DateTime');
    this.fileFields = spec.fields.filter((f) => f.type === 'file').map((f) => f.name);
    const { table, columns, rowFromValues } = this.sql;
    const target = { table, columns, rowFromValues, primaryKey: spec.primaryKey, fields: spec.fields };
    this.updates = new EntityUpdates({ ...target, byName: this.byName, decoded: this.decoded }, audit);
    // A Ref to an Integer key holds numbers: its conditions compare as the Integer column it is.
    const columnType = (f: FieldSpec) => (f.type === 'Ref' && f.ref?.idType === 'Integer' ? 'Integer' : f.type);
    this.access = new Access(spec.access, new Map(spec.fields.map((f) => [f.name, columnType(f)])), db.dialect);
  }

  /** Plugin field validators: from now on, every write of a field that names some runs them. */
  checkFieldsWith(check: FieldCheck): void {
    this.fieldCheck = check;
  }

  /** The plugin validators' problems with the values `input` writes (none without validators). */
  private validatorIssues(input: Row, fields: readonly string[], issues: ErrorDetail[]): void {
    if (!this.fieldCheck) return;
    for (const name of fields) {
      const f = this.byName.get(name);
      const value = input[name];
      if (f?.validators?.length && value !== undefined && value !== null)
        issues.push(...this.fieldCheck(this.spec, f, value, input));
    }
  }

  /** Reads one record by the id a route or handler names (a string, or a number for Integer keys). */
  *get(ctx: RequestContext, id: RecordKey): Work<Row> {
    return this.present(ctx, yield* this.load(ctx, id, this.access.filter(ctx.actor, 'read')));
  }

  *list(ctx: RequestContext, q: ListQuery): Work<ListResult<Row>> {
    const filter = this.access.filter(ctx.actor, 'read');
    const where = q.where?.length ? this.equalities(ctx.actor, q.where) : undefined;
    const order = q.orderBy?.length ? this.ordering(ctx.actor, q.orderBy) : undefined;
    const conditions = [where, filter, order?.readable].filter((c): c is SqlPredicate => typeof c === 'object');
    const orderBy = order?.sql ?? this.sql.orderBy;
    // One row more than asked tells whether another page exists, without a COUNT(*).
    const rows =
      filter === false || order?.readable === false
        ? []
        : conditions.length === 0 && orderBy === this.sql.orderBy
          ? yield* all(this.sql.list, [q.limit + 1, q.offset])
          : yield* all(
              `${this.sql.select}${conditions.length ? ' WHERE ' : ''}` +
                `${conditions.map((c) => `(${c.sql})`).join(' AND ')} ORDER BY ${orderBy} LIMIT ? OFFSET ?`,
              [...conditions.flatMap((c) => c.params), q.limit + 1, q.offset],
            );
    const hasMore = rows.length > q.limit;
    if (hasMore) rows.pop();
    return {
      items: rows.map((r) => this.present(ctx, decodeRow(this.decoded, r))),
      limit: q.limit,
      offset: q.offset,
      hasMore,
    };
  }

  /**
   * `rowRules: false` leaves out the entity's `create` rule (and permissions) and the row checks
   * of checkWrite, for sign-up: the caller is nobody yet, and auth.signup, not the rule, decides
   * who may sign up. Field write rules and every validation still apply.
   */
  *create(ctx: RequestContext, body: unknown, options: { rowRules?: boolean } = {}): Work<Row> {
    const { actor } = ctx;
    const input = checkBody(body);
    const protectedKeys = Object.keys(input).filter((k) => this.byName.get(k)?.commandOnly);
    if (protectedKeys.length) throw protectedError(protectedKeys);
    const issues: ErrorDetail[] = [];
    const params: Row = {};
    const now = new Date();
    for (const f of this.spec.fields) {
      if (f.primaryKey) {
        const id = this.newId(input, now, issues);
        if (id !== undefined) params[f.name] = id;
        continue;
      }
      let value = Object.prototype.hasOwnProperty.call(input, f.name) ? input[f.name] : undefined;
      if (value === undefined && f.default) value = 'now' in f.default ? defaultNow(f, now) : f.default.value;
      if (value === undefined || value === null) {
        if (f.required || (value === null && !f.nullable))
          issues.push({ field: f.name, code: 'REQUIRED', message: `${f.name} is required` });
        params[f.name] = null;
        continue;
      }
      params[f.name] = encodeField(f, value, issues);
    }
    this.rejectUnknown(input, issues);
    if (!issues.length) this.validatorIssues(input, Object.keys(input), issues);
    if (issues.length) throw validationError(issues);
    const candidate = decodeRow(this.decoded, { ...params });
    const rowRules = options.rowRules !== false;
    if (rowRules) this.access.check(actor, 'create', candidate);
    this.access.checkFieldWrites(actor, Object.keys(input), candidate);
    // Sign-up (rowRules false) says whether an e-mail is taken by design (auth's own answer).
    if (rowRules) this.checkUniqueWrites(actor, Object.keys(input), candidate);
    if (rowRules) this.access.checkWrite(actor, null, candidate, Object.keys(input));
    yield* this.checkRefs(params, Object.keys(params));
    // The insert names every column but a database-assigned key, in declaration order.
    // Then the key columns of unique Email fields (fields.ts, rowKeys).
    const values = [
      ...this.spec.fields.filter((f) => f.name in params).map((f) => params[f.name]),
      ...rowKeys(this.spec.fields, params),
    ];
    let created = candidate;
    if (this.sql.rowFromValues) yield* later(this.sql.insert, values);
    else created = decodeRow(this.decoded, (yield* get(this.sql.insert, values)) as Row);
    const recordId = String(created[this.spec.primaryKey]);
    yield* this.recordAudit(ctx, {
      operation: `${this.spec.name}.create`,
      recordId,
      changes: diffRecords(null, created),
    });
    yield* this.changed(ctx, 'create', null, created);
    return this.present(ctx, { ...created });
  }

  /** Changes record `id` as `body` says; `tail`: the unit ends with this change (runIdempotent), answered 200. */
  *update(ctx: RequestContext, id: RecordKey, body: unknown, tail?: WriteTail): Work<Row> {
    this.access.requireScopes(ctx.actor, 'update');
    const changed = yield* this.lockAndChange(ctx, id, body, {
      operation: `${this.spec.name}.update`,
      check: (current) => this.access.check(ctx.actor, 'update', current),
      tail,
    });
    if (changed) return this.present(ctx, changed);
    const current = yield* this.load(ctx, id, this.access.filter(ctx.actor, 'read'), { lock: true });
    this.access.check(ctx.actor, 'update', current);
    const plan = this.planUpdate(ctx, current, body, { checkFieldRules: true });
    this.checkRowRules(ctx, plan);
    return this.present(ctx, yield* this.applyUpdate(ctx, plan, `${this.spec.name}.update`));
  }

  *delete(ctx: RequestContext, id: RecordKey): Work<void> {
    this.access.requireScopes(ctx.actor, 'delete');
    const current = yield* this.load(ctx, id, this.access.filter(ctx.actor, 'read'), { lock: true });
    this.access.check(ctx.actor, 'delete', current);
    const key = current[this.spec.primaryKey] as RecordKey;
    const result = yield* run(this.sql.delete, [key]);
    if (result.changes === 0) throw this.notFound(id);
    this.releaseFiles(ctx, current, null);
    yield* this.recordAudit(ctx, {
      operation: `${this.spec.name}.delete`,
      recordId: String(key),
      changes: diffRecords(current, null),
    });
    yield* this.changed(ctx, 'delete', current, null);
  }

  /**
   * Validates a change to `current` and returns what to write. Writes to command-only fields
   * are refused unless `command` is allowed to make them; sending one back unchanged (a
   * GET-then-PUT round trip) writes nothing.
   */
  planUpdate(
    ctx: RequestContext,
    current: Row,
    body: unknown,
    options: {
      command?: CommandRef;
      checkFieldRules: boolean;
      /** What `changesOf` made of this same body already (lockAndChange): not worked out twice. */
      changes?: Changes;
    },
  ): UpdatePlan {
    const input = checkBody(body);
    const id = current[this.spec.primaryKey] as RecordKey;
    const protectedKeys = Object.keys(input).filter((k) => {
      const f = this.byName.get(k);
      return f?.commandOnly && !sameValue(current[k], input[k]) && !this.commandMayWrite(f, options.command);
    });
    if (protectedKeys.length) throw protectedError(protectedKeys);
    const { values, changed, issues } = options.changes ?? this.changesOf(id, input, options.command);
    if (issues.length) throw validationError(issues);
    if (options.checkFieldRules) this.access.checkFieldWrites(ctx.actor, changed, current);
    // A command's mutations too: whoever supplies the value would hear whether it is taken.
    this.checkUniqueWrites(ctx.actor, changed, current, values);
    return { id, before: current, values, changed };
  }

  /**
   * What `input` changes in record `id`, from the input alone: the stored forms of the fields it
   * sets (command-only fields left out unless `command` may write them), and its problems.
   */
  private changesOf(id: RecordKey, input: Row, command: CommandRef | undefined): Changes {
    const issues: ErrorDetail[] = [];
    const values: unknown[] = [];
    const changed: string[] = [];
    for (const f of this.spec.fields) {
      if (!Object.prototype.hasOwnProperty.call(input, f.name)) continue;
      const value = input[f.name];
      if (f.primaryKey) {
        if (value !== id) issues.push({ field: f.name, code: 'READ_ONLY', message: `${f.name} cannot change` });
        continue;
      }
      if (f.commandOnly && !this.commandMayWrite(f, command)) continue;
      if (value === null || value === undefined) {
        if (!f.nullable) issues.push({ field: f.name, code: 'REQUIRED', message: `${f.name} cannot be null` });
        else {
          values.push(null);
          changed.push(f.name);
        }
        continue;
      }
      values.push(encodeField(f, value, issues));
      changed.push(f.name);
    }
    this.rejectUnknown(input, issues);
    if (!issues.length) this.validatorIssues(input, changed, issues);
    // The key columns' values go after those of `changed`, as the UPDATE sets them (fields.ts, entity-updates.ts).
    values.push(...changedKeys(this.byName, changed, values));
    return { values, changed, issues };
  }

  /**
   * A change to record `id` in one round trip where it can be: when `changes` alone are valid and
   * set fields, none of them a reference (whose record must be checked first), the row is read,
   * locked and changed together, and every check then runs, in the order of the plain path
   * (load, plan, applyUpdate), on the row as locked: a refusal rolls the change back with the
   * unit. Undefined when the record must be read before anything is written; the caller then
   * takes the plain path. `check` holds the caller's own checks on the record (the update rule, a
   * command's policy and availableWhen); `command` makes it a command's declared mutations. With
   * `how.tail`, the whole unit may be one statement first (changeInOneStatement).
   */
  *lockAndChange(ctx: RequestContext, id: RecordKey, changes: unknown, how: LockAndChange): Work<Row | undefined> {
    const key = recordKey(this.spec.idType, id);
    const filter = how.reread ? true : this.access.filter(ctx.actor, 'read');
    if (key === undefined || filter === false || bodyProblems(changes)) return undefined;
    const draft = this.changesOf(key, changes as Row, how.command);
    if (draft.issues.length || !draft.changed.length || draft.changed.some((name) => this.byName.get(name)?.ref))
      return undefined;
    if (how.tail && this.db.returningOld) {
      const done = yield* this.changeInOneStatement(ctx, key, filter, changes as Row, draft, how, how.tail);
      if (done) return done;
    }
    const first = how.first ? [how.first.query] : [];
    // Where the database refuses nothing of the change itself (no unique field changes), an UPDATE
    // returning the row as it was reads, locks and changes it in one statement. Else the row is
    // read and locked first, so that the checks on it still come before the database's refusal.
    const oneStatement = this.db.returningOld && !draft.changed.some((name) => this.byName.get(name)?.unique);
    const change: Query[] = oneStatement
      ? [this.updates.changeReturningOld(key, filter, draft)]
      : [
          this.loadQuery(key, filter, { lock: true }),
          {
            mode: this.sql.rowFromValues ? 'run' : 'get',
            sql: this.updates.updateSql(draft.changed),
            params: [...draft.values, key],
          },
        ];
    const outcomes = yield* together(...first, ...change);
    const answers = outcomes.slice(first.length);
    const [loaded, updated] = oneStatement ? this.updates.splitOldAndNew(answers[0]) : answers;
    if (how.first) how.first.check(outcomes[0]);
    if (!loaded.ok) throw loaded.failure;
    if (!loaded.value) throw how.reread ? how.reread.missing() : this.notFound(id);
    const current = decodeRow(this.decoded, loaded.value as Row);
    how.check(current);
    // A command's mutations are governed by its policy, not by the rules of the actor's own writes.
    const own = how.command === undefined;
    const plan = this.planUpdate(ctx, current, changes, { command: how.command, checkFieldRules: own, changes: draft });
    if (own) this.checkRowRules(ctx, plan);
    if (!updated.ok) throw updated.failure;
    const after = this.updates.rowAfter(current, draft.changed, draft.values, updated.value);
    if (!after) throw this.notFound(id);
    return yield* this.recordUpdate(ctx, plan, after, how.operation, how.detail);
  }

  /**
   * The change of record `key` as the unit's one statement (EntityUpdates.changeInOneStatement),
   * its UPDATE's WHERE holding the caller's check (the update rule, or a command's policy and
   * availableWhen). Undefined when the statement changed nothing, or cannot decide all the plain
   * path would (see oneStatementCheck): the caller takes the plain path, which says why.
   */
  private *changeInOneStatement(
    ctx: RequestContext,
    key: RecordKey,
    filter: Exclude<RowFilter, false>,
    input: Row,
    draft: Changes,
    how: LockAndChange,
    tail: WriteTail,
  ): Work<Row | undefined> {
    const check = this.oneStatementCheck(ctx, input, draft, how);
    const where = check === undefined ? false : andFilters([filter, check]);
    if (where === false) return undefined;
    const entry = { ...correlation(ctx), entity: this.spec.name, operation: how.operation, detail: how.detail };
    // The values of the clauses that write the audit record and the key's record, if any.
    const writes = { audit: this.audit?.valuesOf({ ...entry, recordId: String(key) }), key: tail.key?.valuesOf(200) };
    return yield* this.updates.changeInOneStatement(key, where, draft, writes, tail);
  }

  /**
   * The caller's check as SQL where the one statement of changeInOneStatement decides all that the
   * plain path decides on the row as locked; undefined where it does not: with field read rules
   * (the answer depends on the reader), a unique field changed (the database may refuse it), a
   * command-only field in an update's body, a field write rule, an update rule that depends on
   * the record (it must hold on the row as left, too), a change to a field that says whose the
   * record is, or an entity event that may start a workflow.
   */
  private oneStatementCheck(
    ctx: RequestContext,
    input: Row,
    draft: Changes,
    how: LockAndChange,
  ): RowFilter | undefined {
    if (how.first || how.reread || this.access.hasFieldReadRules) return undefined;
    // A file replaced or cleared is released (releaseFiles), which needs the row as it was.
    if (draft.changed.some((name) => this.byName.get(name)?.type === 'file')) return undefined;
    if (draft.changed.some((name) => this.byName.get(name)?.unique)) return undefined;
    if (this.onChange) {
      const set = this.updates.withChanges({}, draft.changed, draft.values);
      if (this.onChange.mayAct?.(this.spec.name, set) !== false) return undefined;
    }
    const refused = (f: FieldSpec | undefined) => f?.commandOnly && !this.commandMayWrite(f, how.command);
    if (Object.keys(input).some((name) => refused(this.byName.get(name)))) return undefined;
    if (how.command) return how.checkInSql;
    const fields = this.access.policy.fields ?? {};
    const ruled = (name: string) => fields[name]?.write !== undefined || this.access.ownershipFields.includes(name);
    if (draft.changed.some(ruled)) return undefined;
    try {
      return this.access.filter(ctx.actor, 'update') === true ? true : undefined;
    } catch {
      // Refused whatever the record: the plain path says so once it has found the record.
      return undefined;
    }
  }

  /**
   * Holds the row rules for the record as `plan` leaves it (Access.checkWrite): for the actor's
   * own writes, not for a command's declared mutations, which its `policy` governs.
   */
  checkRowRules(ctx: RequestContext, plan: UpdatePlan): void {
    if (plan.changed.length === 0) return;
    const after = this.updates.withChanges(plan.before, plan.changed, plan.values);
    this.access.checkWrite(ctx.actor, plan.before, after, plan.changed);
  }

  /** Writes a planned change (inside the caller's transaction) and audits it; returns the new row. */
  *applyUpdate(ctx: RequestContext, plan: UpdatePlan, operation: string, detail?: Record<string, unknown>): Work<Row> {
    if (plan.changed.length === 0 && !detail) return plan.before;
    let after = plan.before;
    if (plan.changed.length) {
      yield* this.checkRefs(Object.fromEntries(plan.changed.map((name, i) => [name, plan.values[i]])), plan.changed);
      const sql = this.updates.updateSql(plan.changed);
      const params = [...plan.values, plan.id];
      const result = this.sql.rowFromValues ? yield* run(sql, params) : yield* get(sql, params);
      const row = this.updates.rowAfter(plan.before, plan.changed, plan.values, result);
      if (!row) throw this.notFound(plan.id);
      after = row;
    }
    return yield* this.recordUpdate(ctx, plan, after, operation, detail);
  }

  /** Audits an update written as `after`, and tells the change hook; returns `after`. */
  private *recordUpdate(
    ctx: RequestContext,
    plan: UpdatePlan,
    after: Row,
    operation: string,
    detail?: Record<string, unknown>,
  ): Work<Row> {
    const changes = diffRecords(plan.before, after);
    this.releaseFiles(ctx, plan.before, after);
    yield* this.recordAudit(ctx, { operation, recordId: String(plan.id), changes, detail });
    yield* this.changed(ctx, 'update', plan.before, after);
    return after;
  }

  /**
   * The stored row, without access checks: for trusted code that has already decided. `lock`
   * holds it until the transaction ends (PostgreSQL's FOR UPDATE), for a re-read before a write.
   */
  *fetch(id: RecordKey, options: { lock?: boolean } = {}): Work<Row | undefined> {
    const key = recordKey(this.spec.idType, id);
    if (key === undefined) return undefined;
    const row = yield* get(options.lock ? this.sql.get + this.sql.lock : this.sql.get, [key]);
    return row && decodeRow(this.decoded, row);
  }

  /** Rows whose `field` equals `value`, without access checks (relation loading for conditions). */
  *fetchWhere(field: string, value: unknown, limit: number): Work<Row[]> {
    if (!this.byName.has(field)) return [];
    const rows = yield* all(`${this.sql.select} WHERE "${field}" = ? ORDER BY ${this.sql.orderBy} LIMIT ?`, [
      value,
      limit,
    ]);
    return rows.map((r) => decodeRow(this.decoded, r));
  }

  /**
   * Notes in `ctx.files` the stored files of `before` that `after` no longer holds (all of them
   * for a delete), for the caller to remove once the write commits (runtime/uploads).
   */
  private releaseFiles(ctx: RequestContext, before: Row, after: Row | null): void {
    if (!ctx.files) return;
    for (const name of this.fileFields) {
      const old = before[name];
      if (typeof old === 'string' && old !== after?.[name]) ctx.files.released.add(old);
    }
  }

  /**
   * Whether the actor may read a record whose field `field` holds `value`, and that field of it
   * (the download of an uploaded file): the entity's read filter on the rows, then the field's
   * read rule on each (a few rows: a stored file's name is unique).
   */
  *mayReadValue(ctx: RequestContext, field: string, value: string): Work<boolean> {
    if (!this.byName.has(field)) return false;
    let filter: RowFilter;
    try {
      filter = this.access.filter(ctx.actor, 'read');
    } catch (err) {
      // Refused whoever owns the record (no scope, no rule that can pass): the file is not theirs to read.
      if (err instanceof AppError) return false;
      throw err;
    }
    if (filter === false) return false;
    const where = filter === true ? '' : ` AND (${filter.sql})`;
    const params = filter === true ? [value] : [value, ...filter.params];
    const sql = `${this.sql.select} WHERE "${field}" = ?${where} ORDER BY ${this.sql.orderBy} LIMIT 10`;
    const rows = yield* all(sql, params);
    return rows.some((row) => this.present(ctx, decodeRow(this.decoded, row))[field] === value);
  }

  /** Whether a unique constraint holds `name` (alone or with others). */
  private readonly isUnique = (name: string): boolean => this.byName.get(name)?.unique === true;

  /**
   * Access.checkUniqueWrites for a write of `written`: on `record` as a create makes it, or, with
   * `values` (their stored forms), on `record` as an update of those fields leaves it.
   */
  private checkUniqueWrites(actor: Actor, written: readonly string[], record: Row, values?: readonly unknown[]): void {
    if (!this.access.hasFieldReadRules || !written.some(this.isUnique)) return;
    const after = values === undefined ? record : this.updates.withChanges(record, written, values);
    this.access.checkUniqueWrites(actor, written, this.isUnique, after);
  }

  private commandMayWrite(f: FieldSpec, command: CommandRef | undefined): boolean {
    if (!command || command.entity !== this.spec.name) return false;
    return f.commands === undefined || f.commands.includes(command.name);
  }

  /**
   * The record if it exists and passes the read filter; else 404, never revealing which. `lock`
   * holds the row until the transaction ends (see fetch).
   */
  *load(ctx: RequestContext, id: RecordKey, filter: RowFilter, options: { lock?: boolean } = {}): Work<Row> {
    const key = recordKey(this.spec.idType, id);
    if (key === undefined || filter === false) throw this.notFound(id);
    const { sql, params } = this.loadQuery(key, filter, options);
    const row = yield* get(sql, params);
    if (!row) throw this.notFound(id);
    return decodeRow(this.decoded, row);
  }

  /** The read of record `key` through `filter`, locked (see fetch) when asked. */
  private loadQuery(key: RecordKey, filter: Exclude<RowFilter, false>, options: { lock?: boolean }): Query {
    const lock = options.lock ? this.sql.lock : '';
    if (filter === true) return { mode: 'get', sql: this.sql.get + lock, params: [key] };
    return { mode: 'get', sql: `${this.sql.get} AND (${filter.sql})${lock}`, params: [key, ...filter.params] };
  }

  /** Tells the change hook, inside the write's unit of work. */
  private *changed(
    ctx: RequestContext,
    event: RecordChange['event'],
    before: Row | null,
    after: Row | null,
  ): Work<void> {
    if (this.onChange) yield* this.onChange(ctx, { entity: this.spec.name, event, before, after });
  }

  /**
   * `field = value` for each filter, values checked and stored as their field's (400 when one is
   * not). A filter on a field the actor may not read is refused, or held to records whose field
   * the actor may read (Access.comparableWhere): which records it returns must not tell the value.
   */
  /**
   * ORDER BY of declared fields (the generator checked them). A field the actor may never read is
   * refused like a filter on it, and the rows where a rule hides it are left out (`readable`):
   * else the order would tell its values.
   */
  private ordering(actor: Actor, orderBy: NonNullable<ListQuery['orderBy']>): { sql: string; readable: RowFilter } {
    const readable = this.access.comparableWhere(
      actor,
      orderBy.map((o) => o.field),
    );
    const keys = orderBy.map(({ field, direction }) => {
      if (!this.byName.has(field)) throw new Error(`${this.spec.name} has no field "${field}" to order by`);
      return `"${field}" ${direction === 'desc' ? 'DESC' : 'ASC'}`;
    });
    const primaryKey = this.spec.primaryKey;
    if (!orderBy.some((o) => o.field === primaryKey)) keys.push(`"${primaryKey}" ASC`);
    return { sql: keys.join(', '), readable };
  }

  private equalities(actor: Actor, where: NonNullable<ListQuery['where']>): { sql: string; params: unknown[] } {
    // Refused before the values are looked at: a 400 about a value is no answer about the field.
    const readable = this.access.comparableWhere(
      actor,
      where.map((w) => w.field),
    );
    const issues: ErrorDetail[] = [];
    const parts: string[] = [];
    const params: unknown[] = [];
    for (const { field, value } of where) {
      const f = this.byName.get(field);
      if (!f) {
        issues.push({ field, code: 'UNKNOWN_FIELD', message: `${this.spec.name} has no field "${field}"` });
      } else if (value === null) {
        parts.push(`"${field}" IS NULL`);
      } else {
        params.push(encodeField(f, value, issues));
        parts.push(`"${field}" = ?`);
      }
    }
    if (issues.length) throw validationError(issues);
    if (readable !== true && readable !== false) {
      parts.push(`(${readable.sql})`);
      params.push(...readable.params);
    }
    return { sql: parts.join(' AND '), params };
  }

  present(ctx: RequestContext, record: Row): Row {
    return this.access.hasFieldReadRules ? this.access.hideFields(ctx.actor, record) : record;
  }

  private *recordAudit(
    ctx: RequestContext,
    entry: Pick<AuditEntry, 'operation' | 'recordId' | 'changes' | 'detail'>,
  ): Work<void> {
    if (!this.audit) return;
    yield* this.audit.record({ ...correlation(ctx), entity: this.spec.name, ...entry });
  }

  private rejectUnknown(input: Row, issues: ErrorDetail[]): void {
    for (const key of Object.keys(input)) {
      if (!this.byName.has(key))
        issues.push({ field: key, code: 'UNKNOWN_FIELD', message: `${this.spec.name} has no field "${key}"` });
    }
  }

  private *checkRefs(params: Row, names: string[]): Work<void> {
    const missing: ErrorDetail[] = [];
    for (const name of names) {
      const ref = this.byName.get(name)?.ref;
      if (!ref || params[name] === null) continue;
      if (!(yield* get(ref.exists, [params[name]]))) {
        missing.push({
          field: name,
          code: 'REFERENCE_NOT_FOUND',
          message: `no ${ref.entity} with id ${JSON.stringify(params[name])}`,
        });
      }
    }
    if (missing.length)
      throw new AppError('REFERENCE_NOT_FOUND', missing.map((m) => m.message).join('; '), { details: missing });
  }

  /**
   * The id of a new record, or undefined when the database assigns it (Integer keys). Only a
   * Text id may come from the client; any other sent id is refused.
   */
  private newId(input: Row, now: Date, issues: ErrorDetail[]): RecordKey | undefined {
    const { primaryKey: name, idType } = this.spec;
    const sent = Object.prototype.hasOwnProperty.call(input, name);
    if (idType === 'Text' && sent) {
      const problem = keyProblem('Text', input[name]);
      if (problem) issues.push({ field: name, code: problem.code, message: `${name} ${problem.message}` });
      return input[name] as string;
    }
    if (sent) {
      const by = idType === 'Integer' ? 'assigned by the database' : 'generated by the server';
      issues.push({ field: name, code: 'READ_ONLY', message: `${name} is ${by}` });
    }
    if (idType === 'Integer') return undefined;
    return idType === 'UUID' ? uuid() : ulid(now.getTime());
  }

  private notFound(id: RecordKey): AppError {
    return new AppError('NOT_FOUND', `${this.spec.name} ${JSON.stringify(id)} not found`);
  }
}
