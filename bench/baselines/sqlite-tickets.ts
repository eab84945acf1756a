// Ticket data access written by hand on better-sqlite3: one prepared statement per operation.
// Both better-sqlite3 baselines use it, so the two differ only in their HTTP layer.

import Database from 'better-sqlite3';
import { ulid } from '../../runtime-lib/core/ids.ts';
import { page, type ListParams, type TicketInput } from './common.ts';

type Row = Record<string, unknown>;

const COLUMNS =
  '"id", "title", "body", "status", "priority", "customerId", "assigneeId", ' +
  '"resolution", "resolvedAt", "attachment", "createdAt"';

export function openTickets(dbFile: string) {
  const db = new Database(dbFile);
  // The generated app's settings (runtime-lib/db.ts), so that commits cost the same everywhere.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  const get = db.prepare<[string], Row>(`SELECT ${COLUMNS} FROM "Ticket" WHERE "id" = ?`);
  const list = db.prepare<[number, number], Row>(`SELECT ${COLUMNS} FROM "Ticket" ORDER BY "id" LIMIT ? OFFSET ?`);
  const insert = db.prepare<[string, string, string | null, string, string], Row>(
    `INSERT INTO "Ticket" ("id", "title", "body", "priority", "createdAt") VALUES (?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
  );
  // A partial update: absent fields keep their value; body (nullable) has an explicit "is set" flag.
  const update = db.prepare<[string | null, number, string | null, string | null, string], Row>(
    'UPDATE "Ticket" SET "title" = coalesce(?, "title"), "body" = CASE WHEN ? THEN ? ELSE "body" END, ' +
      `"priority" = coalesce(?, "priority") WHERE "id" = ? RETURNING ${COLUMNS}`,
  );
  return {
    get: (id: string) => get.get(id),
    list: (params: ListParams) => page(list.all(params.limit + 1, params.offset), params),
    create: (input: TicketInput) =>
      // DateTime as Prisma's SQLite adapter stores it (ISO 8601 with +00:00), like the generated app.
      insert.get(
        ulid(),
        input.title ?? '',
        input.body ?? null,
        input.priority ?? 'normal',
        new Date().toISOString().replace('Z', '+00:00'),
      ),
    update: (id: string, input: TicketInput) =>
      update.get(input.title ?? null, input.body === undefined ? 0 : 1, input.body ?? null, input.priority ?? null, id),
  };
}
