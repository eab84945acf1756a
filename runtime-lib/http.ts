// The request pipeline of a generated app: trace, route matching, body parsing, actor, errors.
// Every response carries X-Trace-ID; every failure is the error envelope, never a stack trace.

import express, { type ErrorRequestHandler, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ANONYMOUS, type Actor, isAuthenticated, withDelegation } from './actor.ts';
import type { ApiKeyRegistry } from './api-keys.ts';
import { AppError, envelope } from './errors.ts';
import { ActiveTrace, type SpanHandle, type TraceStore } from './tracing.ts';

declare global {
  // Express's own extension point for per-request state.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      trace: ActiveTrace;
      actor: Actor;
      rootSpanId?: number;
      routeSpan?: SpanHandle;
    }
  }
}

export const BODY_LIMIT = '1mb';

/**
 * Runs middlewares in order as one Express layer. Every request passes through the pipeline
 * (tracing, credentials, CSRF), and each Express layer costs a match and a dispatch.
 */
export function compose(...handlers: RequestHandler[]): RequestHandler {
  return (req, res, done) => {
    let index = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined && err !== null && err !== 'route') return done(err);
      const handler = handlers[index++];
      if (!handler) return done();
      try {
        const result = handler(req, res, next) as unknown;
        if (result instanceof Promise) result.catch(done);
      } catch (e) {
        done(e);
      }
    };
    next();
  };
}

/** Only requests whose path is one of `paths` or under one of `prefixes` reach `handler`. */
export function onlyFor(paths: readonly string[], prefixes: readonly string[], handler: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const path = req.path;
    if (paths.includes(path) || prefixes.some((p) => path.startsWith(p))) return handler(req, res, next);
    next();
  };
}

/** Starts the trace and its http.request span; files the trace when the response ends. */
export function tracing(store: TraceStore): RequestHandler {
  return (req, res, next) => {
    const trace = new ActiveTrace();
    req.trace = trace;
    res.setHeader('X-Trace-ID', trace.traceId);
    req.rootSpanId = trace.startSpan('http.request', 'http', { method: req.method, path: req.url.split('?', 1)[0] }).id;
    res.locals.traceStore = store;
    // A shared listener (it reads the response as `this`) rather than a closure per request.
    res.once('finish', fileTrace);
    next();
  };
}

function fileTrace(this: Response): void {
  const req = this.req;
  const trace = req.trace;
  trace.spans[0]?.end({ statusCode: this.statusCode });
  // originalUrl: routers mounted on a prefix leave req.path relative to that prefix.
  const path = req.originalUrl.split('?', 1)[0];
  (this.locals.traceStore as TraceStore).add(trace.finish({ method: req.method, path, statusCode: this.statusCode, route: this.locals.route as string | undefined }));
}

/** Mounted just before the routes: the route.match span runs from here to the matched route. */
export const routing: RequestHandler = (req, _res, next) => {
  req.routeSpan = req.trace?.startSpan('route.match', 'routing', undefined, req.rootSpanId);
  next();
};

/** First handler of every route: closes the route.match span and names the route in the trace. */
export function matched(route: string): RequestHandler {
  return (req, res, next) => {
    req.routeSpan?.end({ route });
    res.locals.route = route;
    next();
  };
}

const parseJson = express.json({ limit: BODY_LIMIT, strict: false, type: () => true });

/** JSON bodies only: 415 for other media types, 400 for malformed JSON, 413 beyond the limit. */
export const jsonBody: RequestHandler = (req, res, next) => {
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (!hasBody) {
    req.body = undefined;
    return next();
  }
  if (!req.is('application/json') && !req.is('application/*+json')) {
    return next(new AppError('UNSUPPORTED_MEDIA_TYPE', `send the body as application/json (got ${req.headers['content-type'] ?? 'no Content-Type'})`));
  }
  parseJson(req, res, next);
};

export interface AuthenticateOptions {
  apiKeys: ApiKeyRegistry;
  /** The person behind a session cookie, when the blueprint enables sessions. */
  sessionActor?: (req: Request) => Actor | undefined;
  /**
   * The trusted delegation hook: server code that has verified, by its own means, that a human
   * approved this agent's work returns that human's id; it becomes actor.delegatedBy. Nothing in
   * the request can set it unless this function, written by you, decides so.
   */
  delegate?: (req: Request, actor: Actor) => string | undefined;
}

const BEARER = /^Bearer ([A-Za-z0-9\-._~+/=]+)$/i;

/**
 * Resolves who is calling before any route runs: a verified API key, else the session's person,
 * else anonymous. A presented credential that does not verify is a 401 on every route, never a
 * silent fall-back to anonymous. No header, body field or query parameter can set actor fields.
 */
export function authenticate(options: AuthenticateOptions): RequestHandler {
  return (req, res, next) => {
    const span = req.trace?.startSpan('auth.check', 'auth', undefined, req.rootSpanId);
    const header = req.headers.authorization;
    let actor: Actor | undefined;
    if (header !== undefined) {
      const token = BEARER.exec(header.trim())?.[1];
      actor = token === undefined ? undefined : options.apiKeys.verify(token);
      if (!actor) {
        span?.end({ result: 'rejected' });
        res.setHeader('WWW-Authenticate', 'Bearer');
        return next(new AppError('UNAUTHENTICATED', token === undefined ? 'the Authorization header must be "Bearer <API key>"' : 'unknown API key'));
      }
    } else {
      actor = options.sessionActor?.(req);
    }
    actor ??= ANONYMOUS;
    const delegatedBy = isAuthenticated(actor) ? options.delegate?.(req, actor) : undefined;
    req.actor = delegatedBy ? withDelegation(actor, delegatedBy) : actor;
    span?.end({ actor: req.actor.kind });
    next();
  };
}

/**
 * Writes a JSON body straight to the response. The API never needs what res.json adds on top
 * (ETags, JSONP, content negotiation), and this is on the path of every request.
 */
export function sendJson(res: Response, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

/** Sends a (possibly replayed) stored response; replays are marked for the client. */
export function sendStored(res: Response, result: { status: number; body: unknown; location?: string | null; replayed: boolean }): void {
  if (result.replayed) res.setHeader('Idempotent-Replayed', 'true');
  if (result.location) res.setHeader('Location', result.location);
  if (result.body === undefined) res.status(result.status).end();
  else sendJson(res, result.status, result.body);
}

export const routeNotFound: RequestHandler = (req, _res, next) => {
  next(new AppError('ROUTE_NOT_FOUND', `no route for ${req.method} ${req.path}`));
};

/** Maps any error to the envelope. Unexpected errors are logged with the trace id, never sent. */
export function errorHandler(log: (line: string) => void = (l) => console.error(l)): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const appError = toAppError(err);
    const traceId = req.trace?.traceId ?? '';
    if (appError.code === 'INTERNAL_ERROR') {
      log(`[${traceId}] ${req.method} ${req.path}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
    if (res.headersSent) return;
    if (appError.retryAfter !== undefined) res.setHeader('Retry-After', String(appError.retryAfter));
    sendJson(res, appError.status, envelope(appError, traceId));
  };
}

/** body-parser reports its failures with a `type`; everything unknown is internal. */
function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const type = (err as { type?: string }).type;
  if (type === 'entity.parse.failed') return new AppError('INVALID_JSON', 'the request body is not valid JSON');
  if (type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE', `the request body exceeds ${BODY_LIMIT}`);
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return new AppError('UNSUPPORTED_MEDIA_TYPE', 'unsupported body encoding or charset');
  }
  if (type === 'request.aborted' || type === 'request.size.invalid') return new AppError('INVALID_JSON', 'the request body was incomplete');
  return new AppError('INTERNAL_ERROR', 'internal error');
}
