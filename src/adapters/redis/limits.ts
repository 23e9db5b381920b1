import { randomUUID } from 'node:crypto';
import { Redis, type Result } from 'ioredis';
import { RateLimiterRedis, type RateLimiterRes } from 'rate-limiter-flexible';
import type { AuthFailurePolicy, InFlightTicket, RequestLimits } from '../../ports/limits.js';
import { blockedFor, failureWindow, MemoryLimits, policyId, rateWindow } from '../memory-limits.js';

/**
 * In-flight slots: one sorted set per key, one member per request (a random id) scored by the
 * time it expires. Expired members (their node died, or lost Redis) are dropped, then the request
 * is admitted when fewer than the limit remain: all in one script, so that concurrent requests on
 * every node see one count. Times are Redis's own clock (TIME), never a node's, so clock skew
 * between nodes cannot shorten or stretch a slot. The set expires with its newest member.
 * KEYS[1] set; ARGV: limit, ttl ms, member. Returns 1 admitted, 0 full.
 */
const ENTER_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/**
 * Pushes back the expiry of a live request's slot (a long upload outlives the ttl). XX: a member
 * already expired and dropped is not brought back. KEYS[1] set; ARGV: ttl ms, member.
 */
const REFRESH_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return 1
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    soundryLimitsEnter(key: string, limit: number, ttlMs: number, member: string): Result<number, Context>;
    soundryLimitsRefresh(key: string, ttlMs: number, member: string): Result<number, Context>;
  }
}

class RedisTicket implements InFlightTicket {
  constructor(
    readonly keyId: string,
    readonly setKey: string,
    readonly member: string,
  ) {}
}

type LimitsLogger = { warn(obj: object, msg: string): void; info(msg: string): void };

export interface RedisLimitsOptions {
  /** Prefix of every key, e.g. `soundry:limits:`; tests use a random one. */
  prefix: string;
  /**
   * How long a request's slot outlives the last sign of its node. Live requests are refreshed
   * every third of it, so it bounds how long the slots of a node that died stay taken, not how
   * long a request may run (Soundry has no request timeout: uploads of 1 GiB take what they take).
   */
  slotTtlMs?: number;
  /** After a Redis failure, checks stay on this node's memory for this long before trying Redis again. */
  retryAfterMs?: number;
  logger?: LimitsLogger;
}

export interface RedisConnectOptions {
  /** Longest wait for a check before this node falls back to its own memory. */
  commandTimeoutMs?: number;
  connectTimeoutMs?: number;
}

/**
 * Per-key limits shared by every API node through Redis: the rate with rate-limiter-flexible's
 * RateLimiterRedis (one Lua round trip), requests in flight with ENTER_LUA (one round trip).
 *
 * When Redis cannot answer, the checks fail open to this node's memory (a MemoryLimits, as an
 * embedded Soundry counts): the limits then hold per node instead of across nodes, the API keeps
 * serving, and Redis is tried again after retryAfterMs. Failing closed would turn a Redis outage
 * into refusing every request of every key; the limits are about fairness between keys, and each
 * node still bounds a key to what one node allows.
 */
export class RedisLimits implements RequestLimits {
  private readonly rateLimiters = new Map<number, RateLimiterRedis>();
  private readonly failureLimiters = new Map<string, RateLimiterRedis>();
  private readonly fallback = new MemoryLimits();
  private readonly live = new Set<RedisTicket>();
  private readonly slotTtlMs: number;
  private readonly retryAfterMs: number;
  private readonly refresher: NodeJS.Timeout;
  /** While Date.now() is before this, Redis is skipped (it just failed): a hung Redis costs one timeout, not one per request. */
  private skipRedisUntil = 0;
  private degraded = false;

  /**
   * Opens the connection this adapter owns (closed by close()). Commands are never queued while
   * disconnected and never retried, and each has a deadline: a check answers within
   * commandTimeoutMs whatever Redis does. Start-up waits for Redis at most connectTimeoutMs, then
   * goes on on memory, reconnecting in the background.
   */
  static async connect(url: string, opts: RedisLimitsOptions & RedisConnectOptions): Promise<RedisLimits> {
    const client = new Redis(url, {
      connectionName: 'soundry-limits',
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 250,
      connectTimeout: opts.connectTimeoutMs ?? 2000,
    });
    const limits = new RedisLimits(client, opts);
    await client.connect().catch((err: unknown) => limits.failed(err));
    return limits;
  }

  constructor(
    private readonly client: Redis,
    private readonly opts: RedisLimitsOptions,
  ) {
    this.slotTtlMs = opts.slotTtlMs ?? 30_000;
    this.retryAfterMs = opts.retryAfterMs ?? 2000;
    client.defineCommand('soundryLimitsEnter', { numberOfKeys: 1, lua: ENTER_LUA });
    client.defineCommand('soundryLimitsRefresh', { numberOfKeys: 1, lua: REFRESH_LUA });
    // Without a listener ioredis prints every reconnection error; one line per outage is enough.
    client.on('error', (err: unknown) => this.failed(err));
    client.on('ready', () => this.restored());
    this.refresher = setInterval(() => void this.refresh(), Math.max(10, Math.floor(this.slotTtlMs / 3)));
    this.refresher.unref();
  }

  async consumeRate(keyId: string, perSecond: number): Promise<boolean> {
    if (!this.redisUsable()) return this.fallback.consumeRate(keyId, perSecond);
    try {
      await this.rateLimiter(perSecond).consume(keyId, 1);
      this.restored();
      return true;
    } catch (err) {
      if (!(err instanceof Error)) return false; // a RateLimiterRes: over the limit
      this.failed(err);
      return this.fallback.consumeRate(keyId, perSecond);
    }
  }

  async enter(keyId: string, limit: number): Promise<InFlightTicket | null> {
    if (!this.redisUsable()) return this.fallback.enter(keyId, limit);
    const setKey = `${this.opts.prefix}inflight:${keyId}`;
    const member = randomUUID();
    try {
      const admitted = await this.client.soundryLimitsEnter(setKey, limit, this.slotTtlMs, member);
      this.restored();
      if (admitted !== 1) return null;
      const ticket = new RedisTicket(keyId, setKey, member);
      this.live.add(ticket);
      return ticket;
    } catch (err) {
      // The script may have run before the deadline: that member is never refreshed and expires.
      this.failed(err);
      return this.fallback.enter(keyId, limit);
    }
  }

  async leave(ticket: InFlightTicket): Promise<void> {
    if (!(ticket instanceof RedisTicket)) return this.fallback.leave(ticket);
    if (!this.live.delete(ticket)) return;
    try {
      await this.client.zrem(ticket.setKey, ticket.member);
    } catch (err) {
      this.failed(err); // no longer refreshed: the slot frees itself within slotTtlMs
    }
  }

  /** Failed authentications per client IP, shared by every node: a client cannot spread its guesses over them. */
  async recordAuthFailure(client: string, policy: AuthFailurePolicy): Promise<number | null> {
    if (!this.redisUsable()) return this.fallback.recordAuthFailure(client, policy);
    try {
      await this.failureLimiter(policy).consume(client, 1);
      this.restored();
      return null;
    } catch (err) {
      if (!(err instanceof Error)) return Math.max(1, (err as RateLimiterRes).msBeforeNext);
      this.failed(err);
      return this.fallback.recordAuthFailure(client, policy);
    }
  }

  async authFailureWait(client: string, policy: AuthFailurePolicy): Promise<number | null> {
    if (!this.redisUsable()) return this.fallback.authFailureWait(client, policy);
    try {
      const res = await this.failureLimiter(policy).get(client);
      this.restored();
      return blockedFor(res, policy);
    } catch (err) {
      this.failed(err);
      return this.fallback.authFailureWait(client, policy);
    }
  }

  private failureLimiter(policy: AuthFailurePolicy): RateLimiterRedis {
    const id = policyId(policy);
    let limiter = this.failureLimiters.get(id);
    if (!limiter) {
      limiter = new RateLimiterRedis({
        storeClient: this.client,
        useRedisPackage: false,
        keyPrefix: `${this.opts.prefix}authfail:${id}`,
        ...failureWindow(policy),
      });
      this.failureLimiters.set(id, limiter);
    }
    return limiter;
  }

  /** Stops refreshing and closes the connection; slots still held expire as those of a dead node. */
  async close(): Promise<void> {
    clearInterval(this.refresher);
    this.live.clear();
    await this.client.quit().catch(() => this.client.disconnect());
  }

  private rateLimiter(perSecond: number): RateLimiterRedis {
    let limiter = this.rateLimiters.get(perSecond);
    if (!limiter) {
      const window = rateWindow(perSecond);
      // insuranceLimiter is not used: the fallback must also cover enter(), skip a Redis that
      // just failed, and log the outage; it would be this same per-node RateLimiterMemory.
      limiter = new RateLimiterRedis({
        storeClient: this.client,
        useRedisPackage: false, // ioredis, not node-redis
        keyPrefix: `${this.opts.prefix}rate:${window.points}per${window.duration}s`,
        ...window,
      });
      this.rateLimiters.set(perSecond, limiter);
    }
    return limiter;
  }

  private redisUsable(): boolean {
    return this.client.status === 'ready' && (this.skipRedisUntil === 0 || Date.now() >= this.skipRedisUntil);
  }

  /** Keeps the slots of this node's running requests from expiring: one pipelined round trip. */
  private async refresh(): Promise<void> {
    if (this.live.size === 0 || this.client.status !== 'ready') return;
    const pipeline = this.client.pipeline();
    for (const t of this.live) pipeline.soundryLimitsRefresh(t.setKey, this.slotTtlMs, t.member);
    try {
      const results = await pipeline.exec();
      const failure = results?.find(([err]) => err)?.[0];
      if (failure) this.failed(failure);
    } catch (err) {
      this.failed(err);
    }
  }

  private failed(err: unknown): void {
    this.skipRedisUntil = Date.now() + this.retryAfterMs;
    if (this.degraded) return;
    this.degraded = true;
    this.opts.logger?.warn({ err }, 'Redis unreachable: per-key limits are counted per API node until it answers again');
  }

  private restored(): void {
    if (!this.degraded) return;
    this.degraded = false;
    this.skipRedisUntil = 0;
    this.opts.logger?.info('Redis answers again: per-key limits are shared by every API node');
  }
}
