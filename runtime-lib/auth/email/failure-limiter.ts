// Failed sign-ins slowed per e-mail and per client address, in memory (per process).

import type { Request } from 'express';

/** Requests are limited per client address; IPv6 per /64, since one host commonly holds a whole /64. */
export function clientKey(req: Request): string {
  const ip = req.ip ?? req.socket.remoteAddress ?? 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (!ip.includes(':')) return ip;
  const [head, tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

// Failed sign-ins: after THRESHOLD failures (with no pause of WINDOW between them) each further
// attempt must wait, twice as long each time, from BASE up to MAX.
export const EMAIL_FAILURE_THRESHOLD = 5;
// Higher per address: an office or a carrier NAT puts many people behind one.
export const IP_FAILURE_THRESHOLD = 20;
const FAILURE_WINDOW_MS = 15 * 60 * 1000;
const BASE_DELAY_MS = 1000;
const MAX_DELAY_MS = 15 * 60 * 1000;
// Bounds the memory an attacker cycling e-mails or addresses can make the maps take.
const MAX_TRACKED = 10_000;

export class FailureLimiter {
  private readonly entries = new Map<string, { count: number; last: number }>();

  constructor(private readonly threshold: number) {}

  /** Milliseconds until the key may try again; 0 when it may now. */
  wait(key: string, now: number): number {
    const entry = this.live(key, now);
    if (!entry || entry.count < this.threshold) return 0;
    const delay = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (entry.count - this.threshold));
    return Math.max(0, entry.last + delay - now);
  }

  fail(key: string, now: number): void {
    const count = (this.live(key, now)?.count ?? 0) + 1;
    // Delete then set: the Map's first entry stays the least recently failed, the one to evict.
    this.entries.delete(key);
    if (this.entries.size >= MAX_TRACKED) this.evict(now);
    this.entries.set(key, { count, last: now });
  }

  /** Takes back one failure (the one counted for an attempt that then succeeded). */
  forgive(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    if (entry.count <= 1) this.entries.delete(key);
    else entry.count -= 1;
  }

  clear(key: string): void {
    this.entries.delete(key);
  }

  private live(key: string, now: number): { count: number; last: number } | undefined {
    const entry = this.entries.get(key);
    if (entry && now - entry.last > FAILURE_WINDOW_MS) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private evict(now: number): void {
    for (const [key, entry] of this.entries) {
      if (now - entry.last <= FAILURE_WINDOW_MS) break;
      this.entries.delete(key);
    }
    if (this.entries.size >= MAX_TRACKED) this.entries.delete(this.entries.keys().next().value as string);
  }
}
