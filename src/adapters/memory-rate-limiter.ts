import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { RateLimiter } from '../ports/rate-limiter.js';

/** One rate-limiter-flexible bucket set per distinct limit (keys carry their own limits). */
export class MemoryRateLimiter implements RateLimiter {
  private readonly limiters = new Map<number, RateLimiterMemory>();

  async consume(key: string, perSecond: number): Promise<boolean> {
    let limiter = this.limiters.get(perSecond);
    if (!limiter) {
      // Fractional limits (0.5/s) become "N points per N seconds" with whole points.
      const duration = perSecond >= 1 ? 1 : Math.ceil(1 / perSecond);
      limiter = new RateLimiterMemory({ points: Math.max(1, Math.floor(perSecond * duration)), duration });
      this.limiters.set(perSecond, limiter);
    }
    try {
      await limiter.consume(key, 1);
      return true;
    } catch (err) {
      if (err instanceof Error) throw err; // a real failure, not a rejection
      return false;
    }
  }
}
