// The reload channel: bp dev's WebSocket (path /live-reload on its admin port), which the script
// the app injects into its pages (runtime pages/live-reload.ts) connects to. It says "reload" when
// a new app answers, and shows or clears the overlay; a page that connects while the blueprint is
// broken (or a destructive change waits) gets the overlay at once.

import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { isLoopbackHost } from '../../runtime-lib/core/loopback.ts';
import { isLoopbackOrigin } from './loopback.ts';

export const LIVE_RELOAD_PATH = '/live-reload';

/** What the overlay shows: the blueprint's diagnostics, a build or start failure, or a destructive change. */
export interface Overlay {
  kind: 'diagnostics' | 'error' | 'destructive';
  title: string;
  text: string;
}

export class LiveChannel {
  private readonly wss = new WebSocketServer({ noServer: true });
  /** Tells a reconnecting page whether bp dev restarted (a new session) or rebuilt the app meanwhile. */
  private readonly session = randomBytes(6).toString('hex');
  private build = 0;
  private overlay: Overlay | undefined;

  /** Waiting for the pages told to reload to connect again (reload()). */
  private reconnects: { left: number; done: () => void } | undefined;

  constructor() {
    this.wss.on('connection', (socket) => {
      if (this.reconnects && --this.reconnects.left <= 0) this.reconnects.done();
      socket.send(JSON.stringify({ type: 'hello', session: this.session, build: this.build }));
      if (this.overlay) socket.send(JSON.stringify({ type: 'overlay', ...this.overlay }));
    });
  }

  /** An HTTP upgrade on the admin server: accepted on our path, from a loopback page, else refused. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const refuse = (status: string) => {
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    if (path !== LIVE_RELOAD_PATH) return refuse('404 Not Found');
    if (!isLoopbackHost(req.headers.host) || !isLoopbackOrigin(req.headers.origin)) return refuse('403 Forbidden');
    this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit('connection', ws, req));
  }

  get clients(): number {
    return this.wss.clients.size;
  }

  show(overlay: Overlay): void {
    this.overlay = overlay;
    this.broadcast({ type: 'overlay', ...overlay });
  }

  clear(): void {
    if (this.overlay === undefined) return;
    this.overlay = undefined;
    this.broadcast({ type: 'clear' });
  }

  /**
   * A new app answers: every page loads again. Resolves once as many pages have connected again
   * (each has loaded from the new app), or after `settleMs`.
   */
  reload(settleMs: number): Promise<void> {
    this.build += 1;
    const pages = this.wss.clients.size;
    this.broadcast({ type: 'reload', build: this.build });
    this.reconnects?.done();
    if (pages === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(), settleMs);
      const done = () => {
        clearTimeout(timer);
        if (this.reconnects === waiting) this.reconnects = undefined;
        resolve();
      };
      const waiting = { left: pages, done };
      this.reconnects = waiting;
    });
  }

  close(): Promise<void> {
    this.reconnects?.done();
    for (const client of this.wss.clients) client.terminate();
    return new Promise((resolve) => this.wss.close(() => resolve()));
  }

  private broadcast(message: object): void {
    const text = JSON.stringify(message);
    for (const client of this.wss.clients) if (client.readyState === WebSocket.OPEN) client.send(text);
  }
}
