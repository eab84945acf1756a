// Pieces every part of the OpenAPI document uses: references, shared headers, security schemes.

import type { Blueprint } from '../../model/types.ts';

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const errorResponse = (name: string): Schema => ({ $ref: `#/components/responses/${name}` });
export const json = (schema: Schema) => ({ 'application/json': { schema } });
export const TRACE_HEADER = { 'X-Trace-ID': { $ref: '#/components/headers/X-Trace-ID' } };

export const ULID_PATTERN = '^[0-7][0-9A-HJKMNP-TV-Z]{25}$';

/** 1 to 255 visible ASCII characters: what runtime-lib takes in Idempotency-Key and X-Agent-Run-ID. */
const VISIBLE_ASCII = { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' };

// Not `required`: a person's session may leave it out. OpenAPI cannot make a header required for
// one security scheme only, so the description and the operation's 400 (BadWriteRequest) say so.
export const IDEMPOTENCY_HEADER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'API keys must send it: 400 IDEMPOTENCY_KEY_REQUIRED if not. Same key and input: replayed.',
  schema: VISIBLE_ASCII,
};

export const RUN_ID_HEADER = {
  name: 'X-Agent-Run-ID',
  in: 'header',
  required: false,
  description: 'Ties the audit record to one agent invocation.',
  schema: VISIBLE_ASCII,
};

/**
 * `offset` of a list: the app takes up to 2^53-1, the largest integer a JSON client reads exactly
 * (runtime-lib/http/list-query.ts, and a skill action's list in skill-routes.ts).
 */
export const OFFSET_SCHEMA = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 };

/** The security schemes the app accepts: API keys when declared, sessions with the email provider. */
export function schemeNames(bp: Blueprint): string[] {
  return [...(bp.auth.apiKeys.length ? ['apiKey'] : []), ...(bp.auth.providers.includes('email') ? ['session'] : [])];
}
