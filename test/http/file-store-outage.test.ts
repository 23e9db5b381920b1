import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startS3, type TestS3 } from '../helpers/s3.js';

/**
 * The API while its object store sheds load (S3 answering 503 SlowDown; real s3rver behind an HTTP hop that answers
 * so while told to). Found from outside: an upload answered 100002 "the request ended before the multipart body was
 * complete" (blaming the client, which then does not retry) or 100500, and a result download 500. Now 503 / 100503
 * with Retry-After, and the same server serves both again once the store does.
 */
const FILE_STORE_UNAVAILABLE = 'Service unavailable: the file store cannot be reached. Try again shortly';
let s3: TestS3;
let hop: Server;
let failing = false;
let app: TestApp;

beforeAll(async () => {
  s3 = await startS3();
  const target = new URL(s3.endpoint);
  hop = createServer((req, res) => {
    if (failing) {
      req.resume();
      res.writeHead(503, { 'content-type': 'application/xml' }).end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
      return;
    }
    const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => hop.listen(0, '127.0.0.1', resolve));
  app = await startTestApp({ ...s3.env, S3_ENDPOINT: `http://127.0.0.1:${(hop.address() as AddressInfo).port}` }, { workers: false });
}, 60_000);
afterAll(async () => {
  await app?.close();
  await new Promise((resolve) => hop?.close(resolve));
  await s3?.close();
});

async function upload(key: string): Promise<{ status: number; retryAfter: string | null; json: any }> {
  const form = new FormData();
  form.append('file', new Blob([Buffer.alloc(2048, 3)], { type: 'audio/wav' }), 'take.wav');
  const res = await fetch(`${app.baseUrl}/audio/api/v1/api-keys/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), json: await res.json() };
}

describe('the API while the object store answers 503', () => {
  it('uploads and downloads answer 503 / 100503 with Retry-After, and work again once the store does', async () => {
    const { key } = await app.newKey({ credits: 10 });
    const first = await upload(key);
    expect(first.json.code).toBe(100000);
    failing = true;
    try {
      const refused = await upload(key);
      expect(refused).toEqual({ status: 503, retryAfter: '5', json: { code: 100503, data: {}, message: FILE_STORE_UNAVAILABLE } });
      const download = await fetch(first.json.data.url);
      expect(download.status).toBe(503);
      expect(await download.json()).toEqual({ code: 100503, data: {}, message: FILE_STORE_UNAVAILABLE });
    } finally {
      failing = false;
    }
    const again = await fetch(first.json.data.url);
    expect(again.status).toBe(200);
    expect((await again.arrayBuffer()).byteLength).toBe(2048);
    expect((await upload(key)).json.code).toBe(100000);
  }, 60_000);
});
