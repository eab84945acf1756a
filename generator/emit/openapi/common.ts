// Pieces every part of the OpenAPI document uses: references, shared headers, security schemes.

import type { Blueprint } from '../../model/types.ts';

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const errorResponse = (name: string): Schema => ({ $ref: `#/components/responses/${name}` });
export const json = (schema: Schema) => ({ 'application/json': { schema } });
export const TRACE_HEADER = { 'X-Trace-ID': { $ref: '#/components/headers/X-Trace-ID' } };

export const ULID_PATTERN = '^[0-7][0-9A-HJKMNP-TV-Z]{25}$';

export const IDEMPOTENCY_HEADER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Required from API keys on mutations. Same key and input: the stored response is replayed.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

export const RUN_ID_HEADER = {
  name: 'X-Agent-Run-ID',
  in: 'header',
  required: false,
  description: 'Ties the audit record to one agent invocation.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

/** The security schemes the app accepts: API keys when declared, sessions with the email provider. */
export function schemeNames(bp: Blueprint): string[] {
  return [...(bp.auth.apiKeys.length ? ['apiKey'] : []), ...(bp.auth.providers.includes('email') ? ['session'] : [])];
}
