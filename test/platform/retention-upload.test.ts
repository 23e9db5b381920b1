import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const API = '/audio/api/v1/api-keys';
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

async function upload(key: string, name: string, bytes: Buffer) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), name);
  const res = await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form });
  return res.json() as Promise<any>;
}

describe('uploads', () => {
  it('answers a signed URL that serves the same bytes; refuses without a key', async () => {
    const { key } = await app.newKey();
    const bytes = Buffer.from('RIFF....WAVEfmt some bytes that stand in for audio');
    const res = await upload(key, '../../evil name.wav', bytes);
    expect(res.code).toBe(100000);
    expect(res.data.url).toMatch(/\/files\/uploads\/[0-9a-f]+\/evil_name\.wav\?exp=\d+&sig=/);
    const got = await fetch(res.data.url);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer())).toEqual(bytes);
    expect((await upload('sk_bad', 'a.wav', bytes)).code).toBe(101002);
  });

  it('refuses a multipart request without a file', async () => {
    const { key } = await app.newKey();
    const form = new FormData();
    form.append('other', 'x');
    const res = (await (await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any;
    expect(res.code).toBe(100002);
  });
});

describe('retention', () => {
  it('an expired task answers 101008 and its files are gone; old uploads are removed', async () => {
    const { key } = await app.newKey();
    const voice = (await app.get(`${API}/tts/voices?language=en`, key)).json.data.records[0];
    const created = await app.post(`${API}/tts/task/create`, { voice_id: voice.id, emotion: 0, speed: 1, language: 'en', text: 'Short lived.' }, key);
    const done = await app.waitTask(`${API}/tts/task/get`, 'global_id', created.json.data.job_id, key);
    expect(done.data.status).toBe('success');
    expect((await fetch(done.data.output)).status).toBe(200);
    const uploaded = await upload(key, 'old.wav', Buffer.from('old upload'));

    await app.container.db.updateTable('tasks').set({ expires_at: Date.now() - 1 }).where('id', '=', created.json.data.job_id).execute();
    // A sweep as if run once the upload's TTL has passed (the same on disk and on S3, whose object dates cannot be backdated).
    const removed = await app.container.reaper.sweep(Date.now() + (app.config.TASK_TTL_SECONDS + 60) * 1000);
    expect(removed).toBeGreaterThanOrEqual(2);
    expect((await app.post(`${API}/tts/task/get`, { global_id: created.json.data.job_id }, key)).json.code).toBe(101008);
    expect((await fetch(done.data.output)).status).toBe(404);
    expect((await fetch(uploaded.data.url)).status).toBe(404);
  });

  it('a result link expires with its task, before the reaper has removed the file', async () => {
    const { key } = await app.newKey();
    const voice = (await app.get(`${API}/tts/voices?language=en`, key)).json.data.records[0];
    const created = await app.post(`${API}/tts/task/create`, { voice_id: voice.id, emotion: 0, speed: 1, language: 'en', text: 'Expires soon.' }, key);
    const id = created.json.data.job_id;
    await app.waitTask(`${API}/tts/task/get`, 'global_id', id, key);
    // The task has 3 s left: the link handed out now must not be valid for FILE_URL_TTL_SECONDS (1 day).
    const expiresAt = Date.now() + 3000;
    await app.container.db.updateTable('tasks').set({ expires_at: expiresAt }).where('id', '=', id).execute();
    const q = await app.post(`${API}/tts/task/get`, { global_id: id }, key);
    const exp = Number(new URL(q.json.data.output).searchParams.get('exp'));
    expect(exp * 1000).toBeLessThanOrEqual(expiresAt);
    expect((await fetch(q.json.data.output)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 3200));
    expect((await app.post(`${API}/tts/task/get`, { global_id: id }, key)).json.code).toBe(101008);
    expect((await fetch(q.json.data.output)).status).toBe(403);
  });
});
