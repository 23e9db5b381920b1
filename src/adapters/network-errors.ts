/** Node's socket errors: the peer refused, reset, timed out or could not be found (maybe wrapped: cause, AggregateError). */
const NETWORK_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** Whether `err` (or what it wraps) is a network failure rather than an answer. */
export function isNetworkError(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  if (err instanceof AggregateError && err.errors.some((inner) => isNetworkError(inner, depth + 1))) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  return isNetworkError((err as { cause?: unknown }).cause, depth + 1);
}
