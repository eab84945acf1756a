// Request bodies: JSON only on the API (415 for other media types, 400 for malformed JSON, 413
// beyond the limit).

import type { IncomingMessage } from 'node:http';
import express, { type Request, type Response } from 'express';
import { AppError } from '../core/errors.ts';
import type { Middleware } from './request.ts';

export const BODY_LIMIT = '1mb';

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
    return next(
      new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        `send the body as application/json (got ${req.headers['content-type'] ?? 'no Content-Type'})`,
      ),
    );
  }
  parseJson(req as Request, res as Response, next);
};
