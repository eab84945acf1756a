// Audit records: one per executed command and per entity write, in the app's database, with
// who (actor, credential, delegator, agent run), what (operation, entity, record, fields before
// and after) and the correlation ids (idempotency key, trace id).

import type { Actor } from '../core/actor.ts';
import { all, later, type Work } from './database.ts';
import { ulid } from '../core/ids.ts';

export interface AuditEntry {
  operation: string;
  entity: string;
  recordId: string;
  actor: Actor;
  agentRunId?: string;
  idempotencyKey?: string;
  traceId?: string;
  /** Changed fields only: name -> { before, after }. */
  changes: Record<string, { before: unknown; after: unknown }>;
  /** Extra facts a command handler records (ctx.audit.record). */
  detail?: Record<string, unknown>;
}

export interface AuditRecord {
  id: string;
  at: string;
  operation: string;
  entity: string;
  recordId: string;
  actorId: string;
  credentialId: string | null;
  delegatedBy: string | null;
  agentRunId: string | null;
  idempotencyKey: string | null;
  traceId: string | null;
  changes: Record<string, { before: unknown; after: unknown }>;
  detail: Record<string, unknown> | null;
}

const NAMES = [
  'id',
  'at',
  'operation',
  'entity',
  'recordId',
  'actorId',
  'credentialId',
  'delegatedBy',
  'agentRunId',
  'idempotencyKey',
  'traceId',
  'changes',
  'detail',
];
const COLUMNS = NAMES.map((n) => `"${n}"`).join(', ');

export class AuditLog {
  private readonly insert = `INSERT INTO "_bp_audit" (${COLUMNS}) VALUES (${NAMES.map(() => '?').join(', ')})`;
  // Newest first; ULIDs of one process sort by time, the id breaks ties.
  private readonly page = `SELECT ${COLUMNS} FROM "_bp_audit" WHERE "entity" = ? AND "recordId" = ?
       ORDER BY "at" DESC, "id" DESC LIMIT ? OFFSET ?`;

  /**
   * Writes one entry: part of the unit of work of the change it describes, sent without waiting
   * (with the unit's next statement, or its COMMIT). Should it fail, the whole change fails.
   */
  *record(entry: AuditEntry): Work<void> {
    yield* later(this.insert, [...this.head(ulid(), entry), JSON.stringify(entry.changes), detailOf(entry)]);
  }

  /**
   * The INSERT of one entry as a clause of a larger statement: its `changes` are the JSON text in
   * column `changes` of `source`, one row of which the statement's change returned (none: no entry);
   * its other columns are the parameters `valuesOf` gives.
   */
  insertSelecting(source: string, changes: string): string {
    const values = NAMES.map((n) => (n === 'changes' ? `${source}."${changes}"` : '?')).join(', ');
    return `INSERT INTO "_bp_audit" (${COLUMNS}) SELECT ${values} FROM ${source}`;
  }

  /** The parameters of insertSelecting's INSERT for `entry`. */
  valuesOf(entry: Omit<AuditEntry, 'changes'>): unknown[] {
    return [...this.head(ulid(), entry), detailOf(entry)];
  }

  /** The values of an entry's columns before `changes`, in NAMES order. */
  private head(id: string, entry: Omit<AuditEntry, 'changes'>): unknown[] {
    return [
      id,
      new Date().toISOString(),
      entry.operation,
      entry.entity,
      entry.recordId,
      entry.actor.id,
      entry.actor.credentialId ?? null,
      entry.actor.delegatedBy ?? null,
      entry.agentRunId ?? null,
      entry.idempotencyKey ?? null,
      entry.traceId ?? null,
    ];
  }

  *list(
    entity: string,
    recordId: string,
    limit: number,
    offset: number,
  ): Work<{ items: AuditRecord[]; hasMore: boolean }> {
    const rows = yield* all(this.page, [entity, recordId, limit + 1, offset]);
    const hasMore = rows.length > limit;
    if (hasMore) rows.pop();
    return {
      hasMore,
      items: rows.map((r) => ({
        ...(r as unknown as AuditRecord),
        changes: JSON.parse(r.changes as string) as AuditRecord['changes'],
        detail: r.detail === null ? null : (JSON.parse(r.detail as string) as Record<string, unknown>),
      })),
    };
  }
}

/**
 * An entry as one reader may see it: each change of a field the reader may not read is left out,
 * and so is `detail` from a reader who may not read every field (a command's input, a handler's
 * facts may carry a hidden value, changed or not; which of them do is not known here). `hidden`
 * names the fields the reader may not read on a version of the record; it is asked of the record
 * as it is now and as it is with this entry's values before and after, so that a rule that reads
 * the record (`record.ownerId == actor.id`) hides a change the entry itself moved out of reach.
 */
export function readerView(
  entry: AuditRecord,
  current: Record<string, unknown>,
  hidden: (record: Record<string, unknown>) => readonly string[],
): AuditRecord {
  const changes = Object.entries(entry.changes);
  const side = (key: 'before' | 'after') => ({
    ...current,
    ...Object.fromEntries(changes.map(([f, c]) => [f, c[key]])),
  });
  const withheld = new Set([...hidden(current), ...hidden(side('before')), ...hidden(side('after'))]);
  if (withheld.size === 0) return entry;
  return { ...entry, changes: Object.fromEntries(changes.filter(([field]) => !withheld.has(field))), detail: null };
}

function detailOf(entry: Pick<AuditEntry, 'detail'>): string | null {
  return entry.detail ? JSON.stringify(entry.detail) : null;
}

/** Fields whose values differ between two versions of a record (JSON equality). */
export function diffRecords(
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): AuditEntry['changes'] {
  const changes: AuditEntry['changes'] = {};
  const names = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const name of names) {
    const a = before ? (before[name] ?? null) : null;
    const b = after ? (after[name] ?? null) : null;
    // Only JSON values (objects and arrays) need comparing as text; the rest compare as they are.
    const same = a === b || (typeof a === 'object' && typeof b === 'object' && JSON.stringify(a) === JSON.stringify(b));
    if (!same) changes[name] = { before: a, after: b };
  }
  return changes;
}
