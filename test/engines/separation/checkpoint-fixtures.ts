/**
 * Installs the tiny golden checkpoints (test/fixtures/golden/<case>/, real torch.save / safetensors files of small
 * HTDemucs and RoFormer networks) into a temporary MODELS_DIR under the names of the built-in catalog's entries, and
 * pins a test catalog to them: the built-in entry's meta (so the presets are the ones a site gets), the tiny files'
 * real sizes and sha256. Also the direct runs the engine tests compare with: DemucsStage and RoformerStage on an
 * input scaled as the engine scales it.
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AudioData } from '../../../src/media/audio.js';
import { loadFftProvider } from '../../../src/media/dsp/fft.js';
import { DemucsStage } from '../../../src/engines/separation/onnx/htdemucs.js';
import { loadHtdemucsCheckpoint } from '../../../src/engines/separation/onnx/htdemucs-loader.js';
import type { Stereo } from '../../../src/engines/separation/onnx/overlap-add.js';
import { loadRoformer } from '../../../src/engines/separation/onnx/roformer.js';
import { CHECKPOINT_SEPARATION_MODELS } from '../../../src/models/catalog-separation-checkpoints.js';
import type { OtherModelEntry } from '../../../src/models/catalog.js';
import { mulberry32 } from '../../fixtures/prng.js';

export const GOLDEN = join(import.meta.dirname, '../../fixtures/golden');

/** Where each installed file's bytes come from: a fixture path (relative to GOLDEN) or the bytes themselves. */
export type Install = Record<string, string | Buffer>;

/**
 * Copies the files into `modelsDir/<name>/` and returns the built-in entry `name` pinned to them (its meta, less
 * what `meta` overrides). The fixture folder is only read.
 */
export async function installEntry(modelsDir: string, name: string, files: Install, meta: Record<string, unknown> = {}, as = name): Promise<OtherModelEntry> {
  const real = CHECKPOINT_SEPARATION_MODELS.find((e) => e.name === name);
  if (!real) throw new Error(`no built-in checkpoint entry ${name}`);
  const root = join(modelsDir, as);
  await mkdir(root, { recursive: true });
  const pinned = [];
  for (const [path, from] of Object.entries(files)) {
    const bytes = typeof from === 'string' ? await readFile(join(GOLDEN, from)) : from;
    await writeFile(join(root, path), bytes);
    pinned.push({ path, url: `http://127.0.0.1/unused/${as}/${path}`, sizeBytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
  }
  return { ...real, name: as, meta: { ...real.meta, ...meta }, files: pinned };
}

/** A mixture with tones, a decaying pulse train and noise, scaled to `peak`. */
export function mixture(seconds: number, peak: number, seed = 7, rate = 44100): AudioData {
  const n = Math.round(seconds * rate);
  const rnd = mulberry32(seed);
  const channels = [0, 1].map((c) =>
    Float32Array.from({ length: n }, (_, i) => {
      const t = i / rate;
      const pulse = Math.exp(-30 * ((t * 4) % 1)) * Math.sin(2 * Math.PI * 90 * t);
      return 0.4 * Math.sin(2 * Math.PI * (220 + 55 * c) * t) + 0.3 * Math.sin(2 * Math.PI * 1760 * t) + 0.5 * pulse + 0.1 * (rnd() - 0.5) + 0.05 * c;
    }));
  const top = Math.max(...channels.map((ch) => ch.reduce((m, v) => Math.max(m, Math.abs(v)), 0)));
  return { sampleRate: rate, channels: channels.map((ch) => ch.map((v) => (v * peak) / top)) };
}

/** demucs' separate.py: ref = mean of the channels; (mix - ref.mean()) / ref.std() with the unbiased std. */
export function meanStd(mix: AudioData): { mean: number; std: number } {
  const [l, r] = mix.channels as [Float32Array, Float32Array];
  const n = l.length;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += (l[i]! + r[i]!) / 2;
  const mean = sum / n;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += ((l[i]! + r[i]!) / 2 - mean) ** 2;
  return { mean, std: Math.sqrt(ss / (n - 1)) };
}

/** audio-separator's normalisation before MDXC: a peak above 0.9 brought down to 0.9. */
export function peakScale(mix: AudioData): { mean: number; std: number } {
  const peak = Math.max(...mix.channels.map((ch) => ch.reduce((m, v) => Math.max(m, Math.abs(v)), 0)));
  return { mean: 0, std: peak > 0.9 ? peak / 0.9 : 1 };
}

const scaled = (mix: AudioData, s: { mean: number; std: number }): Stereo =>
  mix.channels.map((c) => Float32Array.from(c, (v) => (v - s.mean) / s.std)) as Stereo;

/** Collects a stage's blocks into whole stems, scaled back (y * std + mean). */
function collect(blocks: Array<Record<string, Stereo>>, stems: readonly string[], n: number, s: { mean: number; std: number }): Record<string, Stereo> {
  const out = Object.fromEntries(stems.map((k) => [k, [new Float32Array(n), new Float32Array(n)] as Stereo]));
  let at = 0;
  for (const b of blocks) {
    const len = b[stems[0]!]![0].length;
    for (const k of stems) for (let c = 0; c < 2; c++) out[k]![c]!.set(b[k]![c]!.subarray(0, Math.min(len, n - at)).map((v) => v * s.std + s.mean), at);
    at += len;
  }
  if (at < n) throw new Error(`stage returned ${at} samples for ${n}`);
  return out;
}

/** Loads `file` (a fixture path) from a scratch copy, as the engine would not: the reference the engine must equal. */
async function scratch<T>(files: Record<string, string | Buffer>, run: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'soundry-ckpt-direct-'));
  try {
    for (const [name, from] of Object.entries(files)) {
      if (typeof from === 'string') await copyFile(join(GOLDEN, from), join(dir, name));
      else await writeFile(join(dir, name), from);
    }
    return await run(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** DemucsStage directly on the mean/std-normalised mixture (the engine's default shift of 0.25 s), scaled back. */
export async function demucsDirect(from: string | Buffer, mix: AudioData, shiftSamples = Math.floor(44100 / 4)): Promise<Record<string, Stereo>> {
  return scratch({ 'net.th': from }, async (dir) => {
    const loaded = await loadHtdemucsCheckpoint(dir, 'net.th', { threads: 1 });
    const fft = (await loadFftProvider()).create(loaded.preset.nFft);
    try {
      const s = meanStd(mix);
      const stage = new DemucsStage(loaded.session, loaded.preset, fft, { shiftSamples });
      const blocks = [...(await stage.push(scaled(mix, s))), ...(await stage.end())];
      return collect(blocks, loaded.preset.sources, mix.channels[0]!.length, s);
    } finally {
      fft.dispose();
      await loaded.session.release();
    }
  });
}

/** RoformerStage directly on the peak-limited mixture, scaled back. */
export async function roformerDirect(ckpt: string, yaml: string, mix: AudioData): Promise<Record<string, Stereo>> {
  return scratch({ 'model.ckpt': ckpt, 'config.yaml': yaml }, async (dir) => {
    const loaded = await loadRoformer(dir, 'model.ckpt', 'config.yaml', { threads: 1 });
    const fft = (await loadFftProvider()).create(loaded.config.nFft);
    try {
      const s = peakScale(mix);
      const stage = loaded.createStage(fft);
      const blocks = [...(await stage.push(scaled(mix, s))), ...(await stage.end())];
      return collect(blocks, loaded.sources, mix.channels[0]!.length, s);
    } finally {
      fft.dispose();
      await loaded.session.release();
    }
  });
}

/** max |a - b| / max |b| over both channels. */
export function rel(a: readonly Float32Array[], b: readonly Float32Array[]): number {
  let d = 0;
  let m = 0;
  for (let c = 0; c < b.length; c++) {
    for (let i = 0; i < b[c]!.length; i++) {
      d = Math.max(d, Math.abs(a[c]![i]! - b[c]![i]!));
      m = Math.max(m, Math.abs(b[c]![i]!));
    }
  }
  return d / m;
}

/** max over samples of |mix - sum of stems| per channel. */
export function sumError(mix: AudioData, stems: Record<string, AudioData>): number {
  let e = 0;
  mix.channels.forEach((ch, c) => {
    for (let i = 0; i < ch.length; i++) {
      let s = 0;
      for (const st of Object.values(stems)) s += st.channels[c]![i]!;
      e = Math.max(e, Math.abs(ch[i]! - s));
    }
  });
  return e;
}
