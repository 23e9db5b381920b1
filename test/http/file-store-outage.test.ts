import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startS3, type TestS3 } from '../helpers/s3.js';
import { startSheddingHop, type SheddingHop } from '../helpers/s3-hop.js';

/**
 * The API while its object store sheds load (S3 answering 503 SlowDown; real s3rver behind an HTTP hop that answers
 * so while told to). Found from outside: an upload answered 100002 "the request ended before the multipart body was
 * complete" (blaming the client, which then does not retry) or 100500, and a result download 500. Now 503 / 100503
 * with Retry-After, and the same server serves both again once the store does.
 */
const FILE_STORE_UNAVAILABLE = 'Service unavailable: the file store cannot be reached. Try again shortly';
let s3: TestS3;
let hop: SheddingHop;
let app: TestApp;

beforeAll(async () => {
  s3 = await startS3();
  hop = await startSheddingHop(s3.endpoint);
  app = await startTestApp({ ...s3.env, S3_ENDPOINT: hop.endpoint }, { workers: false });
}, 60_000);
afterAll(async () => {
  await app?.close();
  await hop?.close();
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
    hop.shedding = true;
    try {
      const refused = await upload(key);
      expect(refused).toEqual({ status: 503, retryAfter: '5', json: { code: 100503, data: {}, message: FILE_STORE_UNAVAILABLE } });
      const download = await fetch(first.json.data.url);
      expect(download.status).toBe(503);
      expect(await download.json()).toEqual({ code: 100503, data: {}, message: FILE_STORE_UNAVAILABLE });
    } finally {
      hop.shedding = false;
    }
    const again = await fetch(first.json.data.url);
    expect(again.status).toBe(200);
    expect((await again.arrayBuffer()).byteLength).toBe(2048);
    expect((await upload(key)).json.code).toBe(100000);
  }, 60_000);
});
