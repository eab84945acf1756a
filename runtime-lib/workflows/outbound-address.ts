// Which addresses an outbound webhook step may reach in production: outbound webhook steps to
// localhost or private addresses are blocked there. Judged on the address a name
// resolved to, never on the name: a public name may point at 127.0.0.1. Everything that is not
// plainly a public unicast address is refused: loopback, private, shared (CGNAT), link-local (cloud
// metadata at 169.254.169.254 and fd00:ec2::254), "this network", multicast, broadcast, reserved
// and documentation ranges, and IPv6 forms that carry such an IPv4 address (mapped, compatible,
// NAT64, 6to4).

import { isIPv4, isIPv6 } from 'node:net';

/** [first address as a 32-bit number, prefix length] of the IPv4 ranges refused. */
const BLOCKED_V4: ReadonlyArray<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (CGNAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and 255.255.255.255 broadcast
];

/** Whether a production webhook must not connect to `address` (an IPv4 or IPv6 literal). */
export function isBlockedAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (isIPv4(bare)) return blockedV4(v4Number(bare));
  // A zone id (fe80::1%eth0) only ever names a link-local address.
  if (bare.includes('%')) return true;
  if (isIPv6(bare)) return blockedV6(v6Groups(bare));
  // Not an address at all: nothing to connect to, so nothing to allow.
  return true;
}

function blockedV4(n: number): boolean {
  return BLOCKED_V4.some(([first, bits]) => {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    return (n & mask) >>> 0 === v4Number(first);
  });
}

function blockedV6(g: readonly number[]): boolean {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const v4Of = (hi: number, lo: number) => ((hi << 16) >>> 0) + lo;
  // :: (unspecified) and ::1 (loopback); ::a.b.c.d (IPv4-compatible, deprecated) carries an IPv4 address.
  if (zeros(0, 6)) return g[6] === 0 && g[7] <= 1 ? true : blockedV4(v4Of(g[6], g[7]));
  // ::ffff:a.b.c.d (IPv4-mapped) and ::ffff:0:a.b.c.d (IPv4-translated).
  if (zeros(0, 5) && g[5] === 0xffff) return blockedV4(v4Of(g[6], g[7]));
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return blockedV4(v4Of(g[6], g[7]));
  // 64:ff9b::/96 (NAT64) reaches the IPv4 address in its last 32 bits; 64:ff9b:1::/48 is local-use NAT64.
  if (g[0] === 0x64 && g[1] === 0xff9b) return g[2] !== 0 || !zeros(3, 6) || blockedV4(v4Of(g[6], g[7]));
  // 2002::/16 (6to4) embeds an IPv4 address in bits 16-47.
  if (g[0] === 0x2002) return blockedV4(v4Of(g[1], g[2]));
  const first = g[0];
  if ((first & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local (fd00:ec2::254 metadata included)
  if ((first & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((first & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return true; // ff00::/8 multicast
  if (first === 0x2001 && g[1] === 0x0db8) return true; // documentation
  if (first === 0x0100 && zeros(1, 4)) return true; // 100::/64 discard-only
  // Only global unicast (2000::/3) is public; the rest of the space is unassigned or reserved.
  return (first & 0xe000) !== 0x2000;
}

function v4Number(text: string): number {
  return text.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/** The eight 16-bit groups of a valid IPv6 literal (`::` expanded, a dotted IPv4 tail read as two groups). */
function v6Groups(text: string): number[] {
  let head = text;
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4Number(dotted[1]);
    tail.push(n >>> 16, n & 0xffff);
    head = text.slice(0, -dotted[1].length);
    // "::ffff:1.2.3.4" leaves "::ffff:", "::1.2.3.4" leaves "::"; drop the separator before the tail.
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((h) => parseInt(h, 16)));
  const [left, right] = head.includes('::') ? head.split('::') : [head, undefined];
  const before = parse(left);
  const after = [...(right === undefined ? [] : parse(right)), ...tail];
  if (right === undefined) return [...before, ...tail];
  return [...before, ...Array<number>(8 - before.length - after.length).fill(0), ...after];
}
