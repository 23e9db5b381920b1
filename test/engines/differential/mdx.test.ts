/**
 * Differential test of Soundry's MDX-Net pipeline (src/engines/separation/onnx/mdx.ts + overlap-add.ts) against an
 * independent port of the reference pre/post-processing, on the same stand-in ONNX model.
 *
 * Reference (read, not copied): UVR's SeperateMDX.demix/run_model and python-audio-separator's MDXSeparator
 * (audio_separator/separator/architectures/mdx_separator.py, uvr_lib_v5/stft.py):
 *   trim = n_fft/2, chunk = hop*(dim_t-1), gen = chunk - 2*trim; mixture = trim zeros + mix + (gen + trim - n % gen) zeros;
 *   chunks every step = int((1-overlap)*chunk), the last ones cut at the mixture end and zero-padded to chunk;
 *   per chunk torch.stft(center, reflect, periodic Hann) of each channel, bins [0, dim_f) as [1, 4, dim_f, dim_t]
 *   (L.re, L.im, R.re, R.im), bins 0..2 zeroed, the model (denoise: -model(-x)/2 + model(x)/2), bins zero-padded back,
 *   torch.istft; weighted by numpy.hanning(actual length), summed, divided by the summed weights; trim cut off
 *   both ends, cut to n, times `compensate`.
 * Compensate: UVR and audio-separator up to 0.3x scale the primary stem by it; audio-separator since its Sep 2025
 * change (#203) leaves the primary unscaled and applies it in the secondary (mix - compensate*primary). The secondary
 * is the same in both; we follow UVR, where the compensate values come from.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { jsFftProvider, loadFftProvider, type FftProvider } from '../../../src/media/dsp/fft.js';
import { MdxStage, type MdxOptions } from '../../../src/engines/separation/onnx/mdx.js';
import { findPreset, type MdxPreset } from '../../../src/engines/separation/onnx/presets.js';
import type { Stereo } from '../../../src/engines/separation/onnx/overlap-add.js';
import { buildOnnxModel } from '../../fixtures/onnx-builder.js';
import { npHanning, torchIstft, torchStft, type Complex } from './reference-dsp.js';

/**
 * Stand-in with the real MDX signature: input [batch, 4, dim_f, dim_t] -> output of the same shape, a fixed linear
 * op y = x * A[c, f] * B[t]. A differs per channel, re/im and bin and B per frame, so a swapped channel, a shifted
 * bin or a misaligned frame changes the result.
 */
function standInMdx(dimF: number, dimT: number): Buffer {
  const a = Float32Array.from({ length: 4 * dimF }, (_, k) => 0.3 + 0.6 * Math.abs(Math.sin(0.7 * k + 0.3 * Math.floor(k / dimF))));
  const b = Float32Array.from({ length: dimT }, (_, t) => 0.8 + 0.4 * Math.cos(0.9 * t));
  return buildOnnxModel({
    name: 'mdx_standin',
    inputs: [{ name: 'input', elemType: 'float', shape: ['batch', 4, dimF, dimT] }],
    outputs: [{ name: 'output', elemType: 'float', shape: ['batch', 4, dimF, dimT] }],
    initializers: [
      { name: 'a', dataType: 'float', dims: [1, 4, dimF, 1], values: a },
      { name: 'b', dataType: 'float', dims: [1, 1, 1, dimT], values: b },
    ],
    nodes: [
      { opType: 'Mul', inputs: ['input', 'a'], outputs: ['xa'] },
      { opType: 'Mul', inputs: ['xa', 'b'], outputs: ['output'] },
    ],
  });
}

/** A stereo test signal: two sines per channel plus deterministic noise (xorshift), well inside full scale. */
function signal(n: number, seed = 7): Stereo {
  let s = seed >>> 0 || 1;
  const rnd = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32 - 0.5;
  };
  const l = new Float32Array(n);
  const r = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    l[i] = 0.3 * Math.sin(0.031 * i) + 0.1 * Math.sin(0.27 * i) + 0.1 * rnd();
    r[i] = 0.25 * Math.sin(0.047 * i + 1) + 0.1 * Math.cos(0.19 * i) + 0.1 * rnd();
  }
  return [l, r];
}

/** The reference model call on one chunk: STFT, cut to dim_f, low bins zeroed, model, iSTFT of the padded output. */
async function referenceRunModel(session: ort.InferenceSession, p: MdxPreset, part: Float64Array[], denoise: boolean): Promise<Float64Array[]> {
  const { nFft, hop, dimF, dimT } = p;
  const spek = new Float32Array(4 * dimF * dimT);
  part.forEach((ch, c) => {
    const frames = torchStft(ch, nFft, hop);
    expect(frames.length).toBe(dimT);
    for (let f = 3; f < dimF; f++) {
      for (let t = 0; t < dimT; t++) {
        spek[((2 * c) * dimF + f) * dimT + t] = frames[t]!.re[f]!;
        spek[((2 * c + 1) * dimF + f) * dimT + t] = frames[t]!.im[f]!;
      }
    }
  });
  const run = async (x: Float32Array) =>
    ((await session.run({ input: new ort.Tensor('float32', x, [1, 4, dimF, dimT]) })).output as ort.Tensor).data as Float32Array;
  let pred: Float64Array;
  if (denoise) {
    const neg = await run(spek.map((v) => -v));
    const pos = await run(spek);
    pred = Float64Array.from(pos, (v, i) => -0.5 * neg[i]! + 0.5 * v);
  } else {
    pred = Float64Array.from(await run(spek));
  }
  const bins = nFft / 2 + 1;
  return [0, 1].map((c) => {
    const frames: Complex[] = [];
    for (let t = 0; t < dimT; t++) {
      const re = new Float64Array(bins);
      const im = new Float64Array(bins);
      for (let f = 0; f < dimF; f++) {
        re[f] = pred[((2 * c) * dimF + f) * dimT + t]!;
        im[f] = pred[((2 * c + 1) * dimF + f) * dimT + t]!;
      }
      frames.push({ re, im });
    }
    return torchIstft(frames, nFft, hop);
  });
}

/** The reference demix over a whole input, then compensate. */
async function referenceDemix(session: ort.InferenceSession, p: MdxPreset, mix: Stereo, overlap: number, denoise: boolean): Promise<Float64Array[]> {
  const n = mix[0].length;
  const trim = p.nFft / 2;
  const chunk = p.hop * (p.dimT - 1);
  const gen = chunk - 2 * trim;
  const pad = gen + trim - (n % gen);
  const total = trim + n + pad;
  const mixture = mix.map((ch) => {
    const m = new Float64Array(total);
    m.set(ch, trim);
    return m;
  });
  const step = Math.trunc((1 - overlap) * chunk);
  const result = [new Float64Array(total), new Float64Array(total)];
  const divider = new Float64Array(total);
  for (let i = 0; i < total; i += step) {
    const end = Math.min(i + chunk, total);
    const actual = end - i;
    const window = overlap !== 0 ? npHanning(actual) : new Float64Array(actual).fill(1);
    const part = mixture.map((m) => {
      const x = new Float64Array(chunk);
      x.set(m.subarray(i, end));
      return x;
    });
    const tar = await referenceRunModel(session, p, part, denoise);
    for (let k = 0; k < actual; k++) {
      for (let c = 0; c < 2; c++) result[c]![i + k]! += tar[c]![k]! * window[k]!;
      divider[i + k]! += window[k]!;
    }
  }
  return result.map((r) => Float64Array.from({ length: n }, (_, k) => (r[trim + k]! / divider[trim + k]!) * p.compensate));
}

/** Soundry's streaming stage, fed in uneven pieces as a decoder would. */
async function soundry(session: ort.InferenceSession, p: MdxPreset, fft: FftProvider, mix: Stereo, opts: MdxOptions, piece: number): Promise<Float32Array[]> {
  const stage = new MdxStage(session, p, fft.create(p.nFft), opts);
  const parts: Stereo[] = [];
  for (let at = 0; at < mix[0].length; at += piece) {
    for (const out of await stage.push([mix[0].subarray(at, at + piece), mix[1].subarray(at, at + piece)])) parts.push(out[p.primary]!);
  }
  for (const out of await stage.end()) parts.push(out[p.primary]!);
  return [0, 1].map((c) => {
    const y = new Float32Array(parts.reduce((s, x) => s + x[c]!.length, 0));
    let o = 0;
    for (const x of parts) {
      y.set(x[c]!, o);
      o += x[c]!.length;
    }
    return y;
  });
}

function maxAbsDiff(a: ArrayLike<number>[], b: ArrayLike<number>[]): number {
  let m = 0;
  for (let c = 0; c < 2; c++) {
    expect(a[c]!.length).toBe(b[c]!.length);
    for (let i = 0; i < a[c]!.length; i++) m = Math.max(m, Math.abs(a[c]![i]! - b[c]![i]!));
  }
  return m;
}

const peak = (a: ArrayLike<number>[]) => Math.max(...a.map((ch) => Array.from(ch).reduce((m, v) => Math.max(m, Math.abs(v)), 0)));

/** Small geometry with the MDX signature: quick enough to sweep lengths, overlaps and denoise. */
const SMALL: MdxPreset = { family: 'mdx', name: 'standin-small', file: 'standin-small.onnx', nFft: 256, hop: 64, dimF: 100, dimT: 32, compensate: 1.021, primary: 'vocals' };

describe('MDX pipeline vs the UVR / audio-separator reference', () => {
  let dir = '';
  let fft: FftProvider;
  const sessions = new Map<string, ort.InferenceSession>();
  const session = async (p: MdxPreset) => {
    let s = sessions.get(p.name);
    if (!s) {
      const path = join(dir, p.file);
      await writeFile(path, standInMdx(p.dimF, p.dimT));
      s = await ort.InferenceSession.create(path, { intraOpNumThreads: 1 });
      sessions.set(p.name, s);
    }
    return s;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-mdx-diff-'));
    fft = await loadFftProvider();
  });
  afterAll(async () => {
    for (const s of sessions.values()) await s.release();
    await rm(dir, { recursive: true, force: true });
  });

  // Lengths: shorter than one gen block, exactly one, several with a short last chunk, and a long streamed input.
  const gen = SMALL.hop * (SMALL.dimT - 1) - SMALL.nFft;
  it.each([
    { n: 500, overlap: 0.25, denoise: false, piece: 97 },
    { n: gen, overlap: 0.25, denoise: false, piece: gen },
    { n: 3 * gen + 311, overlap: 0.25, denoise: false, piece: 1000 },
    { n: 5 * gen + 17, overlap: 0.5, denoise: false, piece: 333 },
    { n: 2 * gen + 5, overlap: 0.25, denoise: true, piece: 4096 },
  ])('agrees sample for sample: n=$n overlap=$overlap denoise=$denoise', async ({ n, overlap, denoise, piece }) => {
    const mix = signal(n, n);
    const s = await session(SMALL);
    const ref = await referenceDemix(s, SMALL, mix, overlap, denoise);
    const got = await soundry(s, SMALL, fft, mix, { overlap, denoise }, piece);
    const diff = maxAbsDiff(got, ref);
    console.log(`MDX small n=${n} overlap=${overlap} denoise=${denoise}: max |diff| = ${diff.toExponential(2)} (peak ${peak(ref).toFixed(3)})`);
    expect(peak(ref)).toBeGreaterThan(0.05);
    expect(diff).toBeLessThan(1e-5);
  });

  it('agrees with the JS FFT backend too', async () => {
    const mix = signal(2 * gen + 99, 3);
    const s = await session(SMALL);
    const ref = await referenceDemix(s, SMALL, mix, 0.25, false);
    const diff = maxAbsDiff(await soundry(s, SMALL, jsFftProvider(), mix, {}, 777), ref);
    expect(diff).toBeLessThan(1e-5);
  });

  it('agrees at a real preset geometry (Kim_Vocal_2: n_fft 7680, dim_f 3072, dim_t 256)', async () => {
    const real = findPreset('Kim_Vocal_2');
    if (real?.family !== 'mdx') throw new Error('Kim_Vocal_2 preset missing');
    const p: MdxPreset = { ...real, name: 'standin-kim', file: 'standin-kim.onnx' };
    // Shorter than one gen block: two chunks (the second a short one), the costly part being the slow reference FFT.
    const mix = signal(100_000, 11);
    const s = await session(p);
    const ref = await referenceDemix(s, p, mix, 0.25, false);
    const got = await soundry(s, p, fft, mix, {}, 44_100);
    const diff = maxAbsDiff(got, ref);
    console.log(`MDX Kim_Vocal_2 geometry n=100000: max |diff| = ${diff.toExponential(2)} (peak ${peak(ref).toFixed(3)})`);
    expect(diff).toBeLessThan(1e-5);
  }, 180_000);
});
