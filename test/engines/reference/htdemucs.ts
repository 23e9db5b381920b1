/**
 * Soundry's HTDemucs path on a reference-harness case (harness/cases/htdemucs.py, htdemucs_6s.py): the checkpoint in
 * the authors' own format (Meta's `.th` package or the author's `.safetensors`) -> the graph Soundry builds from it
 * (loadHtdemucsCheckpoint) -> DemucsStage with shift 0 over the whole mixture, compared per stem with demucs'
 * `apply_model(model, mix, shifts=0, split=True, overlap=0.25)`. Also one network pass on the first segment, graph
 * outputs against the reference's frequency branch (`net.freq`, before the iSTFT) and time branch (`net.time`), and
 * the pass's stems (`net.output`) through the stage's iSTFT, for finding where a difference starts.
 */
import { constants, copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { loadFftProvider, type RealFft } from '../../../src/media/dsp/fft.js';
import type { Spectrogram } from '../../../src/media/dsp/stft.js';
import { DemucsStage, demucsIspec, demucsSpec } from '../../../src/engines/separation/onnx/htdemucs.js';
import { loadHtdemucsCheckpoint, type HtdemucsLoadOptions, type LoadedHtdemucs } from '../../../src/engines/separation/onnx/htdemucs-loader.js';
import type { Stereo } from '../../../src/engines/separation/onnx/overlap-add.js';
import { ort } from '../../../src/engines/separation/onnx/session.js';
import { channels, compareOutput, goldenTensor, readGolden, type Float32Tensor, type OutputError } from './golden.js';

const caseSchema = z.object({
  family: z.literal('htdemucs'),
  model: z.string().min(1),
  weights: z.object({ th: z.string().min(1), safetensors: z.string().min(1) }),
  sources: z.array(z.string().min(1)).min(1),
  sampleRate: z.literal(44100),
  segment: z.number().int().positive(),
  nFft: z.number().int().positive(),
  overlap: z.number().min(0).max(0.999),
  shifts: z.literal(0),
  samples: z.number().int().positive(),
  /** The 4-source case also ran apply_model(shifts=1) with its one random offset drawn as this. */
  shiftOffset: z.number().int().nonnegative().optional(),
  maxShift: z.number().int().positive().optional(),
});

export type HtdemucsCase = z.infer<typeof caseSchema>;

export async function readHtdemucsCase(dir: string): Promise<HtdemucsCase> {
  const path = join(dir, 'case.json');
  const parsed = caseSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
  if (!parsed.success) throw new Error(`${path}: ${parsed.error.message}`);
  return parsed.data;
}

export interface CompareOptions extends Pick<HtdemucsLoadOptions, 'threads'> {
  /** Which of the case's weight files to load (default: safetensors). */
  weights?: 'th' | 'safetensors';
  /** Samples per push, as a decoder would feed the stream (default: 1 s). */
  piece?: number;
  /** Also run the single-pass comparison (default true). */
  net?: boolean;
  /** Also run the shifts=1 comparison where the case has one (default true). */
  shifts?: boolean;
  /** Called with the loaded model and timings, for reports. */
  onLoad?: (loaded: LoadedHtdemucs, ms: { open: number }) => void;
  onRun?: (ms: { stage: number; segments: number }) => void;
}

/** [S, ...rest] golden tensor -> S arrays of the rest, flattened. */
function perSource(t: Float32Tensor, sources: number): Float32Array[] {
  const n = t.data.length / sources;
  return Array.from({ length: sources }, (_, s) => t.data.subarray(s * n, (s + 1) * n));
}

async function singlePass(loaded: LoadedHtdemucs, golden: Map<string, Float32Tensor>, dir: string, c: HtdemucsCase): Promise<OutputError[]> {
  const x = channels(goldenTensor(golden, 'net.input', dir));
  const fft = (await loadFftProvider()).create(c.nFft);
  const spec = x.map((ch) => demucsSpec(ch, fft, c.nFft));
  const { frames: T, bins: F } = spec[0]!;
  const L = c.segment;
  const specData = new Float32Array(4 * F * T);
  spec.forEach((s, ch) => {
    for (let f = 0; f < F; f++) {
      for (let t = 0; t < T; t++) {
        specData[((2 * ch) * F + f) * T + t] = s.re[t * F + f]!;
        specData[((2 * ch + 1) * F + f) * T + t] = s.im[t * F + f]!;
      }
    }
  });
  const wave = new Float32Array(2 * L);
  wave.set(x[0]!, 0);
  wave.set(x[1]!, L);
  const out = await loaded.session.run({
    waveform: new ort.Tensor('float32', wave, [1, 2, L]),
    spectrogram: new ort.Tensor('float32', specData, [1, 4, F, T]),
  });
  const S = c.sources.length;
  const freq = out.freq!.data as Float32Array;
  const time = out.time!.data as Float32Array;
  const errors = [
    compareOutput('net.freq', perSource({ shape: [], data: freq }, S), perSource(goldenTensor(golden, 'net.freq', dir), S)),
    compareOutput('net.time', perSource({ shape: [], data: time }, S), perSource(goldenTensor(golden, 'net.time', dir), S)),
  ];
  const stems: Float32Array[] = [];
  for (let s = 0; s < S; s++) {
    for (let ch = 0; ch < 2; ch++) {
      const z: Spectrogram = { frames: T, bins: F, re: new Float32Array(T * F), im: new Float32Array(T * F) };
      const re = (s * 4 + 2 * ch) * F * T;
      const im = re + F * T;
      for (let f = 0; f < F; f++) {
        for (let t = 0; t < T; t++) {
          z.re[t * F + f] = freq[re + f * T + t]!;
          z.im[t * F + f] = freq[im + f * T + t]!;
        }
      }
      const y = demucsIspec(z, fft, c.nFft, L);
      const tb = time.subarray((s * 2 + ch) * L, (s * 2 + ch + 1) * L);
      stems.push(y.map((v, i) => v + tb[i]!));
    }
  }
  errors.push(compareOutput('net.output', stems, perSource(goldenTensor(golden, 'net.output', dir), S * 2)));
  fft.dispose();
  return errors;
}

async function runStage(loaded: LoadedHtdemucs, fft: RealFft, mix: Float32Array[], c: HtdemucsCase, shiftSamples: number, piece: number): Promise<Record<string, Stereo>> {
  const stage = new DemucsStage(loaded.session, loaded.preset, fft, { overlap: c.overlap, shiftSamples });
  const n = mix[0]!.length;
  const got: Record<string, Stereo> = Object.fromEntries(c.sources.map((s) => [s, [new Float32Array(n), new Float32Array(n)] as Stereo]));
  let at = 0;
  const take = (outs: Record<string, Stereo>[]) => {
    for (const out of outs) {
      const len = out[c.sources[0]!]![0].length;
      for (const s of c.sources) {
        got[s]![0].set(out[s]![0], at);
        got[s]![1].set(out[s]![1], at);
      }
      at += len;
    }
  };
  for (let i = 0; i < n; i += piece) take(await stage.push([mix[0]!.subarray(i, i + piece), mix[1]!.subarray(i, i + piece)]));
  take(await stage.end());
  if (at !== n) throw new Error(`Soundry's HTDemucs stage returned ${at} samples for ${n}`);
  return got;
}

/**
 * Loads the case's checkpoint through Soundry's path and compares. The loader writes its graph beside the
 * checkpoint, so the checkpoint is copied into a temporary folder first (a reflink where the filesystem has them):
 * the case folder, committed or generated, is only read.
 */
export async function compareCase(dir: string, opts: CompareOptions = {}): Promise<OutputError[]> {
  const c = await readHtdemucsCase(dir);
  const golden = await readGolden(dir);
  const mix = channels(goldenTensor(golden, 'input', dir));
  if (mix.length !== 2) throw new Error(`${dir}: HTDemucs input must be stereo, has ${mix.length} channels`);
  const file = c.weights[opts.weights ?? 'safetensors'];
  const work = await mkdtemp(join(tmpdir(), 'soundry-htdemucs-'));
  let loaded: LoadedHtdemucs | undefined;
  try {
    await copyFile(join(dir, file), join(work, file), constants.COPYFILE_FICLONE);
    const t0 = performance.now();
    loaded = await loadHtdemucsCheckpoint(work, file, { threads: opts.threads });
    opts.onLoad?.(loaded, { open: performance.now() - t0 });
    if (loaded.preset.segment !== c.segment || loaded.preset.nFft !== c.nFft) {
      throw new Error(`${file}: read as segment ${loaded.preset.segment} / n_fft ${loaded.preset.nFft}, the case says ${c.segment} / ${c.nFft}`);
    }
    if (loaded.preset.sources.join() !== c.sources.join()) throw new Error(`${file}: sources ${loaded.preset.sources.join()} != ${c.sources.join()}`);
    const errors = opts.net === false ? [] : await singlePass(loaded, golden, dir, c);
    const fft = (await loadFftProvider()).create(c.nFft);
    const t1 = performance.now();
    const got = await runStage(loaded, fft, mix, c, 0, opts.piece ?? c.sampleRate);
    const step = Math.trunc((1 - c.overlap) * c.segment);
    opts.onRun?.({ stage: performance.now() - t1, segments: Math.ceil(mix[0]!.length / step) });
    for (const s of c.sources) errors.push(compareOutput(s, got[s]!, channels(goldenTensor(golden, `output.${s}`, dir))));
    if (c.shiftOffset !== undefined && c.maxShift !== undefined && opts.shifts !== false) {
      // demucs pads the mix with max_shift zeros per side and runs from `offset`: max_shift - offset zeros lead.
      const shifted = await runStage(loaded, fft, mix, c, c.maxShift - c.shiftOffset, opts.piece ?? c.sampleRate);
      for (const s of c.sources) errors.push(compareOutput(`shifts1.${s}`, shifted[s]!, channels(goldenTensor(golden, `net.shifts1.${s}`, dir))));
    }
    fft.dispose();
    return errors;
  } finally {
    await loaded?.session.release();
    await rm(work, { recursive: true, force: true });
  }
}
