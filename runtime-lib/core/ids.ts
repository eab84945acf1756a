// Record ids. ULIDs sort by creation time, so the stable list order (by id) is also creation
// order; within one millisecond they stay monotonic by incrementing the random part.

import { randomFillSync, randomUUID } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
let lastTime = -1;
const lastRandom = new Uint8Array(16);
/** Random bytes for 64 ids at a time: one system call per 64 new milliseconds, not one per id. */
const pool = Buffer.alloc(16 * 64);
let poolOffset = pool.length;

export function ulid(now: number = Date.now()): string {
  if (now <= lastTime) {
    // Same (or an earlier, after a clock step back) millisecond: keep the last time and add one.
    for (let i = 15; i >= 0; i--) {
      lastRandom[i] = (lastRandom[i] + 1) & 31;
      if (lastRandom[i] !== 0) break;
    }
    now = lastTime;
  } else {
    if (poolOffset === pool.length) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    for (let i = 0; i < 16; i++) lastRandom[i] = pool[poolOffset + i] & 31;
    poolOffset += 16;
    lastTime = now;
  }
  let time = '';
  for (let i = 0, t = now; i < 10; i++, t = Math.floor(t / 32)) time = ALPHABET[t % 32] + time;
  let random = '';
  for (let i = 0; i < 16; i++) random += ALPHABET[lastRandom[i]];
  return time + random;
}

export const uuid = (): string => randomUUID();

export const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
