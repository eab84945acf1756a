// Every failure a generated app reports, in one registry: the code, its HTTP status and whether
// a client may retry. `retryable` is true only where the same request, with the same
// Idempotency-Key, can succeed later without the caller changing anything.

export const ERROR_CODES = {
  WEAK_PASSWORD: { status: 400, retryable: false, description: 'The password is too short or too long.' },
  VALIDATION_FAILED: {
    status: 400,
    retryable: false,
    description: 'The body or a parameter does not fit the declared types.',
  },
  INVALID_JSON: { status: 400, retryable: false, description: 'The request body is not valid JSON.' },
  IDEMPOTENCY_KEY_REQUIRED: {
    status: 400,
    retryable: false,
    description: 'API-key mutations must send an Idempotency-Key header.',
  },
  SESSION_WITH_API_KEY: {
    status: 400,
    retryable: false,
    description: 'Signing in or up starts a browser session: the request must carry no Authorization header.',
  },
  HTTPS_REQUIRED: {
    status: 400,
    retryable: false,
    description: 'In production, signing in and up needs HTTPS: over plain HTTP the Secure cookie would be dropped.',
  },
  INVALID_QUERY: { status: 400, retryable: false, description: 'A query parameter is unknown or out of range.' },
  UNAUTHENTICATED: { status: 401, retryable: false, description: 'No valid credential was presented.' },
  INVALID_CREDENTIALS: {
    status: 401,
    retryable: false,
    description: 'The e-mail and password do not match an account.',
  },
  FORBIDDEN: { status: 403, retryable: false, description: 'The actor may not do this.' },
  INSUFFICIENT_SCOPE: {
    status: 403,
    retryable: false,
    description: 'The API key lacks a scope this operation requires.',
  },
  CSRF_FAILED: {
    status: 403,
    retryable: false,
    description: 'A session-authenticated mutation without a valid CSRF token or from an untrusted origin.',
  },
  ORIGIN_NOT_ALLOWED: {
    status: 403,
    retryable: false,
    description: 'A request to /mcp from a browser origin that is not one of auth.trustedOrigins.',
  },
  PROTECTED_FIELD_MUTATION: {
    status: 403,
    retryable: false,
    description: 'A command-only field was written outside its commands.',
  },
  NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'The record does not exist (or is not visible to the actor).',
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    retryable: false,
    description: 'The route exists but not for this method; the Allow header lists the ones it takes.',
  },
  ROUTE_NOT_FOUND: { status: 404, retryable: false, description: 'No route matches the method and path.' },
  EMAIL_TAKEN: { status: 409, retryable: false, description: 'An account with this e-mail exists.' },
  UNIQUE_CONFLICT: { status: 409, retryable: false, description: 'A unique field already holds this value.' },
  REFERENCE_CONFLICT: { status: 409, retryable: false, description: 'Other records still reference this one.' },
  STATE_CONFLICT: {
    status: 409,
    retryable: false,
    description: 'A conditional state change lost a race; refresh first.',
  },
  WORKFLOW_PRECONDITION_FAILED: {
    status: 409,
    retryable: false,
    description: 'The record is no longer in the state the workflow requires.',
  },
  WEBHOOK_REPLAYED: {
    status: 409,
    retryable: false,
    description: 'This signed webhook delivery was already received; it starts its workflow once.',
  },
  WORKFLOW_TEMPLATE_UNRESOLVED: {
    status: 422,
    retryable: false,
    description: 'A workflow step names a {{ path }} that does not resolve in its run.',
  },
  WORKFLOW_DEPTH_EXCEEDED: {
    status: 409,
    retryable: false,
    description: 'Entity-triggered workflows started each other past the depth limit; the chain is named.',
  },
  WORKFLOW_STEP_NOT_SUPPORTED: {
    status: 501,
    retryable: false,
    description: 'This kind of workflow step does not run in this version of the app.',
  },
  WORKFLOW_STEP_INVALID: {
    status: 422,
    retryable: false,
    description:
      'A workflow step holds a value it cannot run with (loop items not a list, a bad delay, a webhook header).',
  },
  WORKFLOW_LIMIT_EXCEEDED: {
    status: 422,
    retryable: false,
    description: 'A loop over more than 1,000 items, a delay over 5 minutes, or a job past 10,000 steps.',
  },
  WEBHOOK_TARGET_BLOCKED: {
    status: 403,
    retryable: false,
    description: 'A webhook step targets a local, private or reserved address (refused in production) or not http(s).',
  },
  WEBHOOK_STEP_FAILED: {
    status: 502,
    retryable: true,
    description: 'A webhook step got no answer, or 408, 429 or 5xx, on every attempt; a later run may succeed.',
  },
  WEBHOOK_STEP_REJECTED: {
    status: 502,
    retryable: false,
    description: 'A webhook step was answered with another non-2xx status, too many redirects or too large a body.',
  },
  NOTIFICATION_FAILED: {
    status: 502,
    retryable: true,
    description:
      'A notification could not be delivered: the mail or Slack server was unreachable, timed out, ' +
      'deferred it (SMTP 4xx) or kept answering 429; a later run may succeed.',
  },
  NOTIFICATION_REJECTED: {
    status: 502,
    retryable: false,
    description: 'The mail or Slack server refused a notification (SMTP 5xx, bad credentials, a Slack error).',
  },
  NOTIFICATION_NOT_CONFIGURED: {
    status: 503,
    retryable: false,
    description: "A notification adapter lacks a setting it sends with (a Slack adapter's bot token).",
  },
  JOB_INTERRUPTED: {
    status: 503,
    retryable: true,
    description: 'The app instance running the job stopped before it finished; its unfinished steps took no effect.',
  },
  IDEMPOTENCY_KEY_REUSE: {
    status: 409,
    retryable: false,
    description: 'The idempotency key was used with different input.',
  },
  IDEMPOTENCY_KEY_IN_PROGRESS: {
    status: 409,
    retryable: true,
    description: 'A request with this Idempotency-Key is still running; retry after Retry-After.',
  },
  COMMAND_UNAVAILABLE: {
    status: 409,
    retryable: false,
    description: "The command's availableWhen does not hold for the record's current state.",
  },
  PAYLOAD_TOO_LARGE: { status: 413, retryable: false, description: 'The request body exceeds the limit.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false, description: 'The body must be application/json.' },
  UPLOAD_TOO_LARGE: {
    status: 413,
    retryable: false,
    description: "An uploaded file exceeds its field's max or the 50 MB limit; nothing was stored.",
  },
  UPLOAD_TYPE_NOT_ACCEPTED: {
    status: 415,
    retryable: false,
    description: "An uploaded file's type is not in its field's accept, or its bytes are not of the type it declares.",
  },
  UPLOAD_NOT_ACCEPTED: {
    status: 400,
    retryable: false,
    description: 'A multipart body is malformed, or sends a file where none is taken (or text where a file is).',
  },
  REFERENCE_NOT_FOUND: {
    status: 422,
    retryable: false,
    description: 'A Ref field names a record that does not exist.',
  },
  TOO_MANY_ATTEMPTS: {
    status: 429,
    retryable: true,
    description: 'Too many failed sign-ins; retry after Retry-After seconds.',
  },
  DATABASE_BUSY: {
    status: 503,
    retryable: true,
    description: 'The database was locked by other writers; retry shortly.',
  },
  STORAGE_UNAVAILABLE: {
    status: 503,
    retryable: true,
    description: 'The database cannot store data right now (disk full, read-only, I/O error); nothing was stored.',
  },
  INTERNAL_ERROR: {
    status: 500,
    retryable: false,
    description: 'An unexpected error; the trace id identifies it in the logs.',
  },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetail {
  field?: string;
  code: string;
  message: string;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly details?: ErrorDetail[];
  /** Seconds; sent as Retry-After for retryable errors. */
  readonly retryAfter?: number;

  /**
   * `cause`: the underlying failure, for the logs only (a storage fault's SQLite error); never sent.
   * `retryable: false` withdraws the code's offer of a retry, where repeating would repeat effects.
   */
  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: ErrorDetail[]; retryAfter?: number; cause?: unknown; retryable?: false } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.retryable = options.retryable ?? ERROR_CODES[code].retryable;
    this.details = options.details;
    this.retryAfter = options.retryAfter;
  }
}

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; retryable: boolean; details?: ErrorDetail[]; traceId: string };
}

export function envelope(err: AppError, traceId: string): ErrorEnvelope {
  return {
    error: {
      code: err.code,
      message: err.message,
      retryable: err.retryable,
      ...(err.details ? { details: err.details } : {}),
      traceId,
    },
  };
}
