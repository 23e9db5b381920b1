import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startS3, type TestS3 } from '../helpers/s3.js';

const API = '/audio/api/v1/api-keys';

/** Half a second of a 440 Hz tone, 16 kHz mono 16-bit PCM, as a WAV file. */
function toneWav(): Buffer {
  const rate = 16_000;
  const samples = rate / 2;
  const out = Buffer.alloc(44 + samples * 2);
  out.write('RIFF', 0);
  out.writeUInt32LE(36 + samples * 2, 4);
  out.write('WAVEfmt ', 8);
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(rate, 24);
  out.writeUInt32LE(rate * 2, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36);
  out.writeUInt32LE(samples * 2, 40);
  for (let i = 0; i < samples; i++) out.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 44 + i * 2);
  return out;
}

let s3: TestS3;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => s3?.close());

async function bucketKeys(): Promise<string[]> {
  const page = await s3.client().send(new ListObjectsV2Command({ Bucket: s3.bucket }));
  return (page.Contents ?? []).flatMap((o) => (o.Key ? [o.Key] : []));
}

describe.each([
  { mode: 'api', prefix: (app: TestApp) => `${app.baseUrl}/files/` },
  { mode: 'presigned', prefix: () => `${s3.endpoint}/${s3.bucket}/` },
])('BLOB_STORE=s3, S3_URL_MODE=$mode, through the public API', ({ mode, prefix }) => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ ...s3.env, S3_URL_MODE: mode });
  });
  afterAll(async () => app?.close());

  it('uploads a WAV, speaks a TTS task, serves both from the bucket; the reaper empties it', async () => {
    const { key } = await app.newKey();
    const wav = toneWav();
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(wav)], { type: 'audio/wav' }), 'tone.wav');
    const up = (await (await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any;
    expect(up.code, JSON.stringify(up)).toBe(100000);
    expect(up.data.size).toBe(wav.length);
    expect(up.data.url.startsWith(prefix(app)), up.data.url).toBe(true);
    const got = await fetch(up.data.url);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await got.arrayBuffer()).equals(wav)).toBe(true);

    const created = await app.post(`${API}/tts/task/create`, { voice_id: 1001, emotion: 1, speed: 1, language: 'en', text: 'Hello' }, key);
    expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
    const id: string = created.json.data.job_id;
    const done = await app.waitTask(`${API}/tts/task/get`, 'global_id', id, key);
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.output.startsWith(prefix(app)), done.data.output).toBe(true);
    const out = await fetch(done.data.output);
    expect(out.status).toBe(200);
    expect(out.headers.get('content-type')).toBe('audio/mpeg');
    const mp3 = Buffer.from(await out.arrayBuffer());
    expect(mp3.length).toBeGreaterThan(500);
    const head = await fetch(done.data.output, { headers: { range: 'bytes=0-99' } });
    expect(head.status).toBe(206);
    expect(Buffer.from(await head.arrayBuffer()).equals(mp3.subarray(0, 100))).toBe(true);

    // Everything went to the bucket, nothing to local disk.
    const keys = await bucketKeys();
    expect(keys).toContain(`tasks/${id}/output.mp3`);
    expect(keys.some((k) => /^uploads\/[0-9a-f]{32}\/tone\.wav$/.test(k))).toBe(true);
    const blobDir = app.config.BLOB_DIR;
    expect(existsSync(blobDir) ? await readdir(blobDir) : []).toEqual([]);

    // The reaper goes through the port: expired task files and old uploads leave the bucket.
    await app.container.db.updateTable('tasks').set({ expires_at: Date.now() - 1 }).where('id', '=', id).execute();
    expect(await app.container.reaper.sweep(Date.now() + (app.config.TASK_TTL_SECONDS + 60) * 1000)).toBeGreaterThanOrEqual(2);
    expect((await bucketKeys()).filter((k) => k.includes(id) || k.startsWith('uploads/'))).toEqual([]);
  });

  it('a result link never outlives its task', async () => {
    const { key } = await app.newKey();
    const created = await app.post(`${API}/tts/task/create`, { voice_id: 1001, emotion: 1, speed: 1, language: 'en', text: 'Soon gone.' }, key);
    const id: string = created.json.data.job_id;
    await app.waitTask(`${API}/tts/task/get`, 'global_id', id, key);
    const expiresAt = Date.now() + 3000;
    await app.container.db.updateTable('tasks').set({ expires_at: expiresAt }).where('id', '=', id).execute();
    const url = new URL((await app.post(`${API}/tts/task/get`, { global_id: id }, key)).json.data.output);
    const linkExpiry =
      mode === 'api'
        ? Number(url.searchParams.get('exp')) * 1000
        : Date.parse(url.searchParams.get('X-Amz-Date')!.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z')) +
          Number(url.searchParams.get('X-Amz-Expires')) * 1000;
    expect(linkExpiry).toBeLessThanOrEqual(expiresAt);
    expect((await fetch(url)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 3200));
    expect((await fetch(url)).status).toBe(403);
  });
});

describe('BLOB_STORE=s3: the upload limit', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ ...s3.env, UPLOAD_MAX_BYTES: String(10 * 1024 * 1024) }, { workers: false });
  });
  afterAll(async () => app?.close());

  async function upload(key: string, bytes: number, name: string) {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), name);
    const res = await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form });
    return { status: res.status, json: (await res.json()) as any };
  }

  it('refuses a file over UPLOAD_MAX_BYTES with 100413 after a part went up, and keeps no object', async () => {
    const { key } = await app.newKey();
    const pending = await s3.pendingMultipartUploads();
    // 11 MiB against a 10 MiB limit: the first 8 MiB part is uploaded before the limit is reached. (Not 12 MiB: a
    // body declared beyond the limit plus 2 MiB of fields is refused before it is read, and no part goes up.)
    const big = await upload(key, 11 * 1024 * 1024, 'toobig.wav');
    expect(big.status).toBe(200);
    expect(big.json).toMatchObject({ code: 100413, data: {} });
    expect((await bucketKeys()).filter((k) => k.endsWith('/toobig.wav'))).toEqual([]);
    // The upload was aborted; s3rver cannot abort (405), so its parts stay on its disk.
    expect(await s3.pendingMultipartUploads()).toBe(pending + 1);
    const small = await upload(key, 50_000, 'fine.wav');
    expect(small.json.code).toBe(100000);
    expect(small.json.data.size).toBe(50_000);
    expect((await bucketKeys()).filter((k) => k.endsWith('/fine.wav'))).toHaveLength(1);
  });
});
