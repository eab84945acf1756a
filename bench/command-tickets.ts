// What the load generator does to a server's database between command rounds, while the server is
// idle: reopen every ticket, and add copies of seeded tickets where a round needs more than there
// are (bench/load.ts, freshTicketsFor). For a SQLite file (better-sqlite3, a second connection) or
// a PostgreSQL database (`pg`, one client per call).

import Database from 'better-sqlite3';
import pg from 'pg';
import { ulid } from '../runtime-lib/core/ids.ts';

export interface CommandTickets {
  /** Sets every ticket back to open, so StartTicket is available on each. */
  reopen(): Promise<void>;
  /** Appends to `ids` the ids of new copies of its tickets (new ULIDs) until it holds `needed`. */
  addCopies(ids: string[], needed: number): Promise<void>;
}

/** `database`: a SQLite file, or a postgres:// URL. */
export function commandTickets(database: string): CommandTickets {
  return /^postgres(ql)?:\/\//.test(database) ? postgresTickets(database) : sqliteTickets(database);
}

/** New ids paired with the seeded ticket each copies, in turn. */
function copiesFor(ids: string[], needed: number): Array<[id: string, source: string]> {
  const seeded = ids.length;
  return Array.from({ length: Math.max(0, needed - seeded) }, (_, i) => [ulid(), ids[i % seeded]]);
}

function sqliteTickets(file: string): CommandTickets {
  const open = () => {
    const db = new Database(file);
    db.pragma('busy_timeout = 5000');
    return db;
  };
  return {
    async reopen() {
      const db = open();
      db.prepare('UPDATE "Ticket" SET "status" = \'open\', "assigneeId" = NULL').run();
      db.close();
    },
    async addCopies(ids, needed) {
      const db = open();
      const columns = db
        .prepare<[], string>("SELECT name FROM pragma_table_info('Ticket') WHERE name <> 'id'")
        .pluck()
        .all()
        .map((c) => `"${c}"`)
        .join(', ');
      const copy = db.prepare(
        `INSERT INTO "Ticket" ("id", ${columns}) SELECT ?, ${columns} FROM "Ticket" WHERE "id" = ?`,
      );
      const copies = copiesFor(ids, needed);
      db.transaction(() => {
        for (const [id, source] of copies) copy.run(id, source);
      })();
      db.close();
      for (const [id] of copies) ids.push(id);
    },
  };
}

function postgresTickets(url: string): CommandTickets {
  const withClient = async (work: (client: pg.Client) => Promise<void>) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await work(client);
    } finally {
      await client.end();
    }
  };
  return {
    // Only the rows that moved, then VACUUM: the reset (and the round before it) leave thousands of
    // dead row versions, and the autovacuum they call for would otherwise land in whichever
    // server's round runs next; the database's CPU is measured for the whole server, so it would
    // be charged to that server. Each round starts from a vacuumed table, for every server alike.
    reopen: () =>
      withClient(async (client) => {
        await client.query(
          'UPDATE "Ticket" SET "status" = \'open\', "assigneeId" = NULL ' +
            'WHERE "status" <> \'open\' OR "assigneeId" IS NOT NULL',
        );
        await client.query('VACUUM "Ticket"');
      }),
    addCopies: (ids, needed) =>
      withClient(async (client) => {
        const { rows } = await client.query<{ name: string }>(
          'SELECT column_name AS name FROM information_schema.columns ' +
            "WHERE table_schema = current_schema() AND table_name = 'Ticket' AND column_name <> 'id'",
        );
        const columns = rows.map((r) => `"${r.name}"`).join(', ');
        const copies = copiesFor(ids, needed);
        // One statement for all of them: the pairs (new id, source id) as two arrays.
        await client.query(
          `INSERT INTO "Ticket" ("id", ${columns}) SELECT c.id, ${rows.map((r) => `t."${r.name}"`).join(', ')} ` +
            'FROM unnest($1::text[], $2::text[]) AS c(id, source) JOIN "Ticket" t ON t."id" = c.source',
          [copies.map(([id]) => id), copies.map(([, source]) => source)],
        );
        for (const [id] of copies) ids.push(id);
      }),
  };
}
