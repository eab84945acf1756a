// Failed sign-ins slowed per e-mail and per client address. The counts live in the app's database
// (_bp_signin_failures), so every instance of the app on one PostgreSQL counts the failures made on
// any of them, and a restart forgets nothing.

import type { Request } from 'express';
import type { ActiveTrace } from '../../observe/tracing.ts';
import { type Database, get, run, type Work } from '../../data/database.ts';

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

export const SIGNIN_FAILURES_TABLE = '_bp_signin_failures';
const T = `"${SIGNIN_FAILURES_TABLE}"`;
const SQL = {
  row: `SELECT "count", "lastAt" FROM ${T} WHERE "key" = ?`,
  // A failure after a pause of WINDOW starts the count again.
  fail:
    `INSERT INTO ${T} ("key", "count", "lastAt") VALUES (?, 1, ?) ON CONFLICT ("key") DO UPDATE SET ` +
    `"count" = CASE WHEN ${T}."lastAt" < ? THEN 1 ELSE ${T}."count" + 1 END, "lastAt" = excluded."lastAt"`,
  forgive: `UPDATE ${T} SET "count" = "count" - 1 WHERE "key" = ?`,
  forgotten: `DELETE FROM ${T} WHERE "key" = ? AND "count" <= 0`,
  clear: `DELETE FROM ${T} WHERE "key" = ?`,
  prune: `DELETE FROM ${T} WHERE "lastAt" < ?`,
};

interface Counted {
  key: string;
  threshold: number;
}

export interface SigninThrottleOptions {
  /** How often counts older than the window are deleted; 0 disables the timer. */
  pruneIntervalMs?: number;
  onPruneError?: (err: unknown) => void;
}

export class SigninThrottle {
  private timer?: NodeJS.Timeout;
  /** PostgreSQL: an attempt locks its rows, so attempts on several instances are counted one at a time. */
  private readonly lock: string;

  constructor(
    private readonly db: Database,
    options: SigninThrottleOptions = {},
  ) {
    this.lock = db.dialect === 'postgres' ? ' FOR UPDATE' : '';
    const interval = options.pruneIntervalMs ?? 10 * 60 * 1000;
    if (interval > 0) {
      const onError = options.onPruneError ?? (() => undefined);
      this.timer = setInterval(() => {
        this.prune().catch(onError);
      }, interval);
      this.timer.unref();
    }
  }

  /**
   * A sign-in attempt, counted as a failure before its password is checked, so that parallel
   * guesses cannot all slip past the limit (succeeded() takes it back). Resolves to 0 when it may
   * go on, else to the milliseconds to wait, and then nothing is counted.
   */
  attempt(email: string, ip: string, trace?: ActiveTrace): Promise<number> {
    const counted = [emailKey(email), addressKey(ip)];
    return this.db.write(() => this.count(counted, Date.now()), trace);
  }

  /** The person signed in: their e-mail starts afresh, and the address gets its attempt back. */
  succeeded(email: string, ip: string, trace?: ActiveTrace): Promise<void> {
    const address = addressKey(ip).key;
    return this.db.write(function* () {
      yield* run(SQL.clear, [emailKey(email).key]);
      yield* run(SQL.forgive, [address]);
      yield* run(SQL.forgotten, [address]);
    }, trace);
  }

  /** Milliseconds the address must wait before it may try (sign-up); 0 when it may now. */
  async addressWait(ip: string, trace?: ActiveTrace): Promise<number> {
    const counted = addressKey(ip);
    const row = await this.db.read(get(SQL.row, [counted.key]), trace);
    return waitOf(row, counted.threshold, Date.now());
  }

  /** A failure of the address that was not a password (sign-up probing for taken e-mails). */
  addressFailed(ip: string, trace?: ActiveTrace): Promise<void> {
    const now = Date.now();
    return this.db.write(function* () {
      yield* run(SQL.fail, [addressKey(ip).key, now, now - FAILURE_WINDOW_MS]);
    }, trace);
  }

  /** Deletes counts that have lapsed; resolves to how many. */
  async prune(now: number = Date.now()): Promise<number> {
    return (await this.db.writeEach(run(SQL.prune, [now - FAILURE_WINDOW_MS]))).changes;
  }

  /** Stops the prune timer: before the database closes. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The rows in one order (e-mail, then address) for every attempt, so two never wait on each other. */
  private *count(counted: readonly Counted[], now: number): Work<number> {
    let wait = 0;
    for (const { key, threshold } of counted) {
      const row = yield* get(SQL.row + this.lock, [key]);
      wait = Math.max(wait, waitOf(row, threshold, now));
    }
    if (wait > 0) return wait;
    for (const { key } of counted) yield* run(SQL.fail, [key, now, now - FAILURE_WINDOW_MS]);
    return 0;
  }
}

function emailKey(email: string): Counted {
  return { key: `email:${email}`, threshold: EMAIL_FAILURE_THRESHOLD };
}

function addressKey(ip: string): Counted {
  return { key: `ip:${ip}`, threshold: IP_FAILURE_THRESHOLD };
}

/** Milliseconds until a key with this row may try again; 0 when it may now. */
function waitOf(row: Record<string, unknown> | undefined, threshold: number, now: number): number {
  if (!row) return 0;
  const count = Number(row.count);
  const last = Number(row.lastAt);
  if (now - last > FAILURE_WINDOW_MS || count < threshold) return 0;
  const delay = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (count - threshold));
  return Math.max(0, last + delay - now);
}
