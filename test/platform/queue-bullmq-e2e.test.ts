import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const API = '/audio/api/v1/api-keys';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
// The Redis is shared with other suites: a prefix of our own, removed afterwards (never a flush).
const prefix = `soundry-e2e-${randomUUID().slice(0, 8)}`;
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ REDIS_URL, QUEUE_PREFIX: prefix });
});
afterAll(async () => {
  await app?.close();
  const redis = new Redis(REDIS_URL);
  const keys: string[] = [];
  for await (const batch of redis.scanStream({ match: `${prefix}:*`, count: 1000 })) keys.push(...(batch as string[]));
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

describe('tasks through the BullMQ queue (REDIS_URL set)', () => {
  it('a TTS task is queued on Redis, runs and is charged once; the depth gauge reads the Redis queues', async () => {
    const { key, accountId } = await app.newKey({ credits: 1000 });
    const voices = (await app.get(`${API}/tts/voices?language=en`, key)).json.data.records;
    const created = await app.post(`${API}/tts/task/create`, { voice_id: voices[0].id, emotion: 0, speed: 1, language: 'en', text: 'Queued on Redis.' }, key);
    expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
    const done = await app.waitTask(`${API}/tts/task/get`, 'global_id', created.json.data.job_id, key, 60_000);
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    const ledger = await app.container.db.selectFrom('ledger').selectAll().where('task_id', '=', created.json.data.job_id).execute();
    expect(ledger).toHaveLength(1);
    const account = await app.container.accounts.getAccount(accountId);
    expect(account?.balance).toBe(1000 - done.data.credits);
    const metrics = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/soundry_queue_depth\{kind="tts"\} 0/);
    // Nothing of the finished job is left in Redis: the task database is the record.
    const redis = new Redis(REDIS_URL);
    try {
      expect(await redis.exists(`${prefix}:soundry-tts:${created.json.data.job_id}`)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});

describe('a create while Redis cannot be reached', () => {
  let down: TestApp;
  beforeAll(async () => {
    // Nothing listens on port 1: every enqueue fails. No workers (they would wait for Redis too).
    down = await startTestApp({ REDIS_URL: 'redis://127.0.0.1:1', QUEUE_PREFIX: `${prefix}-down` }, { workers: false });
  });
  afterAll(async () => down?.close());

  it('answers 503/100503 with Retry-After within seconds, every time, and charges nothing', async () => {
    const { key, accountId } = await down.newKey({ credits: 10 });
    const voices = (await down.get(`${API}/tts/voices?language=en`, key)).json.data.records;
    // Found from outside: 100500 "Internal server error", slower each time (0.2 s up to 10 s).
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      const res = await fetch(`${down.baseUrl}${API}/tts/task/create`, {
        method: 'POST',
        headers: { 'api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ voice_id: voices[0].id, emotion: 0, speed: 1, language: 'en', text: 'Not queued.' }),
      });
      expect(performance.now() - t).toBeLessThan(5000);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.json()).toEqual({
        code: 100503,
        data: {},
        message: 'Service unavailable: the task queue cannot be reached; the task was not created and nothing was charged. Try again shortly',
      });
    }
    expect((await down.container.accounts.getAccount(accountId))!).toMatchObject({ balance: 10, held: 0 });
    // "Not created" is true: no task row is left behind (a failed one was, counted by the admin page's usage).
    expect((await down.container.tasks.list({ limit: 1000 })).filter((t) => t.accountId === accountId)).toEqual([]);
  }, 60_000);
});
