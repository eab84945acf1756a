// This machine's loopback names, as a Host header or a listen address gives them. The admin
// server (and bp dev's) answers only requests addressed to one, and bp dev's reload script goes
// only into pages opened through one: a page of another site whose name was made to resolve to
// 127.0.0.1 (DNS rebinding) still sends its own name, and gets nothing.

import { isIPv4 } from 'node:net';

/** localhost, ::1 or an address of 127.0.0.0/8. */
export function isLoopbackName(name: string): boolean {
  const lower = name.toLowerCase();
  if (lower === 'localhost' || lower === '::1') return true;
  return isIPv4(name) && name.startsWith('127.');
}

/**
 * The host name of a Host header (`name`, `name:port`, `[::1]:port`) that names this machine's
 * loopback: `localhost` (lower case), `127.x.x.x` or `[::1]`; undefined for anything else.
 */
export function loopbackHostname(host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  let name: string;
  let rest: string;
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    if (close < 0 || host.slice(1, close) !== '::1') return undefined;
    name = '[::1]';
    rest = host.slice(close + 1);
  } else {
    const colon = host.indexOf(':');
    name = colon < 0 ? host : host.slice(0, colon);
    rest = colon < 0 ? '' : host.slice(colon);
    if (name.toLowerCase() !== 'localhost' && !(isIPv4(name) && name.startsWith('127.'))) return undefined;
    name = name.toLowerCase();
  }
  return rest === '' || /^:\d{1,5}$/.test(rest) ? name : undefined;
}

/** Whether a Host header names this machine's loopback (loopbackHostname). */
export function isLoopbackHost(host: string | undefined): boolean {
  return loopbackHostname(host) !== undefined;
}
