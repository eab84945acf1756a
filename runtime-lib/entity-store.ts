// Data access for one entity: validation of request bodies against the declared fields, and the
// SQL the generator wrote for this entity (prepared once, run through traced `query`).

import { Access, type AccessPolicy } from './access.ts';
import { type AuditLog, diffRecords } from './audit.ts';
import type { Actor } from './actor.ts';
import type { RowFilter } from './condition-sql.ts';
import { AppError, type ErrorDetail } from './errors.ts';
import { atomically, type Db, query, type Statement } from './db.ts';
import { ulid, uuid, ULID_PATTERN, UUID_PATTERN } from './ids.ts';
import type { ActiveTrace } from './tracing.ts';

export type FieldType =
  | 'ULID' | 'UUID' | 'Text' | 'LongText' | 'Email' | 'Integer' | 'Float' | 'Boolean' | 'Date' | 'DateTime' | 'JSON' | 'Enum' | 'Ref' | 'file';

export interface FieldSpec {
  name: string;
  type: FieldType;
  required: boolean;
  nullable: boolean;
  primaryKey?: true;
  commandOnly?: true;
  /** Commands allowed to write this command-only field; absent: any command of the entity. */
  commands?: readonly string[];
  default?: { now: true } | { value: unknown };
  values?: readonly string[];
  /** For Ref fields: the target and the generated existence query. */
  ref?: { entity: string; idType: FieldType; exists: string };
}

export interface EntitySpec {
  name: string;
  collection: string;
  primaryKey: string;
  idType: 'ULID' | 'UUID';
  fields: readonly FieldSpec[];
  /** `select` and `orderBy` compose the row-filtered variants of get and list; `table` and `columns` the updates of the changed fields. */
  sql: { table: string; columns: string; select: string; orderBy: string; get: string; list: string; insert: string; delete: string };
  access: AccessPolicy;
}

/** Who is asking, where to record spans, and the ids that tie a change to its request. */
export interface RequestContext {
  actor: Actor;
  trace?: ActiveTrace;
  agentRunId?: string;
  idempotencyKey?: string;
  /** The established session's id (runtime/http.ts RequestState.sessionId). */
  sessionId?: string;
}

export interface UpdatePlan {
  id: string;
  before: Row;
  /** Stored forms of the changed fields, in `changed` order. */
  values: unknown[];
  changed: string[];
}

function correlation(ctx: RequestContext): { actor: Actor; traceId?: string; agentRunId?: string; idempotencyKey?: string } {
  return { actor: ctx.actor, traceId: ctx.trace?.traceId, agentRunId: ctx.agentRunId, idempotencyKey: ctx.idempotencyKey };
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

export type Row = Record<string, unknown>;

export const LIST_DEFAULT_LIMIT = 100;
export const LIST_MAX_LIMIT = 1000;
/** Keys that could reach or replace an object's prototype: refused wherever they appear. */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

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
    this.access = new Access(spec.access, new Map(spec.fields.map((f) => [f.name, f.type])));
  }

  get(ctx: RequestContext, id: string): Row {
    return this.present(ctx, this.load(ctx, id, this.access.filter(ctx.actor, 'read')));
  }

  list(ctx: RequestContext, q: ListQuery): ListResult<Row> {
    const filter = this.access.filter(ctx.actor, 'read');
    // One row more than asked tells whether another page exists, without a COUNT(*).
    const rows =
      filter === true
        ? query(ctx.trace, this.stmt.list, 'all', [q.limit + 1, q.offset])
        : query(ctx.trace, this.statementFor(`${this.spec.sql.select} WHERE ${(filter as { sql: string }).sql} ORDER BY ${this.spec.sql.orderBy} LIMIT ? OFFSET ?`), 'all', [
            ...(filter as { params: unknown[] }).params,
            q.limit + 1,
            q.offset,
          ]);
    const hasMore = rows.length > q.limit;
    if (hasMore) rows.pop();
    return { items: rows.map((r) => this.present(ctx, this.decode(r))), limit: q.limit, offset: q.offset, hasMore };
  }

  create(ctx: RequestContext, body: unknown): Row {
    const { trace, actor } = ctx;
    const input = this.checkBody(body);
    const protectedKeys = Object.keys(input).filter((k) => this.byName.get(k)?.commandOnly);
    if (protectedKeys.length) throw protectedError(protectedKeys);
    const issues: ErrorDetail[] = [];
    const params: Row = {};
    const now = new Date();
    for (const f of this.spec.fields) {
      if (f.primaryKey) {
        if (Object.prototype.hasOwnProperty.call(input, f.name)) issues.push({ field: f.name, code: 'READ_ONLY', message: `${f.name} is generated by the server` });
        params[f.name] = f.type === 'UUID' ? uuid() : ulid(now.getTime());
        continue;
      }
      let value = Object.prototype.hasOwnProperty.call(input, f.name) ? input[f.name] : undefined;
      if (value === undefined && f.default) value = 'now' in f.default ? defaultNow(f, now) : f.default.value;
      if (value === undefined || value === null) {
        if (f.required || (value === null && !f.nullable)) issues.push({ field: f.name, code: 'REQUIRED', message: `${f.name} is required` });
        params[f.name] = null;
        continue;
      }
      params[f.name] = this.encodeField(f, value, issues);
    }
    this.rejectUnknown(input, issues);
    if (issues.length) throw validationError(issues);
    const candidate = this.decode({ ...params });
    this.access.check(actor, 'create', candidate);
    this.access.checkFieldWrites(actor, Object.keys(input), candidate);
    return atomically(this.db, () => {
      this.checkRefs(trace, params, Object.keys(params));
      const created = this.decode(query(trace, this.stmt.insert, 'get', params) as Row);
      const recordId = created[this.spec.primaryKey] as string;
      this.audit?.record(trace, { ...correlation(ctx), operation: `${this.spec.name}.create`, entity: this.spec.name, recordId, changes: diffRecords(null, created) });
      return this.present(ctx, { ...created });
    });
  }

  update(ctx: RequestContext, id: string, body: unknown): Row {
    return atomically(this.db, () => {
      this.access.requireScopes(ctx.actor, 'update');
      const current = this.load(ctx, id, this.access.filter(ctx.actor, 'read'));
      this.access.check(ctx.actor, 'update', current);
      const plan = this.planUpdate(ctx, current, body, { checkFieldRules: true });
      return this.present(ctx, this.applyUpdate(ctx, plan, `${this.spec.name}.update`));
    });
  }

  delete(ctx: RequestContext, id: string): void {
    atomically(this.db, () => {
      this.access.requireScopes(ctx.actor, 'delete');
      const current = this.load(ctx, id, this.access.filter(ctx.actor, 'read'));
      this.access.check(ctx.actor, 'delete', current);
      const result = query(ctx.trace, this.stmt.delete, 'run', [id]);
      if (result.changes === 0) throw this.notFound(id);
      this.audit?.record(ctx.trace, { ...correlation(ctx), operation: `${this.spec.name}.delete`, entity: this.spec.name, recordId: id, changes: diffRecords(current, null) });
    });
  }

  /**
   * Validates a change to `current` and returns what to write. Writes to command-only fields
   * are refused unless `command` is allowed to make them; sending one back unchanged (a
   * GET-then-PUT round trip) writes nothing.
   */
  planUpdate(ctx: RequestContext, current: Row, body: unknown, options: { command?: { name: string; entity: string }; checkFieldRules: boolean }): UpdatePlan {
    const input = this.checkBody(body);
    const id = current[this.spec.primaryKey] as string;
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
      values.push(this.encodeField(f, value, issues));
      changed.push(f.name);
    }
    this.rejectUnknown(input, issues);
    if (issues.length) throw validationError(issues);
    if (options.checkFieldRules) this.access.checkFieldWrites(ctx.actor, changed, current);
    return { id, before: current, values, changed };
  }

  /** Writes a planned change (inside the caller's transaction) and audits it; returns the new row. */
  applyUpdate(ctx: RequestContext, plan: UpdatePlan, operation: string, detail?: Record<string, unknown>): Row {
    if (plan.changed.length === 0 && !detail) return plan.before;
    let after = plan.before;
    if (plan.changed.length) {
      this.checkRefs(ctx.trace, Object.fromEntries(plan.changed.map((name, i) => [name, plan.values[i]])), plan.changed);
      // Only the changed columns: one statement per distinct set of fields, prepared once.
      const sql = `UPDATE ${this.spec.sql.table} SET ${plan.changed.map((name) => `"${name}" = ?`).join(', ')} WHERE "${this.spec.primaryKey}" = ? RETURNING ${this.spec.sql.columns}`;
      const row = query(ctx.trace, this.statementFor(sql), 'get', [...plan.values, plan.id]);
      if (!row) throw this.notFound(plan.id);
      after = this.decode(row);
    }
    this.audit?.record(ctx.trace, { ...correlation(ctx), operation, entity: this.spec.name, recordId: plan.id, changes: diffRecords(plan.before, after), detail });
    return after;
  }

  /** The stored row, without access checks: for trusted code that has already decided. */
  fetch(trace: ActiveTrace | undefined, id: string): Row | undefined {
    const row = query(trace, this.stmt.get, 'get', [id]);
    return row && this.decode(row);
  }

  /** Rows whose `field` equals `value`, without access checks (relation loading for conditions). */
  fetchWhere(trace: ActiveTrace | undefined, field: string, value: unknown, limit: number): Row[] {
    if (!this.byName.has(field)) return [];
    const rows = query(trace, this.statementFor(`${this.spec.sql.select} WHERE "${field}" = ? ORDER BY ${this.spec.sql.orderBy} LIMIT ?`), 'all', [value, limit]);
    return rows.map((r) => this.decode(r));
  }

  private commandMayWrite(f: FieldSpec, command: { name: string; entity: string } | undefined): boolean {
    if (!command || command.entity !== this.spec.name) return false;
    return f.commands === undefined || f.commands.includes(command.name);
  }

  /** The record if it exists and passes the read filter; else 404, never revealing which. */
  load(ctx: RequestContext, id: string, filter: RowFilter): Row {
    const row =
      filter === true
        ? query(ctx.trace, this.stmt.get, 'get', [id])
        : query(ctx.trace, this.statementFor(`${this.spec.sql.get} AND (${(filter as { sql: string }).sql})`), 'get', [id, ...(filter as { params: unknown[] }).params]);
    if (!row) throw this.notFound(id);
    return this.decode(row);
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

  checkBody(body: unknown): Row {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw validationError([{ code: 'NOT_AN_OBJECT', message: 'the body must be a JSON object' }]);
    }
    const forbidden = Object.keys(body).filter((k) => PROTOTYPE_KEYS.has(k));
    if (forbidden.length) {
      throw validationError(forbidden.map((k) => ({ field: k, code: 'FORBIDDEN_KEY', message: `"${k}" is not allowed` })));
    }
    return body as Row;
  }

  private rejectUnknown(input: Row, issues: ErrorDetail[]): void {
    for (const key of Object.keys(input)) {
      if (!this.byName.has(key)) issues.push({ field: key, code: 'UNKNOWN_FIELD', message: `${this.spec.name} has no field "${key}"` });
    }
  }

  private checkRefs(trace: ActiveTrace | undefined, params: Row, names: string[]): void {
    const missing: ErrorDetail[] = [];
    for (const name of names) {
      const stmt = this.refExists.get(name);
      if (!stmt || params[name] === null) continue;
      if (!query(trace, stmt, 'get', [params[name]])) {
        const target = this.byName.get(name)?.ref?.entity;
        missing.push({ field: name, code: 'REFERENCE_NOT_FOUND', message: `no ${target} with id ${JSON.stringify(params[name])}` });
      }
    }
    if (missing.length) throw new AppError('REFERENCE_NOT_FOUND', missing.map((m) => m.message).join('; '), { details: missing });
  }

  /** Checks one value against its field and returns the form stored in SQLite. */
  private encodeField(f: FieldSpec, value: unknown, issues: ErrorDetail[]): unknown {
    const before = issues.length;
    const normalized = normalizeValue(f, value, issues);
    if (issues.length > before) return null;
    if (f.type === 'Boolean') return normalized ? 1 : 0;
    if (f.type === 'JSON') return JSON.stringify(normalized);
    if (f.type === 'DateTime') return storedDateTime(new Date(normalized as string));
    return normalized;
  }

  private decode(row: Row): Row {
    for (const f of this.decoded) {
      const v = row[f.name];
      if (v === null || v === undefined) continue;
      if (f.type === 'Boolean') row[f.name] = v === 1;
      else if (f.type === 'JSON') row[f.name] = JSON.parse(v as string);
      // Prisma's stored form, 2026-01-02T03:04:05.678+00:00, is toISOString() with another suffix.
      else if (typeof v === 'string' && v.length === 29 && v.endsWith('+00:00')) row[f.name] = `${v.slice(0, 23)}Z`;
      else row[f.name] = new Date(v as string | number).toISOString();
    }
    return row;
  }

  private notFound(id: string): AppError {
    return new AppError('NOT_FOUND', `${this.spec.name} ${JSON.stringify(id)} not found`);
  }
}

/** Parses `limit` and `offset`; anything else, or a bad value, is a 400 rather than a guess. */
export function parseListQuery(q: Record<string, unknown>): ListQuery {
  const issues: ErrorDetail[] = [];
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = q[name];
    if (raw === undefined) return fallback;
    if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      issues.push({ field: name, code: 'OUT_OF_RANGE', message: `${name} must be an integer from ${min} to ${max}` });
      return fallback;
    }
    return Number(raw);
  };
  const result = { limit: int('limit', LIST_DEFAULT_LIMIT, 1, LIST_MAX_LIMIT), offset: int('offset', 0, 0, Number.MAX_SAFE_INTEGER) };
  for (const key of Object.keys(q)) {
    if (key !== 'limit' && key !== 'offset') issues.push({ field: key, code: 'UNKNOWN_PARAMETER', message: `unknown query parameter "${key}"` });
  }
  if (issues.length) throw new AppError('INVALID_QUERY', issues.map((i) => i.message).join('; '), { details: issues });
  return result;
}

/**
 * Checks a JSON value against a field (or command input) declaration and returns it in its
 * canonical JSON form (date-times as toISOString); problems are added to `issues`.
 */
export function normalizeValue(f: Pick<FieldSpec, 'name' | 'type' | 'values' | 'ref'>, value: unknown, issues: ErrorDetail[]): unknown {
  const bad = (message: string) => {
    issues.push({ field: f.name, code: 'INVALID_TYPE', message: `${f.name} ${message}` });
    return null;
  };
  switch (f.type) {
    case 'Text':
    case 'LongText':
    case 'file':
      return typeof value === 'string' ? value : bad('must be a string');
    case 'Email':
      return typeof value === 'string' && value.length <= 254 && EMAIL.test(value) ? value : bad('must be an e-mail address');
    case 'Integer':
      return Number.isSafeInteger(value) ? value : bad('must be an integer');
    case 'Float':
      return typeof value === 'number' && Number.isFinite(value) ? value : bad('must be a number');
    case 'Boolean':
      return typeof value === 'boolean' ? value : bad('must be true or false');
    case 'Date':
      return typeof value === 'string' && isCalendarDate(value) ? value : bad('must be a date (YYYY-MM-DD)');
    case 'DateTime':
      return typeof value === 'string' && DATE_TIME.test(value) && !Number.isNaN(Date.parse(value))
        ? new Date(value).toISOString()
        : bad('must be an ISO 8601 date-time with a time zone');
    case 'JSON':
      return value;
    case 'Enum':
      return typeof value === 'string' && f.values?.includes(value) ? value : bad(`must be one of ${f.values?.join(', ')}`);
    case 'ULID':
      return typeof value === 'string' && ULID_PATTERN.test(value) ? value : bad('must be a ULID');
    case 'UUID':
      return typeof value === 'string' && UUID_PATTERN.test(value) ? value : bad('must be a UUID');
    case 'Ref': {
      if (typeof value !== 'string') return bad('must be a record id (string)');
      const pattern = f.ref?.idType === 'ULID' ? ULID_PATTERN : f.ref?.idType === 'UUID' ? UUID_PATTERN : undefined;
      return !pattern || pattern.test(value) ? value : bad(`must be a ${f.ref?.idType}`);
    }
  }
}

function defaultNow(f: FieldSpec, now: Date): string {
  return f.type === 'Date' ? now.toISOString().slice(0, 10) : now.toISOString();
}

/** Prisma's SQLite adapter stores DateTime as ISO 8601 with "+00:00"; keep that so both agree. */
function storedDateTime(d: Date): string {
  return d.toISOString().replace('Z', '+00:00');
}

function isCalendarDate(s: string): boolean {
  const m = DATE.exec(s);
  if (!m) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() + 1 === Number(m[2]) && d.getUTCDate() === Number(m[3]);
}

export function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === 'object' && typeof b === 'object' && JSON.stringify(a) === JSON.stringify(b));
}

export function validationError(details: ErrorDetail[]): AppError {
  return new AppError('VALIDATION_FAILED', details.map((d) => d.message).join('; '), { details });
}

function protectedError(fields: string[]): AppError {
  return new AppError('PROTECTED_FIELD_MUTATION', `${fields.join(', ')} can be changed only through commands`, {
    details: fields.map((field) => ({ field, code: 'COMMAND_ONLY', message: `${field} is command-only` })),
  });
}
