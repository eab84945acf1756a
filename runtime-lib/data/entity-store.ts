// Data access for one entity: its records read and written through the SQL the generator wrote
// (prepared once, run through traced `query`), with the access rules and field checks applied.

import { Access, type AccessPolicy } from '../rules/access.ts';
import { type AuditLog, diffRecords } from './audit.ts';
import type { Actor } from '../core/actor.ts';
import type { RowFilter } from '../rules/condition-sql.ts';
import { AppError, type ErrorDetail } from '../core/errors.ts';
import { atomically, type Db, query, type Statement } from './db.ts';
import { keyProblem, type KeyType, recordKey, type RecordKey, ulid, uuid } from '../core/ids.ts';
import {
  checkBody,
  decodeRow,
  defaultNow,
  encodeField,
  type FieldSpec,
  protectedError,
  type Row,
  sameValue,
  validationError,
} from './fields.ts';
import type { ActiveTrace } from '../observe/tracing.ts';

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
  /**
   * `select` and `orderBy` compose the row-filtered variants of get and list; `table` and
   * `columns` the updates of the changed fields.
   */
  sql: {
    table: string;
    columns: string;
    select: string;
    orderBy: string;
    get: string;
    list: string;
    insert: string;
    delete: string;
  };
  access: AccessPolicy;
}

/** Who is asking, where to record spans, and the ids that tie a change to its request. */
export interface RequestContext {
  actor: Actor;
  trace?: ActiveTrace;
  agentRunId?: string;
  idempotencyKey?: string;
  /** An anonymous caller's proven scope (http/request.ts RequestState.sessionId). */
  sessionId?: string;
}

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
}

export interface ListResult<T> {
  items: T[];
  limit: number;
  offset: number;
  hasMore: boolean;
}

export class EntityStore {
  private readonly stmt: Record<'get' | 'list' | 'insert' | 'delete', Statement>;
  /** Statements for row filters, by SQL text: one per distinct rule shape, bounded. */
  private readonly filtered = new Map<string, Statement>();
  readonly access: Access;
  private readonly refExists = new Map<string, Statement>();
  private readonly byName = new Map<string, FieldSpec>();
  /** Only fields whose stored form differs from their JSON form are converted when read. */
  private readonly decoded: FieldSpec[];

  constructor(
    private readonly db: Db,
    readonly spec: EntitySpec,
    private readonly audit?: AuditLog,
  ) {
    this.stmt = {
      get: db.prepare(spec.sql.get),
      list: db.prepare(spec.sql.list),
      insert: db.prepare(spec.sql.insert),
      delete: db.prepare(spec.sql.delete),
    };
    for (const f of spec.fields) {
      this.byName.set(f.name, f);
      if (f.ref) this.refExists.set(f.name, db.prepare(f.ref.exists));
    }
    this.decoded = spec.fields.filter((f) => f.type === 'Boolean' || f.type === 'JSON' || f.type === 'DateTime');
    // A Ref to an Integer key holds numbers: its conditions compare as the Integer column it is.
    const columnType = (f: FieldSpec) => (f.type === 'Ref' && f.ref?.idType === 'Integer' ? 'Integer' : f.type);
    this.access = new Access(spec.access, new Map(spec.fields.map((f) => [f.name, columnType(f)])));
  }

  /** Reads one record by the id a route or handler names (a string, or a number for Integer keys). */
  get(ctx: RequestContext, id: RecordKey): Row {
    return this.present(ctx, this.load(ctx, id, this.access.filter(ctx.actor, 'read')));
  }

  list(ctx: RequestContext, q: ListQuery): ListResult<Row> {
    const filter = this.access.filter(ctx.actor, 'read');
    // One row more than asked tells whether another page exists, without a COUNT(*).
    const rows =
      filter === true
        ? query(ctx.trace, this.stmt.list, 'all', [q.limit + 1, q.offset])
        : query(
            ctx.trace,
            this.statementFor(
              `${this.spec.sql.select} WHERE ${(filter as { sql: string }).sql} ` +
                `ORDER BY ${this.spec.sql.orderBy} LIMIT ? OFFSET ?`,
            ),
            'all',
            [...(filter as { params: unknown[] }).params, q.limit + 1, q.offset],
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
  create(ctx: RequestContext, body: unknown, options: { rowRules?: boolean } = {}): Row {
    const { trace, actor } = ctx;
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
    if (issues.length) throw validationError(issues);
    const candidate = decodeRow(this.decoded, { ...params });
    const rowRules = options.rowRules !== false;
    if (rowRules) this.access.check(actor, 'create', candidate);
    this.access.checkFieldWrites(actor, Object.keys(input), candidate);
    if (rowRules) this.access.checkWrite(actor, null, candidate, Object.keys(input));
    return atomically(this.db, () => {
      this.checkRefs(trace, params, Object.keys(params));
      const created = decodeRow(this.decoded, query(trace, this.stmt.insert, 'get', params) as Row);
      const recordId = String(created[this.spec.primaryKey]);
      this.audit?.record(trace, {
        ...correlation(ctx),
        operation: `${this.spec.name}.create`,
        entity: this.spec.name,
        recordId,
        changes: diffRecords(null, created),
      });
      return this.present(ctx, { ...created });
    });
  }

  update(ctx: RequestContext, id: RecordKey, body: unknown): Row {
    return atomically(this.db, () => {
      this.access.requireScopes(ctx.actor, 'update');
      const current = this.load(ctx, id, this.access.filter(ctx.actor, 'read'));
      this.access.check(ctx.actor, 'update', current);
      const plan = this.planUpdate(ctx, current, body, { checkFieldRules: true });
      this.checkRowRules(ctx, plan);
      return this.present(ctx, this.applyUpdate(ctx, plan, `${this.spec.name}.update`));
    });
  }

  delete(ctx: RequestContext, id: RecordKey): void {
    atomically(this.db, () => {
      this.access.requireScopes(ctx.actor, 'delete');
      const current = this.load(ctx, id, this.access.filter(ctx.actor, 'read'));
      this.access.check(ctx.actor, 'delete', current);
      const key = current[this.spec.primaryKey] as RecordKey;
      const result = query(ctx.trace, this.stmt.delete, 'run', [key]);
      if (result.changes === 0) throw this.notFound(id);
      this.audit?.record(ctx.trace, {
        ...correlation(ctx),
        operation: `${this.spec.name}.delete`,
        entity: this.spec.name,
        recordId: String(key),
        changes: diffRecords(current, null),
      });
    });
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
    options: { command?: { name: string; entity: string }; checkFieldRules: boolean },
  ): UpdatePlan {
    const input = checkBody(body);
    const id = current[this.spec.primaryKey] as RecordKey;
    const protectedKeys = Object.keys(input).filter((k) => {
      const f = this.byName.get(k);
      return f?.commandOnly && !sameValue(current[k], input[k]) && !this.commandMayWrite(f, options.command);
    });
    if (protectedKeys.length) throw protectedError(protectedKeys);
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
      if (f.commandOnly && !this.commandMayWrite(f, options.command)) continue;
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
    if (issues.length) throw validationError(issues);
    if (options.checkFieldRules) this.access.checkFieldWrites(ctx.actor, changed, current);
    return { id, before: current, values, changed };
  }

  /**
   * Holds the row rules for the record as `plan` leaves it (Access.checkWrite): for the actor's
   * own writes, not for a command's declared mutations, which its `policy` governs.
   */
  checkRowRules(ctx: RequestContext, plan: UpdatePlan): void {
    if (plan.changed.length === 0) return;
    const stored: Row = {};
    plan.changed.forEach((name, i) => (stored[name] = plan.values[i]));
    const after = { ...plan.before, ...decodeRow(this.decoded, stored) };
    this.access.checkWrite(ctx.actor, plan.before, after, plan.changed);
  }

  /** Writes a planned change (inside the caller's transaction) and audits it; returns the new row. */
  applyUpdate(ctx: RequestContext, plan: UpdatePlan, operation: string, detail?: Record<string, unknown>): Row {
    if (plan.changed.length === 0 && !detail) return plan.before;
    let after = plan.before;
    if (plan.changed.length) {
      this.checkRefs(
        ctx.trace,
        Object.fromEntries(plan.changed.map((name, i) => [name, plan.values[i]])),
        plan.changed,
      );
      // Only the changed columns: one statement per distinct set of fields, prepared once.
      const assignments = plan.changed.map((name) => `"${name}" = ?`).join(', ');
      const { table, columns } = this.spec.sql;
      const sql = `UPDATE ${table} SET ${assignments} WHERE "${this.spec.primaryKey}" = ? RETURNING ${columns}`;
      const row = query(ctx.trace, this.statementFor(sql), 'get', [...plan.values, plan.id]);
      if (!row) throw this.notFound(plan.id);
      after = decodeRow(this.decoded, row);
    }
    this.audit?.record(ctx.trace, {
      ...correlation(ctx),
      operation,
      entity: this.spec.name,
      recordId: String(plan.id),
      changes: diffRecords(plan.before, after),
      detail,
    });
    return after;
  }

  /** The stored row, without access checks: for trusted code that has already decided. */
  fetch(trace: ActiveTrace | undefined, id: RecordKey): Row | undefined {
    const key = recordKey(this.spec.idType, id);
    if (key === undefined) return undefined;
    const row = query(trace, this.stmt.get, 'get', [key]);
    return row && decodeRow(this.decoded, row);
  }

  /** Rows whose `field` equals `value`, without access checks (relation loading for conditions). */
  fetchWhere(trace: ActiveTrace | undefined, field: string, value: unknown, limit: number): Row[] {
    if (!this.byName.has(field)) return [];
    const rows = query(
      trace,
      this.statementFor(`${this.spec.sql.select} WHERE "${field}" = ? ORDER BY ${this.spec.sql.orderBy} LIMIT ?`),
      'all',
      [value, limit],
    );
    return rows.map((r) => decodeRow(this.decoded, r));
  }

  private commandMayWrite(f: FieldSpec, command: { name: string; entity: string } | undefined): boolean {
    if (!command || command.entity !== this.spec.name) return false;
    return f.commands === undefined || f.commands.includes(command.name);
  }

  /** The record if it exists and passes the read filter; else 404, never revealing which. */
  load(ctx: RequestContext, id: RecordKey, filter: RowFilter): Row {
    const key = recordKey(this.spec.idType, id);
    if (key === undefined) throw this.notFound(id);
    const row =
      filter === true
        ? query(ctx.trace, this.stmt.get, 'get', [key])
        : query(ctx.trace, this.statementFor(`${this.spec.sql.get} AND (${(filter as { sql: string }).sql})`), 'get', [
            key,
            ...(filter as { params: unknown[] }).params,
          ]);
    if (!row) throw this.notFound(id);
    return decodeRow(this.decoded, row);
  }

  present(ctx: RequestContext, record: Row): Row {
    return this.access.hasFieldReadRules ? this.access.hideFields(ctx.actor, record) : record;
  }

  private statementFor(sql: string): Statement {
    let stmt = this.filtered.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      // Distinct filters come from distinct actor values inlined as parameters, not SQL, so the
      // map stays small; the bound guards against a rule shape that varies per actor.
      if (this.filtered.size >= 256) this.filtered.delete(this.filtered.keys().next().value as string);
      this.filtered.set(sql, stmt);
    }
    return stmt;
  }

  private rejectUnknown(input: Row, issues: ErrorDetail[]): void {
    for (const key of Object.keys(input)) {
      if (!this.byName.has(key))
        issues.push({ field: key, code: 'UNKNOWN_FIELD', message: `${this.spec.name} has no field "${key}"` });
    }
  }

  private checkRefs(trace: ActiveTrace | undefined, params: Row, names: string[]): void {
    const missing: ErrorDetail[] = [];
    for (const name of names) {
      const stmt = this.refExists.get(name);
      if (!stmt || params[name] === null) continue;
      if (!query(trace, stmt, 'get', [params[name]])) {
        const target = this.byName.get(name)?.ref?.entity;
        missing.push({
          field: name,
          code: 'REFERENCE_NOT_FOUND',
          message: `no ${target} with id ${JSON.stringify(params[name])}`,
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
