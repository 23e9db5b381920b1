import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeMedia, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { MODEL_CATALOG } from '../../src/models/catalog.js';
import { DFN3_ARCHIVE } from '../../src/models/catalog-enhance.js';
import { checkModel } from '../../src/models/installed.js';
import { pinToBytes, writeCatalogFile } from '../fixtures/pinned-catalog.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * DeepFilterNet3 as a user gets it, through HTTP: nothing installed, MODELS_AUTO_PULL on, a local mirror
 * (MODELS_BASE_URL) serving an archive laid out as the published DeepFilterNet3_onnx.tar.gz (the reference harness's
 * small seeded export, test/fixtures/golden/dfn3), and a site catalog pinning its checksum as the built-in catalog pins
 * the published one. The first enhancement with remove_noise downloads it, verifies it and runs it; `{}` (autoid) on
 * noisy input picks the same denoiser; both say so in `engine` and `reasons`.
 */
const API = '/audio/api/v1/api-keys';
const tools = resolveMediaTools({ preferSystem: true });
const archive = await readFile(new URL('../fixtures/golden/dfn3/DeepFilterNet3_onnx.tar.gz', import.meta.url));

let app: TestApp;
let key: string;
let dir: string;
let mirror: Server;
let inputUrl: string;
let inputSeconds: number;
const hits: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-dfn3-e2e-'));
  mirror = createServer((req, res) => {
    hits.push(req.url ?? '');
    if (req.url !== `/deepfilternet3/${DFN3_ARCHIVE}`) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-length': archive.length }).end(archive);
  });
  await new Promise<void>((r) => mirror.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(mirror.address() as AddressInfo).port}`;
  const dfn3 = pinToBytes(MODEL_CATALOG.find((e) => e.name === 'deepfilternet3')!, { [DFN3_ARCHIVE]: archive });
  const catalogFile = await writeCatalogFile(join(dir, 'catalog.json'), [dfn3]);
  app = await startTestApp({ MODELS_DIR: join(dir, 'models'), MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'true', MODELS_BASE_URL: base });
  ({ key } = await app.newKey({ credits: 1000 }));
  // Stereo 44.1 kHz: harmonic bursts with pauses under white noise (~12 dB SNR), so autoid hears noise to remove.
  const input = join(dir, 'noisy.wav');
  await promisify(execFile)(tools.ffmpeg, [
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', "aevalsrc='0.3*gt(sin(2*PI*1.5*t),0)*(sin(2*PI*180*t)+0.5*sin(2*PI*360*t)+0.25*sin(2*PI*540*t))':s=44100:d=6",
    '-f', 'lavfi', '-i', 'anoisesrc=color=white:sample_rate=44100:amplitude=0.1:duration=6',
    '-filter_complex', '[0][1]amix=inputs=2,aformat=channel_layouts=stereo', '-ar', '44100', '-c:a', 'pcm_s16le', input,
  ]);
  inputSeconds = (await probeMedia(input, { ffprobe: tools.ffprobe })).durationSeconds;
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await readFile(input))]), 'noisy.wav');
  inputUrl = ((await (await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any).data.url;
}, 120_000);
afterAll(async () => {
  await app?.close();
  await new Promise((r) => mirror?.close(r));
  await rm(dir, { recursive: true, force: true });
});

async function enhance(enhance_type: Record<string, boolean>) {
  const created = await app.post(`${API}/enhance/task/create`, { inputurl: inputUrl, enhance_type }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  return app.waitTask(`${API}/enhance/task/get`, 'job_id', created.json.data.job_id, key, 240_000);
}

describe('DeepFilterNet3 by default (first use pulls it)', () => {
  it('remove_noise downloads the archive once, verifies it and denoises with it, saying so', async () => {
    const done = await enhance({ remove_noise: true });
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.engine).toBe('deepfilternet3');
    expect(done.data.reasons.denoise).toBe('remove_noise; engine: auto: DeepFilterNet3, 48 kHz full band');
    expect(hits).toEqual([`/deepfilternet3/${DFN3_ARCHIVE}`]);
    const entry = pinToBytes(MODEL_CATALOG.find((e) => e.name === 'deepfilternet3')!, { [DFN3_ARCHIVE]: archive });
    expect((await checkModel(join(dir, 'models'), entry)).state).toBe('installed');
    // The output keeps the input's length (the model's look-ahead is compensated) and its format.
    expect(Math.abs(done.data.duration - inputSeconds)).toBeLessThan(0.01);
  }, 240_000);

  it('`{}` (autoid) on noisy input denoises with DeepFilterNet3, downloading nothing more', async () => {
    const done = await enhance({});
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.stages, JSON.stringify(done.data.reasons)).toContain('denoise');
    expect(done.data.engine.split('+')).toContain('deepfilternet3');
    // Why autoid denoises is its own wording (detect.ts); the engine part is the choice's.
    expect(done.data.reasons.denoise).toMatch(/^autoid: .*; engine: auto: DeepFilterNet3, 48 kHz full band$/);
    // autoid may want Silero VAD too (this mirror has none); the archive itself is not fetched again.
    expect(hits.filter((h) => h.startsWith('/deepfilternet3/'))).toHaveLength(1);
  }, 240_000);
});
