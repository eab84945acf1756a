// Sessions of signed-in people: express-session over the app's own database, with an idle
// timeout (every response pushes it forward) and an absolute lifetime counted from sign-in.
//
// A session row exists only for a person who signed in: nothing is stored for anonymous visitors
// (their CSRF token is the signed cookie of csrf.ts), so an unauthenticated client cannot fill the
// disk. A new session is saved before the response that hands out its cookie and token.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import session from 'express-session';
import { csrfSync } from 'csrf-sync';
import type { Dialect } from '../../core/dialect.ts';
import type { Database } from '../../data/database.ts';
import type { ApiRequest, Middleware } from '../../http/request.ts';
import { clearCookie, type CookieOptions } from './forms.ts';
import { DatabaseSessionStore } from './session-store.ts';

declare module 'express-session' {
  interface SessionData {
    /** The signed-in person. */
    userId?: string;
    /** Epoch ms when the session started: the absolute lifetime counts from here. */
    createdAt?: number;
  }
}

/** A request after express-session has run (it works on node's request as on Express's). */
export type SessionRequest = ApiRequest & {
  session?: session.Session & Partial<session.SessionData>;
  sessionID?: string;
};

export interface SessionOptions {
  db: Database;
  /** `<appSlug>.sid` */
  cookieName: string;
  cookie: CookieOptions;
  /** Signs the session cookie (SESSION_SECRET, see sessionSecret). */
  secret: string;
  /** Absolute lifetime, ms. */
  durationMs: number;
  /** Inactivity after which a session ends, ms. */
  idleMs: number;
  /** Behind the production TLS-terminating proxy (Express's "trust proxy"). */
  production: boolean;
  warn(message: string): void;
}

export interface Sessions {
  /** express-session + absolute-lifetime check; runs before actor resolution. */
  middleware: Middleware;
  /** Whether the request carries a live session of a person (who may since have been removed). */
  signedIn(req: SessionRequest): boolean;
  /** The session's CSRF token; only for a request where signedIn() holds. */
  token(req: SessionRequest): string;
  /** Whether `sent` is the session's CSRF token, compared in constant time. */
  tokenMatches(req: SessionRequest, sent: string | undefined): boolean;
  /**
   * A new session for the person (a new id, against session fixation, and a new token), stored
   * before it resolves. On failure the request keeps no session, so no cookie names it.
   */
  start(req: SessionRequest, userId: string): Promise<void>;
  /** Deletes the session row and expires the cookie. */
  end(req: SessionRequest, res: ServerResponse): Promise<void>;
  /** Stops the store's housekeeping timer: before the database closes. */
  close(): void;
}

const MIN_SECRET_LENGTH = 32;

export function createSessions(options: SessionOptions): Sessions {
  const { cookieName, durationMs, idleMs } = options;
  const store = new DatabaseSessionStore(options.db, {
    defaultTtlMs: idleMs,
    onPruneError: (err) => options.warn(`pruning expired sessions failed: ${String(err)}`),
  });
  const tokens = csrfSync({ size: 32 });
  const expressSession = session({
    name: cookieName,
    secret: options.secret,
    store,
    resave: false,
    // No row and no cookie until a person signs in.
    saveUninitialized: false,
    // Every response pushes the idle deadline forward (cookie and row), so only inactivity ends it.
    rolling: true,
    cookie: { ...options.cookie, sameSite: 'lax', maxAge: idleMs },
    // In production the app sits behind a TLS-terminating proxy. Its X-Forwarded-Proto is taken
    // here as sent: sign-in and sign-up, which start sessions, first require HTTPS as TRUST_PROXY
    // allows (routes.ts requireHttps), and this middleware also serves the front door's requests,
    // which Express's trust setting does not reach.
    proxy: options.production ? true : undefined,
  });

  const middleware: Middleware = (req: SessionRequest, res, next) => {
    // A request that presents an API key is sessionless: it neither reads nor creates a session
    // (and skips express-session's per-request work, the hot path of agents).
    if (req.headers.authorization !== undefined) return next();
    // express-session is connect middleware: node's request and response are all it uses.
    expressSession(req as unknown as Request, res as Response, (err?: unknown) => {
      if (err || !req.session || req.session.createdAt === undefined) return next(err);
      const remaining = req.session.createdAt + durationMs - Date.now();
      if (remaining > 0) {
        // Neither the cookie nor the row may outlive the absolute deadline.
        req.session.cookie.maxAge = Math.min(idleMs, remaining);
        return next();
      }
      // Past its absolute lifetime (possible when the duration was lowered since the session
      // began): drop the row and carry on as a caller without a session.
      req.session.regenerate((regenerateErr) => {
        if (!regenerateErr) clearCookie(res, cookieName, options.cookie);
        next(regenerateErr);
      });
    });
  };

  function signedIn(req: SessionRequest): boolean {
    return req.session?.userId !== undefined;
  }

  function token(req: SessionRequest): string {
    if (!signedIn(req)) throw new Error('Sessions.token: the request carries no signed-in session');
    return tokens.generateToken(req as unknown as Request);
  }

  function tokenMatches(req: SessionRequest, sent: string | undefined): boolean {
    const expected = signedIn(req) ? tokens.getTokenFromState(req as unknown as Request) : undefined;
    if (typeof sent !== 'string' || typeof expected !== 'string') return false;
    const a = Buffer.from(sent);
    const b = Buffer.from(expected);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  async function start(req: SessionRequest, userId: string): Promise<void> {
    const s = req.session;
    if (!s) throw new Error('Sessions.start: the session middleware must run first');
    try {
      await new Promise<void>((resolve, reject) => s.regenerate((err) => (err ? reject(err) : resolve())));
      const fresh = req.session as session.Session & Partial<session.SessionData>;
      fresh.userId = userId;
      fresh.createdAt = Date.now();
      fresh.cookie.maxAge = Math.min(idleMs, durationMs);
      tokens.generateToken(req as unknown as Request);
      // Saved now, not when the response ends (express-session's default): the answer carries
      // the cookie and the token, so the row must exist first, and a failure must be the answer.
      await new Promise<void>((resolve, reject) => fresh.save((err) => (err ? reject(err) : resolve())));
    } catch (err) {
      // Without a session, express-session sets no cookie and saves nothing at the end.
      req.session = undefined;
      throw err;
    }
  }

  async function end(req: SessionRequest, res: ServerResponse): Promise<void> {
    const s = req.session;
    if (s) await new Promise<void>((resolve, reject) => s.destroy((err) => (err ? reject(err) : resolve())));
    clearCookie(res, cookieName, options.cookie);
  }

  return { middleware, signedIn, token, tokenMatches, start, end, close: () => store.close() };
}

/**
 * SESSION_SECRET: required (and long) in production, and on PostgreSQL, where every instance must
 * sign and check cookies with the same secret (a random one per process would sign people out as
 * their requests move between instances). In development on SQLite a random one, with a warning.
 */
export function sessionSecret(options: {
  secret?: string;
  production: boolean;
  dialect: Dialect;
  warn(message: string): void;
}): string {
  const example = '(e.g. the output of `openssl rand -base64 48`)';
  if (options.secret) {
    if (options.production && options.secret.length < MIN_SECRET_LENGTH) {
      throw new Error(`SESSION_SECRET must be at least ${MIN_SECRET_LENGTH} characters in production ${example}`);
    }
    return options.secret;
  }
  if (options.production) {
    throw new Error(
      `SESSION_SECRET must be set in production: it signs the session cookies and CSRF tokens ${example}`,
    );
  }
  if (options.dialect === 'postgres') {
    throw new Error(
      'SESSION_SECRET must be set on PostgreSQL: every instance of the app signs and checks the session ' +
        `cookies and CSRF tokens with it ${example}`,
    );
  }
  options.warn('SESSION_SECRET is not set: using a random secret, so everyone is signed out when the app restarts');
  return randomBytes(32).toString('base64url');
}
