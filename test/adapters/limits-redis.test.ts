import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLimits, type RedisConnectOptions, type RedisLimitsOptions } from '../../src/adapters/redis/limits.js';
import type { InFlightTicket } from '../../src/ports/limits.js';
import { redisTestPrefix, TEST_REDIS_URL } from '../helpers/redis-test-prefix.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { limitsContract } from './limits-contract.js';

let prefix = '';
let admin: Redis;
let cleanup: () => Promise<void>;
const opened: RedisLimits[] = [];

beforeAll(async () => {
  ({ prefix, admin, cleanup } = await redisTestPrefix('limits'));
});
afterAll(async () => {
  for (const node of opened) await node.close();
  await cleanup();
});

/** One API node: its own adapter on its own connection, sharing this run's prefix. */
async function node(opts: Partial<RedisLimitsOptions> & RedisConnectOptions = {}, url = TEST_REDIS_URL): Promise<RedisLimits> {
  const limits = await RedisLimits.connect(url, { prefix, ...opts });
  opened.push(limits);
  return limits;
}
const newKey = () => `key_${randomUUID().replace(/-/g, '')}`;

limitsContract('redis', async () => {
  const limits = await node();
  return { limits, close: async () => {} };
});

describe('RedisLimits across API nodes', () => {
  it('two nodes share one in-flight budget: 3 on A + 2 on B, then both refuse; a leave on A frees B', async () => {
    const [a, b] = [await node(), await node()];
    const key = newKey();
    const onA = await Promise.all([1, 2, 3].map(() => a.enter(key, 5)));
    const onB = await Promise.all([1, 2].map(() => b.enter(key, 5)));
    expect([...onA, ...onB].every((t) => t !== null)).toBe(true);
    expect(await a.enter(key, 5)).toBeNull();
    expect(await b.enter(key, 5)).toBeNull();
    await a.leave(onA[0]!);
    const freed = await b.enter(key, 5);
    expect(freed).not.toBeNull();
    for (const t of onA.slice(1)) await a.leave(t!);
    for (const t of [...onB, freed]) await b.leave(t!);
    expect(await admin.zcard(`${prefix}inflight:${key}`)).toBe(0);
  });

  it('two nodes share one rate budget', async () => {
    const [a, b] = [await node(), await node()];
    const key = newKey();
    expect(await a.consumeRate(key, 2)).toBe(true);
    expect(await b.consumeRate(key, 2)).toBe(true);
    expect(await a.consumeRate(key, 2)).toBe(false);
    expect(await b.consumeRate(key, 2)).toBe(false);
  });

  it('100 enters at once from two nodes with limit 5 admit exactly 5; 100 rate checks at 5/s allow exactly 5', async () => {
    const [a, b] = [await node(), await node()];
    const key = newKey();
    const tickets = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).enter(key, 5)));
    expect(tickets.filter((t) => t !== null)).toHaveLength(5);
    expect(await admin.zcard(`${prefix}inflight:${key}`)).toBe(5);
    const rateKey = newKey();
    const allowed = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).consumeRate(rateKey, 5)));
    expect(allowed.filter(Boolean)).toHaveLength(5);
  });

  it("a node that died without leaving: its slots expire after slotTtlMs; a live node's long request keeps its slot", async () => {
    const ttl = 400;
    const dying = await node({ slotTtlMs: ttl });
    const living = await node({ slotTtlMs: ttl });
    const other = await node({ slotTtlMs: ttl });
    const deadKey = newKey();
    const liveKey = newKey();
    expect(await dying.enter(deadKey, 1)).not.toBeNull();
    const long = await living.enter(liveKey, 1);
    expect(long).not.toBeNull();
    await dying.close(); // stops refreshing, never leaves: as a crashed node
    expect(await other.enter(deadKey, 1)).toBeNull();
    await sleep(3 * ttl);
    // The dead node's slot is gone; the living node's request, three ttls long, still holds its one.
    const taken = await other.enter(deadKey, 1);
    expect(taken).not.toBeNull();
    expect(await other.enter(liveKey, 1)).toBeNull();
    await living.leave(long!);
    const after = await other.enter(liveKey, 1);
    expect(after).not.toBeNull();
    await other.leave(taken!);
    await other.leave(after!);
  });
});

describe('RedisLimits when Redis fails', () => {
  it('Redis not reachable: start-up and checks answer at once, limits held per node', async () => {
    const t0 = Date.now();
    const alone = await node({}, 'redis://127.0.0.1:1');
    const key = newKey();
    expect(await alone.consumeRate(key, 1)).toBe(true);
    expect(await alone.consumeRate(key, 1)).toBe(false);
    const t = await alone.enter(key, 1);
    expect(t).not.toBeNull();
    expect(await alone.enter(key, 1)).toBeNull();
    await alone.leave(t!);
    expect(await alone.enter(key, 1)).not.toBeNull();
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('Redis hangs: one check waits commandTimeout, later ones go to memory at once; shared again once it answers', async () => {
    const target = new URL(TEST_REDIS_URL);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    try {
      const viaProxy = await node({ commandTimeoutMs: 200, retryAfterMs: 500 }, proxy.url);
      const direct = await node();
      const key = newKey();
      const shared = await direct.enter(key, 1);
      expect(await viaProxy.enter(key, 1)).toBeNull(); // Redis answers: the budget is shared

      proxy.freeze();
      let t0 = Date.now();
      const local = await viaProxy.enter(key, 1); // times out, then this node's own count admits it
      expect(local).not.toBeNull();
      expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
      expect(Date.now() - t0).toBeLessThan(600);
      t0 = Date.now();
      expect(await viaProxy.enter(key, 1)).toBeNull(); // per node: limit 1 held by `local`
      expect(await viaProxy.consumeRate(key, 1)).toBe(true);
      expect(await viaProxy.consumeRate(key, 1)).toBe(false);
      expect(Date.now() - t0).toBeLessThan(50); // no more waiting on the hung Redis
      await viaProxy.leave(local!);

      proxy.thaw();
      await sleep(600); // past retryAfterMs: Redis is tried again
      expect(await viaProxy.enter(key, 1)).toBeNull(); // shared again: `shared` still holds the slot
      await direct.leave(shared!);
      const back = await viaProxy.enter(key, 1);
      expect(back).not.toBeNull();
      await viaProxy.leave(back!);
    } finally {
      await proxy.close();
    }
  });
});

it('a ticket freed twice frees one slot', async () => {
  const limits = await node();
  const key = newKey();
  const [t1, t2] = [await limits.enter(key, 2), await limits.enter(key, 2)] as InFlightTicket[];
  await limits.leave(t1!);
  await limits.leave(t1!);
  const t3 = await limits.enter(key, 2);
  expect(t3).not.toBeNull();
  expect(await limits.enter(key, 2)).toBeNull();
  await limits.leave(t2!);
  await limits.leave(t3!);
});
