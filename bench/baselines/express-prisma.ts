// Baseline "what a user would write by hand": Express 5 and Prisma Client 7 with the idiomatic
// calls (findUnique, findMany, create, update), on the better-sqlite3 driver adapter for a file:
// DATABASE_URL and on the pg driver adapter (a pool of 10, the generated app's default) for a
// postgres:// one. The same code for both, so the two differ only in the database.

import express from 'express';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import { ulid } from '../../runtime-lib/core/ids.ts';
import {
  AGENT_ID,
  isPostgresUrl,
  listParams,
  serverConfig,
  sqliteFile,
  ticketInput,
  type TicketInput,
} from './common.ts';

/** The part of the generated client this server calls. */
interface TicketDelegate {
  findUnique(args: { where: { id: string } }): Promise<{ id: string } | null>;
  findMany(args: { take: number; skip: number; orderBy: { id: 'asc' } }): Promise<object[]>;
  create(args: { data: TicketInput & { id: string; title: string } }): Promise<{ id: string }>;
  update(args: {
    where: { id: string; status?: string };
    data: TicketInput | { status: string; assigneeId: string };
  }): Promise<{ id: string }>;
}
interface Client {
  ticket: TicketDelegate;
}

const { port, databaseUrl, authorized } = serverConfig();
const postgres = isPostgresUrl(databaseUrl);

// bench/run.ts generates the clients into bench/.work (bench/prepare.ts, PRISMA_CLIENT_DIRS), outside
// git, for the generated app's schemas; imported at run time so that type-checking the repository
// does not need them.
const clientModule = new URL(`../.work/${postgres ? 'prisma-client-pg' : 'prisma-client'}/client.ts`, import.meta.url)
  .href;
type Adapter = PrismaBetterSqlite3 | PrismaPg;
const { PrismaClient } = (await import(clientModule)) as {
  PrismaClient: new (options: { adapter: Adapter }) => Client;
};

// SQLite: the seeded file is in WAL mode, and better-sqlite3 opens WAL databases with synchronous =
// NORMAL (built with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1): the generated app's settings, with nothing to set.
const adapter = postgres
  ? new PrismaPg({ connectionString: databaseUrl, max: 10 })
  : new PrismaBetterSqlite3({ url: `file:${sqliteFile(databaseUrl)}` });
const prisma = new PrismaClient({ adapter });

/** Prisma's "record to update not found". */
const isNotFound = (err: unknown) => (err as { code?: string }).code === 'P2025';

const app = express();
// As in the generated app: an API does not gain from hashing every response body for an ETag.
app.set('etag', false);
app.use((req, res, next) => {
  if (!authorized(req.headers.authorization)) return void res.status(401).json({ error: 'an API key is required' });
  next();
});
app.use(express.json());

app.get('/api/tickets', async (req, res) => {
  const params = listParams(req.query.limit, req.query.offset);
  if (!params) return void res.status(400).json({ error: 'bad limit or offset' });
  const rows = await prisma.ticket.findMany({ take: params.limit + 1, skip: params.offset, orderBy: { id: 'asc' } });
  const hasMore = rows.length > params.limit;
  res.json({
    items: hasMore ? rows.slice(0, params.limit) : rows,
    limit: params.limit,
    offset: params.offset,
    hasMore,
  });
});

app.get('/api/tickets/:id', async (req, res) => {
  const ticket = await prisma.ticket.findUnique({ where: { id: req.params.id } });
  if (!ticket) return void res.status(404).json({ error: 'not found' });
  res.json(ticket);
});

app.post('/api/tickets', async (req, res) => {
  const input = ticketInput(req.body, true);
  if (typeof input === 'string') return void res.status(400).json({ error: input });
  const ticket = await prisma.ticket.create({ data: { ...input, id: ulid(), title: input.title ?? '' } });
  res.status(201).location(`/api/tickets/${ticket.id}`).json(ticket);
});

app.put('/api/tickets/:id', async (req, res) => {
  const input = ticketInput(req.body, false);
  if (typeof input === 'string') return void res.status(400).json({ error: input });
  try {
    res.json(await prisma.ticket.update({ where: { id: req.params.id }, data: input }));
  } catch (err) {
    if (!isNotFound(err)) throw err;
    res.status(404).json({ error: 'not found' });
  }
});

// StartTicket: one conditional update (a filter on a non-unique field in `where`), so only an open
// ticket moves; only when none did, a second query tells a missing ticket from one not open.
app.post('/api/commands/start_ticket/:id', async (req, res) => {
  try {
    res.json(
      await prisma.ticket.update({
        where: { id: req.params.id, status: 'open' },
        data: { status: 'in_progress', assigneeId: AGENT_ID },
      }),
    );
  } catch (err) {
    if (!isNotFound(err)) throw err;
    const exists = await prisma.ticket.findUnique({ where: { id: req.params.id } });
    res.status(exists ? 409 : 404).json({ error: exists ? 'the ticket is not open' : 'not found' });
  }
});

app.listen(port, () =>
  console.log(`Express + Prisma (${postgres ? 'pg' : 'better-sqlite3'} adapter) listening on ${port}`),
);
