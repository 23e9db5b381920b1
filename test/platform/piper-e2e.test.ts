import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { piperModels } from '../../src/models/catalog.js';
import { modelDir } from '../../src/models/download.js';
import { writeTinyPiperVoice } from '../fixtures/onnx-builder.js';
import { pinToFiles, writeCatalogFile } from '../fixtures/pinned-catalog.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const API = '/audio/api/v1/api-keys';
let app: TestApp;
let modelsDir: string;
const entry = piperModels().find((m) => m.piper.voices.some((v) => v.apiId === 5001))!;

beforeAll(async () => {
  // A tiny model with the real voice's names and signature stands in for weights we cannot download here.
  modelsDir = await mkdtemp(join(tmpdir(), 'soundry-models-'));
  await writeTinyPiperVoice(modelDir(modelsDir, entry), entry.piper.key, { sampleRate: entry.piper.sampleRate });
  // Installed means verified against the catalog: the site's catalog file pins the stand-in's checksums.
  const catalogFile = await writeCatalogFile(join(modelsDir, 'catalog.json'), [pinToFiles(entry, modelsDir)]);
  app = await startTestApp({ MODELS_DIR: modelsDir, MODELS_CATALOG_FILE: catalogFile });
});
afterAll(async () => {
  await app?.close();
  await rm(modelsDir, { recursive: true, force: true });
});

describe('an installed Piper voice', () => {
  it('joins the voice library with its catalogue id and renders through the API', async () => {
    const { key } = await app.newKey();
    const voices = (await app.get(`${API}/tts/voices?language=en&page_size=500`, key)).json.data.records;
    const piper = voices.find((v: any) => v.id === 5001);
    expect(piper).toEqual(expect.objectContaining({ language: 'en', name: expect.stringContaining('piper') }));
    const created = await app.post(`${API}/tts/task/create`, { voice_id: 5001, emotion: 0, speed: 1, language: 'en', text: 'Hello world. How are you?' }, key);
    const done = await app.waitTask(`${API}/tts/task/get`, 'global_id', created.json.data.job_id, key);
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.engine).toBe('piper');
    expect(done.data.duration).toBeGreaterThan(0.1);
    const fast = await app.post(`${API}/tts/task/create`, { voice_id: 5001, emotion: 0, speed: 2, language: 'en', text: 'Hello world. How are you?' }, key);
    const fastDone = await app.waitTask(`${API}/tts/task/get`, 'global_id', fast.json.data.job_id, key);
    expect(fastDone.data.duration).toBeLessThan(done.data.duration * 0.75);
  });

  it('is not offered when its files are absent', async () => {
    const bare = await startTestApp({}, { workers: false });
    try {
      const { key } = await bare.newKey();
      const voices = (await bare.get(`${API}/tts/voices?page_size=500`, key)).json.data.records;
      expect(voices.some((v: any) => v.id >= 5000 && v.id < 6000)).toBe(false);
    } finally {
      await bare.close();
    }
  });
});
