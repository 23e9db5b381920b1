import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AudioData } from '../../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { collectingSink, sourceFromAudio } from '../../src/engines/separation/engine.js';
import { NeuralSeparationEngine } from '../../src/engines/separation/neural.js';
import { findModel, type ModelEntry } from '../../src/models/catalog.js';
import { mergeCatalog } from '../../src/models/catalog-file.js';
import { writeCatalogFile } from '../fixtures/pinned-catalog.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * A site that installed Meta's HTDemucs checkpoints itself (no auto-pull): MODELS_CATALOG_FILE pins the built-in
 * entries' files (htdemucs-th, htdemucs_6s-th) to the harness' tiny torch.save networks, whose presets come from the
 * built-in entries' meta. Separation tasks run through the API on the checkpoint engine, name it, return stems equal
 * to the engine's own output on the same input, and charge the account once.
 */
const run = promisify(execFile);
const API = '/audio/api/v1/api-keys';
const GOLDEN = join(import.meta.dirname, '../fixtures/golden');
const tools = resolveMediaTools({ preferSystem: true });
const INSTALLED = [
  { name: 'htdemucs-th', file: '955717e8-8726e21a.th', from: 'htdemucs/htdemucs-fd84e9d2.th' },
  { name: 'htdemucs_6s-th', file: '5c90dfd2-34c22ccb.th', from: 'htdemucs_6s/htdemucs_6s-4c3fbcff.th' },
];

let app: TestApp;
let key: string;
let accountId: string;
let modelsDir: string;
let siteEntries: ModelEntry[];
let song: AudioData;
let songUrl: string;

beforeAll(async () => {
  modelsDir = await mkdtemp(join(tmpdir(), 'soundry-ckpt-e2e-'));
  siteEntries = [];
  for (const m of INSTALLED) {
    await mkdir(join(modelsDir, m.name), { recursive: true });
    await copyFile(join(GOLDEN, m.from), join(modelsDir, m.name, m.file));
    const bytes = await readFile(join(modelsDir, m.name, m.file));
    const entry = findModel(m.name)!;
    siteEntries.push({ ...entry, files: [{ path: m.file, url: entry.files[0]!.url, sizeBytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }] });
  }
  const catalogFile = await writeCatalogFile(join(modelsDir, 'catalog.json'), siteEntries);
  app = await startTestApp({ WORKER_THREADS: '1', MODELS_DIR: modelsDir, MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'false' });
  ({ key, accountId } = await app.newKey({ credits: 100 }));
  const path = join(app.dataDir, 'song.wav');
  // 48 kHz, so the engine's resampling to the model rate and back is on the path; quiet, because the tiny random
  // networks' stems are louder than the mix and a 16-bit WAV would clip them above full scale.
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
    'aevalsrc=0.08*sin(2*PI*220*t)+0.05*sin(2*PI*1760*t)*exp(-8*mod(t\\,0.5))|0.06*sin(2*PI*330*t)+0.03*sin(2*PI*95*t):s=48000:d=3', '-c:a', 'pcm_s16le', path]);
  song = await decodeAudio(path, { ffmpeg: tools.ffmpeg });
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await readFile(path))]), 'song.wav');
  songUrl = ((await (await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any).data.url;
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

/** The engine itself, in this process, on the decoded input with the same models and catalog. */
async function direct(modelType: number): Promise<Record<string, AudioData>> {
  const catalog = mergeCatalog({ models: siteEntries.map((e) => ({ name: e.name, kind: 'separation' as const, files: e.files.map((f) => ({ ...f })) })) });
  const engine = new NeuralSeparationEngine({ modelsDir, catalog, threads: 1 });
  try {
    const sink = collectingSink();
    await engine.separate(sourceFromAudio(song), modelType, { tmpDir: tmpdir(), signal: new AbortController().signal, onProgress: () => {} }, sink);
    return sink.result();
  } finally {
    await engine.dispose();
  }
}

describe('separation through the API on installed HTDemucs checkpoints', () => {
  // 501 returns its four stems; 380 its piano and the rest of the mix (the engine's residual stem) as accompaniment.
  for (const [modelType, model, type] of [[501, 'htdemucs-th', 'stems'], [380, 'htdemucs_6s-th', 'vocals_accompaniment']] as const) {
    it(`${modelType} runs on ${model}, says so, returns the engine's stems, and is charged once`, async () => {
      const before = (await app.container.accounts.getAccount(accountId))!.balance;
      const done = await separate({ model_type: modelType, inputurl: songUrl, output_format: 'wav', separation_type: type });
      expect(done.data.status, JSON.stringify(done)).toBe('success');
      expect(done.data.engine).toBe(`onnx-htdemucs:${model}`);
      const want = await direct(modelType);
      const names = Object.keys(done.data.output).sort();
      expect(names).toEqual(Object.keys(want).map((s) => (s === 'remainder' ? 'accompaniment' : s)).sort());
      const stems: AudioData[] = [];
      for (const name of names) {
        const res = await fetch(done.data.output[name] as string);
        expect(res.status).toBe(200);
        const file = join(app.dataDir, `${modelType}-${name}.wav`);
        await writeFile(file, Buffer.from(await res.arrayBuffer()));
        const stem = await decodeAudio(file, { ffmpeg: tools.ffmpeg });
        expect(stem.sampleRate).toBe(48000);
        expect(stem.channels[0]!.length).toBe(song.channels[0]!.length);
        stems.push(stem);
        const ref = want[name] ?? want.remainder!;
        let d = 0;
        let m = 0;
        ref.channels.forEach((c, ch) => c.forEach((v, i) => {
          d = Math.max(d, Math.abs(v - stem.channels[ch]![i]!));
          m = Math.max(m, Math.abs(v));
        }));
        expect(m, `${name} within full scale`).toBeLessThan(1);
        // 16-bit WAV: within a few quantisation steps of the engine's float stems.
        expect(d, `${name}: max |api - engine| ${d} of ${m}`).toBeLessThan(4 / 32768);
      }
      let err = 0;
      song.channels.forEach((c, ch) => c.forEach((v, i) => (err = Math.max(err, Math.abs(v - stems.reduce((a, s) => a + s.channels[ch]![i]!, 0))))));
      expect(err).toBeLessThan(stems.length * 2 / 32768);
      expect(done.data.credits).toBeGreaterThan(0);
      expect(await app.container.accounts.getAccount(accountId)).toMatchObject({ balance: before - done.data.credits, held: 0 });
    }, 240_000);
  }
});
