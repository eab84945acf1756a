// Baseline: the CRUD routes and StartTicket hand-written on Express 5 and `pg`, what a careful
// developer writes for PostgreSQL without an ORM: the same routes as express-sqlite.ts, awaited.
//
// With `--guarded`, every write keeps the guarantees the generated app gives it (pg-tickets-guarded.ts):
// the Idempotency-Key it must carry, an audit row and the stored response, in the write's own
// transaction. The same server, so the two differ only in those guarantees.

import express from 'express';
import { listParams, serverConfig, ticketInput } from './common.ts';
import { openTickets } from './pg-tickets.ts';
import { openGuardedTickets } from './pg-tickets-guarded.ts';

const { port, databaseUrl, authorized } = serverConfig();
const guarded = process.argv.includes('--guarded');
const plain = guarded ? undefined : openTickets(databaseUrl);
const kept = guarded ? openGuardedTickets(databaseUrl) : undefined;
const reads = plain ?? (kept as NonNullable<typeof kept>);

const app = express();
// As in the generated app: an API does not gain from hashing every response body for an ETag.
app.set('etag', false);
app.use((req, res, next) => {
  if (!authorized(req.headers.authorization)) return void res.status(401).json({ error: 'an API key is required' });
  if (guarded && req.method !== 'GET' && !req.headers['idempotency-key']) {
    return void res.status(400).json({ error: 'an Idempotency-Key is required' });
  }
  next();
});
app.use(express.json());
const keyOf = (req: express.Request) => String(req.headers['idempotency-key']);

app.get('/api/tickets', async (req, res) => {
  const params = listParams(req.query.limit, req.query.offset);
  if (!params) return void res.status(400).json({ error: 'bad limit or offset' });
  res.json(await reads.list(params));
});

app.get('/api/tickets/:id', async (req, res) => {
  const row = await reads.get(req.params.id);
  if (!row) return void res.status(404).json({ error: 'not found' });
  res.json(row);
});

app.post('/api/tickets', async (req, res) => {
  const input = ticketInput(req.body, true);
  if (typeof input === 'string') return void res.status(400).json({ error: input });
  const row = kept ? await kept.create(keyOf(req), input) : await plain!.create(input);
  if (typeof row !== 'object' || !row) return void res.status(409).json({ error: String(row) });
  res
    .status(201)
    .location(`/api/tickets/${String(row.id)}`)
    .json(row);
});

app.put('/api/tickets/:id', async (req, res) => {
  const input = ticketInput(req.body, false);
  if (typeof input === 'string') return void res.status(400).json({ error: input });
  const row = kept ? await kept.update(keyOf(req), req.params.id, input) : await plain!.update(req.params.id, input);
  if (row === 'missing' || !row) return void res.status(404).json({ error: 'not found' });
  if (typeof row !== 'object') return void res.status(409).json({ error: row });
  res.json(row);
});

app.post('/api/commands/start_ticket/:id', async (req, res) => {
  const started = kept ? await kept.start(keyOf(req), req.params.id) : await plain!.start(req.params.id);
  if (started === 'missing') return void res.status(404).json({ error: 'not found' });
  if (started === 'not open') return void res.status(409).json({ error: 'the ticket is not open' });
  if (started === 'replayed') return void res.status(409).json({ error: 'the Idempotency-Key was used before' });
  res.json(started);
});

app.listen(port, () => console.log(`Express + pg${guarded ? ' (guarded writes)' : ''} listening on ${port}`));
