// Ticket writes hand-written on `pg` with the guarantees the generated app gives every write: the
// Idempotency-Key claimed, the change made, an audit row written and the response stored, in one
// transaction (the app's own _bp_idempotency and _bp_audit tables). What a careful developer who
// needs those guarantees writes; reads are pg-tickets.ts's own.

import { createHash } from 'node:crypto';
import type { PoolClient } from 'pg';
import { ulid } from '../../runtime-lib/core/ids.ts';
import { AGENT_ID, type TicketInput } from './common.ts';
import { openTickets } from './pg-tickets.ts';

type Row = Record<string, unknown>;

const COLUMNS =
  '"id", "title", "body", "status", "priority", "customerId", "assigneeId", ' +
  '"resolution", "resolvedAt", "attachment", "createdAt"';
const CLAIM =
  'INSERT INTO "_bp_idempotency" ("scope", "operation", "key", "requestHash", "state", "createdAt", "expiresAt") ' +
  `VALUES ($1, $2, $3, $4, 'running', $5, $6) ON CONFLICT ("scope", "operation", "key") DO NOTHING`;
const STORE =
  'UPDATE "_bp_idempotency" SET "state" = \'done\', "status" = $4, "body" = $5 ' +
  'WHERE "scope" = $1 AND "operation" = $2 AND "key" = $3';
const AUDIT =
  'INSERT INTO "_bp_audit" ' +
  '("id", "at", "operation", "entity", "recordId", "actorId", "credentialId", "idempotencyKey", "changes") ' +
  "VALUES ($1, $2, $3, 'Ticket', $4, $5, $5, $6, $7)";
const INSERT =
  'INSERT INTO "Ticket" ("id", "title", "body", "priority", "createdAt") ' +
  `VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`;
const UPDATE =
  `UPDATE "Ticket" SET "title" = coalesce($1, "title"), "body" = CASE WHEN $2 THEN $3 ELSE "body" END, ` +
  `"priority" = coalesce($4, "priority") WHERE "id" = $5 RETURNING ${COLUMNS}`;
const START =
  `UPDATE "Ticket" SET "status" = 'in_progress', "assigneeId" = $2 ` +
  `WHERE "id" = $1 AND "status" = 'open' RETURNING ${COLUMNS}`;
const DAY_MS = 24 * 3600 * 1000;

/** A write's outcome: the stored row, or why there is none. */
type Written = Row | 'missing' | 'not open' | 'replayed';

export function openGuardedTickets(databaseUrl: string) {
  const reads = openTickets(databaseUrl);
  const pool = reads.pool;
  /** Runs `change` under the key in one transaction: claim, change, audit, stored response. */
  const guarded = async (
    operation: string,
    key: string,
    input: unknown,
    change: (c: PoolClient) => Promise<Written>,
  ): Promise<Written> => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const now = Date.now();
      const hash = createHash('sha256').update(JSON.stringify(input)).digest('hex');
      const claim = await client.query({
        name: 'idem-claim',
        text: CLAIM,
        values: [AGENT_ID, operation, key, hash, now, now + DAY_MS],
      });
      // A key seen before: a real server replays its stored answer; the bench never sends one twice.
      if (claim.rowCount === 0) {
        await client.query('ROLLBACK');
        return 'replayed';
      }
      const row = await change(client);
      if (typeof row === 'string') {
        await client.query('ROLLBACK');
        return row;
      }
      const at = new Date(now).toISOString();
      await client.query({
        name: 'audit-insert',
        text: AUDIT,
        values: [ulid(), at, operation, row.id, AGENT_ID, key, JSON.stringify(input)],
      });
      await client.query({
        name: 'idem-store',
        text: STORE,
        values: [AGENT_ID, operation, key, 200, JSON.stringify(row)],
      });
      await client.query('COMMIT');
      return row;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  };
  const first = async (c: PoolClient, name: string, text: string, values: unknown[]) =>
    (await c.query<Row>({ name, text, values })).rows[0];
  return {
    get: reads.get,
    list: reads.list,
    create: (key: string, input: TicketInput) =>
      guarded(
        'create',
        key,
        input,
        async (c) =>
          (await first(c, 'ticket-insert', INSERT, [
            ulid(),
            input.title ?? '',
            input.body ?? null,
            input.priority ?? 'normal',
            new Date().toISOString(),
          ])) ?? 'missing',
      ),
    update: (key: string, id: string, input: TicketInput) =>
      guarded(
        'update',
        key,
        { id, ...input },
        async (c) =>
          (await first(c, 'ticket-update', UPDATE, [
            input.title ?? null,
            input.body !== undefined,
            input.body ?? null,
            input.priority ?? null,
            id,
          ])) ?? 'missing',
      ),
    start: (key: string, id: string) =>
      guarded('start', key, { id }, async (c) => {
        const row = await first(c, 'ticket-start', START, [id, AGENT_ID]);
        if (row) return row;
        return (await first(c, 'ticket-exists', 'SELECT 1 FROM "Ticket" WHERE "id" = $1', [id]))
          ? 'not open'
          : 'missing';
      }),
  };
}
