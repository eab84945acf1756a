// TRUST_PROXY: which proxies in front of the app are believed about the client's address
// (X-Forwarded-For, which sign-in throttling keys on) and protocol (X-Forwarded-Proto, which
// decides whether the Secure session cookie can be set). Unset, none is: a client reaching the
// app directly could otherwise name any address it likes and never be throttled. The value
// becomes Express's `trust proxy` setting; a value that cannot be read refuses the start.

import { isIP } from 'node:net';

/** Express's `trust proxy`: false (none), a hop count, or the proxies' addresses and subnets. */
export type TrustProxy = false | number | string[];

/** Names Express (proxy-addr) gives to address ranges. */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);
/** More hops than any real chain of proxies: a larger count is a mistake. */
const MAX_HOPS = 10;

/**
 * TRUST_PROXY read: unset or `off` trusts no proxy; a whole number 1..10 trusts that many hops
 * nearest the app; else a comma-separated list of addresses, CIDR subnets and the names
 * loopback, linklocal, uniquelocal. Throws an Error saying what is wrong otherwise.
 */
export function trustProxySetting(value: string | undefined): TrustProxy {
  if (value === undefined) return false;
  const text = value.trim();
  const wrong = (why: string) =>
    new Error(
      `TRUST_PROXY=${JSON.stringify(value)} ${why}; set off, a hop count (1 to ${MAX_HOPS}), ` +
        `or the proxies' addresses (e.g. 10.0.0.5,10.0.1.0/24 or loopback)`,
    );
  if (text === '') throw wrong('is empty');
  if (text.toLowerCase() === 'off') return false;
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops === 0) return false;
    if (hops > MAX_HOPS) throw wrong(`trusts ${hops} hops`);
    return hops;
  }
  if (['true', 'on', 'all', '*'].includes(text.toLowerCase()))
    throw wrong('would believe any client about its own address, so none could be throttled');
  const entries = text.split(',').map((e) => e.trim());
  for (const entry of entries) {
    if (!isAddressOrRange(entry))
      throw wrong(`names ${JSON.stringify(entry)}, which is not an address, a subnet or a named range`);
  }
  return entries;
}

function isAddressOrRange(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d+$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
}
