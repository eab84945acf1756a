// The error responses operations refer to (components/responses): one per HTTP status family,
// each naming the error codes it carries.

import type { Blueprint } from '../../model/types.ts';
import { ref, TRACE_HEADER, type Schema } from './common.ts';

const ERROR_RESPONSES: Record<string, string> = {
  BadRequest: 'The request is malformed or fails validation (VALIDATION_FAILED, INVALID_JSON, INVALID_QUERY, IDEMPOTENCY_KEY_REQUIRED)',
  Unauthenticated: 'No valid credential: sign in, or send Authorization: Bearer <API key> (UNAUTHENTICATED)',
  Forbidden: 'Not allowed (FORBIDDEN, INSUFFICIENT_SCOPE, CSRF_FAILED, PROTECTED_FIELD_MUTATION)',
  NotFound: 'No such record or route (NOT_FOUND, ROUTE_NOT_FOUND)',
  Conflict:
    'A conflict with stored data or state (UNIQUE_CONFLICT, REFERENCE_CONFLICT, STATE_CONFLICT, COMMAND_UNAVAILABLE, IDEMPOTENCY_KEY_REUSE, IDEMPOTENCY_KEY_IN_PROGRESS)',
  PayloadTooLarge: 'The body exceeds the size limit (PAYLOAD_TOO_LARGE)',
  UnsupportedMediaType: 'The body is not application/json (UNSUPPORTED_MEDIA_TYPE)',
  UnprocessableEntity: 'A referenced record does not exist (REFERENCE_NOT_FOUND)',
  ServiceUnavailable: 'The database is busy; retry after Retry-After seconds (DATABASE_BUSY)',
  TooManyRequests: 'Too many failed attempts; retry after Retry-After seconds (TOO_MANY_ATTEMPTS)',
  InternalError: 'An unexpected failure, for example a command handler that threw (INTERNAL_ERROR)',
};

export function errorResponses(bp: Blueprint): Record<string, Schema> {
  return Object.fromEntries(
    Object.entries(ERROR_RESPONSES)
      // Sign-in throttling exists only with the email provider.
      .filter(([name]) => name !== 'TooManyRequests' || bp.auth.providers.includes('email'))
      .map(([name, description]) => [name, { description, headers: TRACE_HEADER, content: { 'application/json': { schema: ref('Error') } } }]),
  );
}
