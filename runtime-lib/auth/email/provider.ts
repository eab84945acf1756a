// The `email` auth provider: people sign up and sign in with an e-mail and a password, and stay
// signed in through a session cookie backed by the app's own database.
//
// Pipeline (the app mounts these in order): session → actor resolution (API key, else
// sessionActor) → csrf → router and the app's routes.
//
// CSRF rules, applied to every mutating request (anything but GET/HEAD/OPTIONS):
//  - API-key requests (actor.kind 'agent') are exempt: a bearer key is never sent by a browser on
//    its own, so a foreign site cannot make a victim's browser use it.
//  - An Origin header must be this app's own origin or one of auth.trustedOrigins; without Origin,
//    `Sec-Fetch-Site: cross-site` is refused.
//  - A request carrying an established session (a cookie naming a live session row) must send that
//    session's token (X-CSRF-Token header or `_csrf` field). This covers signed-in people and the
//    anonymous session the sign-in page creates to hold its token.
//  - Sign-in and sign-up without any session are allowed only as JSON: a browser cannot send an
//    application/json POST to another site without a CORS preflight, which this app never grants,
//    so a foreign page cannot sign the victim in as the attacker (login CSRF). Form posts must come
//    from the sign-in page, whose session holds the token.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Router, type NextFunction, type Request, type Response } from 'express';
import session from 'express-session';
import { csrfSync } from 'csrf-sync';
import { ANONYMOUS, type Actor } from '../../core/actor.ts';
import { AppError } from '../../core/errors.ts';
import { ulid } from '../../core/ids.ts';
import { query, type Db } from '../../data/db.ts';
import { matched } from '../../http/pipeline.ts';
import { type ApiRequest, type Middleware, pathOf } from '../../http/request.ts';
import { clientKey, EMAIL_FAILURE_THRESHOLD, FailureLimiter, IP_FAILURE_THRESHOLD } from './failure-limiter.ts';
import {
  authBody,
  clearCookie,
  credentials,
  field,
  isForm,
  isJson,
  isPlainObject,
  queryParam,
  readTokenBody,
} from './forms.ts';
import { LOGIN_PAGE_CSP, renderLoginPage, type LoginPageOptions } from './login-page.ts';
import { originAllowed, parseOrigin, safeNext } from './origins.ts';
import { hashPassword, hashPasswordSync, PASSWORD_MAX_LENGTH, passwordProblem, verifyPassword } from './password.ts';
import { SqliteSessionStore } from './session-store.ts';
import { isoNow, USERS_TABLE, userActor } from './users.ts';

declare module 'express-session' {
  interface SessionData {
    /** The signed-in person; absent in the anonymous session that only holds a CSRF token. */
    userId?: string;
    /** Epoch ms when the session started: the absolute lifetime counts from here. */
    createdAt?: number;
  }
}

/** A request after express-session has run (it works on node's request as on Express's). */
type SessionRequest = ApiRequest & { session?: session.Session & Partial<session.SessionData>; sessionID?: string };

export const AUTH_ROUTES = {
  signup: '/api/auth/signup',
  login: '/api/auth/login',
  logout: '/api/auth/logout',
  session: '/api/auth/session',
} as const;

export interface EmailAuthOptions {
  db: Db;
  /** Cookie name prefix: the cookie is `<appSlug>.sid`. */
  appSlug: string;
  /** Shown on the sign-in page; defaults to appSlug. */
  appTitle?: string;
  loginPath: string;
  trustedOrigins: string[];
  /** Absolute session lifetime, seconds. */
  sessionDuration: number;
  /** Seconds of inactivity after which a session ends. */
  idleTimeout: number;
  production: boolean;
  /** SESSION_SECRET; required in production. */
  secret?: string;
  warn(message: string): void;
}

export interface EmailAuth {
  /** express-session + absolute-lifetime check; runs before actor resolution. */
  session: Middleware;
  /** The person behind the session, or undefined. Reads the user row on every request. */
  sessionActor(req: SessionRequest): Actor | undefined;
  /** CSRF + trusted-origin checks for mutations; runs after actor resolution, before routes. */
  csrf: Middleware;
  /** /api/auth/* routes and the sign-in page. */
  router: Router;
  /** The session's CSRF token (created on first use), for HTML forms the app renders. */
  csrfToken(req: SessionRequest): string;
}

interface UserRow {
  id: string;
  email: string;
  passwordHash: string;
  roles: string;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const MIN_SECRET_LENGTH = 32;

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
  const secret = sessionSecret(options);
  const durationMs = options.sessionDuration * 1000;
  const idleMs = options.idleTimeout * 1000;
  const trustedOrigins = new Set(options.trustedOrigins.map(parseOrigin));
  const cookieName = `${options.appSlug}.sid`;
  const cookieOptions = { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: production };
  const store = new SqliteSessionStore(db, {
    defaultTtlMs: idleMs,
    onPruneError: (err) => options.warn(`pruning expired sessions failed: ${String(err)}`),
  });
  const tokens = csrfSync({ size: 32 });
  const limits = { email: new FailureLimiter(EMAIL_FAILURE_THRESHOLD), ip: new FailureLimiter(IP_FAILURE_THRESHOLD) };
  // Verified against when the e-mail is unknown, so that case costs the same scrypt work.
  const dummyHash = hashPasswordSync(randomBytes(16).toString('hex'));
  const stmts = {
    userById: db.prepare(`SELECT "id", "email", "passwordHash", "roles" FROM "${USERS_TABLE}" WHERE "id" = ?`),
    userByEmail: db.prepare(`SELECT "id", "email", "passwordHash", "roles" FROM "${USERS_TABLE}" WHERE "email" = ?`),
    insertUser: db.prepare(
      `INSERT INTO "${USERS_TABLE}" ("id", "email", "passwordHash", "roles", "createdAt") VALUES (?, ?, ?, '[]', ?)`,
    ),
  };

  const expressSession = session({
    name: cookieName,
    secret,
    store,
    resave: false,
    // No row and no cookie until something is stored (a CSRF token or a sign-in).
    saveUninitialized: false,
    // Every response pushes the idle deadline forward (cookie and row), so only inactivity ends it.
    rolling: true,
    cookie: { ...cookieOptions, maxAge: idleMs },
    // In production the app sits behind a TLS-terminating proxy (Express's "trust proxy" there).
    proxy: production ? true : undefined,
  });

  const sessionMiddleware: Middleware = (req: SessionRequest, res, next) => {
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
        req.sessionId = req.sessionID;
        return next();
      }
      // Past its absolute lifetime (possible when the duration was lowered since the session
      // began): drop the row and carry on as a caller without a session.
      req.session.regenerate((regenerateErr) => {
        if (!regenerateErr) clearCookie(res, cookieName, cookieOptions);
        next(regenerateErr);
      });
    });
  };

  function hasSession(req: SessionRequest): boolean {
    return req.session?.createdAt !== undefined;
  }

  function csrfToken(req: SessionRequest): string {
    const s = req.session;
    if (!s) throw new Error('createEmailAuth: the session middleware must run before csrfToken()');
    if (s.createdAt === undefined) {
      s.createdAt = Date.now();
      s.cookie.maxAge = Math.min(idleMs, durationMs);
    }
    return tokens.generateToken(req as unknown as Request);
  }

  function sessionActor(req: SessionRequest): Actor | undefined {
    const userId = req.session?.userId;
    if (userId === undefined) return undefined;
    const row = query(req.trace, stmts.userById, 'get', [userId]) as UserRow | undefined;
    // A removed user's session no longer names anyone.
    return row ? userActor(row) : undefined;
  }

  function tokenMatches(req: SessionRequest): boolean {
    const header = req.headers['x-csrf-token'];
    const sent = typeof header === 'string' ? header : field(req.body, '_csrf');
    const expected = tokens.getTokenFromState(req as unknown as Request);
    if (typeof sent !== 'string' || typeof expected !== 'string') return false;
    const a = Buffer.from(sent);
    const b = Buffer.from(expected);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  const csrf: Middleware = (req: SessionRequest, res, next) => {
    if (SAFE_METHODS.has(req.method ?? 'GET') || req.actor?.kind === 'agent') return next();
    const origin = req.headers.origin;
    const path = pathOf(req.url);
    if (
      origin !== undefined
        ? !originAllowed(req, origin, trustedOrigins, production)
        : req.headers['sec-fetch-site'] === 'cross-site'
    ) {
      return next(
        new AppError(
          'CSRF_FAILED',
          `requests from ${origin ?? 'another site'} are not accepted; ` +
            'add the origin to auth.trustedOrigins if it is yours',
        ),
      );
    }
    const refuse = (message: string): void => {
      // A sign-in page left open past its session's life posts a stale token: show the page again.
      if (isForm(req) && (path === AUTH_ROUTES.login || path === AUTH_ROUTES.signup)) {
        sendPage(
          req,
          res,
          403,
          'The form expired. Please try again.',
          field(req.body, 'email'),
          path === AUTH_ROUTES.signup,
        );
      } else {
        next(new AppError('CSRF_FAILED', message));
      }
    };
    if (!hasSession(req)) {
      const signingIn = path === AUTH_ROUTES.login || path === AUTH_ROUTES.signup;
      if (signingIn && !isJson(req))
        return refuse(`without a session, sign in with a JSON body; forms must come from ${loginPath}`);
      return next();
    }
    const check = (err?: unknown): void => {
      if (err) return next(err);
      const ok = tokenMatches(req);
      // The token is consumed here; handlers never see it among their fields.
      if (isPlainObject(req.body)) delete req.body._csrf;
      if (ok) return next();
      refuse(
        'missing or invalid CSRF token: send the token from GET /api/auth/session ' +
          'in the X-CSRF-Token header or a _csrf field',
      );
    };
    if (typeof req.headers['x-csrf-token'] === 'string') return check();
    readTokenBody(req, res, check);
  };

  /** Sign-in page (or the sign-up variant), always with a token of the current session. */
  function sendPage(
    req: SessionRequest,
    res: ServerResponse,
    status: number,
    error?: string,
    email?: string,
    signup = false,
  ): void {
    const title = options.appTitle ?? options.appSlug;
    const page: LoginPageOptions = {
      title: signup ? `Create an account for ${title}` : `Sign in to ${title}`,
      action: signup ? AUTH_ROUTES.signup : AUTH_ROUTES.login,
      csrfToken: csrfToken(req),
      error,
      email,
      next: safeNext(req.method === 'GET' ? queryParam(req, 'next') : field(req.body, 'next')),
      ...(signup ? { submitLabel: 'Create account', passwordAutocomplete: 'new-password' as const } : {}),
    };
    res.statusCode = status;
    res.setHeader('Content-Security-Policy', LOGIN_PAGE_CSP);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'same-origin');
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(renderLoginPage(page));
  }

  /** A new session id for the person (session fixation), with a fresh CSRF token. */
  async function startSession(req: Request, userId: string): Promise<void> {
    await new Promise<void>((resolve, reject) => req.session.regenerate((err) => (err ? reject(err) : resolve())));
    req.session.userId = userId;
    req.session.createdAt = Date.now();
    req.session.cookie.maxAge = Math.min(idleMs, durationMs);
  }

  function signedIn(req: Request, res: Response, status: number, row: UserRow): void {
    req.actor = userActor(row);
    if (isForm(req)) {
      res.redirect(303, safeNext(field(req.body, 'next')) ?? '/');
      return;
    }
    res.status(status).json({ actor: req.actor, csrfToken: csrfToken(req) });
  }

  /** Form posts get the page back with the message; JSON callers get the error envelope. */
  function failed(err: unknown, req: Request, res: Response, next: NextFunction, signup: boolean): void {
    if (!(isForm(req) && err instanceof AppError && err.status < 500)) return next(err);
    if (err.retryAfter !== undefined) res.setHeader('Retry-After', String(err.retryAfter));
    sendPage(req, res, err.status, err.message, field(req.body, 'email')?.trim(), signup);
  }

  function tooManyAttempts(waitMs: number): AppError {
    const seconds = Math.ceil(waitMs / 1000);
    return new AppError(
      'TOO_MANY_ATTEMPTS',
      `too many failed attempts; try again in ${seconds} second${seconds === 1 ? '' : 's'}`,
      { retryAfter: seconds },
    );
  }

  const router = Router();
  router.use('/api/auth', (_req, res, next) => {
    // Answers carry CSRF tokens and identities: never cache them.
    res.setHeader('Cache-Control', 'no-store');
    next();
  });

  router.get(loginPath, matched('auth.loginPage'), (req, res) => sendPage(req, res, 200));

  router.get(AUTH_ROUTES.session, matched('auth.session'), (req, res) => {
    const actor = req.actor ?? ANONYMOUS;
    // API-key callers skip CSRF, so they get no token (and no session row is made for them).
    res.json({ actor, csrfToken: actor.kind === 'agent' ? null : csrfToken(req) });
  });

  router.post(AUTH_ROUTES.login, matched('auth.login'), authBody, async (req, res, next) => {
    try {
      const { email, password } = credentials(req.body);
      if ([...password].length > PASSWORD_MAX_LENGTH)
        throw new AppError('VALIDATION_FAILED', `the password must be at most ${PASSWORD_MAX_LENGTH} characters long`);
      const ip = clientKey(req);
      const now = Date.now();
      const wait = Math.max(limits.email.wait(email, now), limits.ip.wait(ip, now));
      if (wait > 0) throw tooManyAttempts(wait);
      // Counted before the slow hash, so parallel guesses cannot all slip past the limit; a
      // success takes it back below.
      limits.email.fail(email, now);
      limits.ip.fail(ip, now);
      const user = query(req.trace, stmts.userByEmail, 'get', [email]) as UserRow | undefined;
      const ok = await verifyPassword(password, user?.passwordHash ?? dummyHash);
      if (!user || !ok) throw new AppError('INVALID_CREDENTIALS', 'the e-mail or password is incorrect');
      limits.email.clear(email);
      limits.ip.forgive(ip);
      await startSession(req, user.id);
      signedIn(req, res, 200, user);
    } catch (err) {
      failed(err, req, res, next, false);
    }
  });

  router.post(AUTH_ROUTES.signup, matched('auth.signup'), authBody, async (req, res, next) => {
    try {
      const { email, password } = credentials(req.body);
      const problem = passwordProblem(password);
      if (problem) throw new AppError('WEAK_PASSWORD', problem);
      const ip = clientKey(req);
      const wait = limits.ip.wait(ip, Date.now());
      if (wait > 0) throw tooManyAttempts(wait);
      // Sign-up has to say the e-mail is taken; counting that per IP slows down probing with it.
      const taken = (): AppError => {
        limits.ip.fail(ip, Date.now());
        return new AppError('EMAIL_TAKEN', 'an account with this e-mail already exists; sign in instead');
      };
      if (query(req.trace, stmts.userByEmail, 'get', [email])) throw taken();
      const passwordHash = await hashPassword(password);
      const user: UserRow = { id: ulid(), email, passwordHash, roles: '[]' };
      try {
        query(req.trace, stmts.insertUser, 'run', [user.id, email, passwordHash, isoNow()]);
      } catch (err) {
        // Another sign-up with the same e-mail won the race while this one was hashing.
        if (err instanceof AppError && err.code === 'UNIQUE_CONFLICT') throw taken();
        throw err;
      }
      await startSession(req, user.id);
      signedIn(req, res, 201, user);
    } catch (err) {
      failed(err, req, res, next, true);
    }
  });

  router.post(AUTH_ROUTES.logout, matched('auth.logout'), (req, res, next) => {
    const done = (): void => {
      clearCookie(res, cookieName, cookieOptions);
      if (isForm(req)) res.redirect(303, loginPath);
      else res.status(204).end();
    };
    if (!req.session) return done();
    req.session.destroy((err) => (err ? next(err) : done()));
  });

  return { session: sessionMiddleware, sessionActor, csrf, router, csrfToken };
}

function sessionSecret(options: EmailAuthOptions): string {
  if (options.secret) {
    if (options.production && options.secret.length < MIN_SECRET_LENGTH) {
      throw new Error(
        `SESSION_SECRET must be at least ${MIN_SECRET_LENGTH} characters in production ` +
          '(e.g. the output of `openssl rand -base64 48`)',
      );
    }
    return options.secret;
  }
  if (options.production) {
    throw new Error(
      'SESSION_SECRET must be set in production: it signs the session cookies ' +
        '(e.g. the output of `openssl rand -base64 48`)',
    );
  }
  options.warn('SESSION_SECRET is not set: using a random secret, so everyone is signed out when the app restarts');
  return randomBytes(32).toString('base64url');
}
