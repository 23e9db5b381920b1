import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { redisTestPrefix, TEST_REDIS_URL } from '../helpers/redis-test-prefix.js';

const API = '/audio/api/v1/api-keys';
const TTS_GET = `${API}/tts/task/get`;

/** Two API nodes behind an imaginary load balancer: one SQLite DATA_DIR, one Redis. */
describe('per-key limits across two API servers sharing Redis', () => {
  let a: TestApp;
  let b: TestApp;
  let admin: Redis;
  let prefix = '';
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    ({ prefix, admin, cleanup } = await redisTestPrefix('http'));
    const env = { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix };
    a = await startTestApp(env, { workers: false });
    b = await startTestApp(env, { workers: false, dataDir: a.dataDir });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await cleanup?.();
  });

  /** Polls what the nodes wrote to Redis: the only sign, seen from outside, that a node holds a slot. */
  async function slotsHeld(keyId: string, n: number): Promise<void> {
    const deadline = Date.now() + 5000;
    while ((await admin.zcard(`${prefix}limits:inflight:${keyId}`)) !== n) {
      if (Date.now() > deadline) throw new Error(`key ${keyId} never held ${n} slot(s)`);
      await sleep(10);
    }
  }

  it('101003: rate 2/s, two requests on A, the third within the second on B is refused', async () => {
    const { key } = await a.newKey({ rateLimit: 2 });
    expect((await a.post(TTS_GET, { global_id: 'x' }, key)).json.code).not.toBe(101003);
    expect((await a.post(TTS_GET, { global_id: 'x' }, key)).json.code).not.toBe(101003);
    const third = await b.post(TTS_GET, { global_id: 'x' }, key);
    expect(third.status).toBe(200);
    expect(third.json).toEqual({ code: 101003, data: {}, message: 'API key rate limit exceeded' });
  });

  it('101004: concurrency 1, an upload streaming on A holds the slot, a request on B is refused until it ends', async () => {
    const { key, keyId } = await a.newKey({ concurrency: 1 });
    // A multipart upload whose body never ends: the request stays in flight on A.
    const url = new URL(`${a.baseUrl}${API}/files/upload`);
    const upload = request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: 'POST',
      headers: { 'api-key': key, 'content-type': 'multipart/form-data; boundary=xyz' },
    });
    upload.on('error', () => {}); // destroyed below on purpose
    try {
      upload.write('--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF');
      await slotsHeld(keyId, 1);

      const refused = await b.post(TTS_GET, { global_id: 'x' }, key);
      expect(refused.status).toBe(200);
      expect(refused.json).toEqual({ code: 101004, data: {}, message: 'API key concurrent request limit exceeded' });
    } finally {
      upload.destroy(); // the client goes away: A frees the slot on close (and A's close need not wait for it)
    }
    await slotsHeld(keyId, 0);
    const admitted = await b.post(TTS_GET, { global_id: 'x' }, key);
    expect(admitted.json.code).not.toBe(101004);
    expect(admitted.json.code).not.toBe(101003);
  });
});
