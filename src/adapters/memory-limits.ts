import { RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
import type { AuthFailurePolicy, InFlightTicket, RequestLimits } from '../ports/limits.js';

/**
 * A key's count of requests in flight. It is also the ticket each of them holds, and it outlives
 * the key's last request (until a sweep): re-creating a Map entry per request costs more than the
 * whole check, and enter() is on every request's path.
 */
class KeySlots implements InFlightTicket {
  inFlight = 0;
  readonly admitted: Promise<KeySlots> = Promise.resolve(this);
  constructor(readonly keyId: string) {}
}

/** Idle slots are swept once this many keys have one; the bound then follows the live count. */
const MIN_SWEEP_AT = 1024;

/** Limits of one process (the embedded profile, or a scaled-out node without REDIS_URL). */
export class MemoryLimits implements RequestLimits {
  /** One rate-limiter-flexible bucket set per distinct limit (keys carry their own limits). */
  private readonly rateLimiters = new Map<number, RateLimiterMemory>();
  /** Failed authentications per client, one limiter per policy (in practice one: the config's). */
  private readonly failureLimiters = new Map<string, RateLimiterMemory>();
  private readonly slots = new Map<string, KeySlots>();
  private sweepAt = MIN_SWEEP_AT;
  private readonly refused: Promise<null> = Promise.resolve(null);
  private readonly done: Promise<void> = Promise.resolve();

  async consumeRate(keyId: string, perSecond: number): Promise<boolean> {
    let limiter = this.rateLimiters.get(perSecond);
    if (!limiter) {
      limiter = new RateLimiterMemory(rateWindow(perSecond));
      this.rateLimiters.set(perSecond, limiter);
    }
    try {
      await limiter.consume(keyId, 1);
      return true;
    } catch (err) {
      if (err instanceof Error) throw err; // a real failure, not a rejection
      return false;
    }
  }

  enter(keyId: string, limit: number): Promise<InFlightTicket | null> {
    const slots = this.slots.get(keyId) ?? this.addSlots(keyId);
    if (slots.inFlight >= limit) return this.refused;
    slots.inFlight++;
    return slots.admitted;
  }

  leave(ticket: InFlightTicket): Promise<void> {
    // A slot with requests in flight is never swept, so the ticket is still the key's current one.
    if (ticket instanceof KeySlots && ticket.inFlight > 0) ticket.inFlight--;
    return this.done;
  }

  async recordAuthFailure(client: string, policy: AuthFailurePolicy): Promise<number | null> {
    try {
      await this.failureLimiter(policy).consume(client, 1);
      return null;
    } catch (err) {
      if (err instanceof Error) throw err;
      return Math.max(1, (err as RateLimiterRes).msBeforeNext);
    }
  }

  async authFailureWait(client: string, policy: AuthFailurePolicy): Promise<number | null> {
    return blockedFor(await this.failureLimiter(policy).get(client), policy);
  }

  private failureLimiter(policy: AuthFailurePolicy): RateLimiterMemory {
    const id = policyId(policy);
    let limiter = this.failureLimiters.get(id);
    if (!limiter) {
      limiter = new RateLimiterMemory(failureWindow(policy));
      this.failureLimiters.set(id, limiter);
    }
    return limiter;
  }

  async close(): Promise<void> {}

  private addSlots(keyId: string): KeySlots {
    if (this.slots.size >= this.sweepAt) {
      for (const [id, slots] of this.slots) if (slots.inFlight === 0) this.slots.delete(id);
      this.sweepAt = Math.max(MIN_SWEEP_AT, 2 * this.slots.size); // amortised: sweeps get rarer as live keys grow
    }
    const slots = new KeySlots(keyId);
    this.slots.set(keyId, slots);
    return slots;
  }
}

/**
 * rate-limiter-flexible counts whole points per whole seconds: a fractional limit (0.5/s)
 * becomes "N points per N seconds". Shared with the Redis adapter so that both count alike.
 */
export function rateWindow(perSecond: number): { points: number; duration: number } {
  const duration = perSecond >= 1 ? 1 : Math.ceil(1 / perSecond);
  return { points: Math.max(1, Math.floor(perSecond * duration)), duration };
}

/** rate-limiter-flexible's options for an AuthFailurePolicy; shared with the Redis adapter. */
export function failureWindow(policy: AuthFailurePolicy): { points: number; duration: number; blockDuration: number } {
  return { points: policy.failures, duration: policy.windowSeconds, blockDuration: policy.blockSeconds };
}

/** A client's failure record, read without counting: blocked once past the policy's failures. */
export function blockedFor(res: RateLimiterRes | null, policy: AuthFailurePolicy): number | null {
  return res && res.consumedPoints > policy.failures ? Math.max(1, res.msBeforeNext) : null;
}

export function policyId(policy: AuthFailurePolicy): string {
  return `${policy.failures}per${policy.windowSeconds}s-block${policy.blockSeconds}s`;
}
