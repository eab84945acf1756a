// Delivery of a webhook step's request: JSON body, a timeout per attempt, a few
// attempts for failures a retry can fix (network errors, timeouts, 429, 5xx), all of them
// carrying one Idempotency-Key so the receiver can tell a retry from a new call. Redirects are
// followed here, up to 5, each hop judged like the first.
//
// In production a target is refused when the address its name resolves to is not public
// (outbound-address.ts). The check is on the resolved address and the connection goes to that
// very address (the request's `lookup` hands it over), so a name cannot resolve to a public
// address for the check and to 127.0.0.1 for the connection (DNS rebinding).

import { lookup as dnsLookup } from 'node:dns/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { AppError } from '../core/errors.ts';
import { isBlockedAddress } from './outbound-address.ts';

export interface WebhookRequest {
  url: string;
  method: string;
  headers: Readonly<Record<string, string>>;
  /** Sent as JSON; undefined: no body. */
  body: unknown;
  idempotencyKey: string;
}

export interface WebhookOptions {
  /** Refuse targets that resolve to loopback, private, link-local... addresses. */
  blockPrivate: boolean;
  /** Ends waits between attempts (the app is stopping). */
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Pauses before the 2nd, 3rd... attempt. */
  backoffMs?: readonly number[];
}

export const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const MAX_REDIRECTS = 5;
const MAX_RESPONSE_BYTES = 1024 * 1024;
const DEFAULT_BACKOFF_MS = [250, 1000, 3000];
/** Headers the step may not set: the request's framing, its target, and the key it gets from the job. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'idempotency-key',
]);

interface Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** Sends the request; resolves to the response body (parsed when JSON), as Zebric's step returns it. */
export async function deliverWebhook(request: WebhookRequest, options: WebhookOptions): Promise<unknown> {
  checkHeaders(request.headers);
  const backoff = options.backoffMs ?? DEFAULT_BACKOFF_MS;
  let failure: AppError | undefined;
  for (let attempt = 0; attempt <= backoff.length; attempt++) {
    if (attempt > 0) await pause(backoff[attempt - 1], options.signal);
    let response: Response;
    try {
      response = await followRedirects(request, options);
    } catch (err) {
      if (err instanceof AppError) throw err;
      failure = new AppError('WEBHOOK_STEP_FAILED', `${describe(request)}: ${(err as Error).message}`);
      continue;
    }
    if (response.status >= 200 && response.status < 300) return parse(response);
    const message = `${describe(request)} answered ${response.status}${excerpt(response.text)}`;
    if (response.status === 429 || response.status === 408 || response.status >= 500) {
      failure = new AppError('WEBHOOK_STEP_FAILED', message);
      continue;
    }
    throw new AppError('WEBHOOK_STEP_REJECTED', message);
  }
  throw failure as AppError;
}

/** The target, as error messages name it: the method and the URL without its query or credentials. */
function describe(request: WebhookRequest): string {
  const url = new URL(request.url);
  return `${request.method} ${url.protocol}//${url.host}${url.pathname}`;
}

async function followRedirects(request: WebhookRequest, options: WebhookOptions): Promise<Response> {
  let url = parseTarget(request.url);
  let { method, body } = request;
  let headers = { ...request.headers };
  for (let hop = 0; ; hop++) {
    const response = await send(url, method, headers, body, request.idempotencyKey, options);
    const location = response.headers.location;
    if (![301, 302, 303, 307, 308].includes(response.status) || location === undefined) return response;
    if (hop === MAX_REDIRECTS) {
      throw new AppError('WEBHOOK_STEP_REJECTED', `${describe(request)}: more than ${MAX_REDIRECTS} redirects`);
    }
    const next = parseTarget(new URL(location, url).href);
    // 303, and 301/302 after a POST, turn into a GET without a body (as browsers and fetch do).
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
      method = 'GET';
      body = undefined;
    }
    // The step's headers (credentials, often) go to the origin it named, not to one it is sent on to.
    if (next.origin !== url.origin) headers = {};
    url = next;
  }
}

function parseTarget(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AppError('WORKFLOW_STEP_INVALID', `webhook url ${JSON.stringify(text)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AppError('WEBHOOK_TARGET_BLOCKED', `webhook url scheme "${url.protocol}" is not http or https`);
  }
  return url;
}

/** The address to connect to: resolved once, refused in production unless every address of the name is public. */
async function resolveTarget(url: URL, blockPrivate: boolean): Promise<{ address: string; family: number }> {
  // URL keeps IPv6 literals in brackets; IPv4 written in decimal, octal or hex is already dotted here.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(host);
  const addresses = family ? [{ address: host, family }] : await dnsLookup(host, { all: true, verbatim: true });
  if (addresses.length === 0) throw new Error(`${host} does not resolve`);
  if (blockPrivate && addresses.some((a) => isBlockedAddress(a.address))) {
    throw new AppError(
      'WEBHOOK_TARGET_BLOCKED',
      `webhook target ${url.host} is a local, private or reserved address: refused in production`,
    );
  }
  return addresses[0];
}

function send(
  url: URL,
  method: string,
  headers: Readonly<Record<string, string>>,
  body: unknown,
  idempotencyKey: string,
  options: WebhookOptions,
): Promise<Response> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise<Response>((resolve, reject) => {
    let request: http.ClientRequest | undefined;
    let done = false;
    const finish = (err: Error | undefined, response?: Response) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(response as Response);
    };
    const timer = setTimeout(() => {
      request?.destroy();
      finish(new Error(`no answer within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    resolveTarget(url, options.blockPrivate).then(
      (target) => {
        if (done) return;
        // The checked address, whatever the system resolver would answer now.
        const lookup: LookupFunction = (_host, opts, callback) => {
          if (opts.all) (callback as (e: null, a: (typeof target)[]) => void)(null, [target]);
          else callback(null, target.address, target.family);
        };
        const client = url.protocol === 'https:' ? https : http;
        request = client.request(url, {
          method,
          lookup,
          agent: false,
          headers: {
            ...headers,
            'idempotency-key': idempotencyKey,
            'user-agent': 'bp-app-webhook',
            ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
          },
        });
        request.on('error', (err) => finish(err));
        request.on('response', (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_RESPONSE_BYTES) {
              res.destroy();
              finish(new AppError('WEBHOOK_STEP_REJECTED', `${method} ${url.host}: the response is over 1 MB`));
            } else chunks.push(chunk);
          });
          res.on('error', (err) => finish(err));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            finish(undefined, { status: res.statusCode ?? 0, headers: res.headers, text });
          });
        });
        request.end(payload);
      },
      (err: unknown) => finish(err as Error),
    );
  });
}

function parse(response: Response): unknown {
  const type = String(response.headers['content-type'] ?? '');
  if (!/^application\/([a-z0-9.+-]+\+)?json\b/i.test(type) || response.text === '') return response.text;
  try {
    return JSON.parse(response.text) as unknown;
  } catch {
    return response.text;
  }
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat ? `: ${flat.length > 200 ? `${flat.slice(0, 200)}...` : flat}` : '';
}

function checkHeaders(headers: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || RESERVED_HEADERS.has(name.toLowerCase())) {
      throw new AppError('WORKFLOW_STEP_INVALID', `webhook header "${name}" may not be set by a step`);
    }
    if (/[\r\n\0]/.test(value)) {
      throw new AppError('WORKFLOW_STEP_INVALID', `webhook header "${name}" has a line break`);
    }
  }
}

/** Waits `ms`; the app stopping ends the wait with JOB_INTERRUPTED (retryable: the job runs again later). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const interrupted = () =>
      new AppError('JOB_INTERRUPTED', 'the app stopped while this job was waiting; it runs again from its first step');
    if (signal?.aborted) return reject(interrupted());
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(interrupted());
    };
    signal?.addEventListener('abort', stop, { once: true });
  });
}
