// The UPDATEs of one entity's records, as text, and how their answers read: the UPDATE of the
// changed fields (returning the row where the database makes part of it), the UPDATE that returns
// the row as it was too (PostgreSQL 18: it reads, locks and changes the row in one statement), and
// the one statement of a whole write, whose `WITH` clauses insert its audit record and its key's
// record from what the UPDATE returns. EntityStore (entity-store.ts) decides when each is used and
// runs the checks; what is here only builds statements and reads rows, so the texts are made once
// per shape and kept.

import type { AuditLog } from './audit.ts';
import { AppError } from '../core/errors.ts';
import { type Outcome, type Query, type RunResult, together, type Work } from './database.ts';
import type { RecordKey } from '../core/ids.ts';
import { decodeRow, type FieldSpec, keyAssignments, type Row } from './fields.ts';
import { KeyTaken, keyInsertSelecting, type WriteTail } from './idempotency-store.ts';
import { changesJson, recordJson } from './json-sql.ts';
import type { RowFilter } from '../rules/condition-sql.ts';

/** What the statements need of an entity and its database's SQL (EntitySpec, EntitySql). */
export interface UpdateTarget {
  /** The quoted table name. */
  table: string;
  primaryKey: string;
  fields: readonly FieldSpec[];
  byName: ReadonlyMap<string, FieldSpec>;
  /** Fields whose stored form differs from their JSON form, converted when read. */
  decoded: readonly FieldSpec[];
  /** The select list of a whole row, as RETURNING names it. */
  columns: string;
  /** EntitySql.rowFromValues: the database stores a row exactly as the values written. */
  rowFromValues: boolean;
}

/** A change from a body: the stored forms of the changed fields, in `changed` order, then their key columns'. */
export interface Draft {
  values: unknown[];
  changed: string[];
}

/** The parameters of the one statement's INSERTs: of the audit record, and of the key's record. */
export interface OneStatementWrites {
  audit?: unknown[];
  key?: unknown[];
}

/** Shapes of one-statement changes kept per entity: enough for every set of fields its routes and commands write. */
const MAX_ONE_STATEMENTS = 256;

/** `expression AS "name"`, an item of a select list. */
function selected([expression, name]: readonly [string, string]): string {
  return `${expression} AS "${name}"`;
}

export class EntityUpdates {
  /** The RETURNING clause of changeReturningOld, made at its first use. */
  private returningOldClause: string | undefined;
  /** The texts of changeInOneStatement's statements, by shape. */
  private readonly oneStatements = new Map<string, string>();
  /** returnedColumns, made at its first use. */
  private returnedColumnList: ReadonlyArray<readonly [string, string]> | undefined;

  constructor(
    private readonly target: UpdateTarget,
    private readonly audit?: AuditLog,
  ) {}

  /** The UPDATE of the `changed` columns only: one statement per distinct set of fields. */
  updateSql(changed: readonly string[]): string {
    const update = this.updateOf(changed);
    return this.target.rowFromValues ? update : `${update} RETURNING ${this.target.columns}`;
  }

  /**
   * The UPDATE of `draft` to record `key` through `filter` that returns the row as it was before
   * (columns by name) and, where the database makes part of the row (EntitySql.rowFromValues),
   * the row it left (each column as `new.<name>`): PostgreSQL 18 and later (Database.returningOld).
   * It waits for the row's lock as `FOR UPDATE` would, and a row another transaction changed
   * meanwhile is re-read and filtered again before it is changed, under READ COMMITTED as under
   * the lock: what it returns is the row it replaced.
   */
  changeReturningOld(key: RecordKey, filter: Exclude<RowFilter, false>, draft: Draft): Query {
    const where = filter === true ? '' : ` AND (${filter.sql})`;
    const columns = () => this.returnedColumns().map(selected).join(', ');
    const returning = (this.returningOldClause ??= `RETURNING WITH (OLD AS bp_old, NEW AS bp_new) ${columns()}`);
    return {
      mode: 'get',
      sql: `${this.updateOf(draft.changed)}${where} ${returning}`,
      params: [...draft.values, key, ...(filter === true ? [] : filter.params)],
    };
  }

  /**
   * The outcome of changeReturningOld as the two statements it stands for answer: the row as it
   * was, and the UPDATE's own answer (rows changed, or the row it left). A failure, or no row
   * (not found, thrown before the UPDATE's answer is read), answers for both.
   */
  splitOldAndNew(outcome: Outcome): [Outcome, Outcome] {
    if (!outcome.ok || !outcome.value) return [outcome, outcome];
    const row = outcome.value as Row;
    if (this.target.rowFromValues) return [outcome, { ok: true, value: { changes: 1 } }];
    const [before, after]: [Row, Row] = [{}, {}];
    for (const f of this.target.fields) {
      before[f.name] = row[f.name];
      after[f.name] = row[`new.${f.name}`];
    }
    return [
      { ok: true, value: before },
      { ok: true, value: after },
    ];
  }

  /**
   * The change of record `key` through `where` as the unit's one statement, committed on its own
   * (Query.commitsAlone; PostgreSQL 18, whose UPDATE returns the row as it was): the UPDATE, which
   * returns the row as it was and as it is, with its audit record and the key's record
   * (`tail.key`) written from what it returns, their JSON made by PostgreSQL with the API's values
   * (data/json-sql.ts). `where` holds the caller's checks, so that a row they refuse is not
   * changed. Returns the row as changed, `tail.done` set; undefined when the statement changed
   * nothing (no such record, or a check refused): the caller then takes the plain path, which says
   * why.
   */
  *changeInOneStatement(
    key: RecordKey,
    where: Exclude<RowFilter, false>,
    draft: Draft,
    writes: OneStatementWrites,
    tail: WriteTail,
  ): Work<Row | undefined> {
    const { audit, key: kept } = writes;
    const params = [...draft.values, key, ...(where === true ? [] : where.params), ...(audit ?? []), ...(kept ?? [])];
    // The text is made once per shape: the same text each time also spares hashing it anew.
    const shape = `${draft.changed.join(',')}\0${where === true ? '' : where.sql}\0${audit ? 1 : 0}${kept ? 1 : 0}`;
    let sql = this.oneStatements.get(shape);
    if (sql === undefined) {
      sql = this.oneStatementSql(draft.changed, where, { audit: audit !== undefined, key: kept !== undefined });
      if (this.oneStatements.size < MAX_ONE_STATEMENTS) this.oneStatements.set(shape, sql);
    }
    const [outcome] = yield* together({ mode: 'get', sql, params, commitsAlone: true });
    if (!outcome.ok) {
      // No unique field changes: a unique constraint refusing the statement is the key's row.
      const conflict = outcome.failure instanceof AppError && outcome.failure.code === 'UNIQUE_CONFLICT';
      throw tail.key && conflict ? new KeyTaken() : outcome.failure;
    }
    if (!outcome.value) return undefined;
    tail.done = true;
    const [loaded, updated] = this.splitOldAndNew(outcome) as Array<{ value: unknown }>;
    const before = decodeRow(this.target.decoded, loaded.value as Row);
    return this.rowAfter(before, draft.changed, draft.values, updated.value) as Row;
  }

  /**
   * The row an UPDATE setting `changed` to `values` left, undefined when it changed none: where
   * the database stores a row exactly as written (EntitySql.rowFromValues), `before` (the row as
   * locked) with the values; else the row the UPDATE returned.
   */
  rowAfter(before: Row, changed: readonly string[], values: readonly unknown[], result: unknown): Row | undefined {
    if (!this.target.rowFromValues) return result ? decodeRow(this.target.decoded, result as Row) : undefined;
    if ((result as RunResult).changes === 0) return undefined;
    return this.withChanges(before, changed, values);
  }

  /** `before` with `changed` set to `values` (their stored forms), as the API reads a row. */
  withChanges(before: Row, changed: readonly string[], values: readonly unknown[]): Row {
    const stored: Row = {};
    changed.forEach((name, i) => (stored[name] = values[i]));
    return { ...before, ...decodeRow(this.target.decoded, stored) };
  }

  /** The text of changeInOneStatement's statement: the UPDATE, then the INSERTs of the audit and key records. */
  private oneStatementSql(
    changed: readonly string[],
    where: Exclude<RowFilter, false>,
    writes: { audit: boolean; key: boolean },
  ): string {
    const fields = this.target.fields;
    const returning = [
      ...this.returnedColumns().map(selected),
      `${changesJson(fields, new Set(changed), 'bp_old', 'bp_new')} AS "bp_changes"`,
      `${recordJson(fields, 'bp_new')} AS "bp_body"`,
    ];
    const clauses = [
      `bp_u AS (${this.updateOf(changed)}${where === true ? '' : ` AND (${where.sql})`} ` +
        `RETURNING WITH (OLD AS bp_old, NEW AS bp_new) ${returning.join(', ')})`,
    ];
    if (writes.audit && this.audit) clauses.push(`bp_audit AS (${this.audit.insertSelecting('bp_u', 'bp_changes')})`);
    if (writes.key) clauses.push(`bp_key AS (${keyInsertSelecting('bp_u', 'bp_body')})`);
    const row = this.returnedColumns().map(([, name]) => `"${name}"`);
    return `WITH ${clauses.join(', ')} SELECT ${row.join(', ')} FROM bp_u`;
  }

  /**
   * What an UPDATE returning the row as it was returns (splitOldAndNew reads it), as
   * [expression, name]: each column as it was, by its name; where the database makes part of the
   * row (EntitySql.rowFromValues), each as it is too, as `new.<name>`.
   */
  private returnedColumns(): ReadonlyArray<readonly [string, string]> {
    const { fields, rowFromValues } = this.target;
    return (this.returnedColumnList ??= [
      ...fields.map((f) => [`bp_old."${f.name}"`, f.name] as const),
      ...(rowFromValues ? [] : fields.map((f) => [`bp_new."${f.name}"`, `new.${f.name}`] as const)),
    ]);
  }

  /** `UPDATE <table> SET <field> = ?, ... WHERE <primary key> = ?`: how every change of a row starts. */
  private updateOf(changed: readonly string[]): string {
    const { byName, table, primaryKey } = this.target;
    const assignments = [...changed.map((name) => `"${name}" = ?`), ...keyAssignments(byName, changed)].join(', ');
    return `UPDATE ${table} SET ${assignments} WHERE "${primaryKey}" = ?`;
  }
}
