// Sessions kept in the app's own SQLite database, so they survive restarts and work without any
// other server (express-session's MemoryStore leaks and forgets everything on restart). One row per
// session in _bp_sessions; a row past its expiresAt is never returned and is pruned periodically.
// Its userId is a foreign key to the person's row of _bp_users with ON DELETE CASCADE: removing a
// person (or, when people are User records, deleting the record) ends their sessions at once.

import session from 'express-session';
import type { SessionData } from 'express-session';
import type { Db, Statement } from '../../data/db.ts';

export const SESSIONS_TABLE = '_bp_sessions';

export interface SqliteSessionStoreOptions {
  /** Lifetime of a session whose cookie has no expiry (express-session without maxAge). */
  defaultTtlMs?: number;
  /** How often expired rows are deleted; 0 disables the timer (prune() can still be called). */
  pruneIntervalMs?: number;
  /** Told when a periodic prune fails (e.g. the database stayed locked); the next tick retries. */
  onPruneError?: (err: unknown) => void;
}

type Callback = (err?: unknown) => void;

export class SqliteSessionStore extends session.Store {
  private readonly defaultTtlMs: number;
  private readonly onPruneError: (err: unknown) => void;
  private readonly timer?: NodeJS.Timeout;
  private readonly stmts: {
    get: Statement;
    upsert: Statement;
    touch: Statement;
    destroy: Statement;
    prune: Statement;
    count: Statement;
    clear: Statement;
  };

  constructor(
    private readonly db: Db,
    options: SqliteSessionStoreOptions = {},
  ) {
    super();
    this.defaultTtlMs = options.defaultTtlMs ?? 24 * 60 * 60 * 1000;
    this.onPruneError = options.onPruneError ?? noop;
    const t = `"${SESSIONS_TABLE}"`;
    this.stmts = {
      get: db.prepare(`SELECT "data" FROM ${t} WHERE "sid" = ? AND "expiresAt" > ?`),
      upsert: db.prepare(
        `INSERT INTO ${t} ("sid", "data", "expiresAt", "userId") VALUES (?, ?, ?, ?)
         ON CONFLICT ("sid") DO UPDATE SET "data" = excluded."data", "expiresAt" = excluded."expiresAt",
         "userId" = excluded."userId"`,
      ),
      // Touching an expired row must not bring it back to life.
      touch: db.prepare(`UPDATE ${t} SET "expiresAt" = ? WHERE "sid" = ? AND "expiresAt" > ?`),
      destroy: db.prepare(`DELETE FROM ${t} WHERE "sid" = ?`),
      prune: db.prepare(`DELETE FROM ${t} WHERE "expiresAt" <= ?`),
      count: db.prepare(`SELECT COUNT(*) AS "n" FROM ${t} WHERE "expiresAt" > ?`),
      clear: db.prepare(`DELETE FROM ${t}`),
    };
    const interval = options.pruneIntervalMs ?? 10 * 60 * 1000;
    if (interval > 0) {
      this.timer = setInterval(() => this.prune(), interval);
      // Pruning is housekeeping: it must never keep the process alive.
      this.timer.unref();
    }
  }

  get(sid: string, callback: (err: unknown, session?: SessionData | null) => void): void {
    let found: SessionData | null;
    try {
      const row = this.stmts.get.get(sid, Date.now()) as { data: string } | undefined;
      found = row ? parseSession(row.data) : null;
    } catch (err) {
      return callback(err);
    }
    callback(null, found);
  }

  set(sid: string, sess: SessionData, callback: Callback = noop): void {
    const userId = typeof sess.userId === 'string' ? sess.userId : null;
    try {
      this.stmts.upsert.run(sid, JSON.stringify(sess), this.expiresAt(sess), userId);
    } catch (err) {
      // The person was removed while a request of theirs ran: their session stays ended, not
      // saved back to life; the request carries on as if it had been saved.
      if ((err as { code?: unknown }).code !== 'SQLITE_CONSTRAINT_FOREIGNKEY') return callback(err);
    }
    callback();
  }

  touch(sid: string, sess: SessionData, callback: Callback = noop): void {
    const now = Date.now();
    this.run(() => this.stmts.touch.run(this.expiresAt(sess, now), sid, now), callback);
  }

  destroy(sid: string, callback: Callback = noop): void {
    this.run(() => this.stmts.destroy.run(sid), callback);
  }

  length(callback: (err: unknown, length?: number) => void): void {
    let n: number;
    try {
      n = (this.stmts.count.get(Date.now()) as { n: number }).n;
    } catch (err) {
      return callback(err);
    }
    callback(null, n);
  }

  clear(callback: Callback = noop): void {
    this.run(() => this.stmts.clear.run(), callback);
  }

  /** Deletes expired rows; returns how many. Stops the timer once the database is closed. */
  prune(now: number = Date.now()): number {
    if (!this.db.open) {
      this.close();
      return 0;
    }
    try {
      return this.stmts.prune.run(now).changes;
    } catch (err) {
      // Called from a timer: throwing here would crash the process over housekeeping.
      this.onPruneError(err);
      return 0;
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private expiresAt(sess: SessionData, now: number = Date.now()): number {
    const expires = sess.cookie?.expires;
    if (expires) {
      const at = new Date(expires).getTime();
      if (Number.isFinite(at)) return at;
    }
    return now + this.defaultTtlMs;
  }

  /** The callback runs outside the try so an exception thrown by it is not reported twice. */
  private run(work: () => unknown, callback: Callback): void {
    try {
      work();
    } catch (err) {
      return callback(err);
    }
    callback();
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
