// Baseline "the limit": node:http and better-sqlite3 with nothing in between. Routing is string
// comparison, bodies are JSON.parse of the collected chunks, responses are JSON.stringify.

import * as http from 'node:http';
import { listParams, serverConfig, sqliteFile, ticketInput } from './common.ts';
import { openTickets } from './sqlite-tickets.ts';

const { port, databaseUrl, authorized } = serverConfig();
const tickets = openTickets(sqliteFile(databaseUrl));
const ITEM_PREFIX = '/api/tickets/';

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(json),
  });
  res.end(json);
}

/** Runs a handler so that a malformed percent-escape or a database error answers 500 instead of crashing. */
function guarded(res: http.ServerResponse, handler: () => void): void {
  try {
    handler();
  } catch (err) {
    console.error(err);
    if (!res.headersSent) send(res, 500, { error: 'internal error' });
  }
}

function readJson(req: http.IncomingMessage, res: http.ServerResponse, handle: (body: unknown) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(res, 400, { error: 'invalid JSON' });
    }
    guarded(res, () => handle(body));
  });
}

function route(req: http.IncomingMessage, res: http.ServerResponse): void {
  if (!authorized(req.headers.authorization)) return send(res, 401, { error: 'an API key is required' });
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (path === '/api/tickets') {
    if (req.method === 'GET') {
      const search = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
      const params = listParams(search.get('limit') ?? undefined, search.get('offset') ?? undefined);
      return params ? send(res, 200, tickets.list(params)) : send(res, 400, { error: 'bad limit or offset' });
    }
    if (req.method === 'POST') {
      return readJson(req, res, (body) => {
        const input = ticketInput(body, true);
        if (typeof input === 'string') return send(res, 400, { error: input });
        const row = tickets.create(input);
        res.setHeader('Location', `${ITEM_PREFIX}${String(row?.id)}`);
        send(res, 201, row);
      });
    }
  } else if (path.startsWith(ITEM_PREFIX)) {
    const id = decodeURIComponent(path.slice(ITEM_PREFIX.length));
    if (req.method === 'GET') {
      const row = tickets.get(id);
      return row ? send(res, 200, row) : send(res, 404, { error: 'not found' });
    }
    if (req.method === 'PUT') {
      return readJson(req, res, (body) => {
        const input = ticketInput(body, false);
        if (typeof input === 'string') return send(res, 400, { error: input });
        const row = tickets.update(id, input);
        return row ? send(res, 200, row) : send(res, 404, { error: 'not found' });
      });
    }
  }
  send(res, 404, { error: 'no route' });
}

http
  .createServer((req, res) => guarded(res, () => route(req, res)))
  .listen(port, () => console.log(`node:http + better-sqlite3 listening on ${port}`));
