import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

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
    // Exactly one upload is stored, on disk or in the bucket: clearing every upload as if a day had passed removes one.
    expect(await app.container.blobs.deleteOlderThan('uploads', Date.now() + 86_400_000)).toBe(1);
  });
});
