// CSRF protection. Two kinds of token, and neither costs an anonymous visitor a stored row:
//  - a signed-in person's token lives in their session (session.ts);
//  - an anonymous visitor's is a signed double-submit token: a random nonce in the HttpOnly,
//    SameSite=Lax cookie `<appSlug>.csrf`, and the token `<nonce>.<HMAC(key, nonce)>` that the
//    sign-in form or the X-CSRF-Token header carries. Only this server can make a token for a
//    nonce, and only the visitor's browser holds the nonce.
//
// Rules, applied to every mutating request (anything but GET/HEAD/OPTIONS):
//  - API-key requests (actor.kind 'agent') are exempt: a bearer key is never sent by a browser on
//    its own, so a foreign site cannot make a victim's browser use it.
//  - An Origin header must be this app's own origin or one of auth.trustedOrigins; without Origin,
//    `Sec-Fetch-Site: cross-site` is refused.
//  - A request carrying a signed-in session must send that session's token (X-CSRF-Token header or
//    `_csrf` field). In a multipart body (a form with a file input) the `_csrf` field is read by the
//    route's parser (runtime/uploads), which decides with the same rules before it stores any file;
//    a route that reads no multipart body is refused by the front door (http/body.ts deferCsrf).
//  - Without one, sign-in and sign-up forms must carry the anonymous token of their cookie (they
//    come from the sign-in page). As JSON they need none: a browser cannot send an application/json
//    POST to another site without a CORS preflight, which this app never grants, so a foreign page
//    cannot sign the victim in as the attacker (login CSRF).
//  - Any other request without a session runs as an anonymous caller. With a valid anonymous token
//    it gets the nonce as its scope for Idempotency-Keys (req.sessionId); without one, none.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { AppError } from '../../core/errors.ts';
import { deferCsrf, isMultipart } from '../../http/body.ts';
import { type ApiRequest, type Middleware, pathOf } from '../../http/request.ts';
import {
  type CookieOptions,
  field,
  isForm,
  isJson,
  isPlainObject,
  readCookie,
  readTokenBody,
  setCookie,
} from './forms.ts';
import { originAllowed } from './origins.ts';
import type { SessionRequest, Sessions } from './session.ts';

export interface AnonymousTokens {
  /** The visitor's token; sets the nonce cookie when the request carries none. Stores nothing. */
  issue(req: ApiRequest, res: ServerResponse): string;
  /** Whether the request carries a nonce cookie (so a token could match it). */
  present(req: ApiRequest): boolean;
  /** The nonce when `sent` is the token of the request's cookie (constant-time), else undefined. */
  verify(req: ApiRequest, sent: string | undefined): string | undefined;
}

const NONCE_BYTES = 18;
const NONCE = /^[A-Za-z0-9_-]{24}$/;

export function anonymousTokens(options: {
  cookieName: string;
  cookie: CookieOptions;
  secret: string;
}): AnonymousTokens {
  // A key of its own, derived from the secret: express-session signs its cookie with HMAC(secret,
  // sid), and a token must never double as a signed session id (or the reverse).
  const key = createHmac('sha256', options.secret).update('bp anonymous CSRF token v1').digest();
  const tokenFor = (nonce: string): string => `${nonce}.${createHmac('sha256', key).update(nonce).digest('base64url')}`;
  const nonceOf = (req: ApiRequest): string | undefined => {
    const value = readCookie(req, options.cookieName);
    return value !== undefined && NONCE.test(value) ? value : undefined;
  };
  return {
    issue(req, res) {
      let nonce = nonceOf(req);
      if (nonce === undefined) {
        nonce = randomBytes(NONCE_BYTES).toString('base64url');
        // A browser-session cookie: the visitor keeps one nonce until the browser closes.
        setCookie(res, options.cookieName, nonce, options.cookie);
      }
      return tokenFor(nonce);
    },
    present: (req) => nonceOf(req) !== undefined,
    verify(req, sent) {
      const nonce = nonceOf(req);
      if (nonce === undefined || typeof sent !== 'string') return undefined;
      const a = Buffer.from(sent);
      const b = Buffer.from(tokenFor(nonce));
      return a.length === b.length && timingSafeEqual(a, b) ? nonce : undefined;
    },
  };
}

export interface CsrfOptions {
  sessions: Sessions;
  anonymous: AnonymousTokens;
  /** The app's own origin is always trusted; these too (auth.trustedOrigins, parsed). */
  trustedOrigins: Set<string>;
  /** Trust X-Forwarded-Proto for the app's own origin (behind the production proxy). */
  production: boolean;
  /** Where sign-in (and, when enabled, sign-up) forms post. */
  signInPaths: ReadonlySet<string>;
  loginPath: string;
  /** Shows a sign-in form posted with a stale or missing token again, instead of an error. */
  expiredForm(req: ApiRequest, res: ServerResponse, path: string): void;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** CSRF + trusted-origin checks for mutations; runs after actor resolution, before routes. */
export function csrfCheck(options: CsrfOptions): Middleware {
  const { sessions, anonymous, signInPaths } = options;
  return (req: SessionRequest, res, next) => {
    if (SAFE_METHODS.has(req.method ?? 'GET') || req.actor?.kind === 'agent') return next();
    const origin = req.headers.origin;
    if (
      origin !== undefined
        ? !originAllowed(req, origin, options.trustedOrigins, options.production)
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
    const path = pathOf(req.url);
    const signingIn = signInPaths.has(path);
    const refuse = (message: string): void => {
      // A sign-in page left open past its token's life posts a stale one: show the page again.
      if (signingIn && isForm(req)) options.expiredForm(req, res, path);
      else next(new AppError('CSRF_FAILED', message));
    };
    const signedIn = sessions.signedIn(req);
    if (!signedIn && !anonymous.present(req)) {
      // No token could be valid: spare the body parse.
      if (signingIn && !isJson(req))
        return refuse(`without a session, sign in with a JSON body; forms must come from ${options.loginPath}`);
      return next();
    }
    /** The verdict on the token sent: undefined to go on (as whom it sets), else why it is refused. */
    const decide = (sent: string | undefined): AppError | undefined => {
      if (signedIn) {
        if (sessions.tokenMatches(req, sent)) return undefined;
        return new AppError(
          'CSRF_FAILED',
          'missing or invalid CSRF token: send the token from GET /api/auth/session ' +
            'in the X-CSRF-Token header or a _csrf field',
        );
      }
      const nonce = anonymous.verify(req, sent);
      if (nonce !== undefined) {
        // Distinct from any session id; runIdempotent stores only a digest of it.
        req.sessionId = `anonymous:${nonce}`;
        return undefined;
      }
      if (signingIn && !isJson(req))
        return new AppError('CSRF_FAILED', 'missing or invalid CSRF token: reload the sign-in page');
      // A stale token (say, of a session that has ended) earns no scope: the request runs as an
      // anonymous caller, who hears 401 where the access rules want a person.
      return undefined;
    };
    const check = (err?: unknown): void => {
      if (err) return next(err);
      const header = req.headers['x-csrf-token'];
      const sent = typeof header === 'string' ? header : field(req.body, '_csrf');
      // The token is consumed here; handlers never see it among their fields.
      if (isPlainObject(req.body)) delete req.body._csrf;
      const refused = decide(sent);
      if (refused) return refuse(refused.message);
      next();
    };
    if (typeof req.headers['x-csrf-token'] === 'string') return check();
    if (isMultipart(req)) {
      deferCsrf(req, decide);
      return next();
    }
    readTokenBody(req, res, check);
  };
}
