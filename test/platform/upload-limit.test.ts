import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { parseJson, rawRequest } from '../helpers/raw-http.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ UPLOAD_MAX_BYTES: '100000' }, { workers: false });
});
afterAll(async () => app?.close());

async function upload(key: string, bytes: number) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), 'big.wav');
  const res = await fetch(`${app.baseUrl}/audio/api/v1/api-keys/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form });
  return { status: res.status, json: (await res.json()) as any };
}

describe('upload limit', () => {
  it('refuses a file over UPLOAD_MAX_BYTES with 100413 and keeps nothing; accepts one under it', async () => {
    const { key } = await app.newKey();
    const big = await upload(key, 200_000);
    expect(big.status).toBe(200);
    expect(big.json).toMatchObject({ code: 100413, data: {} });
    const small = await upload(key, 50_000);
    expect(small.json.code).toBe(100000);
    expect(small.json.data.size).toBe(50_000);
    const exact = await upload(key, 100_000);
    expect(exact.json.data.size).toBe(100_000);
    // Exactly two uploads are stored, on disk or in the bucket: clearing every upload as if a day had passed removes two.
    expect(await app.container.blobs.deleteOlderThan('uploads', Date.now() + 86_400_000)).toBe(2);
  });

  it('cuts a body with no length as soon as its file passes the limit: answered at once, connection closed, nothing stored', async () => {
    // Before, the parser dropped what passed the limit but read on to the file's end: a chunked body that never ended
    // was answered only when UPLOAD_TIMEOUT_SECONDS (an hour) ran out, its bytes read all the while.
    const { key } = await app.newKey();
    await app.container.blobs.deleteOlderThan('uploads', Date.now() + 86_400_000);
    const B = 'XxBoundaryxX';
    const port = Number(new URL(app.baseUrl).port);
    const head = `POST /audio/api/v1/api-keys/files/upload HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Type: multipart/form-data; boundary=${B}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const chunk = (data: string) => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`;
    // Twice the limit and no last chunk: the server must answer from what it has, not wait for the end.
    const body = chunk(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\n\r\n`) + Array.from({ length: 8 }, () => chunk('y'.repeat(25_000))).join('');
    const started = Date.now();
    const answer = await rawRequest(port, head + body, { timeoutMs: 5000 });
    expect(Date.now() - started).toBeLessThan(4000);
    expect(answer?.headers.connection).toBe('close');
    expect(parseJson(answer!.body)).toEqual({ code: 100413, data: {}, message: 'Payload too large: the file exceeds the upload limit' });
    expect(await app.container.blobs.deleteOlderThan('uploads', Date.now() + 86_400_000)).toBe(0);
  });
});
