// Baseline: the CRUD routes hand-written on Express 5 and better-sqlite3, the same SQL as the
// node:http baseline, so the difference between the two is what Express costs.

import express from 'express';
import { listParams, serverConfig, sqliteFile, ticketInput } from './common.ts';
import { openTickets } from './sqlite-tickets.ts';

const { port, databaseUrl, authorized } = serverConfig();
const tickets = openTickets(sqliteFile(databaseUrl));

const app = express();
// As in the generated app: an API does not gain from hashing every response body for an ETag.
app.set('etag', false);
app.use((req, res, next) => {
  if (!authorized(req.headers.authorization)) return void res.status(401).json({ error: 'an API key is required' });
  next();
});
app.use(express.json());

app.get('/api/tickets', (req, res) => {
  const params = listParams(req.query.limit, req.query.offset);
  if (!params) return void res.status(400).json({ error: 'bad limit or offset' });
  res.json(tickets.list(params));
});

app.get('/api/tickets/:id', (req, res) => {
  const row = tickets.get(req.params.id);
  if (!row) return void res.status(404).json({ error: 'not found' });
  res.json(row);
});

app.post('/api/tickets', (req, res) => {
  const input = ticketInput(req.body, true);
  if (typeof input === 'string') return void res.status(400).json({ error: input });
  const row = tickets.create(input);
  res
    .status(201)
    .location(`/api/tickets/${String(row?.id)}`)
    .json(row);
});

app.put('/api/tickets/:id', (req, res) => {
  const input = ticketInput(req.body, false);
  if (typeof input === 'string') return void res.status(400).json({ error: input });
  const row = tickets.update(req.params.id, input);
  if (!row) return void res.status(404).json({ error: 'not found' });
  res.json(row);
});

app.listen(port, () => console.log(`Express + better-sqlite3 listening on ${port}`));
