// Baseline: the CRUD routes and StartTicket hand-written on Express 5 and `pg`, what a careful
// developer writes for PostgreSQL without an ORM: the same routes as express-sqlite.ts, awaited.

import express from 'express';
import { listParams, serverConfig, ticketInput } from './common.ts';
import { openTickets } from './pg-tickets.ts';

const { port, databaseUrl, authorized } = serverConfig();
const tickets = openTickets(databaseUrl);

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
  res.json(await tickets.list(params));
});

app.get('/api/tickets/:id', async (req, res) => {
  const row = await tickets.get(req.params.id);
  if (!row) return void res.status(404).json({ error: 'not found' });
  res.json(row);
});

app.post('/api/tickets', async (req, res) => {
  const input = ticketInput(req.body, true);
  if (typeof input === 'string') return void res.status(400).json({ error: input });
  const row = await tickets.create(input);
  res.status(201).location(`/api/tickets/${String(row?.id)}`).json(row);
});

app.put('/api/tickets/:id', async (req, res) => {
  const input = ticketInput(req.body, false);
  if (typeof input === 'string') return void res.status(400).json({ error: input });
  const row = await tickets.update(req.params.id, input);
  if (!row) return void res.status(404).json({ error: 'not found' });
  res.json(row);
});

app.post('/api/commands/start_ticket/:id', async (req, res) => {
  const started = await tickets.start(req.params.id);
  if (started === 'missing') return void res.status(404).json({ error: 'not found' });
  if (started === 'not open') return void res.status(409).json({ error: 'the ticket is not open' });
  res.json(started);
});

app.listen(port, () => console.log(`Express + pg listening on ${port}`));
