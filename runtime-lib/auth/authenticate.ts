// Who is calling, resolved before any route runs: a verified API key, else the session's person,
// else anonymous. The only place an actor is made from a request.

import { ANONYMOUS, type Actor, isAuthenticated, withDelegation } from '../core/actor.ts';
import { AppError } from '../core/errors.ts';
import type { ApiRequest, Middleware } from '../http/request.ts';
import type { ApiKeyRegistry } from './api-keys.ts';

export interface AuthenticateOptions {
  apiKeys: ApiKeyRegistry;
  /**
   * The person behind a session cookie, when the blueprint enables sessions: a promise when their
   * rows must be read, undefined at once when the request carries no session.
   */
  sessionActor?: (req: ApiRequest) => Promise<Actor | undefined> | Actor | undefined;
  /**
   * The trusted delegation hook: server code that has verified, by its own means, that a human
   * approved this agent's work returns that human's id; it becomes actor.delegatedBy. Nothing in
   * the request can set it unless this function, written by you, decides so.
   */
  delegate?: (req: ApiRequest, actor: Actor) => string | undefined;
}

const BEARER = /^Bearer ([A-Za-z0-9\-._~+/=]+)$/i;

/**
 * Resolves who is calling before any route runs: a verified API key, else the session's person,
 * else anonymous. A presented credential that does not verify is a 401 on every route, never a
 * silent fall-back to anonymous. No header, body field or query parameter can set actor fields.
 */
export function authenticate(options: AuthenticateOptions): Middleware {
  return (req, res, next) => {
    const span = req.trace?.startSpan('auth.check', 'auth', undefined, req.rootSpanId);
    const resolved = (actor: Actor | undefined) => {
      actor ??= ANONYMOUS;
      const delegatedBy = isAuthenticated(actor) ? options.delegate?.(req, actor) : undefined;
      req.actor = delegatedBy ? withDelegation(actor, delegatedBy) : actor;
      span?.end({ actor: req.actor.kind });
      next();
    };
    const header = req.headers.authorization;
    if (header === undefined) {
      const actor = options.sessionActor?.(req);
      if (!(actor instanceof Promise)) return resolved(actor);
      // Returned, so the pipeline hears of anything thrown after the read.
      return actor.then(resolved, (err: unknown) => {
        span?.end({ result: 'failed' });
        next(err);
      });
    }
    const token = BEARER.exec(header.trim())?.[1];
    const actor = token === undefined ? undefined : options.apiKeys.verify(token);
    if (actor) return resolved(actor);
    span?.end({ result: 'rejected' });
    res.setHeader('WWW-Authenticate', 'Bearer');
    next(
      new AppError(
        'UNAUTHENTICATED',
        token === undefined ? 'the Authorization header must be "Bearer <API key>"' : 'unknown API key',
      ),
    );
  };
}
