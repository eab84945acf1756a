// The listeners of the admin server (ADMIN_PORT) and of the metrics alone (METRICS_PORT), each its own
// http server beside the app's: nothing of either is ever served on the app's port. server.ts loads
// this module only when one of them is asked for.

import * as http from 'node:http';
import { type AdminSource, adminHandler, metricsHandler } from './admin-server.ts';
import type { Listen, ObserverSettings } from './settings.ts';

export interface Observers {
  admin?: http.Server;
  metrics?: http.Server;
}

/** Starts the listeners the settings ask for and prints where each listens; rejects when one cannot listen. */
export async function startObservers(settings: ObserverSettings, source: AdminSource): Promise<Observers> {
  const observers: Observers = {};
  if (settings.admin) {
    observers.admin = await listen(adminHandler(source), settings.admin);
    console.log(`admin server on ${origin(observers.admin, settings.admin)}`);
  }
  if (settings.metrics) {
    observers.metrics = await listen(metricsHandler(source.metrics), settings.metrics);
    console.log(`metrics on ${origin(observers.metrics, settings.metrics)}/metrics`);
  }
  return observers;
}

function listen(handler: http.RequestListener, at: Listen): Promise<http.Server> {
  return new Promise((resolve, reject) => {
    const server = http.createServer(handler);
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** The listener's URL, with the port it got (ADMIN_PORT=0 asks for any free one). */
function origin(server: http.Server, at: Listen): string {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : at.port;
  const host = at.host.includes(':') ? `[${at.host}]` : at.host;
  return `http://${host}:${port}`;
}
