// The `email` auth provider: people sign up and sign in with an e-mail and a password, and stay
// signed in through a session cookie backed by the app's own database. Assembled here from its
// parts: sessions and their lifetimes (session.ts), CSRF tokens and checks (csrf.ts), the routes
// and pages (routes.ts).
//
// Pipeline (the app mounts these in order): session → actor resolution (API key, else
// sessionActor) → csrf → router and the app's routes.

import type { ServerResponse } from 'node:http';
import type { Router } from 'express';
import type { Actor } from '../../core/actor.ts';
import type { Database } from '../../data/database.ts';
import type { Middleware } from '../../http/request.ts';
import { anonymousTokens, csrfCheck } from './csrf.ts';
import { parseOrigin } from './origins.ts';
import { builtInPeople } from './people.ts';
import type { AuthPageTemplates } from './login-page.ts';
import { AUTH_ROUTES, authRoutes } from './routes.ts';
import { createSessions, sessionSecret, type SessionRequest } from './session.ts';
import { SigninThrottle } from './signin-throttle.ts';
import { type UserRecordsConfig, userRecords } from './user-records.ts';

export interface EmailAuthOptions {
  db: Database;
  /**
   * Cookie name prefix: the cookies are `<appSlug>.sid` (sessions) and `<appSlug>.csrf`, with
   * `__Host-` first in production.
   */
  appSlug: string;
  /** Shown on the sign-in page; defaults to appSlug. */
  appTitle?: string;
  loginPath: string;
  /** Origins trusted besides the app's own (auth.trustedOrigins); none when absent. */
  trustedOrigins?: readonly string[];
  /** auth.signup: people may create their own account (default true); else only the users command adds them. */
  signup?: boolean;
  /** Absolute session lifetime, seconds. */
  sessionDuration: number;
  /** Seconds of inactivity after which a session ends. */
  idleTimeout: number;
  production: boolean;
  /** SESSION_SECRET; required in production. */
  secret?: string;
  warn(message: string): void;
  /**
   * When the blueprint declares a `User` entity with an Email field: people are its records
   * (user-records.ts). Without it, people live in the provider's own table.
   */
  userRecords?: UserRecordsConfig;
  /** [auth.pages]: the blueprint's own sign-in, sign-up, sign-out and login-required pages. */
  pages?: AuthPageTemplates;
}

export interface EmailAuth {
  /** express-session + absolute-lifetime check; runs before actor resolution. */
  session: Middleware;
  /** The person behind the session, or undefined. Reads the person's rows on every request. */
  sessionActor(req: SessionRequest): Promise<Actor | undefined> | undefined;
  /** CSRF + trusted-origin checks for mutations; runs after actor resolution, before routes. */
  csrf: Middleware;
  /** /api/auth/* routes and the sign-in page. */
  router: Router;
  /**
   * The CSRF token for an HTML form the app renders: the session's for a signed-in person, else
   * the anonymous one (setting its cookie on `res` when needed). Stores nothing.
   */
  csrfToken(req: SessionRequest, res: ServerResponse): string;
  /**
   * Answers someone not signed in who opened a page that needs a person: the blueprint's
   * loginRequired page (401) when [auth.pages] gives one, else a redirect to the sign-in page
   * that comes back to `next` (a relative path) after signing in.
   */
  loginRequired(req: SessionRequest, res: ServerResponse, next: string): void;
  /** Stops the housekeeping timers (expired sessions, lapsed sign-in counts): before the database closes. */
  close(): void;
}

export function createEmailAuth(options: EmailAuthOptions): EmailAuth {
  const { db, loginPath, production } = options;
  if (!loginPath.startsWith('/')) throw new Error(`auth.loginPath must start with "/" (got "${loginPath}")`);
  for (const [name, value] of [
    ['auth.session.duration', options.sessionDuration],
    ['auth.session.idle_timeout', options.idleTimeout],
  ] as const) {
    if (!(Number.isFinite(value) && value > 0))
      throw new Error(`${name} must be a positive number of seconds (got ${value})`);
  }
  const secret = sessionSecret({ ...options, dialect: db.dialect });
  const signup = options.signup ?? true;
  const cookie = { path: '/', httpOnly: true, secure: production };
  // In production (HTTPS) both cookies carry the __Host- prefix: the browser then accepts them only
  // Secure, for this host alone and path /, so a sibling subdomain cannot plant its own nonce or
  // session id beside ours (cookie tossing).
  const prefix = production ? '__Host-' : '';
  const sessions = createSessions({
    db,
    cookieName: `${prefix}${options.appSlug}.sid`,
    cookie,
    secret,
    durationMs: options.sessionDuration * 1000,
    idleMs: options.idleTimeout * 1000,
    production,
    warn: options.warn,
  });
  const anonymous = anonymousTokens({ cookieName: `${prefix}${options.appSlug}.csrf`, cookie, secret });
  const people = options.userRecords ? userRecords(db, options.userRecords) : builtInPeople(db);
  const throttle = new SigninThrottle(db, {
    onPruneError: (err) => options.warn(`pruning lapsed sign-in counts failed: ${String(err)}`),
  });
  const { router, formToken, expiredForm, loginRequired } = authRoutes({
    people,
    loginPath,
    title: options.appTitle ?? options.appSlug,
    signup,
    sessions,
    anonymous,
    throttle,
    secureCookies: production,
    pages: options.pages,
  });
  const csrf = csrfCheck({
    sessions,
    anonymous,
    trustedOrigins: new Set((options.trustedOrigins ?? []).map(parseOrigin)),
    production,
    signInPaths: new Set(signup ? [AUTH_ROUTES.login, AUTH_ROUTES.signup] : [AUTH_ROUTES.login]),
    loginPath,
    expiredForm,
  });

  // Without a session there is nothing to read: no promise, so anonymous requests stay synchronous.
  function sessionActor(req: SessionRequest): Promise<Actor | undefined> | undefined {
    const userId = req.session?.userId;
    if (userId === undefined) return undefined;
    // A removed person's session no longer names anyone.
    return people.actor(req.trace, userId);
  }

  function close(): void {
    sessions.close();
    throttle.close();
  }

  return { session: sessions.middleware, sessionActor, csrf, router, csrfToken: formToken, loginRequired, close };
}
