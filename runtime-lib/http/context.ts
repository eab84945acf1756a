// The request as the data layer sees it: the actor, the trace and the correlation ids
// (X-Agent-Run-ID, Idempotency-Key) every write records.

import { AppError } from '../core/errors.ts';
import type { RequestContext } from '../data/entity-store.ts';
import { idempotencyKeyOf } from '../data/idempotency.ts';
import type { ApiRequest } from './request.ts';

const RUN_ID = /^[\x21-\x7e]{1,255}$/;

/** The request's actor, trace and correlation ids (X-Agent-Run-ID, Idempotency-Key). */
export function requestContext(req: ApiRequest, options: { mutation: boolean }): RequestContext {
  return callContext(req, () =>
    options.mutation ? idempotencyKeyOf(header(req, 'idempotency-key'), req.actor) : undefined,
  );
}

/**
 * The request's actor, trace and X-Agent-Run-ID, with the idempotency key `keyOf` reads and checks
 * (after the run id, so that a bad run id is heard first): an MCP tool call takes it from its
 * arguments (http/mcp-routes.ts), not from the header.
 */
export function callContext(req: ApiRequest, keyOf: () => string | undefined): RequestContext {
  const runId = header(req, 'x-agent-run-id');
  if (runId !== undefined && !RUN_ID.test(runId)) {
    throw new AppError('VALIDATION_FAILED', 'X-Agent-Run-ID must be 1 to 255 visible ASCII characters', {
      details: [
        { field: 'X-Agent-Run-ID', code: 'INVALID_HEADER', message: 'must be 1 to 255 visible ASCII characters' },
      ],
    });
  }
  return {
    actor: req.actor,
    trace: req.trace,
    agentRunId: runId,
    idempotencyKey: keyOf(),
    sessionId: req.sessionId,
  };
}

/** A custom header's value (node joins repeated ones with ", "). */
function header(req: ApiRequest, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}
