/**
 * `node --import tsx bench/limits.ts`: cost of the per-key limits on a request's path (rate check,
 * enter, leave, as the auth hook runs them). Memory: CPU time per request, the figure to keep from
 * regressing (the box may be shared, CPU time is less disturbed than wall time). With
 * BENCH_REDIS_URL: wall time per request against that Redis, one check after the other.
 */
import { randomUUID } from 'node:crypto';
import { MemoryLimits } from '../src/adapters/memory-limits.js';
import { RedisLimits } from '../src/adapters/redis/limits.js';
import type { RequestLimits } from '../src/ports/limits.js';
import { machine, median } from './lib.js';

const keys = Array.from({ length: 100 }, (_, i) => `key_${i}`);

async function hookPath(limits: RequestLimits, i: number): Promise<void> {
  const key = keys[i % keys.length]!;
  if (!(await limits.consumeRate(key, 1e9))) throw new Error('refused');
  const ticket = await limits.enter(key, 5);
  if (!ticket) throw new Error('busy');
  await limits.leave(ticket);
}

async function rounds(limits: RequestLimits, rounds: number, n: number, clock: 'cpu' | 'wall'): Promise<number[]> {
  const out: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await hookPath(limits, i);
    const c = process.cpuUsage(c0);
    out.push(clock === 'cpu' ? ((c.user + c.system) * 1000) / n : Number(process.hrtime.bigint() - t0) / n);
  }
  return out.slice(Math.ceil(rounds / 5)); // the first rounds warm the JIT up
}

console.log(machine());
const memory = await rounds(new MemoryLimits(), 25, 100_000, 'cpu');
console.log(`memory: ${median(memory).toFixed(0)} ns CPU per request (min ${Math.min(...memory).toFixed(0)})`);

const url = process.env.BENCH_REDIS_URL;
if (url) {
  const prefix = `soundry-bench:${randomUUID()}:`;
  const redis = await RedisLimits.connect(url, { prefix });
  const wall = await rounds(redis, 10, 2000, 'wall');
  await redis.close();
  console.log(`redis: ${(median(wall) / 1000).toFixed(0)} µs per request (3 round trips: rate, enter, leave; keys under ${prefix}, expire within 30 s)`);
}
