/**
 * The one table of business results: each name maps to the spec's numeric code and message text.
 * Codes 100000-101008 and their texts are the spec's, word for word; the others are Soundry's
 * documented additions (docs/api.md) for cases the spec leaves "not shown".
 */
export const ERRORS = {
  SUCCESS: { code: 100000, message: 'Request Success' },
  NEED_LOGIN: { code: 100001, message: 'Need Login' },
  INSUFFICIENT_CREDITS: { code: 100100, message: 'Insufficient credit balance' },
  INVALID_API_KEY: { code: 101002, message: 'Invalid API key' },
  RATE_LIMITED: { code: 101003, message: 'API key rate limit exceeded' },
  CONCURRENCY_LIMITED: { code: 101004, message: 'API key concurrent request limit exceeded' },
  ACCOUNT_SUSPENDED: {
    code: 101005,
    message: 'Your account is suspended. Status cannot be modified. Please contact the administrator',
  },
  KEY_NOT_ENABLED: { code: 101006, message: 'API key not enabled' },
  TASK_NOT_FOUND: { code: 101008, message: 'Task not found' },
  // Soundry additions (not in the spec's table).
  INVALID_PARAMETERS: { code: 100002, message: 'Invalid parameters' },
  TEXT_TOO_LONG: { code: 100003, message: 'Text exceeds the maximum length' },
  FILE_LINK_INVALID: { code: 100403, message: 'Invalid or expired file link' },
  NOT_FOUND: { code: 100404, message: 'Not Found' },
  PAYLOAD_TOO_LARGE: { code: 100413, message: 'Payload too large' },
  CAPABILITY_NOT_AVAILABLE: { code: 101010, message: 'Capability not available on this server' },
  INTERNAL_ERROR: { code: 100500, message: 'Internal server error' },
  SERVICE_UNAVAILABLE: { code: 100503, message: 'Service is shutting down, try again shortly' },
} as const;

export type ErrorName = keyof typeof ERRORS;

/** A refusal the HTTP layer turns into an envelope. `detail` replaces the message where the table allows it. */
export class AppError extends Error {
  readonly code: number;
  constructor(
    readonly errorName: ErrorName,
    detail?: string,
  ) {
    super(detail ?? ERRORS[errorName].message);
    this.code = ERRORS[errorName].code;
  }
}

/** Failure of a task while processing: stored on the task, never an envelope code. */
export class TaskFailure extends Error {
  constructor(
    message: string,
    /** false when retrying cannot help (bad input); true for transient trouble. */
    readonly retryable = false,
  ) {
    super(message);
  }
}
