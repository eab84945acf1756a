// Sessions kept in the app's own database (SQLite or PostgreSQL), so they survive restarts, work
// without any other server (express-session's MemoryStore leaks and forgets everything on restart),
// and are shared by every instance of the app on one PostgreSQL: a session started on one instance
// works on the others, and logging out on one ends it on all. One row per session in _bp_sessions;
// a row past its expiresAt is never returned and is pruned periodically. Its userId is a foreign
// key to the person's row of _bp_users with ON DELETE CASCADE: removing a person (or, when people
// are User records, deleting the record) ends their sessions at once.

import session from 'express-session';
import type { SessionData } from 'express-session';
import { AppError } from '../../core/errors.ts';
import { type Database, get, run, type Work } from '../../data/database.ts';

export const SESSIONS_TABLE = '_bp_sessions';

export interface SessionStoreOptions {
  /** Lifetime of a session whose cookie has no expiry (express-session without maxAge). */
  defaultTtlMs?: number;
  /** How often expired rows are deleted; 0 disables the timer (prune() can still be called). */
  pruneIntervalMs?: number;
  /** Told when a periodic prune fails (e.g. the database stayed locked); the next tick retries. */
  onPruneError?: (err: unknown) => void;
}

type Callback = (err?: unknown) => void;

const T = `"${SESSIONS_TABLE}"`;
const SQL = {
  get: `SELECT "data" FROM ${T} WHERE "sid" = ? AND "expiresAt" > ?`,
  upsert:
    `INSERT INTO ${T} ("sid", "data", "expiresAt", "userId") VALUES (?, ?, ?, ?) ` +
    `ON CONFLICT ("sid") DO UPDATE SET "data" = excluded."data", "expiresAt" = excluded."expiresAt", ` +
    `"userId" = excluded."userId"`,
  // Touching an expired row must not bring it back to life.
  touch: `UPDATE ${T} SET "expiresAt" = ? WHERE "sid" = ? AND "expiresAt" > ?`,
  destroy: `DELETE FROM ${T} WHERE "sid" = ?`,
  prune: `DELETE FROM ${T} WHERE "expiresAt" <= ?`,
  count: `SELECT COUNT(*) AS "n" FROM ${T} WHERE "expiresAt" > ?`,
  clear: `DELETE FROM ${T}`,
};

export class DatabaseSessionStore extends session.Store {
  private readonly defaultTtlMs: number;
  private readonly onPruneError: (err: unknown) => void;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly db: Database,
    options: SessionStoreOptions = {},
  ) {
    super();
    this.defaultTtlMs = options.defaultTtlMs ?? 24 * 60 * 60 * 1000;
    this.onPruneError = options.onPruneError ?? noop;
    const interval = options.pruneIntervalMs ?? 10 * 60 * 1000;
    if (interval > 0) {
      this.timer = setInterval(() => {
        this.prune().catch(this.onPruneError);
      }, interval);
      // Pruning is housekeeping: it must never keep the process alive.
      this.timer.unref();
    }
  }

  get(sid: string, callback: (err: unknown, session?: SessionData | null) => void): void {
    this.db.read(get(SQL.get, [sid, Date.now()])).then(
      (row) => callback(null, row ? parseSession(row.data as string) : null),
      (err: unknown) => callback(err),
    );
  }

  set(sid: string, sess: SessionData, callback: Callback = noop): void {
    const userId = typeof sess.userId === 'string' ? sess.userId : null;
    const params = [sid, JSON.stringify(sess), this.expiresAt(sess), userId];
    this.db.writeEach(run(SQL.upsert, params)).then(
      () => callback(),
      (err: unknown) => {
        // The person was removed while a request of theirs ran: their session stays ended, not
        // saved back to life; the request carries on as if it had been saved.
        if (err instanceof AppError && err.code === 'REFERENCE_CONFLICT') return callback();
        callback(err);
      },
    );
  }

  touch(sid: string, sess: SessionData, callback: Callback = noop): void {
    const now = Date.now();
    this.answer(run(SQL.touch, [this.expiresAt(sess, now), sid, now]), callback);
  }

  destroy(sid: string, callback: Callback = noop): void {
    this.answer(run(SQL.destroy, [sid]), callback);
  }

  length(callback: (err: unknown, length?: number) => void): void {
    this.db.read(get(SQL.count, [Date.now()])).then(
      (row) => callback(null, Number(row?.n ?? 0)),
      (err: unknown) => callback(err),
    );
  }

  clear(callback: Callback = noop): void {
    this.answer(run(SQL.clear), callback);
  }

  /** Deletes expired rows; resolves to how many. */
  async prune(now: number = Date.now()): Promise<number> {
    return (await this.db.writeEach(run(SQL.prune, [now]))).changes;
  }

  /** Stops the prune timer: before the database closes. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private expiresAt(sess: SessionData, now: number = Date.now()): number {
    const expires = sess.cookie?.expires;
    if (expires) {
      const at = new Date(expires).getTime();
      if (Number.isFinite(at)) return at;
    }
    return now + this.defaultTtlMs;
  }

  /** Runs a write of express-session, one statement committing on its own, and answers its callback. */
  private answer(statement: Work<unknown>, callback: Callback): void {
    this.db.writeEach(statement).then(
      () => callback(),
      (err: unknown) => callback(err),
    );
  }
}

/** A row that does not parse (hand-edited, truncated) counts as no session rather than a 500. */
function parseSession(data: string): SessionData | null {
  try {
    const parsed: unknown = JSON.parse(data);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as SessionData) : null;
  } catch {
    return null;
  }
}

function noop(): void {}
