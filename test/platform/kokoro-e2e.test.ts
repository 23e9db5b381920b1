import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkModel } from '../../src/models/installed.js';
import { writeCatalogFile } from '../fixtures/pinned-catalog.js';
import { kokoroStandIns } from '../fixtures/kokoro-fixture.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * First use of a Kokoro voice with MODELS_AUTO_PULL on, no other step: a local mirror (MODELS_BASE_URL) serves
 * stand-in files, a site catalog (MODELS_CATALOG_FILE) pins their checksums as the built-in catalog pins the real
 * weights'. af_heart (6001) downloads, verifies and speaks through Kokoro; the mirror serves a Git LFS pointer for
 * bf_emma (6021), which is never installed, and that task is spoken by the built-in engine, saying why.
 */
const API = '/audio/api/v1/api-keys';
const LFS_POINTER = `version https://git-lfs.github.com/spec/v1\noid sha256:${'0'.repeat(64)}\nsize 522240\n`;
const standIns = kokoroStandIns(['af_heart', 'bf_emma', 'ef_dora', 'jf_alpha']);

let app: TestApp;
let modelsDir: string;
let mirror: Server;
const hits: string[] = [];

beforeAll(async () => {
  modelsDir = await mkdtemp(join(tmpdir(), 'soundry-kokoro-e2e-'));
  mirror = createServer((req, res) => {
    hits.push(req.url ?? '');
    const [, name, ...rest] = (req.url ?? '').split('/');
    const path = rest.join('/');
    if (name === 'kokoro-bf_emma') return void res.writeHead(200, { 'content-length': Buffer.byteLength(LFS_POINTER) }).end(LFS_POINTER);
    const bytes = standIns.files.get(name ?? '')?.[path];
    if (!bytes) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-length': bytes.length }).end(bytes);
  });
  await new Promise<void>((r) => mirror.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(mirror.address() as AddressInfo).port}`;
  const catalogFile = await writeCatalogFile(join(modelsDir, 'catalog.json'), standIns.entries);
  app = await startTestApp({ MODELS_DIR: modelsDir, MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'true', MODELS_BASE_URL: base });
}, 60_000);
afterAll(async () => {
  await app?.close();
  await new Promise((r) => mirror?.close(r));
  await rm(modelsDir, { recursive: true, force: true });
});

describe('a Kokoro voice on first use (MODELS_AUTO_PULL, local mirror)', () => {
  it('is offered before any download, with its catalogue id, language and gender', async () => {
    const { key } = await app.newKey();
    const voices = (await app.get(`${API}/tts/voices?language=en&page_size=500`, key)).json.data.records;
    expect(voices.find((v: any) => v.id === 6001)).toEqual(expect.objectContaining({ language: 'en', gender: 2, name: 'kokoro:en-us:af_heart' }));
    expect(voices.find((v: any) => v.id === 6021)).toEqual(expect.objectContaining({ language: 'en', gender: 2, name: 'kokoro:en-gb:bf_emma' }));
    expect(hits).toEqual([]);
  });

  it('downloads, verifies and speaks through Kokoro', async () => {
    const { key } = await app.newKey();
    const created = await app.post(`${API}/tts/task/create`, { voice_id: 6001, emotion: 0, speed: 1, language: 'en', text: 'Hello world. How are you today?' }, key);
    const done = await app.waitTask(`${API}/tts/task/get`, 'global_id', created.json.data.job_id, key);
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.engine).toBe('kokoro');
    expect(done.data.engine_note).toBeUndefined();
    expect(done.data.duration).toBeGreaterThan(0.2);
    expect(hits).toEqual(expect.arrayContaining(['/kokoro-82m-v1.0/onnx/model.onnx', '/kokoro-82m-v1.0/tokenizer.json', '/kokoro-af_heart/voices/af_heart.bin']));
    for (const e of standIns.entries.filter((x) => ['kokoro-82m-v1.0', 'kokoro-af_heart'].includes(x.name))) expect((await checkModel(modelsDir, e)).state).toBe('installed');
    // Speed is Kokoro's own input: twice as fast, markedly shorter.
    const fast = await app.post(`${API}/tts/task/create`, { voice_id: 6001, emotion: 0, speed: 2, language: 'en', text: 'Hello world. How are you today?' }, key);
    const fastDone = await app.waitTask(`${API}/tts/task/get`, 'global_id', fast.json.data.job_id, key);
    expect(fastDone.data.engine).toBe('kokoro');
    expect(fastDone.data.duration).toBeLessThan(done.data.duration * 0.75);
  }, 120_000);

  it('speaks Spanish (eSpeak phonemes) and Japanese (the kana front end) through Kokoro voices pulled on first use', async () => {
    const { key } = await app.newKey();
    for (const [voice_id, language, text] of [[6028, 'es', 'Hola. ¿Cómo estás hoy?'], [6036, 'ja', '今日は良い天気ですね。散歩に行きましょう。']] as const) {
      const listed = (await app.get(`${API}/tts/voices?language=${language}&page_size=500`, key)).json.data.records;
      expect(listed.find((v: any) => v.id === voice_id), language).toEqual(expect.objectContaining({ language }));
      const created = await app.post(`${API}/tts/task/create`, { voice_id, emotion: 0, speed: 1, language, text }, key);
      expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
      const done = await app.waitTask(`${API}/tts/task/get`, 'global_id', created.json.data.job_id, key);
      expect(done.data.status, JSON.stringify(done)).toBe('success');
      expect(done.data.engine, language).toBe('kokoro');
      expect(done.data.engine_note).toBeUndefined();
      expect(done.data.duration).toBeGreaterThan(0.2);
    }
    expect(hits).toEqual(expect.arrayContaining(['/kokoro-ef_dora/voices/ef_dora.bin', '/kokoro-jf_alpha/voices/jf_alpha.bin']));
  }, 120_000);

  it('never uses a file that fails verification: the built-in engine speaks and the result says why', async () => {
    const { key } = await app.newKey();
    const created = await app.post(`${API}/tts/task/create`, { voice_id: 6021, emotion: 0, speed: 1, language: 'en', text: 'Good morning.' }, key);
    const done = await app.waitTask(`${API}/tts/task/get`, 'global_id', created.json.data.job_id, key);
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.engine).toBe('espeak');
    expect(done.data.voice).toBe('espeak:en-gb:f1');
    expect(done.data.engine_note).toMatch(/^voice 6021 \(Emma \(British English, Kokoro\)\) was not used: kokoro-bf_emma could not be installed: .+; spoken by the built-in voice \d+ /);
    const emma = standIns.entries.find((x) => x.name === 'kokoro-bf_emma')!;
    expect((await checkModel(modelsDir, emma)).state).not.toBe('installed');
  }, 120_000);

  it('an LFS pointer placed in MODELS_DIR is not a voice when auto-pull is off', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'soundry-kokoro-lfs-'));
    try {
      const { installKokoroStandIns } = await import('../fixtures/kokoro-fixture.js');
      await installKokoroStandIns(dir, standIns);
      await writeFile(join(dir, 'kokoro-82m-v1.0', 'onnx/model.onnx'), LFS_POINTER);
      const catalogFile = await writeCatalogFile(join(dir, 'catalog.json'), standIns.entries);
      const off = await startTestApp({ MODELS_DIR: dir, MODELS_CATALOG_FILE: catalogFile }, { workers: false });
      try {
        const { key } = await off.newKey();
        const voices = (await off.get(`${API}/tts/voices?page_size=500`, key)).json.data.records;
        expect(voices.some((v: any) => v.id >= 6001 && v.id < 7000)).toBe(false);
      } finally {
        await off.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('speaks an OpenAI voice name through its installed Kokoro namesake, the others through installed neural voices of their gender', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'soundry-kokoro-openai-'));
    try {
      const { installKokoroStandIns } = await import('../fixtures/kokoro-fixture.js');
      const installed = kokoroStandIns(['af_nova', 'am_adam']);
      await installKokoroStandIns(dir, installed);
      // am_echo is in the catalog but not installed: with auto-pull it is listed (downloaded: false), never picked for echo.
      const catalogFile = await writeCatalogFile(join(dir, 'catalog.json'), kokoroStandIns(['af_nova', 'am_adam', 'am_echo']).entries);
      const local = await startTestApp({ MODELS_DIR: dir, MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'true', MODELS_BASE_URL: 'http://127.0.0.1:9/none' });
      try {
        const { key } = await local.newKey();
        const speak = (voice: string) =>
          fetch(`${local.baseUrl}/v1/audio/speech`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'tts-1', input: 'Hello there.', voice, response_format: 'wav' }),
          });
        const viaNova = await speak('nova');
        expect(viaNova.status).toBe(200);
        expect(viaNova.headers.get('x-soundry-voice')).toBe('6008');
        await viaNova.arrayBuffer();
        const viaCoral = await speak('coral');
        expect(viaCoral.headers.get('x-soundry-voice')).toBe('6008');
        await viaCoral.arrayBuffer();
        const viaEcho = await speak('echo');
        expect(viaEcho.status).toBe(200);
        expect(viaEcho.headers.get('x-soundry-voice')).toBe('6012');
        await viaEcho.arrayBuffer();
        const listed = (await (await fetch(`${local.baseUrl}/v1/audio/voices`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: Array<{ id: string; soundry_voice_id: number }> };
        const byId = new Map(listed.data.map((v) => [v.id, v.soundry_voice_id]));
        expect([byId.get('echo'), byId.get('kokoro:en-us:am_echo')]).toEqual([6012, 6013]);
      } finally {
        await local.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
