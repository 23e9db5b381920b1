import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/services/webhooks.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * callback_url (docs/api.md "Webhooks"), Retry-After / X-RateLimit-* on 101003 and 101004, and CORS: real
 * servers, a real receiver on 127.0.0.1 (hence ALLOW_PRIVATE_URLS=1 where a callback must reach it).
 */
const API = '/audio/api/v1/api-keys';
const SECRET = 'test-webhook-secret-0123456789';
const TTS = { voice_id: 1001, emotion: 0, speed: 1, language: 'en', text: 'Webhooks tell you when the work is done.' };

interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  at: number;
}

/** A receiver that answers 500 to the first `failFirst` deliveries of each task, then 200. */
async function startReceiver(failFirst = 0): Promise<{ url: string; got: Received[]; close(): Promise<void> }> {
  const got: Received[] = [];
  const seen = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, raw: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const id = String(req.headers['soundry-task-id']);
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      res.writeHead(n <= failFirst ? 500 : 200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/hook`, got, close: () => new Promise<void>((r) => server.close(() => r())) };
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Result links are signed when presented, so their expiry differs by the seconds between two presentations. */
function withoutLinkSignature(envelope: any): any {
  const data = { ...envelope.data };
  if (typeof data.output === 'string') data.output = data.output.split('?')[0];
  return { ...envelope, data };
}

describe('callbacks', () => {
  let app: TestApp;
  let key: string;
  beforeAll(async () => {
    app = await startTestApp({ ALLOW_PRIVATE_URLS: '1', WEBHOOK_SECRET: SECRET, WEBHOOK_RETRY_BASE_MS: '300' });
    ({ key } = await app.newKey({ credits: 100 }));
  });
  afterAll(async () => app?.close());

  it('POSTs the query answer, signed, once the task has succeeded', async () => {
    const receiver = await startReceiver();
    try {
      const created = await app.post(`${API}/tts/task/create`, { ...TTS, callback_url: receiver.url }, key);
      expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
      const id = created.json.data.job_id;
      const hook = await until('the callback', () => receiver.got[0]);
      expect(hook.headers['soundry-task-id']).toBe(id);
      expect(hook.headers['soundry-task-kind']).toBe('tts');
      expect(hook.headers['content-type']).toBe('application/json');
      const signature = String(hook.headers['soundry-signature']);
      expect(verifyWebhook(SECRET, signature, hook.raw, Math.floor(Date.now() / 1000))).toBe(true);
      // A byte changed, or another secret: the signature no longer holds.
      expect(verifyWebhook(SECRET, signature, hook.raw.replace('success', 'failed'), Math.floor(Date.now() / 1000))).toBe(false);
      expect(verifyWebhook('another-secret-0123456789', signature, hook.raw, Math.floor(Date.now() / 1000))).toBe(false);
      const queried = await app.post(`${API}/tts/task/get`, { global_id: id }, key);
      const payload = JSON.parse(hook.raw);
      expect(payload.data.status).toBe('success');
      expect(withoutLinkSignature(payload)).toEqual(withoutLinkSignature(queried.json));
      // The link in the callback works.
      expect((await fetch(payload.data.output)).status).toBe(200);
      expect(await app.container.db.selectFrom('webhooks').select(['state', 'attempts']).where('task_id', '=', id).executeTakeFirst()).toEqual({ state: 'delivered', attempts: 1 });
    } finally {
      await receiver.close();
    }
  });

  it('retries a failing receiver with growing waits until it answers 2xx', async () => {
    const receiver = await startReceiver(2);
    try {
      const created = await app.post(`${API}/tts/task/create`, { ...TTS, callback_url: receiver.url }, key);
      const id = created.json.data.job_id;
      await until('three attempts', () => (receiver.got.length >= 3 ? true : undefined));
      expect(receiver.got.map((g) => g.headers['soundry-delivery-attempt'])).toEqual(['1', '2', '3']);
      // 300 ms, then 900 ms: the second wait is longer than the first.
      const [a, b, c] = receiver.got.map((g) => g.at) as [number, number, number];
      expect(b - a).toBeGreaterThanOrEqual(250);
      expect(c - b).toBeGreaterThan(b - a);
      const row = await until('delivered', async () => {
        const r = await app.container.db.selectFrom('webhooks').select(['state', 'attempts']).where('task_id', '=', id).executeTakeFirst();
        return r?.state === 'delivered' ? r : undefined;
      });
      expect(row.attempts).toBe(3);
      await new Promise((r) => setTimeout(r, 1000));
      expect(receiver.got.length).toBe(3);
    } finally {
      await receiver.close();
    }
  });

  it('a failed task calls back too, with the failure', async () => {
    const receiver = await startReceiver();
    try {
      // Nothing listens on port 9: the input cannot be fetched and the task fails.
      const created = await app.post(`${API}/separation/task/create`, { model_type: 350, inputurl: 'http://127.0.0.1:9/a.mp3', output_format: 'mp3', callback_url: receiver.url }, key);
      expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
      const hook = await until('the callback', () => receiver.got[0]);
      expect(hook.headers['soundry-task-kind']).toBe('separation');
      const payload = JSON.parse(hook.raw);
      expect(payload.data.status).toBe('failed');
      expect(payload).toEqual((await app.post(`${API}/separation/task/get`, { job_id: created.json.data.job_id }, key)).json);
    } finally {
      await receiver.close();
    }
  });

  it('a task without callback_url behaves as before', async () => {
    const created = await app.post(`${API}/tts/task/create`, TTS, key);
    expect(created.json.code).toBe(100000);
    expect(await app.container.db.selectFrom('webhooks').selectAll().where('task_id', '=', created.json.data.job_id).executeTakeFirst()).toBeUndefined();
  });
});

describe('callbacks survive a restart', () => {
  it('a task created on a server without workers is run, and its callback sent, by the next server on the same data', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'soundry-webhook-restart-'));
    const receiver = await startReceiver();
    const env = { ALLOW_PRIVATE_URLS: '1', WEBHOOK_SECRET: SECRET, WEBHOOK_RETRY_BASE_MS: '300' };
    try {
      const first = await startTestApp(env, { workers: false, dataDir });
      const { key } = await first.newKey({ credits: 100 });
      const created = await first.post(`${API}/tts/task/create`, { ...TTS, callback_url: receiver.url }, key);
      expect(created.json.code).toBe(100000);
      await first.close();
      const second = await startTestApp(env, { dataDir });
      try {
        const hook = await until('the callback after the restart', () => receiver.got[0]);
        expect(hook.headers['soundry-task-id']).toBe(created.json.data.job_id);
        expect(JSON.parse(hook.raw).data.status).toBe('success');
      } finally {
        await second.close();
      }
    } finally {
      await receiver.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('refusals without callbacks: private URLs, Retry-After and X-RateLimit-*, CORS', () => {
  let app: TestApp;
  beforeAll(async () => {
    // No workers: created tasks stay unfinished (for 101004); ALLOW_PRIVATE_URLS left off.
    app = await startTestApp({ CORS_ORIGINS: 'https://console.example, https://other.example/' }, { workers: false });
  });
  afterAll(async () => app?.close());

  // Port 0 on a public address: accepted once, though no delivery could ever connect (found from outside).
  it.each(['http://127.0.0.1:9/hook', 'http://localhost/hook', 'http://169.254.169.254/latest', 'http://[::1]/x', 'ftp://example.com/x', 'http://8.8.8.8:0/hook'])(
    'refuses callback_url %s at create with 100004, creating and charging nothing',
    async (url) => {
      const { key, keyId } = await app.newKey({ credits: 10 });
      const res = await app.post(`${API}/tts/task/create`, { ...TTS, callback_url: url }, key);
      expect(res.status).toBe(200);
      expect(res.json.code, JSON.stringify(res.json)).toBe(100004);
      expect(res.json.message).toMatch(/^Callback URL not allowed: /);
      expect(await app.container.tasks.countUnfinishedForKey(keyId, 10)).toBe(0);
    },
  );

  it('101003 carries Retry-After and X-RateLimit-*', async () => {
    const { key } = await app.newKey({ rateLimit: 0.2 });
    expect((await app.get(`${API}/tts/voices`, key)).json.code).toBe(100000);
    const res = await fetch(`${app.baseUrl}${API}/tts/voices`, { headers: { 'api-key': key } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { code: number }).code).toBe(101003);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('x-ratelimit-limit')).toBe('0.2');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('101004 (unfinished tasks) carries Retry-After and the limit', async () => {
    const { key } = await app.newKey({ concurrency: 1 });
    expect((await app.post(`${API}/tts/task/create`, TTS, key)).json.code).toBe(100000);
    const res = await fetch(`${app.baseUrl}${API}/tts/task/create`, { method: 'POST', headers: { 'api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(TTS) });
    expect(((await res.json()) as { code: number }).code).toBe(101004);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('x-ratelimit-concurrency-limit')).toBe('1');
  });

  it('CORS: a listed origin gets the preflight and the headers; another origin gets none', async () => {
    const preflight = (origin: string) =>
      fetch(`${app.baseUrl}${API}/tts/task/create`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'api-key, content-type' },
      });
    const ok = await preflight('https://console.example');
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://console.example');
    expect(ok.headers.get('access-control-allow-methods')).toContain('POST');
    expect(ok.headers.get('access-control-allow-headers')).toContain('api-key');
    expect((await preflight('https://other.example')).headers.get('access-control-allow-origin')).toBe('https://other.example');
    const no = await preflight('https://evil.example');
    expect(no.headers.get('access-control-allow-origin')).toBeNull();
    expect(no.headers.get('access-control-allow-methods')).toBeNull();
    // A real request from a listed origin: the refusal is readable, Retry-After included.
    const refused = await fetch(`${app.baseUrl}${API}/tts/voices`, { headers: { origin: 'https://console.example', 'api-key': 'sk_bad' } });
    expect(refused.headers.get('access-control-allow-origin')).toBe('https://console.example');
    expect(refused.headers.get('access-control-expose-headers')).toContain('retry-after');
    const foreign = await fetch(`${app.baseUrl}${API}/tts/voices`, { headers: { origin: 'https://evil.example', 'api-key': 'sk_bad' } });
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
  });
});
