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
  CALLBACK_URL_REFUSED: { code: 100004, message: 'Callback URL not allowed' },
  ADMIN_TOKEN_INVALID: { code: 100401, message: 'Invalid admin token' },
  FILE_LINK_INVALID: { code: 100403, message: 'Invalid or expired file link' },
  NOT_FOUND: { code: 100404, message: 'Not Found' },
  REQUEST_TIMEOUT: { code: 100408, message: 'Request timeout' },
  PAYLOAD_TOO_LARGE: { code: 100413, message: 'Payload too large' },
  HEADERS_TOO_LARGE: { code: 100431, message: 'Request header fields too large' },
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
    /** Sent as the Retry-After header (seconds) when set. */
    readonly retryAfterSeconds?: number,
    /** More headers for the answer (X-RateLimit-*), on the spec's routes and the OpenAI ones alike. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail ?? ERRORS[errorName].message);
    this.code = ERRORS[errorName].code;
  }
}

/**
 * 101003 for a key over its rate: `perSecond` requests a second refill one every 1/perSecond s, so that is
 * when the next one can pass (at least 1 s: Retry-After counts whole seconds).
 */
export function rateLimited(perSecond: number): AppError {
  const wait = Math.max(1, Math.ceil(1 / perSecond));
  return new AppError('RATE_LIMITED', undefined, wait, {
    'x-ratelimit-limit': String(perSecond),
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': String(wait),
  });
}

/**
 * 101004: `limit` requests in flight, or unfinished tasks, per key. When one ends is not known here:
 * `retryAfterSeconds` is a polling hint (a request ends in about a second, a task in several).
 */
export function concurrencyLimited(limit: number, retryAfterSeconds: number): AppError {
  return new AppError('CONCURRENCY_LIMITED', undefined, retryAfterSeconds, { 'x-ratelimit-concurrency-limit': String(limit) });
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

/**
 * What a task that ran out of disk space records. Retrying on the same full disk cannot help, so it
 * fails at once (and, like every failure, is not charged).
 */
export const DISK_FULL_REASON = "No space left on the server's disk to process this task; nothing was charged. Try again later";

const DISK_FULL_CODES = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL']);
/** The texts tools print when they run out of space (ffmpeg's stderr, errors that crossed a thread and lost their code). */
const DISK_FULL_TEXT = /no space left on device|disk quota exceeded|database or disk is full/i;

/** Whether an error, or one it wraps (`cause`), says the disk is full. */
export function isDiskFull(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && DISK_FULL_CODES.has(code)) return true;
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && DISK_FULL_TEXT.test(message)) return true;
  }
  return false;
}

/**
 * The server cannot start, for a reason an operator must act on (a missing or damaged database):
 * printed as it is, without a stack trace.
 */
export class StartupRefusal extends Error {}

/**
 * What a log line says of a failure: its name, code and message, not the whole object (a driver's error can carry
 * its client, kilobytes per line when it repeats through an outage).
 */
export function errorSummary(err: unknown): { type?: string; code?: unknown; message: string } {
  if (!(err instanceof Error)) return { message: String(err) };
  return { type: err.name, code: (err as { code?: unknown }).code, message: err.message };
}
