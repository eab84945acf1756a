// Ticket data access written by hand on `pg` (node-postgres): a pool of 10 connections, the size of
// the generated app's default, and one named (server-side prepared) statement per operation.

import pg from 'pg';
import { ulid } from '../../runtime-lib/core/ids.ts';
import { AGENT_ID, page, type ListParams, type TicketInput } from './common.ts';

type Row = Record<string, unknown>;

const COLUMNS =
  '"id", "title", "body", "status", "priority", "customerId", "assigneeId", ' +
  '"resolution", "resolvedAt", "attachment", "createdAt"';

// Prisma's DateTime columns are `timestamp(3)` holding UTC. pg reads a timestamp without time zone
// as local time; read as UTC instead, so the answer is right whatever the process's time zone.
pg.types.setTypeParser(pg.types.builtins.TIMESTAMP, (text) => new Date(`${text.replace(' ', 'T')}Z`));

const GET = `SELECT ${COLUMNS} FROM "Ticket" WHERE "id" = $1`;
const LIST = `SELECT ${COLUMNS} FROM "Ticket" ORDER BY "id" LIMIT $1 OFFSET $2`;
const INSERT =
  'INSERT INTO "Ticket" ("id", "title", "body", "priority", "createdAt") ' +
  `VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`;
// A partial update: absent fields keep their value; body (nullable) has an explicit "is set" flag.
const UPDATE =
  `UPDATE "Ticket" SET "title" = coalesce($1, "title"), "body" = CASE WHEN $2 THEN $3 ELSE "body" END, ` +
  `"priority" = coalesce($4, "priority") WHERE "id" = $5 RETURNING ${COLUMNS}`;
// StartTicket in one statement: only an open ticket moves, so two concurrent starts cannot both win.
const START =
  `UPDATE "Ticket" SET "status" = 'in_progress', "assigneeId" = $2 ` +
  `WHERE "id" = $1 AND "status" = 'open' RETURNING ${COLUMNS}`;
const EXISTS = 'SELECT 1 FROM "Ticket" WHERE "id" = $1';

export function openTickets(databaseUrl: string) {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  const first = async (name: string, text: string, values: unknown[]): Promise<Row | undefined> =>
    (await pool.query<Row>({ name, text, values })).rows[0];
  return {
    pool,
    get: (id: string) => first('ticket-get', GET, [id]),
    list: async (params: ListParams) =>
      page(
        (await pool.query<Row>({ name: 'ticket-list', text: LIST, values: [params.limit + 1, params.offset] })).rows,
        params,
      ),
    create: (input: TicketInput) =>
      // The text form of a UTC instant: stored as is in a timestamp column, whatever the session's time zone.
      first('ticket-insert', INSERT, [
        ulid(),
        input.title ?? '',
        input.body ?? null,
        input.priority ?? 'normal',
        new Date().toISOString(),
      ]),
    update: (id: string, input: TicketInput) =>
      first('ticket-update', UPDATE, [
        input.title ?? null,
        input.body !== undefined,
        input.body ?? null,
        input.priority ?? null,
        id,
      ]),
    /** The started ticket, or why not: it does not exist, or it is not open. */
    start: async (id: string): Promise<Row | 'missing' | 'not open'> => {
      const row = await first('ticket-start', START, [id, AGENT_ID]);
      if (row) return row;
      return (await first('ticket-exists', EXISTS, [id])) ? 'not open' : 'missing';
    },
  };
}
