import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AudioData } from '../../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { findPreset, presetPath, type MdxPreset } from '../../src/engines/separation/onnx/presets.js';
import { buildTinyMdxModel, writeModel } from '../fixtures/separation-models.js';
import { presetCatalog, writeCatalogFile } from '../fixtures/pinned-catalog.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { makeSeparableSong } from '../helpers/separable-song.js';

const run = promisify(execFile);
const API = '/audio/api/v1/api-keys';
const tools = resolveMediaTools({ preferSystem: true });
let app: TestApp;
let key: string;
let modelsDir: string;
let songPath: string;
let songUrl: string;

beforeAll(async () => {
  // A stand-in Kim_Vocal_2 with the real UVR signature ([batch, 4, 3072, 256]) in MODELS_DIR.
  modelsDir = await mkdtemp(join(tmpdir(), 'soundry-models-'));
  const kim = findPreset('Kim_Vocal_2') as MdxPreset;
  await writeModel(presetPath(modelsDir, kim), buildTinyMdxModel(kim.dimF, kim.dimT, 0.5));
  const catalogFile = await writeCatalogFile(join(modelsDir, 'catalog.json'), presetCatalog(modelsDir, [kim]));
  // No auto-pull: the model types the stand-in does not serve must stay on the built-in engine here.
  app = await startTestApp({ WORKER_THREADS: '1', MODELS_DIR: modelsDir, MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'false' });
  ({ key } = await app.newKey({ credits: 1000 }));
  songPath = join(app.dataDir, 'song.wav');
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'aevalsrc=0.3*sin(2*PI*440*t)|0.3*sin(2*PI*660*t):s=48000:d=6', '-c:a', 'pcm_s16le', songPath]);
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await readFile(songPath))]), 'song.wav');
  const res = (await (await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any;
  songUrl = res.data.url;
}, 60_000);
afterAll(async () => {
  await app?.close();
  await rm(modelsDir, { recursive: true, force: true });
});

async function separate(body: Record<string, unknown>) {
  const created = await app.post(`${API}/separation/task/create`, body, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  return app.waitTask(`${API}/separation/task/get`, 'job_id', created.json.data.job_id, key, 180_000);
}

describe('separation through the API with an installed neural model', () => {
  it('350 runs on the installed MDX model, names it, keeps the input rate, and sums back to the mixture', async () => {
    const done = await separate({ model_type: 350, inputurl: songUrl, output_format: 'wav', separation_type: 'vocals_accompaniment' });
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.engine).toBe('onnx-mdx:Kim_Vocal_2');
    expect(Object.keys(done.data.output).sort()).toEqual(['accompaniment', 'vocals']);
    const mix = await decodeAudio(songPath, { ffmpeg: tools.ffmpeg });
    const stems: AudioData[] = [];
    for (const url of Object.values(done.data.output) as string[]) {
      const file = join(app.dataDir, `stem-${stems.length}.wav`);
      await writeFile(file, Buffer.from(await (await fetch(url)).arrayBuffer()));
      stems.push(await decodeAudio(file, { ffmpeg: tools.ffmpeg }));
    }
    let err = 0;
    let pow = 0;
    let vocalPow = 0;
    mix.channels.forEach((c, ch) => c.forEach((v, i) => {
      const s = stems.reduce((acc, st) => acc + st.channels[ch]![i]!, 0);
      err += (v - s) ** 2;
      pow += v * v;
    }));
    for (const st of stems) expect(st.sampleRate).toBe(48000);
    const vocals = stems[Object.keys(done.data.output).indexOf('vocals')]!;
    vocals.channels[0]!.forEach((v) => (vocalPow += v * v));
    expect(10 * Math.log10(err / pow)).toBeLessThan(-30);
    // The stand-in model halves the spectrum: vocals carry about (0.5 * 1.009)^2 of the power of a channel.
    expect(vocalPow / (pow / 2)).toBeGreaterThan(0.2);
    expect(vocalPow / (pow / 2)).toBeLessThan(0.3);
  }, 240_000);

  it('a model type the installed models do not serve falls back to the built-in engine', async () => {
    // A mix with drums the built-in engine finds (on the tones it finds none, and the task would fail uncharged).
    const drumsPath = await makeSeparableSong(tools.ffmpeg, join(app.dataDir, 'drums.wav'), 4);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(await readFile(drumsPath))]), 'drums.wav');
    const up = (await (await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any;
    const done = await separate({ model_type: 340, inputurl: up.data.url, output_format: 'wav' });
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.engine).toBe('builtin-dsp');
  }, 240_000);
});
