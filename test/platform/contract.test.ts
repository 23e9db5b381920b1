import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const API = '/audio/api/v1/api-keys';
const TTS_CREATE = `${API}/tts/task/create`;
const TTS_GET = `${API}/tts/task/get`;

let app: TestApp;
let voiceId: number;
const ttsBody = (over: Record<string, unknown> = {}) => ({ voice_id: voiceId, emotion: 0, speed: 1, language: 'en', text: 'Hello there.', ...over });

beforeAll(async () => {
  // No workers: tasks stay waiting, which is what the refusal rows need.
  app = await startTestApp({}, { workers: false });
  const { key } = await app.newKey();
  const voices = await app.get(`${API}/tts/voices?language=en`, key);
  voiceId = voices.json.data.records[0].id;
});
afterAll(async () => app?.close());

describe('envelope and error table', () => {
  it('100000 Request Success with job_id on create', async () => {
    const { key } = await app.newKey();
    const res = await app.post(TTS_CREATE, ttsBody(), key);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ code: 100000, data: { job_id: expect.any(String) }, message: 'Request Success' });
    const q = await app.post(TTS_GET, { global_id: res.json.data.job_id }, key);
    expect(q.json.code).toBe(100000);
    expect(q.json.data.status).toBe('waiting');
    expect(q.json.data.output).toBe('');
  });

  it('100001 Need Login on the podcast voice list without a valid key', async () => {
    for (const key of [undefined, 'sk_wrong']) {
      const res = await app.get(`${API}/podcast/voices`, key);
      expect(res.json).toEqual({ code: 100001, data: {}, message: 'Need Login' });
    }
    const { key } = await app.newKey();
    const ok = await app.get(`${API}/podcast/voices`, key);
    expect(ok.json.code).toBe(100000);
    expect(ok.json.data.total).toBeGreaterThan(0);
    // Its only codes are 100000 and 100001: a key at its rate limit still gets the list.
    const slow = await app.newKey({ rateLimit: 1 });
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await app.get(`${API}/podcast/voices?page_size=1`, slow.key)).json.code);
    expect(codes).toEqual([100000, 100000, 100000, 100000]);
    // The same key on the TTS list (rate-limited like every other operation): refused within the second.
    const tts = await Promise.all([1, 2, 3].map(() => app.get(`${API}/tts/voices?page_size=1`, slow.key)));
    expect(tts.map((r) => r.json.code)).toContain(101003);
  });

  it('100100 Insufficient credit balance with empty data', async () => {
    const { key } = await app.newKey({ credits: 0 });
    expect((await app.post(TTS_CREATE, ttsBody(), key)).json).toEqual({ code: 100100, data: {}, message: 'Insufficient credit balance' });
    const { key: poor } = await app.newKey({ credits: 2 });
    // 215 characters cost 3 credits: known at create, so refused now.
    expect((await app.post(TTS_CREATE, ttsBody({ text: 'a'.repeat(215) }), poor)).json.code).toBe(100100);
    expect((await app.post(TTS_CREATE, ttsBody({ text: 'a'.repeat(200) }), poor)).json.code).toBe(100000);
    // That waiting task holds both credits until it ends: a second one, or any task, is refused now,
    // instead of both being made for the price of one (docs/api.md "Billing").
    expect((await app.post(TTS_CREATE, ttsBody({ text: 'a'.repeat(50) }), poor)).json).toEqual({ code: 100100, data: {}, message: 'Insufficient credit balance' });
    const separation = await app.post(`${API}/separation/task/create`, { model_type: 350, inputurl: 'https://example.com/a.mp3' }, poor);
    expect(separation.json.code).toBe(100100);
    expect((await app.get(`${API}/account/balance`, poor)).json.data).toMatchObject({ balance: 2, held: 2, available: 0 });
  });

  it('100100 for tasks created together past the balance: each create holds its price', async () => {
    const { key } = await app.newKey({ credits: 10, concurrency: 50, rateLimit: 1000 });
    // 20 creates at once, 3 credits each (201-300 characters), on 10 credits: 3 fit.
    const answers = await Promise.all(Array.from({ length: 20 }, () => app.post(TTS_CREATE, ttsBody({ text: 'b'.repeat(250) }), key)));
    const codes = answers.map((r) => r.json.code);
    expect(codes.filter((c) => c === 100000)).toHaveLength(3);
    expect(codes.filter((c) => c === 100100)).toHaveLength(17);
  });

  it('a key stored with a rate outside the bounds (before they applied) is limited as the nearest allowed rate, never a 100500', async () => {
    // Infinity: the limiter refuses non-finite points, so every request of such a key was an internal error.
    const unbounded = await app.newKey({ rateLimit: Infinity });
    expect((await app.get(`${API}/account/balance`, unbounded.key)).json.code).toBe(100000);
    expect((await app.post(TTS_CREATE, ttsBody(), unbounded.key)).json.code).toBe(100000);
    // 1e-300: its window overflowed Node's timers and limiting was off; now one request per 1,000 s.
    const tiny = await app.newKey({ rateLimit: 1e-300 });
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await app.get(`${API}/account/balance`, tiny.key)).json.code);
    expect(codes).toEqual([100000, 101003, 101003]);
  });

  it('101002 Invalid API key for a missing or unknown key, on create and query', async () => {
    for (const path of [TTS_CREATE, TTS_GET, `${API}/separation/task/get`]) {
      expect((await app.post(path, {}, undefined)).json).toEqual({ code: 101002, data: {}, message: 'Invalid API key' });
      expect((await app.post(path, {}, 'sk_not_a_key')).json.code).toBe(101002);
    }
  });

  it('accepts the key in the api_key header too', async () => {
    const { key } = await app.newKey();
    const res = await app.post(TTS_CREATE, ttsBody(), undefined, { api_key: key });
    expect(res.json.code).toBe(100000);
  });

  it('101003 API key rate limit exceeded', async () => {
    const { key } = await app.newKey({ rateLimit: 2 });
    const codes = [];
    for (let i = 0; i < 5; i++) codes.push((await app.post(TTS_GET, { global_id: 'x' }, key)).json.code);
    expect(codes).toContain(101003);
    expect(codes.filter((c) => c === 101003).length).toBeGreaterThanOrEqual(3);
    const res = (await app.post(TTS_GET, { global_id: 'x' }, key)).json;
    if (res.code === 101003) expect(res.message).toBe('API key rate limit exceeded');
  });

  it('101004 concurrent request limit: unfinished tasks per key', async () => {
    const { key } = await app.newKey({ concurrency: 1 });
    expect((await app.post(TTS_CREATE, ttsBody(), key)).json.code).toBe(100000);
    expect((await app.post(TTS_CREATE, ttsBody(), key)).json).toEqual({
      code: 101004,
      data: {},
      message: 'API key concurrent request limit exceeded',
    });
  });

  it('101005 suspended account on create; its results stay readable', async () => {
    const { key, accountId } = await app.newKey();
    const id = (await app.post(TTS_CREATE, ttsBody(), key)).json.data.job_id;
    await app.container.accounts.setAccountStatus(accountId, 'suspended');
    expect((await app.post(TTS_CREATE, ttsBody(), key)).json).toEqual({
      code: 101005,
      data: {},
      message: 'Your account is suspended. Status cannot be modified. Please contact the administrator',
    });
    expect((await app.post(TTS_GET, { global_id: id }, key)).json.code).toBe(100000);
  });

  it('101006 API key not enabled on create', async () => {
    const { key, keyId } = await app.newKey();
    await app.container.accounts.setKeyEnabled(keyId, false);
    expect((await app.post(TTS_CREATE, ttsBody(), key)).json).toEqual({ code: 101006, data: {}, message: 'API key not enabled' });
  });

  it('101008 Task not found: unknown, other account, other kind, expired', async () => {
    const a = await app.newKey();
    const b = await app.newKey();
    const id = (await app.post(TTS_CREATE, ttsBody(), a.key)).json.data.job_id;
    const notFound = { code: 101008, data: {}, message: 'Task not found' };
    expect((await app.post(TTS_GET, { global_id: 'nope' }, a.key)).json).toEqual(notFound);
    expect((await app.post(TTS_GET, { global_id: id }, b.key)).json).toEqual(notFound);
    expect((await app.post(`${API}/enhance/task/get`, { job_id: id }, a.key)).json).toEqual(notFound);
    await app.container.db.updateTable('tasks').set({ expires_at: Date.now() - 1 }).where('id', '=', id).execute();
    // Still queued past its expiry: answered as it is (the reaper fails it, with a reason, at its next sweep).
    expect((await app.post(TTS_GET, { global_id: id }, a.key)).json).toMatchObject({ code: 100000, data: { status: 'waiting' } });
    // Finished and past its expiry: gone.
    await app.container.db.updateTable('tasks').set({ state: 'failed', error: 'x', finished_at: Date.now() }).where('id', '=', id).execute();
    expect((await app.post(TTS_GET, { global_id: id }, a.key)).json).toEqual(notFound);
  });
});

describe('Soundry decisions for what the spec leaves open', () => {
  it('100002 for malformed JSON, naming nothing but the body', async () => {
    const { key } = await app.newKey();
    const res = await app.post(TTS_CREATE, '{"voice_id": ', key);
    expect(res.status).toBe(200);
    expect(res.json.code).toBe(100002);
    expect(res.json.data).toEqual({});
    expect(res.json.message).toMatch(/body/);
  });

  it('reads a JSON body sent as text/plain or without a content type', async () => {
    const { key } = await app.newKey();
    for (const type of ['text/plain', 'text/plain; charset=utf-8', 'application/octet-stream']) {
      const res = await app.post(TTS_CREATE, JSON.stringify(ttsBody()), key, { 'content-type': type });
      expect(res.json.code, type).toBe(100000);
    }
    const notJson = await app.post(TTS_CREATE, 'voice_id=1', key, { 'content-type': 'text/plain' });
    expect(notJson.json).toEqual({ code: 100002, data: {}, message: 'Invalid parameters: body: not valid JSON' });
  });

  it('names a refused __proto__ or constructor.prototype key instead of calling valid JSON invalid', async () => {
    const { key } = await app.newKey();
    const message = 'Invalid parameters: body: keys named __proto__ (or constructor with a prototype) are not accepted';
    for (const type of ['application/json', 'text/plain']) {
      for (const body of ['{"__proto__":{"admin":true},"global_id":"x"}', '{"global_id":"x","constructor":{"prototype":{"admin":true}}}']) {
        const res = await app.post(`${API}/tts/task/get`, body, key, { 'content-type': type });
        expect(res.json, `${type} ${body}`).toEqual({ code: 100002, data: {}, message });
      }
    }
  });

  it('says "required" for every missing field, numbers and enums included', async () => {
    const { key } = await app.newKey();
    const res = await app.post(TTS_CREATE, {}, key);
    expect(res.json.code).toBe(100002);
    for (const field of ['voice_id', 'emotion', 'speed', 'language', 'text']) expect(res.json.message).toContain(`${field}: required`);
    const sep = await app.post(`${API}/separation/task/create`, { inputurl: 'http://example.com/a.mp3' }, key);
    expect(sep.json.message).toBe('Invalid parameters: model_type: required');
  });

  it('100002 names a missing field and a wrongly typed one', async () => {
    const { key } = await app.newKey();
    const missing = await app.post(TTS_CREATE, { ...ttsBody(), text: undefined }, key);
    expect(missing.json.code).toBe(100002);
    expect(missing.json.message).toMatch(/text: required/);
    const wrong = await app.post(TTS_CREATE, ttsBody({ speed: 'fast' }), key);
    expect(wrong.json.code).toBe(100002);
    expect(wrong.json.message).toBe('Invalid parameters: speed: Invalid input: expected a number (or a numeric string such as "1.5")');
    const range = await app.post(TTS_CREATE, ttsBody({ emotion: 9 }), key);
    expect(range.json.message).toMatch(/emotion/);
    const unknownVoice = await app.post(TTS_CREATE, ttsBody({ voice_id: 999999 }), key);
    expect(unknownVoice.json.code).toBe(100002);
    expect(unknownVoice.json.message).toMatch(/voice_id/);
    const flite = (await app.get(`${API}/tts/voices?language=en`, key)).json.data.records.find((v: { name: string }) => v.name.startsWith('flite:'));
    const cyrillic = await app.post(TTS_CREATE, ttsBody({ voice_id: flite.id, text: 'Привет, мир' }), key);
    expect(cyrillic.json).toMatchObject({ code: 100002, data: {} });
    expect(cyrillic.json.message).toMatch(/text: .*Latin script only/);
    const lang = await app.post(TTS_CREATE, ttsBody({ language: 'de' }), key);
    expect(lang.json.message).toMatch(/language/);
  });

  it('names each problem once: a body that is not an object, an id that is there but empty', async () => {
    const { key } = await app.newKey();
    for (const [body, type] of [[[], 'array'], [null, 'null'], ['"str"', 'string']] as const) { // a string is sent as it is: here, JSON text
      expect((await app.post(TTS_CREATE, body, key)).json.message).toBe(`Invalid parameters: body: Invalid input: expected object, received ${type}`);
    }
    expect((await app.post(`${API}/tts/task/get`, { global_id: '' }, key)).json.message).toBe('Invalid parameters: global_id: Too small: expected string to have >=1 characters');
    expect((await app.post(`${API}/tts/task/get`, {}, key)).json.message).toBe('Invalid parameters: global_id: required');
  });

  it('100003 when the text is longer than TTS_MAX_CHARS', async () => {
    const { key } = await app.newKey();
    const res = await app.post(TTS_CREATE, ttsBody({ text: 'a'.repeat(app.config.TTS_MAX_CHARS + 1) }), key);
    expect(res.json.code).toBe(100003);
    expect(res.json.message).toMatch(/maximum length/);
  });

  it('validates every kind\'s body and names the field', async () => {
    const { key } = await app.newKey();
    // All fourteen flags are rendered now: a flag is accepted, a wrongly typed or unknown one is named.
    const res = await app.post(`${API}/enhance/task/create`, { inputurl: 'https://example.com/a.mp3', enhance_type: { fillers: true } }, key);
    expect(res.json.code).toBe(100000);
    const flag = await app.post(`${API}/enhance/task/create`, { inputurl: 'https://example.com/a.mp3', enhance_type: { normalize: 'yes' } }, key);
    expect(flag.json.code).toBe(100002);
    expect(flag.json.message).toMatch(/enhance_type.normalize/);
    const unknown = await app.post(`${API}/enhance/task/create`, { inputurl: 'https://example.com/a.mp3', enhance_type: { sparkle: true } }, key);
    expect(unknown.json.code).toBe(100002);
    expect(unknown.json.message).toMatch(/enhance_type/);
    const bad = await app.post(`${API}/separation/task/create`, { model_type: 999, inputurl: 'https://example.com/a.mp3' }, key);
    expect(bad.json.code).toBe(100002);
    expect(bad.json.message).toMatch(/model_type/);
    const podcast = await app.post(`${API}/podcast/script/create`, { source_type: 4 }, key);
    expect(podcast.json.message).toMatch(/text: required when source_type is 4/);
    // A source_type out of range is that one problem, not also a missing url.
    const outOfRange = await app.post(`${API}/podcast/script/create`, { source_type: 5, text: 'x' }, key);
    expect(outOfRange.json.message).toBe('Invalid parameters: source_type: Too big: expected number to be <=4');
    const noUrl = await app.post(`${API}/podcast/script/create`, { source_type: 2 }, key);
    expect(noUrl.json.message).toBe('Invalid parameters: url: required when source_type is 1, 2 or 3');
  });

  it('free podcast steps bound every stored field: 100002 names the field, its size and the limit, and nothing is stored', async () => {
    const { key } = await app.newKey();
    const stored = async () => (await app.container.tasks.list({ limit: 10_000 })).filter((t) => t.kind.startsWith('podcast')).length;
    const before = await stored();
    const SCRIPT = `${API}/podcast/script/create`;
    const AUDIO = `${API}/podcast/audio/create`;
    const refused = async (path: string, body: Record<string, unknown>, message: string) => {
      const res = await app.post(path, body, key);
      expect(res.json.code, JSON.stringify(res.json).slice(0, 300)).toBe(100002);
      expect(res.json.message).toBe(`Invalid parameters: ${message}`);
      expect(res.json.data).toEqual({});
    };
    const max = app.config.PODCAST_TEXT_MAX_CHARS;
    expect(max).toBe(200_000);
    // The attack: a 5 MB one-word script. Refused at create, before anything is read or stored.
    await refused(SCRIPT, { source_type: 4, text: 'a'.repeat(5 * 1024 * 1024) }, `text: too long: ${5 * 1024 * 1024} characters, at most ${max}`);
    await refused(SCRIPT, { source_type: 4, text: '😀'.repeat(max + 1) }, `text: too long: ${max + 1} characters, at most ${max}`);
    await refused(SCRIPT, { source_type: 1, url: `https://example.com/${'a'.repeat(5000)}` }, 'url: too long: 5020 characters, at most 4096');
    await refused(SCRIPT, { source_type: 4, text: 'Hello.', use_mode: 'x'.repeat(101) }, 'use_mode: too long: 101 characters, at most 100');
    await refused(SCRIPT, { source_type: 4, text: 'Hello.', speakers: Array(9).fill(1) }, 'speakers: too long: 9 speakers, at most 8');
    const line = (text: string, extra: Record<string, unknown> = {}) => ({ role: 'A', name: 'Emma', avatar: '', text, voice_id: '1', ...extra });
    const audio = (over: Record<string, unknown>) => ({ global_id: 'no-such-task', podcast_script: [line('Hello.')], ...over });
    await refused(AUDIO, audio({ podcast_script: Array.from({ length: 1001 }, () => line('Hi.')) }), 'podcast_script: too long: 1001 lines, at most 1000');
    await refused(AUDIO, audio({ podcast_script: [line('Hi.'), line('a'.repeat(5001))] }), 'podcast_script[1].text: too long: 5001 characters, at most 5000');
    const total = app.config.PODCAST_SCRIPT_MAX_CHARS;
    expect(total).toBe(50_000);
    await refused(AUDIO, audio({ podcast_script: Array.from({ length: 11 }, () => line('b'.repeat(5000))) }), `podcast_script: too long: 55000 characters of text in all lines, at most ${total}`);
    await refused(AUDIO, audio({ podcast_script: [line('Hi.', { role: 'R'.repeat(65) })] }), 'podcast_script[0].role: too long: 65 characters, at most 64');
    await refused(AUDIO, audio({ podcast_script: [line('Hi.', { name: 'N'.repeat(201) })] }), 'podcast_script[0].name: too long: 201 characters, at most 200');
    await refused(AUDIO, audio({ title: 't'.repeat(501) }), 'title: too long: 501 characters, at most 500');
    await refused(AUDIO, audio({ processed_content: 'p'.repeat(20_001) }), 'processed_content: too long: 20001 characters, at most 20000');
    const h = (highlight: string) => ({ highlight, index: 0, script_start_index: 0, script_end_index: 0 });
    await refused(AUDIO, audio({ hightlights: Array.from({ length: 101 }, () => h('x')) }), 'hightlights: too long: 101 highlights, at most 100');
    await refused(AUDIO, audio({ hightlights: [h('x'.repeat(2001))] }), 'hightlights[0].highlight: too long: 2001 characters, at most 2000');
    await refused(AUDIO, audio({ global_id: 'g'.repeat(101) }), 'global_id: too long: 101 characters, at most 100');
    // The media kinds' URLs are stored too.
    await refused(`${API}/enhance/task/create`, { inputurl: `https://example.com/${'a'.repeat(5000)}`, enhance_type: {} }, 'inputurl: too long: 5020 characters, at most 4096');
    expect(await stored()).toBe(before);
    // At the limits exactly: accepted (the script task is then stored, waiting: no workers here).
    const atLimit = await app.post(SCRIPT, { source_type: 4, text: 'a'.repeat(max) }, key);
    expect(atLimit.json.code).toBe(100000);
    const atTotal = await app.post(AUDIO, audio({ podcast_script: Array.from({ length: 10 }, () => line('b'.repeat(5000))) }), key);
    expect(atTotal.json.code).toBe(101008); // past every size check: the made-up script id is what is refused
  });

  it('a traversal attempt under /docs answers the 404 envelope, not a body error', async () => {
    const { request } = await import('node:http');
    const url = new URL(app.baseUrl);
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path: '/docs/static/../../../etc/passwd' }, (r) => {
        let body = '';
        r.on('data', (d) => (body += d));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ code: 100404, data: {} });
    expect(res.body).not.toContain('root:');
  });

  it('404 with an envelope for unknown paths', async () => {
    const res = await app.post('/audio/api/v1/api-keys/nope', {});
    expect(res.status).toBe(404);
    expect(res.json.code).toBe(100404);
  });

  it('voice list: records in the spec shape, filters and paging', async () => {
    const { key } = await app.newKey();
    const all = (await app.get(`${API}/tts/voices`, key)).json.data;
    expect(all.total).toBe(all.records.length);
    const langs = new Set(all.records.map((v: any) => v.language));
    for (const l of ['zh', 'en', 'ar', 'ru', 'es', 'fr', 'pt', 'de', 'ko', 'ja', 'zh_yue']) expect(langs).toContain(l);
    for (const v of all.records) {
      expect(v).toEqual(expect.objectContaining({ id: expect.any(Number), gender: expect.any(Number), language: expect.any(String), age: expect.any(Number), emotion: expect.any(Array), name: expect.any(String), display_name: expect.any(String) }));
    }
    const women = (await app.get(`${API}/tts/voices?language=en&gender=2`, key)).json.data.records;
    expect(women.length).toBeGreaterThan(0);
    expect(women.every((v: any) => v.language === 'en' && v.gender === 2)).toBe(true);
    const page2 = (await app.get(`${API}/tts/voices?page=2&page_size=3`, key)).json.data;
    expect(page2.records).toEqual(all.records.slice(3, 6));
    expect((await app.get(`${API}/tts/voices`)).json.code).toBe(101002);
  });

  it('voice list: a bad query value is named as such, never "required" (it was read from the absent body)', async () => {
    const { key } = await app.newKey();
    const refused = async (query: string) => (await app.get(`${API}/tts/voices?${query}`, key)).json;
    for (const [query, message] of [
      ['page=NaN', 'page: Invalid input: expected a number (or a numeric string such as "1.5")'],
      ['page=1.5', 'page: Invalid input: expected int, received number'],
      ['gender=male', 'gender: Invalid input: expected a number (or a numeric string such as "1.5")'],
      ['page=1&page=2', 'page: Invalid input: expected a number (or a numeric string such as "1.5")'],
      ['page_size=0', 'page_size: Too small: expected number to be >=1'],
    ]) {
      expect(await refused(query!), query).toEqual({ code: 100002, data: {}, message: `Invalid parameters: ${message}` });
    }
    expect((await refused('language=en&language=fr')).message).toMatch(/^Invalid parameters: language: Invalid option: expected one of "all"\|"zh"/);
  });

  it('serves the OpenAPI document and the interactive reference', async () => {
    const doc = await app.get('/openapi.json');
    expect(doc.json.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.json.paths)).toContain(TTS_CREATE);
    const ui = await fetch(`${app.baseUrl}/docs/`);
    expect(ui.status).toBe(200);
  });

  it('job ids are unique', async () => {
    const { key } = await app.newKey();
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) ids.add((await app.post(TTS_CREATE, ttsBody(), key)).json.data.job_id);
    expect(ids.size).toBe(3);
  });
});
