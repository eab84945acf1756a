// bp dev's admin server (spec 4.7), on --admin-host:--admin-port (loopback only). It answers
// /schema-diff and /state from the dev loop, serves the reload channel's WebSocket, and passes
// every other request on to the running app's own admin server (on an internal loopback port),
// streaming; while the app restarts, 503 with a coded JSON error. Every request whose Host is not
// a loopback name is refused (403): a page on a foreign name rebound to 127.0.0.1 reads nothing.

import * as http from 'node:http';
import type { LiveChannel } from './live-channel.ts';
import { isLoopbackHost } from '../../runtime-lib/core/loopback.ts';

export interface AdminSources {
  /** Spec 2.10's object and its status, or null. */
  schemaDiff(): object | null;
  /** The dev loop's state, for /state. */
  devState(): object;
  /** The app's admin port while it runs and answers; undefined while it restarts or is down. */
  appAdminPort(): number | undefined;
  /** Why the app does not answer now, for the 503; `refused`: it runs, but its admin server refused the connection. */
  appDown(refused: boolean): { code: string; message: string };
  live?: LiveChannel;
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`${JSON.stringify(body, null, 2)}\n`);
}

const errorBody = (code: string, message: string) => ({ error: { code, message } });

/** The app admin server's answer to a GET, parsed, or undefined (not running, not JSON, too slow). */
function fetchAppJson(port: number, path: string): Promise<unknown> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, timeout: 1000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        try {
          resolve(res.statusCode === 200 ? JSON.parse(text) : undefined);
        } catch {
          resolve(undefined);
        }
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
  });
}

function proxy(sources: AdminSources, req: http.IncomingMessage, res: http.ServerResponse): void {
  const port = sources.appAdminPort();
  const down = (refused: boolean) => {
    const why = sources.appDown(refused);
    sendJson(res, 503, errorBody(why.code, why.message));
  };
  if (port === undefined) return down(false);
  // The app's admin server checks Host too: it is addressed as what it is, 127.0.0.1.
  const headers = { ...req.headers, host: `127.0.0.1:${port}` };
  const upstream = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  upstream.on('error', () => {
    if (!res.headersSent) down(true);
    else res.destroy();
  });
  req.pipe(upstream);
}

export async function startAdminServer(
  sources: AdminSources,
  host: string,
  port: number,
): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((req, res) => {
    if (!isLoopbackHost(req.headers.host)) {
      return sendJson(
        res,
        403,
        errorBody('FORBIDDEN', 'the admin server answers only requests addressed to localhost, 127.0.0.1 or [::1]'),
      );
    }
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const read = req.method === 'GET' || req.method === 'HEAD';
    if (read && path === '/schema-diff') return sendJson(res, 200, sources.schemaDiff());
    if (read && path === '/state') {
      const appPort = sources.appAdminPort();
      const app = appPort === undefined ? undefined : fetchAppJson(appPort, '/state');
      void Promise.resolve(app).then((state) => {
        const base = typeof state === 'object' && state !== null ? state : {};
        sendJson(res, 200, { ...base, dev: sources.devState() });
      });
      return;
    }
    proxy(sources, req, res);
  });
  server.on('upgrade', (req, socket, head) => {
    if (sources.live) sources.live.upgrade(req, socket, head);
    else socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : port };
}
