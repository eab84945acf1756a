// Writing responses: JSON bodies, stored (replayable) responses, and every failure as the error
// envelope. Unexpected errors and every 503 are logged with the trace id, never sent; no stack
// trace reaches a client.

import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError, envelope } from '../core/errors.ts';
import { BODY_LIMIT, NOT_TEXT, notText } from './body.ts';
import { type ApiRequest, pathOf } from './request.ts';
import type { AllowedMethods } from './served-paths.ts';

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
export function sendStored(
  res: ServerResponse,
  result: { status: number; body: unknown; location?: string | null; replayed: boolean },
): void {
  if (result.replayed) res.setHeader('Idempotent-Replayed', 'true');
  if (result.location) res.setHeader('Location', result.location);
  if (result.body !== undefined) return sendJson(res, result.status, result.body);
  res.statusCode = result.status;
  res.end();
}

/**
 * The last route: 405 with Allow for a path the app serves with other methods (`allowed`, from
 * openapi.json: http/served-paths.ts), else 404.
 */
export function routeNotFound(allowed: AllowedMethods): RequestHandler {
  return (req, res, next) => {
    const methods = allowed(req.path);
    if (!methods) return next(new AppError('ROUTE_NOT_FOUND', `no route for ${req.method} ${req.path}`));
    res.setHeader('Allow', methods.join(', '));
    next(new AppError('METHOD_NOT_ALLOWED', `${req.path} takes ${methods.join(', ')}, not ${req.method}`));
  };
}

export type ErrorSender = (err: unknown, req: ApiRequest, res: ServerResponse) => void;

/**
 * Maps any error to the envelope. Unexpected errors are logged with the trace id, never sent;
 * so is every 503, which an operator has to hear about (the disk is full, the file became
 * read-only, another process held the write lock), in one line each.
 */
export function errorSender(log: Log = (l) => console.error(l)): ErrorSender {
  return (err, req, res) => {
    const appError = reportedError(err, req, log);
    if (res.headersSent) return;
    if (appError.retryAfter !== undefined) res.setHeader('Retry-After', String(appError.retryAfter));
    sendJson(res, appError.status, envelope(appError, req.trace?.traceId ?? ''));
  };
}

export type Log = (line: string) => void;

/**
 * Any error as the AppError a client hears; an unexpected error or a 503 is logged with
 * the trace id and `where` (the request's method and path unless told), and sent as no more than
 * its code. An MCP tool call (http/mcp-routes.ts) reports its failures here too.
 */
export function reportedError(err: unknown, req: ApiRequest, log: Log, where?: string): AppError {
  const appError = toAppError(err);
  const traceId = req.trace?.traceId ?? '';
  const at = where ?? `${req.method} ${pathOf(req.url)}`;
  if (appError.code === 'INTERNAL_ERROR') {
    log(`[${traceId}] ${at}: ` + (err instanceof Error ? (err.stack ?? err.message) : String(err)));
  } else if (appError.status === 503) {
    // Every 503 (a storage fault, a lock held past the wait, a job interrupted): an operator
    // hears of each, with the cause a client is not told.
    log(`[${traceId}] ${at}: ${UNAVAILABLE_LABELS[appError.code] ?? appError.code}: ${causeOf(appError)}`);
  }
  return appError;
}

const UNAVAILABLE_LABELS: Record<string, string> = {
  STORAGE_UNAVAILABLE: 'storage unavailable',
  DATABASE_BUSY: 'database busy',
};

/** The database's error behind a 503 (`SQLITE_BUSY: database is locked`), or the error's own message. */
function causeOf(appError: AppError): string {
  const cause = appError.cause as { code?: unknown; message?: unknown } | undefined;
  if (cause === undefined) return appError.message;
  return typeof cause.code === 'string' ? `${cause.code}: ${String(cause.message)}` : String(cause.message);
}

/** An error sender as Express's error middleware. */
export function errorHandler(send: ErrorSender = errorSender()): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => send(err, req, res);
}

/**
 * body-parser reports its failures with a `type`, Express's router a malformed percent-escape in
 * a path parameter as a URIError; database errors arrive mapped by their driver (data/sqlite.ts,
 * data/postgres.ts); everything unknown is internal.
 */
function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof URIError) {
    return new AppError('VALIDATION_FAILED', 'the path is not valid percent-encoding', {
      details: [
        { code: 'INVALID_PATH', message: 'every % must start an escape of two hex digits that decodes to UTF-8' },
      ],
    });
  }
  const type = (err as { type?: string }).type;
  if (type === 'entity.parse.failed') return new AppError('INVALID_JSON', 'the request body is not valid JSON');
  if (type === NOT_TEXT) return notText('the request body');
  if (type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE', `the request body exceeds ${BODY_LIMIT}`);
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return new AppError('UNSUPPORTED_MEDIA_TYPE', 'unsupported body encoding or charset');
  }
  if (type === 'request.aborted' || type === 'request.size.invalid')
    return new AppError('INVALID_JSON', 'the request body was incomplete');
  return new AppError('INTERNAL_ERROR', 'internal error');
}
