// Request bodies: JSON on the API (415 for other media types, 400 for malformed JSON, bytes
// that are not UTF-8 (or the UTF-16 their charset names) or a body nested too deeply, 413 beyond
// the limit); multipart bodies only where a route takes files (runtime/uploads), whose CSRF token
// is a field of the body the CSRF check hands to their parser (deferCsrf).

import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type Response } from 'express';
import { AppError } from '../core/errors.ts';
import type { Middleware, Next } from './request.ts';

export const BODY_LIMIT = '1mb';

/**
 * The deepest nesting of objects and arrays a body may have (the body itself is level 1). Deep
 * enough for any record; shallow enough that code walking a body recursively (hashing it for
 * idempotency, storing a JSON field, checking a condition) cannot run out of stack.
 */
export const MAX_JSON_DEPTH = 64;

const parseJsonText = express.json({ limit: BODY_LIMIT, strict: false, type: () => true, verify: wellEncoded });

/** The body-parser error type of a body whose bytes are not text in its charset (respond.ts maps it). */
export const NOT_TEXT = 'entity.encoding.invalid';

/**
 * Refuses a body whose bytes do not decode in its charset (UTF-8 unless it names a UTF-16 one):
 * decoding would turn each bad sequence into U+FFFD, and the app would store text the client
 * never sent. body-parser calls this with the raw bytes before it decodes them.
 */
function wellEncoded(_req: IncomingMessage, _res: ServerResponse, bytes: Buffer, encoding: string): void {
  if (!decodesCleanly(bytes, encoding)) {
    throw Object.assign(new Error(`the body is not valid ${encoding}`), { type: NOT_TEXT });
  }
}

/** Whether `bytes` are text in `encoding` (a charset body-parser accepts for JSON: utf-8, utf-16...). */
export function decodesCleanly(bytes: Uint8Array, encoding = 'utf-8'): boolean {
  const label = encoding.toLowerCase();
  if (label === 'utf-8' || label === 'utf8') return isUtf8(bytes);
  try {
    new TextDecoder(label, { fatal: true }).decode(bytes);
    return true;
  } catch {
    // A charset TextDecoder does not know (utf-32, utf-7) cannot be checked: refused too.
    return false;
  }
}

/**
 * Whether a parsed JSON value nests objects and arrays deeper than `max`. Iterative (an
 * explicit stack), so that it cannot overflow on the very bodies it exists to refuse; scalar
 * values are never pushed, so a flat body costs one pass over its values.
 */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const stack: object[] = [value];
  const depths: number[] = [1];
  const push = (child: unknown, depth: number) => {
    if (typeof child === 'object' && child !== null) {
      stack.push(child);
      depths.push(depth);
    }
  };
  while (stack.length > 0) {
    const node = stack.pop() as object;
    const depth = depths.pop() as number;
    if (depth > max) return true;
    if (Array.isArray(node)) for (let i = 0; i < node.length; i++) push(node[i], depth + 1);
    // for...in sees the own keys of a parsed body (JSON.parse makes "__proto__" an own key).
    else for (const k in node) push((node as Record<string, unknown>)[k], depth + 1);
  }
  return false;
}

function tooDeep(): AppError {
  return new AppError('VALIDATION_FAILED', `the body is nested more than ${MAX_JSON_DEPTH} levels deep`, {
    details: [{ code: 'TOO_DEEP', message: `objects and arrays may nest at most ${MAX_JSON_DEPTH} levels deep` }],
  });
}

/**
 * Parses a JSON body (whatever its Content-Type: callers decide which they take) and refuses
 * one nested deeper than MAX_JSON_DEPTH before anything else reads it. Every JSON body of the
 * app, API and sign-in routes alike, is parsed here.
 */
export function parseJson(req: IncomingMessage, res: ServerResponse, next: Next): void {
  parseJsonText(req as Request, res as Response, (err?: unknown) => {
    if (err) return next(err);
    next(nestedDeeperThan((req as Request).body, MAX_JSON_DEPTH) ? tooDeep() : undefined);
  });
}

/** The media type of a Content-Type header: lower case, without parameters. */
export function mediaType(req: IncomingMessage): string {
  const header = req.headers['content-type'];
  if (header === undefined) return '';
  const semi = header.indexOf(';');
  return (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
}

/** application/json and its +json relatives (application/merge-patch+json...). */
export function isJsonType(type: string): boolean {
  return (
    type === 'application/json' ||
    (type.startsWith('application/') && type.endsWith('+json') && !type.includes('/', 12))
  );
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
    if (isMultipart(req))
      return next(new AppError('UNSUPPORTED_MEDIA_TYPE', 'multipart bodies are taken only where files are: send JSON'));
    return next(
      new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        `send the body as application/json (got ${req.headers['content-type'] ?? 'no Content-Type'})`,
      ),
    );
  }
  parseJson(req, res, next);
};

/**
 * The 400 of a body whose bytes are not text in its charset: JSON is text (RFC 8259 asks for
 * UTF-8), so it is not valid JSON, and the detail says why.
 */
export function notText(what: string): AppError {
  return new AppError('INVALID_JSON', `${what} is not valid UTF-8 text`, {
    details: [
      { code: 'INVALID_UTF8', message: 'every byte sequence must be valid UTF-8 (or the UTF-16 the charset names)' },
    ],
  });
}

/** Whether the request's body is multipart/form-data (what a form with a file input posts). */
export function isMultipart(req: IncomingMessage): boolean {
  return hasBody(req) && mediaType(req) === 'multipart/form-data';
}

/**
 * The CSRF check of a multipart body, left to the parser that reads its `_csrf` field (the token a
 * form without JavaScript sends): the verdict on the token sent (undefined if none), which also
 * sets what the check sets (an anonymous caller's scope). Undefined: the token is good.
 */
export type CsrfVerdict = (sent: string | undefined) => Error | undefined;

const deferredChecks = new WeakMap<IncomingMessage, CsrfVerdict>();

/** auth/email/csrf.ts: hands a multipart body's CSRF check to the route's parser (takeCsrfCheck). */
export function deferCsrf(req: IncomingMessage, verdict: CsrfVerdict): void {
  deferredChecks.set(req, verdict);
}

/**
 * The request's deferred CSRF check, taken by the parser that makes it (once, before it stores
 * any file: runtime/uploads). A route that takes no multipart body never takes it, and the front
 * door refuses the request (refuseUntakenCsrf): fail closed.
 */
export function takeCsrfCheck(req: IncomingMessage): CsrfVerdict | undefined {
  const verdict = deferredChecks.get(req);
  deferredChecks.delete(req);
  return verdict;
}

/** The refusal of a request whose deferred CSRF check no parser can make (or undefined if none). */
export function untakenCsrf(req: IncomingMessage): AppError | undefined {
  if (!deferredChecks.has(req)) return undefined;
  deferredChecks.delete(req);
  return new AppError(
    'CSRF_FAILED',
    'this route reads no multipart body, so no _csrf field: send the token in the X-CSRF-Token header',
  );
}
