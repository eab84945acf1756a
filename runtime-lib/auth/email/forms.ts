// Bodies of the sign-in routes: JSON or forms (the sign-in page posts a form), and the fields
// they carry.

import type { ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { AppError, type ErrorDetail } from '../../core/errors.ts';
import { BODY_LIMIT, hasBody, isJsonType, mediaType, parseJson } from '../../http/body.ts';
import type { ApiRequest, Next } from '../../http/request.ts';
import { type EmailAddress, emailAddress } from './users.ts';

export function isForm(req: ApiRequest): boolean {
  return hasBody(req) && mediaType(req) === 'application/x-www-form-urlencoded';
}

export function isJson(req: ApiRequest): boolean {
  return hasBody(req) && isJsonType(mediaType(req));
}

export function queryParam(req: ApiRequest, name: string): unknown {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  return q === -1 ? undefined : parseQuery(url.slice(q + 1))[name];
}

/** The cookies of this provider: first-party, never readable by scripts, Secure in production. */
export interface CookieOptions {
  path: string;
  httpOnly: boolean;
  secure: boolean;
}

/** Adds a Set-Cookie line (SameSite=Lax) to those already on the response. */
export function setCookie(
  res: ServerResponse,
  name: string,
  value: string,
  options: CookieOptions,
  expired = false,
): void {
  const expires = expired ? '; Expires=Thu, 01 Jan 1970 00:00:00 GMT' : '';
  const flags = `${options.httpOnly ? '; HttpOnly' : ''}${options.secure ? '; Secure' : ''}; SameSite=Lax`;
  const cookie = `${name}=${value}; Path=${options.path}${expires}${flags}`;
  const existing = res.getHeader('Set-Cookie');
  res.setHeader(
    'Set-Cookie',
    existing === undefined ? [cookie] : [...(Array.isArray(existing) ? existing : [String(existing)]), cookie],
  );
}

/** Express's res.clearCookie, for node's response: the cookie expired at the epoch. */
export function clearCookie(res: ServerResponse, name: string, options: CookieOptions): void {
  setCookie(res, name, '', options, true);
}

/** The value of one cookie the request carries (the first, as browsers send the most specific first). */
export function readCookie(req: ApiRequest, name: string): string | undefined {
  const header = req.headers.cookie;
  if (header === undefined) return undefined;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq !== -1 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function field(body: unknown, name: string): string | undefined {
  if (!isPlainObject(body) || !Object.hasOwn(body, name)) return undefined;
  const value = body[name];
  return typeof value === 'string' ? value : undefined;
}

/** The sign-in or sign-up body's address and password. */
export function credentials(body: unknown): { address: EmailAddress; password: string } {
  const rawEmail = field(body, 'email');
  const password = field(body, 'password');
  const details: ErrorDetail[] = [];
  const address = rawEmail === undefined ? undefined : emailAddress(rawEmail);
  if (rawEmail === undefined)
    details.push({ field: 'email', code: 'REQUIRED', message: 'an e-mail address is required' });
  else if (address === undefined)
    details.push({ field: 'email', code: 'INVALID_EMAIL', message: 'not a valid e-mail address' });
  if (password === undefined || password === '')
    details.push({ field: 'password', code: 'REQUIRED', message: 'a password is required' });
  if (details.length || address === undefined || password === undefined) {
    throw new AppError('VALIDATION_FAILED', details.map((d) => d.message).join('; '), { details });
  }
  return { address, password };
}

const parseFormBody = express.urlencoded({ extended: false, limit: BODY_LIMIT });

/** Parses a form or JSON body so a `_csrf` field can be read; other bodies are left alone. */
export function readTokenBody(req: ApiRequest, res: ServerResponse, next: Next): void {
  // body-parser, like express-session, needs nothing of Express's request or response.
  if (isForm(req)) return parseFormBody(req as Request, res as Response, next);
  if (isJson(req)) return parseJson(req, res, next);
  next();
}

/** Auth routes take JSON or form bodies (the sign-in page posts a form). */
export const authBody: RequestHandler = (req, res, next) => {
  if (isForm(req)) return parseFormBody(req, res, next);
  if (isJson(req)) return parseJson(req, res, next);
  if (
    req.headers['content-type'] === undefined &&
    req.headers['content-length'] === undefined &&
    req.headers['transfer-encoding'] === undefined
  ) {
    req.body = undefined;
    return next();
  }
  next(
    new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      'send the body as application/json or application/x-www-form-urlencoded ' +
        `(got ${req.headers['content-type'] ?? 'no Content-Type'})`,
    ),
  );
};
