// Webhook triggers: a workflow with `trigger = { webhook = "/webhooks/..." }` is started
// by a POST to that route. The request stores a job and answers 202; the steps read the delivery as
// `webhook.body`, `webhook.headers` and `webhook.query`.
//
// With `webhookSecretEnv` the caller proves it knows the secret in that environment variable, one
// of two ways; anything else is 401:
//  - `Authorization: Bearer <secret>`;
//  - `X-Webhook-Timestamp: <unix seconds>` and `X-Webhook-Signature: sha256=<hex>`, the
//    HMAC-SHA256 with the secret of `<timestamp>.<raw body>`. The timestamp must be within five
//    minutes of this server's clock, and a signature is accepted once: a replay inside the window
//    is 409 WEBHOOK_REPLAYED, on every instance (fired-once.ts); one outside it is 401.
// Such a delivery runs its steps as the app itself (`webhook:<Workflow>`, a system actor): the
// caller holds the app's secret. A webhook without a secret is open to anyone, so its steps run as
// an anonymous caller, under the access rules (validation warns about such a webhook).
//
// Webhooks are served before sessions and CSRF: a delivery is not a browser's request, and its body
// must reach the signature check as it was sent.

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import express, { type Request, type Response } from 'express';
import { ANONYMOUS, type Actor, triggerActor } from '../core/actor.ts';
import { AppError } from '../core/errors.ts';
import type { Database } from '../data/database.ts';
import { PROTOTYPE_KEYS } from '../data/fields.ts';
import { checkPrecondition, runContext, type WorkflowSpec } from '../workflows/engine.ts';
import { fireOnce } from '../workflows/fired-once.ts';
import { insertJob } from '../workflows/jobs.ts';
import {
  BODY_LIMIT,
  decodesCleanly,
  isJsonType,
  MAX_JSON_DEPTH,
  mediaType,
  nestedDeeperThan,
  notText,
} from './body.ts';
import { routeMatched } from './pipeline.ts';
import { type ApiRequest, type Middleware, pathOf } from './request.ts';
import { sendJson } from './respond.ts';

/** How far a signed delivery's timestamp may be from this server's clock. */
export const SIGNATURE_WINDOW_MS = 5 * 60_000;
/** Headers that carry the credential: checked here, never handed to the steps. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-webhook-signature']);

const readRaw = express.raw({ limit: BODY_LIMIT, type: () => true, inflate: false });

export interface WebhookOptions {
  db: Database;
  env: NodeJS.ProcessEnv;
  /** Called once a delivery's job is stored, so the runner takes it at once. */
  submitted(): void;
  warn(message: string): void;
}

/** The pipeline step serving every webhook route; other requests pass through. */
export function webhookRoutes(workflows: readonly WorkflowSpec[], options: WebhookOptions): Middleware {
  const routes = new Map<string, WorkflowSpec>();
  for (const spec of workflows) {
    if (spec.trigger?.kind !== 'webhook') continue;
    routes.set(spec.trigger.route, spec);
    const env = spec.trigger.secretEnv;
    if (env !== undefined && !options.env[env]) {
      options.warn(`webhook ${spec.trigger.route} refuses every delivery (401) until ${env} holds its secret`);
    }
  }
  return (req, res, next) => {
    // Every webhook route is under /webhooks/ (the blueprint's schema): other requests pass at once.
    if (!req.url?.startsWith('/webhooks/')) return next();
    const spec = routes.get(pathOf(req.url));
    if (!spec) return next();
    routeMatched(req, `${spec.name}.webhook`);
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      return next(new AppError('METHOD_NOT_ALLOWED', `${pathOf(req.url)} takes POST only`));
    }
    readRaw(req as Request, res as Response, (err?: unknown) => {
      if (err) return next(err);
      deliver(spec, req, res, options).catch(next);
    });
  };
}

async function deliver(spec: WorkflowSpec, req: ApiRequest, res: ServerResponse, options: WebhookOptions) {
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  const proof = verify(spec, req, raw, options.env);
  const data = {
    kind: 'webhook',
    body: parseBody(req, raw),
    headers: deliveryHeaders(req),
    query: plainObject(parseQuery(queryOf(req.url))),
  };
  checkPrecondition(spec, runContext(data));
  const owner = `webhook:${spec.name}`;
  const actor: Actor = proof === 'none' ? ANONYMOUS : triggerActor(owner);
  // A signature is kept past the window it can be replayed in.
  const replayKey = typeof proof === 'object' ? `webhook:${spec.name}:${proof.signature}` : undefined;
  const job = await options.db.write(function* () {
    if (replayKey !== undefined && !(yield* fireOnce(replayKey, SIGNATURE_WINDOW_MS * 2)))
      throw new AppError('WEBHOOK_REPLAYED', 'this signed delivery was already received: it starts its workflow once');
    return yield* insertJob(spec.name, owner, actor, data, req.trace);
  }, req.trace);
  options.submitted();
  // Nobody can poll a delivery's job (no credential owns it): the answer carries no URL.
  sendJson(res, 202, { success: true, job: { id: job.id, workflow: job.workflow, status: job.status } });
}

/**
 * How the caller proved it knows the secret: `none` when the webhook has no secret, the signature
 * of a signed delivery (its replay key), or `bearer`. Throws 401 otherwise.
 */
function verify(
  spec: WorkflowSpec,
  req: ApiRequest,
  raw: Buffer,
  env: NodeJS.ProcessEnv,
): 'none' | 'bearer' | { signature: string } {
  const secretEnv = spec.trigger?.kind === 'webhook' ? spec.trigger.secretEnv : undefined;
  if (secretEnv === undefined) return 'none';
  const secret = env[secretEnv];
  // Fail closed: a webhook meant to be secret is never open because its secret is missing.
  if (!secret) {
    throw new AppError('UNAUTHENTICATED', 'this webhook accepts no deliveries: its secret is not configured');
  }
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer (.+)$/i.exec(authorization);
    if (match && sameText(match[1], secret)) return 'bearer';
    throw new AppError('UNAUTHENTICATED', "the bearer token is not this webhook's secret");
  }
  const signature = header(req, 'x-webhook-signature');
  const timestamp = header(req, 'x-webhook-timestamp');
  if (signature === undefined || timestamp === undefined) {
    throw new AppError(
      'UNAUTHENTICATED',
      'send Authorization: Bearer <secret>, or X-Webhook-Timestamp and X-Webhook-Signature: sha256=<hex>',
    );
  }
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(Date.now() - Number(timestamp) * 1000) > SIGNATURE_WINDOW_MS) {
    throw new AppError('UNAUTHENTICATED', 'X-Webhook-Timestamp must be unix seconds within 5 minutes of now');
  }
  const sent = /^sha256=([0-9a-f]{64})$/i.exec(signature)?.[1]?.toLowerCase();
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(raw).digest('hex');
  if (sent === undefined || !timingSafeEqual(Buffer.from(sent), Buffer.from(expected))) {
    throw new AppError('UNAUTHENTICATED', 'X-Webhook-Signature is not the HMAC-SHA256 of "<timestamp>.<body>"');
  }
  return { signature: expected };
}

/** Compares through digests: equal lengths for timingSafeEqual, and no early exit on length. */
function sameText(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

function header(req: ApiRequest, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** JSON, a form, or text; nothing for an empty body. Other media types are 415. */
function parseBody(req: ApiRequest, raw: Buffer): unknown {
  if (raw.length === 0) return null;
  const type = mediaType(req);
  const text = raw.toString('utf8');
  if (isJsonType(type)) {
    if (!decodesCleanly(raw)) throw notText('the delivery body');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new AppError('INVALID_JSON', 'the delivery body is not valid JSON');
    }
    if (nestedDeeperThan(value, MAX_JSON_DEPTH)) {
      throw new AppError('VALIDATION_FAILED', `the delivery body is nested more than ${MAX_JSON_DEPTH} levels deep`);
    }
    return value;
  }
  if (type === 'application/x-www-form-urlencoded') return plainObject(parseQuery(text));
  if (type.startsWith('text/') || type === '') return text;
  throw new AppError('UNSUPPORTED_MEDIA_TYPE', `send the delivery as JSON, a form or text (got ${type})`);
}

/** The delivery's headers (lower-case names) for `webhook.headers`, without its credentials. */
function deliveryHeaders(req: ApiRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || CREDENTIAL_HEADERS.has(name)) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function queryOf(url: string | undefined): string {
  const u = url ?? '';
  const q = u.indexOf('?');
  return q === -1 ? '' : u.slice(q + 1);
}

/** A parsed form or query as a plain object; the keys a prototype has never become its own. */
function plainObject(parsed: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (value === undefined || PROTOTYPE_KEYS.has(key)) continue;
    out[key] = value;
  }
  return out;
}
