import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { piperModels, type TtsModelEntry } from '../../src/models/catalog.js';
import { modelFilePath } from '../../src/models/download.js';
import { checkModel } from '../../src/models/installed.js';
import { buildTinyPiperModel, tinyPiperConfig } from '../fixtures/onnx-builder.js';
import { pinToBytes, writeCatalogFile } from '../fixtures/pinned-catalog.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * "A TTS voice without any other step": with MODELS_AUTO_PULL a catalog voice is listed before its model is installed,
 * and the first task for it downloads the model from a mirror (MODELS_BASE_URL; here a local server serving stand-in
 * models pinned by MODELS_CATALOG_FILE), verifies it, installs it and speaks with it. A corrupt download never speaks:
 * the task runs on the built-in voice of the same language and gender and says why.
 */
const API = '/audio/api/v1/api-keys';
const run = promisify(execFile);
const ROOT = new URL('../..', import.meta.url).pathname;
const byId = (id: number) => piperModels().find((m) => m.piper.voices.some((v) => v.apiId === id))!;
const ryan = byId(5002); // en, male: served intact, slowly
const lessac = byId(5001); // en, female: served with bytes that are not the catalog's
const kerstin = byId(5004); // de, female: never asked for by a task
const denis = byId(5012); // ru, male: served slowly, asked for by two tasks at once
const irina = byId(5011); // ru, female: first asked for on /v1/audio/speech

function standIn(entry: TtsModelEntry): Record<string, Uint8Array> {
  return {
    [entry.piper.modelFile]: buildTinyPiperModel({ sampleRate: entry.piper.sampleRate }),
    [entry.piper.configFile]: Buffer.from(JSON.stringify(tinyPiperConfig({ sampleRate: entry.piper.sampleRate }))),
  };
}
/** Milliseconds between the eight chunks a file is served in (0: at once). Denis takes ~6 s, so a second task for it
 * (on the other engine thread, which may first have to start) arrives while the first still downloads. */
const files = new Map<string, { bytes: Uint8Array; slow: number }>();
for (const [entry, slow] of [[ryan, 250], [lessac, 0], [kerstin, 0], [denis, 800], [irina, 0]] as const) {
  for (const [path, bytes] of Object.entries(standIn(entry))) files.set(`/${entry.name}/${path}`, { bytes, slow });
}

let app: TestApp;
let key: string;
let modelsDir: string;
let catalogFile: string;
let mirror: Server;
const hits: string[] = [];

beforeAll(async () => {
  modelsDir = await mkdtemp(join(tmpdir(), 'soundry-piper-pull-'));
  mirror = createServer(async (req, res) => {
    const url = decodeURIComponent(req.url ?? '');
    hits.push(url);
    const file = files.get(url);
    if (!file) return void res.writeHead(404).end();
    let body = Buffer.from(file.bytes);
    // Lessac's mirror copy is damaged in transit: right size, wrong bytes.
    if (url.startsWith(`/${lessac.name}/`) && url.endsWith('.onnx')) body = Buffer.from(body).fill(7, 40, 80);
    res.writeHead(200, { 'content-length': body.length });
    if (!file.slow) return void res.end(body);
    // Trickled in eight chunks so the task's progress can be seen moving during the download.
    const step = Math.ceil(body.length / 8);
    for (let at = 0; at < body.length; at += step) {
      res.write(body.subarray(at, at + step));
      await new Promise((r) => setTimeout(r, file.slow));
    }
    res.end();
  });
  await new Promise<void>((r) => mirror.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(mirror.address() as AddressInfo).port}`;
  // The site catalog pins the stand-ins' genuine bytes, as the built-in catalog pins the real weights.
  catalogFile = await writeCatalogFile(join(modelsDir, 'site-catalog.json'), [ryan, lessac, kerstin, denis, irina].map((e) => pinToBytes(e, standIn(e))));
  // Two engine threads, so two TTS tasks can run (and want the same model) at once.
  app = await startTestApp({ WORKER_THREADS: '2', MODELS_DIR: modelsDir, MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'true', MODELS_BASE_URL: base });
  ({ key } = await app.newKey({ credits: 1000 }));
}, 60_000);

afterAll(async () => {
  await app?.close();
  await new Promise<void>((r) => mirror?.close(() => r()));
  await rm(modelsDir, { recursive: true, force: true });
});

async function voiceRecord(id: number) {
  const { json } = await app.get(`${API}/tts/voices?language=all&page_size=500`, key);
  return json.data.records.find((v: any) => v.id === id);
}

async function speak(voiceId: number, onPoll?: (data: any) => void, language = 'en', text = 'Hello there. How are you today?') {
  const created = await app.post(`${API}/tts/task/create`, { voice_id: voiceId, emotion: 0, speed: 1, language, text }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { json } = await app.post(`${API}/tts/task/get`, { global_id: created.json.data.job_id }, key);
    onPoll?.(json.data);
    if (json.data.status !== 'waiting') return json.data;
    if (Date.now() > deadline) throw new Error('tts task still waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('MODELS_AUTO_PULL on: catalog voices before their model is installed', () => {
  it('are listed as neural and not yet downloaded, with the spec fields intact', async () => {
    const v = await voiceRecord(5002);
    expect(v).toEqual(expect.objectContaining({ id: 5002, language: 'en', gender: 1, neural: true, downloaded: false, name: 'piper:en_US-ryan-medium' }));
    expect(v.emotion.length).toBeGreaterThan(0);
    // Built-in voices carry neither mark.
    const builtin = await voiceRecord(1001);
    expect(builtin.neural).toBeUndefined();
    expect(builtin.downloaded).toBeUndefined();
  });

  it('a sample of a voice not downloaded yet is its built-in stand-in, flagged, and starts no download', async () => {
    const res = await fetch(`${app.baseUrl}/assets/voices/5004.mp3`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-voice-sample')).toBe('builtin-stand-in');
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    expect(hits.some((h) => h.startsWith(`/${kerstin.name}/`))).toBe(false);
    expect((await checkModel(modelsDir, pinToBytes(kerstin, standIn(kerstin)))).state).toBe('missing');
  }, 60_000);

  it('the first task downloads the model with progress, verifies and installs it, and speaks with Piper', async () => {
    const progress: number[] = [];
    const done = await speak(5002, (d) => d.status === 'waiting' && typeof d.progress === 'number' && progress.push(d.progress));
    expect(done.status, JSON.stringify(done)).toBe('success');
    expect(done.engine).toBe('piper');
    expect(done.voice).toBe('piper:en_US-ryan-medium');
    expect(done.engine_note).toBeUndefined();
    expect(hits).toContain(`/${ryan.name}/${ryan.piper.modelFile}`);
    // The download takes the first part of the task: progress was seen between start and the end of the download.
    expect(progress.some((p) => p > 0 && p < 0.54), JSON.stringify(progress)).toBe(true);
    expect(new Set(progress).size, JSON.stringify(progress)).toBeGreaterThan(2);
    const pinned = pinToBytes(ryan, standIn(ryan));
    expect((await checkModel(modelsDir, pinned)).state).toBe('installed');
    expect(await readFile(modelFilePath(modelsDir, ryan, { path: ryan.piper.modelFile }))).toEqual(Buffer.from(standIn(ryan)[ryan.piper.modelFile]!));
    // Installed now: the list drops the mark (it is refreshed every few seconds), and a second task downloads nothing.
    await expect.poll(async () => (await voiceRecord(5002)).downloaded, { timeout: 10_000, interval: 250 }).toBeUndefined();
    const before = hits.length;
    expect((await speak(5002)).engine).toBe('piper');
    expect(hits.length).toBe(before);
  }, 180_000);

  it('an installed English neural voice now speaks for the OpenAI names of its gender', async () => {
    const res = await fetch(`${app.baseUrl}/v1/audio/voices`, { headers: { authorization: `Bearer ${key}` } });
    const data = ((await res.json()) as { data: Array<{ id: string; soundry_voice_id: number }> }).data;
    const alias = (id: string) => data.find((v) => v.id === id)?.soundry_voice_id;
    expect(alias('echo')).toBe(5002); // a male name
    expect(alias('onyx')).toBe(5002);
    expect(alias('nova')).toBe(1007); // female: Lessac is not installed, the built-in voice stays
  });

  it('the CLI speaks with the installed neural voice by default', async () => {
    const { stdout } = await run(process.execPath, [join(ROOT, 'bin/soundry.js'), 'tts', 'Hello from the command line.', '--language', 'en', '-o', 'cli.mp3'], {
      cwd: app.dataDir, env: { ...process.env, SOUNDRY_URL: app.baseUrl, SOUNDRY_API_KEY: key, LOG_LEVEL: 'silent' },
    });
    expect(JSON.parse(stdout.trim())).toEqual(expect.objectContaining({ file: 'cli.mp3', voice: 'piper:en_US-ryan-medium', engine: 'piper' }));
  }, 60_000);

  it('two tasks for the same voice at once download its model once, and both speak with Piper', async () => {
    const [a, b] = await Promise.all([speak(5012, undefined, 'ru', 'Привет. Как дела?'), speak(5012, undefined, 'ru', 'Добрый день.')]);
    expect([a.status, b.status], JSON.stringify([a, b])).toEqual(['success', 'success']);
    expect([a.engine, b.engine], JSON.stringify([a, b])).toEqual(['piper', 'piper']);
    expect(hits.filter((h) => h === `/${denis.name}/${denis.piper.modelFile}`)).toHaveLength(1);
  }, 120_000);

  it('/v1/audio/speech with a voice not downloaded yet downloads it before the first bytes and speaks with it', async () => {
    const res = await fetch(`${app.baseUrl}/v1/audio/speech`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts-1', voice: '5011', input: 'Привет. Как дела?', response_format: 'wav' }),
    });
    expect(res.status, await res.clone().text().catch(() => '')).toBe(200);
    expect(res.headers.get('x-soundry-engine')).toBe('piper');
    expect(res.headers.get('x-soundry-engine-note')).toBeNull();
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    expect(hits).toContain(`/${irina.name}/${irina.piper.modelFile}`);
    expect((await checkModel(modelsDir, pinToBytes(irina, standIn(irina)))).state).toBe('installed');
  }, 60_000);

  it('a download that fails its checksum: the task succeeds on the built-in voice, says why, and installs nothing', async () => {
    const done = await speak(5001);
    expect(done.status, JSON.stringify(done)).toBe('success');
    expect(done.engine).toBe('espeak');
    expect(done.voice).toMatch(/^espeak:en/);
    expect(done.engine_note).toMatch(/voice 5001 .*piper-en_US-lessac-medium could not be installed: .*checksum mismatch.*built-in voice \d+/);
    const path = modelFilePath(modelsDir, lessac, { path: lessac.piper.modelFile });
    expect(existsSync(path)).toBe(false);
    expect(existsSync(`${path}.part`)).toBe(false);
    expect((await voiceRecord(5001)).downloaded).toBe(false);
    // The built-in stand-in has Lessac's gender (female).
    const builtin = await voiceRecord(Number(/built-in voice (\d+)/.exec(done.engine_note)![1]));
    expect(builtin).toEqual(expect.objectContaining({ language: 'en', gender: 2 }));
    // /v1/audio/speech has no result to say it in: its headers do.
    const res = await fetch(`${app.baseUrl}/v1/audio/speech`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts-1', voice: '5001', input: 'Hello there.', response_format: 'wav' }),
    });
    expect(res.status, await res.clone().text().catch(() => '')).toBe(200);
    expect(res.headers.get('x-soundry-voice')).toBe('5001');
    expect(res.headers.get('x-soundry-engine')).toBe('espeak');
    // The download just failed: not tried again at once, and the note says why.
    expect(res.headers.get('x-soundry-engine-note')).toMatch(/voice 5001 .*failed recently \(checksum mismatch.*built-in voice \d+/);
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  }, 120_000);
});

describe('podcasts with neural hosts', () => {
  const TEXT = 'Bees pollinate most flowering plants. A colony can hold fifty thousand bees in summer. Beekeepers move hives to orchards in spring. Losses in winter have grown in many countries, and researchers study mites and weather as causes.';
  async function script(body: Record<string, unknown>) {
    const created = await app.post(`${API}/podcast/script/create`, { source_type: 4, text: TEXT, style: 1, duration: 1, language: 'en', ...body }, key);
    expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
    const s = await app.waitTask(`${API}/podcast/script/get`, 'global_id', created.json.data.global_id, key, 120_000);
    expect(s.data.status, JSON.stringify(s)).toBe('success');
    return s.data;
  }

  it('default hosts prefer the installed neural voice (Ryan, now installed) and never one not downloaded (Lessac)', async () => {
    const s = await script({ speakers: [] });
    const ids = new Set(s.podcast_script.map((l: any) => l.voice_id));
    expect(ids.has('5002'), JSON.stringify([...ids])).toBe(true);
    expect(ids.has('5001')).toBe(false);
  }, 180_000);

  it('a host whose neural voice cannot be downloaded is spoken by a built-in voice, and the episode says why', async () => {
    const s = await script({ speakers: [5002, 5001] });
    const created = await app.post(`${API}/podcast/audio/create`, { title: s.title, processed_content: s.processed_content, podcast_script: s.podcast_script, hightlights: s.hightlights, global_id: s.global_id }, key);
    expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
    const a = await app.waitTask(`${API}/podcast/audio/get`, 'global_id', created.json.data.global_id, key, 180_000);
    expect(a.data.status, JSON.stringify(a)).toBe('success');
    // The first failure is remembered (no second download of a model that just failed its checksum).
    expect(a.data.engine_note).toMatch(/^voice 5001 .*piper-en_US-lessac-medium.*checksum mismatch.*built-in voice \d+/);
    expect(a.data.engine_note).not.toMatch(/voice 5002/);
  }, 240_000);
});

describe('MODELS_AUTO_PULL off', () => {
  it('lists no voice whose model is not installed', async () => {
    const off = await startTestApp({ MODELS_DIR: join(modelsDir, 'empty'), MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'false' }, { workers: false });
    try {
      const { key: k } = await off.newKey();
      const ids = (await off.get(`${API}/tts/voices?page_size=500`, k)).json.data.records.map((v: any) => v.id);
      expect(ids).toContain(1001);
      expect(ids.some((id: number) => id >= 5000 && id < 6000)).toBe(false);
      const created = await off.post(`${API}/tts/task/create`, { voice_id: 5002, emotion: 0, speed: 1, language: 'en', text: 'Hello.' }, k);
      expect(created.json.code).toBe(100002);
    } finally {
      await off.close();
    }
  });
});
