// What every request carries once the pipeline (http/pipeline.ts) has run: its trace, its actor,
// the matched route and, for anonymous callers, their scope. Works on node's own request, so the front
// door (http/front-door.ts) needs no Express; Express sees the same fields on its request.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Actor } from '../core/actor.ts';
import type { ActiveTrace, SpanHandle } from '../observe/tracing.ts';

/** What the pipeline adds to a request before any route runs. */
export interface RequestState {
  trace: ActiveTrace;
  actor: Actor;
  rootSpanId?: number;
  routeSpan?: SpanHandle;
  /** The matched route's name, for the trace (Express keeps its own `req.route`). */
  routeName?: string;
  /**
   * An anonymous caller's scope, `anonymous:<nonce>`, set when the request proves its CSRF nonce
   * cookie with the matching token (auth/email/csrf.ts): what scopes the Idempotency-Keys of a
   * caller without a credential (runIdempotent). No session row stands behind it.
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
