/**
 * The bounds of what an operator may set on a key or an account, wherever it is set (CLI, admin API, the
 * server's defaults). Outside them a value breaks something quietly: an infinite rate made every request of
 * the key an internal error (the limiter refuses non-finite points), a rate below one request per ~25 days
 * overflowed its timer and turned limiting off, a concurrency of 0 made a key that can do nothing, and
 * credits past 2^53 stop being exact (a charge no longer lowers them). Found from outside.
 */
export const KEY_LIMITS = {
  /** Credits added at once (a key's initial credits, `credits add`, the admin API). */
  creditsMax: 1_000_000_000,
  /** Requests per second: from one per 1,000 s to a million. */
  rateMin: 0.001,
  rateMax: 1_000_000,
  /** Unfinished tasks and requests in flight per key. */
  concurrencyMax: 1_000_000,
} as const;

/** Why a requests-per-second value is refused, or null: finite and within the bounds. */
export function rateLimitProblem(n: number): string | null {
  if (!Number.isFinite(n) || n < KEY_LIMITS.rateMin || n > KEY_LIMITS.rateMax) {
    return `must be a number of requests per second from ${KEY_LIMITS.rateMin} to ${KEY_LIMITS.rateMax}`;
  }
  return null;
}
