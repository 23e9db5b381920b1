import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalBlobStore } from '../../src/adapters/local-blob-store.js';
import { keyFromPath, parseRange, registerFileRoutes } from '../../src/http/routes/files.js';
import { createUrlSigner } from '../../src/http/signed-url.js';

const BODY = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));

let dir = '';
let app: FastifyInstance;
let port = 0;
let now = Date.now();
const signer = createUrlSigner({ secret: 'route-test-secret', baseUrl: 'http://files.test', ttlSeconds: 600, now: () => now });

/** Path+query of a signed link, as a client would request it. */
function link(key: string, ttl?: number): string {
  const u = new URL(signer.sign(key, ttl));
  return `${u.pathname}${u.search}`;
}

/** Raw request over a real socket: the path goes out byte for byte, no client-side normalising. */
function rawGet(rawPath: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: rawPath, method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'soundry-files-'));
  const blobs = new LocalBlobStore(path.join(dir, 'blobs'));
  const put = async (key: string, data: Buffer | string) => {
    const p = path.join(dir, `src-${Math.random()}`);
    await writeFile(p, data);
    await blobs.putFile(key, p, 'ignored');
  };
  await put('tasks/t1/output.mp3', BODY);
  await put('tasks/t1/result.json', '{"ok":true}');
  await put('tasks/t1/art.svg', '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
  await put('tasks/t1/empty.wav', '');
  await writeFile(path.join(dir, 'secret.txt'), 'top secret');
  app = Fastify();
  registerFileRoutes(app, { blobs, signer });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await app.close();
  await rm(dir, { recursive: true, force: true });
});

const INVALID = { code: 100403, data: {}, message: 'Invalid or expired file link' };

describe('GET /files/*', () => {
  it('serves the whole blob with type, length, ranges and disposition headers', async () => {
    const res = await app.inject({ method: 'GET', url: link('tasks/t1/output.mp3') });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(BODY)).toBe(true);
    expect(res.headers['content-type']).toBe('audio/mpeg');
    expect(res.headers['content-length']).toBe('1000');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.headers['content-disposition']).toBe('inline; filename="output.mp3"');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toBeUndefined();
  });

  it.each([
    ['tasks/t1/result.json', 'application/json'],
    ['tasks/t1/art.svg', 'image/svg+xml'],
  ])('serves %s as %s, sandboxed', async (key, type) => {
    const res = await app.inject({ method: 'GET', url: link(key) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe(type);
    expect(res.headers['content-security-policy']).toContain('sandbox');
  });

  it('serves an empty blob', async () => {
    const res = await app.inject({ method: 'GET', url: link('tasks/t1/empty.wav') });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe('0');
    expect(res.rawPayload.length).toBe(0);
  });

  it.each([
    ['bytes=0-99', 0, 99],
    ['bytes=100-199', 100, 199],
    ['bytes=990-', 990, 999],
    ['bytes=-10', 990, 999],
    ['bytes=-5000', 0, 999],
    ['bytes=995-5000', 995, 999],
    ['bytes=999-999', 999, 999],
  ])('answers Range %s with 206 and the exact bytes', async (range, start, end) => {
    const res = await app.inject({ method: 'GET', url: link('tasks/t1/output.mp3'), headers: { range } });
    expect(res.statusCode).toBe(206);
    expect(res.headers['content-range']).toBe(`bytes ${start}-${end}/1000`);
    expect(res.headers['content-length']).toBe(String(end - start + 1));
    expect(res.rawPayload.equals(BODY.subarray(start, end + 1))).toBe(true);
  });

  it.each(['bytes=1000-', 'bytes=5000-6000', 'bytes=-0'])('answers unsatisfiable %s with 416', async (range) => {
    const res = await app.inject({ method: 'GET', url: link('tasks/t1/output.mp3'), headers: { range } });
    expect(res.statusCode).toBe(416);
    expect(res.headers['content-range']).toBe('bytes */1000');
  });

  it.each(['bytes=0-1,5-6', 'bytes=5-2', 'items=0-5', 'bytes=abc'])('ignores unusable Range %s (full 200)', async (range) => {
    const res = await app.inject({ method: 'GET', url: link('tasks/t1/output.mp3'), headers: { range } });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.length).toBe(1000);
  });

  it('answers HEAD with headers only', async () => {
    const res = await app.inject({ method: 'HEAD', url: link('tasks/t1/output.mp3') });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe('1000');
    expect(res.headers['content-type']).toBe('audio/mpeg');
    expect(res.rawPayload.length).toBe(0);
    const ranged = await app.inject({ method: 'HEAD', url: link('tasks/t1/output.mp3'), headers: { range: 'bytes=0-9' } });
    expect(ranged.statusCode).toBe(206);
    expect(ranged.headers['content-length']).toBe('10');
  });

  it('refuses missing, tampered and expired links with the 403 envelope', async () => {
    const good = new URL(link('tasks/t1/output.mp3'), 'http://x');
    const cases = [
      '/files/tasks/t1/output.mp3',
      `/files/tasks/t1/result.json${good.search}`,
      `${good.pathname}?exp=${Number(good.searchParams.get('exp')) + 10}&sig=${good.searchParams.get('sig')}`,
      `${good.pathname}?exp=${good.searchParams.get('exp')}&sig=AAAA${good.searchParams.get('sig')?.slice(4)}`,
    ];
    for (const url of cases) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(403);
      expect(res.json()).toEqual(INVALID);
    }
    const short = link('tasks/t1/output.mp3', 5);
    now += 6000;
    try {
      const res = await app.inject({ method: 'GET', url: short });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual(INVALID);
    } finally {
      now -= 6000;
    }
  });

  it('answers 404 with an envelope for a validly signed but missing blob, naming method and path (not the signature)', async () => {
    const url = link('tasks/t1/gone.mp3');
    const res = await app.inject({ method: 'GET', url });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ code: 100404, data: {}, message: `Not Found: GET ${url.split('?')[0]}` });
  });

  it('never lists directories, even with a valid signature', async () => {
    for (const url of [link('tasks/t1'), link('tasks'), '/files/', '/files']) {
      const res = await rawGet(url);
      expect([403, 404], url).toContain(res.status);
      expect(res.body.toString()).not.toContain('output.mp3');
    }
  });

  it('refuses path traversal in every spelling', async () => {
    const { search } = new URL(link('tasks/t1/output.mp3'), 'http://x');
    const attempts = [
      '/files/../secret.txt',
      '/files/tasks/../../secret.txt',
      '/files/%2e%2e/secret.txt',
      '/files/%2E%2E/%2e%2e/secret.txt',
      '/files/tasks%2f..%2f..%2fsecret.txt',
      '/files/..%5csecret.txt',
      '/files//etc/passwd',
      '/files/tasks//t1/output.mp3',
      '/files/tasks/t1/./output.mp3',
      '/files/%252e%252e/secret.txt',
      '/files/tasks/t1/output.mp3%00.json',
    ];
    for (const p of attempts) {
      for (const url of [p, `${p}${search}`]) {
        const res = await rawGet(url);
        expect([403, 404], url).toContain(res.status);
        expect(res.body.toString()).not.toContain('top secret');
      }
    }
    // Broken percent-encoding is refused by the router itself, before our handler.
    const broken = await rawGet(`/files/%E0%A4%A${search}`);
    expect([400, 403, 404]).toContain(broken.status);
    // A link signed for a traversal key (the service never makes one) is still refused.
    const evil = await rawGet(`/files/../secret.txt${new URL(signer.sign('../secret.txt')).search}`);
    expect(evil.status).toBe(403);
  });

  it('serves percent-encoded but legitimate keys', async () => {
    const res = await rawGet(link('tasks/t1/output.mp3').replace('output', '%6futput'), {});
    // The signature covers the decoded key, so an equivalent encoding still verifies.
    expect(res.status).toBe(200);
    expect(res.body.equals(BODY)).toBe(true);
  });
});

describe('helpers', () => {
  it('keyFromPath decodes segments and rejects odd shapes', () => {
    expect(keyFromPath('/files/tasks/a/b.mp3?exp=1')).toBe('tasks/a/b.mp3');
    expect(keyFromPath('/files/a%2Fb')).toBeNull();
    expect(keyFromPath('/files/')).toBeNull();
    expect(keyFromPath('/other/a')).toBeNull();
  });

  it('parseRange handles a zero-length blob', () => {
    expect(parseRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-1', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange(undefined, 0)).toEqual({ kind: 'none' });
  });
});
