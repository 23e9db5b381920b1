import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_UNAVAILABLE } from '../../src/http/envelope.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * The API while its PostgreSQL cannot be reached (a restart, a failover; here a TCP hop that cuts every connection
 * and refuses new ones): requests that need the database answer 503 / 100503 with Retry-After, a condition to
 * retry, instead of 500 "internal error"; once it is back, the same server answers as before, unrestarted.
 */
const API = '/audio/api/v1/api-keys';
let database: TestDatabase;
let proxy: TcpProxy;
let app: TestApp;

beforeAll(async () => {
  database = await createTestDatabase();
  const target = new URL(database.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) }, 'postgres');
  const proxied = new URL(database.url);
  proxied.port = new URL(proxy.url).port;
  app = await startTestApp(
    { DATABASE_URL: proxied.toString(), SIGNING_SECRET: 'database-outage-test-secret', DATABASE_QUERY_TIMEOUT_SECONDS: '2', DATABASE_CONNECT_TIMEOUT_SECONDS: '2' },
    { workers: false },
  );
}, 60_000);
afterAll(async () => {
  await app?.close();
  await proxy?.close();
  await database?.drop();
});

const tts = (text: string) => ({ voice_id: 1001, emotion: 0, speed: 1, language: 'en', text });

async function post(path: string, body: unknown, key: string) {
  const res = await fetch(`${app.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'api-key': key }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

describe('the API during a database outage', () => {
  it('answers 503 / 100503 with Retry-After while the database is away, and works again once it is back', async () => {
    const { key } = await app.newKey({ credits: 100 });
    const created = await app.post(`${API}/tts/task/create`, tts('Before the outage.'), key);
    expect(created.json.code).toBe(100000);

    proxy.cut();
    try {
      const refusals = [
        await post(`${API}/tts/task/create`, tts('During the outage.'), key),
        await post(`${API}/tts/task/get`, { global_id: created.json.data.job_id }, key),
      ];
      for (const res of refusals) {
        expect(res.status).toBe(503);
        expect(res.json).toEqual({ code: 100503, data: {}, message: DATABASE_UNAVAILABLE });
        expect(res.headers.get('retry-after')).toBe('5');
      }
      const speech = await fetch(`${app.baseUrl}/v1/audio/speech`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input: 'During the outage.' }),
      });
      expect(speech.status).toBe(503);
      expect(((await speech.json()) as { error: { message: string } }).error.message).toBe(DATABASE_UNAVAILABLE);
    } finally {
      proxy.restore();
    }

    const after = await app.post(`${API}/tts/task/create`, tts('After the outage.'), key);
    expect(after.json.code).toBe(100000);
    expect((await app.post(`${API}/tts/task/get`, { global_id: created.json.data.job_id }, key)).json.code).toBe(100000);
  }, 60_000);

  // Found from outside: a database gone silent (no reset: a failover, a cut on the way) left creates and polls
  // hanging for ever. The statement timeout (DATABASE_QUERY_TIMEOUT_SECONDS, 2 s here) makes it the same 503.
  it('a database that stops answering without closing is a 503 after DATABASE_QUERY_TIMEOUT_SECONDS, not a hang', async () => {
    const { key } = await app.newKey({ credits: 100 });
    expect((await post(`${API}/tts/task/create`, tts('Before the silence.'), key)).json.code).toBe(100000);
    proxy.freeze();
    try {
      const started = Date.now();
      const res = await post(`${API}/tts/task/create`, tts('During the silence.'), key);
      expect(res.status).toBe(503);
      expect(res.json.message).toBe(DATABASE_UNAVAILABLE);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      proxy.thaw();
    }
    expect((await post(`${API}/tts/task/create`, tts('After the silence.'), key)).json.code).toBe(100000);
  }, 60_000);

  // Its open connections silent for good (a failover to another host), new ones fine: a timed-out connection was lent
  // again and timed out again, so the API kept answering 503 long after the database was back.
  // The balance is read through Kysely, whose driver hands its connection back without the error (statements on the
  // pool directly, as creates and polls, already had theirs dropped by the pool).
  it('connections that stay silent are given up: the API answers again through new ones', async () => {
    const { key } = await app.newKey({ credits: 100 });
    const balance = async () => {
      const res = await fetch(`${app.baseUrl}${API}/account/balance`, { headers: { 'api-key': key } });
      return { status: res.status, code: ((await res.json()) as { code: number }).code };
    };
    expect((await balance()).code).toBe(100000);
    proxy.blackhole();
    const first = await balance();
    expect(first.status).toBe(503);
    const until = Date.now() + 30_000;
    let code = first.code;
    while (code !== 100000 && Date.now() < until) code = (await balance()).code;
    expect(code).toBe(100000);
  }, 60_000);
});
