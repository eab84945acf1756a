// Loopback names: bp dev's admin server and WebSocket answer only requests addressed to this
// machine by name (the Host header) and pages served from it (the Origin header), so that a web
// page on a foreign name rebound to 127.0.0.1 (DNS rebinding) reads nothing. The Host check is the
// generated app's own admin server's (runtime-lib/core/loopback.ts), so both answer the same names.

import { isLoopbackHost } from '../../runtime-lib/core/loopback.ts';

/** The admin server's --admin-host values: loopback addresses and names only. */
export const LOOPBACK_BIND_HOSTS = ['127.0.0.1', 'localhost', '::1'];

/** Whether an Origin header is an http(s) origin on a loopback name. */
export function isLoopbackOrigin(origin: string | undefined): boolean {
  if (origin === undefined) return false;
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.host);
  } catch {
    return false;
  }
}

/** A host for a URL: IPv6 addresses in brackets. */
export function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
