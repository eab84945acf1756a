// The request pipeline of a generated app: trace, route matching, body parsing, actor, errors.
// Every response carries X-Trace-ID; every failure is the error envelope, never a stack trace.
//
// Everything here works on node's own request and response objects, so the front door
// (runtime/front-door.ts) runs it without Express; Express runs the same functions as middleware
// for the routes it serves.

import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type ErrorRequestHandler, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ANONYMOUS, type Actor, isAuthenticated, withDelegation } from './actor.ts';
import type { ApiKeyRegistry } from './api-keys.ts';
import { AppError, envelope } from './errors.ts';
import { ActiveTrace, type SpanHandle, type TraceStore } from './tracing.ts';

/** What the pipeline adds to a request before any route runs. */
export interface RequestState {
  trace: ActiveTrace;
  actor: Actor;
  rootSpanId?: number;
  routeSpan?: SpanHandle;
  /** The matched route's name, for the trace (Express keeps its own `req.route`). */
  routeName?: string;
  /**
   * The id of the established session the request carries (the sign-in page's, or a person's):
   * what scopes the Idempotency-Keys of a caller without a credential (runIdempotent).
   */
  sessionId?: string;
  body?: unknown;
}

export type ApiRequest = IncomingMessage & RequestState;

export type Next = (err?: unknown) => void;

/** A pipeline step; Express accepts these as middleware too. */
export type Middleware = (req: ApiRequest, res: ServerResponse, next: Next) => void | Promise<void>;

declare global {
  // Express's own extension point for per-request state.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request extends RequestState {
      trace: ActiveTrace;
      actor: Actor;
    }
  }
}

/** The path of a request URL, without the query. */
export function pathOf(url: string | undefined): string {
  const u = url ?? '/';
  const q = u.indexOf('?');
  return q === -1 ? u : u.slice(0, q);
}

export const BODY_LIMIT = '1mb';

/**
 * Runs pipeline steps in order, as one step. Every request passes through the pipeline (tracing,
 * credentials, CSRF), and in Express each layer costs a match and a dispatch.
 */
export function compose(...handlers: Middleware[]): Middleware {
  return (req, res, done) => {
    let index = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined && err !== null && err !== 'route') return done(err);
      const handler = handlers[index++];
      if (!handler) return done();
      try {
        const result = handler(req, res, next);
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
export function tracing(store: TraceStore): Middleware {
  // One listener for every request (it reads the response as `this`), not a closure per request.
  function fileTrace(this: ServerResponse): void {
    const req = this.req as ApiRequest;
    const trace = req.trace;
    const root = trace.spans[0];
    root?.end({ statusCode: this.statusCode });
    // The path as the request arrived: Express rewrites req.url inside mounted routers.
    const path = (root?.attributes?.path as string | undefined) ?? pathOf(req.url);
    store.add(trace.finish({ method: req.method ?? 'GET', path, statusCode: this.statusCode, route: req.routeName }));
  }
  return (req, res, next) => {
    const trace = new ActiveTrace();
    req.trace = trace;
    res.setHeader('X-Trace-ID', trace.traceId);
    req.rootSpanId = trace.startSpan('http.request', 'http', { method: req.method, path: pathOf(req.url) }).id;
    res.once('finish', fileTrace);
    next();
  };
}

/** Last step of the pipeline: the route.match span runs from here to the matched route. */
export const routing: Middleware = (req, _res, next) => {
  req.routeSpan = req.trace?.startSpan('route.match', 'routing', undefined, req.rootSpanId);
  next();
};

/** Closes the route.match span and names the route in the trace. */
export function routeMatched(req: ApiRequest, route: string): void {
  req.routeSpan?.end({ route });
  req.routeName = route;
}

/** First handler of every Express route: routeMatched as middleware. */
export function matched(route: string): Middleware {
  return (req, _res, next) => {
    routeMatched(req, route);
    next();
  };
}

const parseJson = express.json({ limit: BODY_LIMIT, strict: false, type: () => true });

/** The media type of a Content-Type header: lower case, without parameters. */
export function mediaType(req: IncomingMessage): string {
  const header = req.headers['content-type'];
  if (header === undefined) return '';
  const semi = header.indexOf(';');
  return (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
}

/** application/json and its +json relatives (application/merge-patch+json...). */
export function isJsonType(type: string): boolean {
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json') && !type.includes('/', 12));
}

/** Whether the request carries a body (a length other than 0, or a chunked one). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** JSON bodies only: 415 for other media types, 400 for malformed JSON, 413 beyond the limit. */
export const jsonBody: Middleware = (req, res, next) => {
  if (!hasBody(req)) {
    req.body = undefined;
    return next();
  }
  if (!isJsonType(mediaType(req))) {
    return next(new AppError('UNSUPPORTED_MEDIA_TYPE', `send the body as application/json (got ${req.headers['content-type'] ?? 'no Content-Type'})`));
  }
  parseJson(req as Request, res as Response, next);
};

export interface AuthenticateOptions {
  apiKeys: ApiKeyRegistry;
  /** The person behind a session cookie, when the blueprint enables sessions. */
  sessionActor?: (req: ApiRequest) => Actor | undefined;
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
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

/** Sends a (possibly replayed) stored response; replays are marked for the client. */
export function sendStored(res: ServerResponse, result: { status: number; body: unknown; location?: string | null; replayed: boolean }): void {
  if (result.replayed) res.setHeader('Idempotent-Replayed', 'true');
  if (result.location) res.setHeader('Location', result.location);
  if (result.body !== undefined) return sendJson(res, result.status, result.body);
  res.statusCode = result.status;
  res.end();
}

export const routeNotFound: RequestHandler = (req, _res, next) => {
  next(new AppError('ROUTE_NOT_FOUND', `no route for ${req.method} ${req.path}`));
};

export type ErrorSender = (err: unknown, req: ApiRequest, res: ServerResponse) => void;

/** Maps any error to the envelope. Unexpected errors are logged with the trace id, never sent. */
export function errorSender(log: (line: string) => void = (l) => console.error(l)): ErrorSender {
  return (err, req, res) => {
    const appError = toAppError(err);
    const traceId = req.trace?.traceId ?? '';
    if (appError.code === 'INTERNAL_ERROR') {
      log(`[${traceId}] ${req.method} ${pathOf(req.url)}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
    if (res.headersSent) return;
    if (appError.retryAfter !== undefined) res.setHeader('Retry-After', String(appError.retryAfter));
    sendJson(res, appError.status, envelope(appError, traceId));
  };
}

/** An error sender as Express's error middleware. */
export function errorHandler(send: ErrorSender = errorSender()): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => send(err, req, res);
}

/**
 * body-parser reports its failures with a `type`, Express's router a malformed percent-escape in
 * a path parameter as a URIError; everything unknown is internal.
 */
function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof URIError) {
    return new AppError('VALIDATION_FAILED', 'the path is not valid percent-encoding', {
      details: [{ code: 'INVALID_PATH', message: 'every % must start an escape of two hex digits that decodes to UTF-8' }],
    });
  }
  const type = (err as { type?: string }).type;
  if (type === 'entity.parse.failed') return new AppError('INVALID_JSON', 'the request body is not valid JSON');
  if (type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE', `the request body exceeds ${BODY_LIMIT}`);
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return new AppError('UNSUPPORTED_MEDIA_TYPE', 'unsupported body encoding or charset');
  }
  if (type === 'request.aborted' || type === 'request.size.invalid') return new AppError('INVALID_JSON', 'the request body was incomplete');
  return new AppError('INTERNAL_ERROR', 'internal error');
}
