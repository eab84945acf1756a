// The error responses operations refer to (components/responses): one per kind of failure, each
// listing the error codes it carries in `x-error-codes` (one per line, so no line grows long).

import type { Blueprint } from '../../model/types.ts';
import { ref, TRACE_HEADER, type Schema } from './common.ts';

const RETRY_AFTER = {
  'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
};

const ERROR_RESPONSES: Record<string, { description: string; codes: string[]; retry?: true }> = {
  BadRequest: {
    description: 'The request is malformed or fails validation',
    codes: ['VALIDATION_FAILED', 'INVALID_JSON', 'INVALID_QUERY', 'HTTPS_REQUIRED', 'SESSION_WITH_API_KEY'],
  },
  // The 400 of every operation that takes Idempotency-Key: API keys must send one.
  BadWriteRequest: {
    description: 'Malformed or invalid, or an API key sent no Idempotency-Key (IDEMPOTENCY_KEY_REQUIRED)',
    codes: ['VALIDATION_FAILED', 'INVALID_JSON', 'INVALID_QUERY', 'IDEMPOTENCY_KEY_REQUIRED'],
  },
  Unauthenticated: {
    description: 'No valid credential: sign in, or send Authorization: Bearer <API key>',
    codes: ['UNAUTHENTICATED'],
  },
  Forbidden: {
    description: 'Not allowed',
    codes: ['FORBIDDEN', 'INSUFFICIENT_SCOPE', 'CSRF_FAILED', 'PROTECTED_FIELD_MUTATION'],
  },
  NotFound: { description: 'No such record or route', codes: ['NOT_FOUND', 'ROUTE_NOT_FOUND'] },
  Conflict: {
    description: 'A conflict with stored data or state',
    codes: [
      'UNIQUE_CONFLICT',
      'REFERENCE_CONFLICT',
      'STATE_CONFLICT',
      'COMMAND_UNAVAILABLE',
      'IDEMPOTENCY_KEY_REUSE',
      'IDEMPOTENCY_KEY_IN_PROGRESS',
    ],
  },
  PayloadTooLarge: { description: 'The body exceeds the size limit', codes: ['PAYLOAD_TOO_LARGE'] },
  UnsupportedMediaType: { description: 'The body is not application/json', codes: ['UNSUPPORTED_MEDIA_TYPE'] },
  UnprocessableEntity: { description: 'A referenced record does not exist', codes: ['REFERENCE_NOT_FOUND'] },
  // Any request that reads or writes the database can meet a busy lock or a storage fault.
  ServiceUnavailable: {
    description: 'The database is busy or its storage fails; retry after Retry-After seconds',
    codes: ['DATABASE_BUSY', 'STORAGE_UNAVAILABLE'],
    retry: true,
  },
  TooManyRequests: {
    description: 'Too many failed attempts; retry after Retry-After seconds',
    codes: ['TOO_MANY_ATTEMPTS'],
    retry: true,
  },
  InternalError: {
    description: 'An unexpected failure, for example a command handler that threw',
    codes: ['INTERNAL_ERROR'],
  },
};

export function errorResponses(bp: Blueprint): Record<string, Schema> {
  return Object.fromEntries(
    Object.entries(ERROR_RESPONSES)
      // Sign-in throttling exists only with the email provider.
      .filter(([name]) => name !== 'TooManyRequests' || bp.auth.providers.includes('email'))
      // Only command routes declare a 500 (a handler that threw): unused, it would be noise.
      .filter(([name]) => name !== 'InternalError' || bp.commands.length > 0)
      .map(([name, { description, codes, retry }]) => [
        name,
        {
          description,
          'x-error-codes': codes,
          headers: { ...TRACE_HEADER, ...(retry ? RETRY_AFTER : {}) },
          content: { 'application/json': { schema: ref('Error') } },
        },
      ]),
  );
}
