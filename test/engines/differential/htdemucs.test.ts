/**
 * Differential test of Soundry's HTDemucs pipeline (src/engines/separation/onnx/htdemucs.ts + overlap-add.ts)
 * against an independent port of demucs (facebookresearch/demucs: apply.py `apply_model`, `TensorChunk.padded`,
 * utils.py `center_trim`, htdemucs.py `_spec`/`_ispec`/`_magnitude`/`_mask` with cac, spec.py), read, not copied,
 * on the same stand-in ONNX model with the sevagh/demucs.onnx signature (STFT outside the graph):
 *   shifts=1: the mix is zero-padded by max_shift = 0.5 s each side and viewed from a random offset; the model sees
 *   (max_shift - offset) zeros then the mix, and the output drops them again. Soundry fixes that offset
 *   (shiftSamples = max_shift - offset) so runs are reproducible; here both run the same offsets.
 *   split: segments every int((1 - overlap) * segment), each TensorChunk padded to the segment symmetrically from the
 *   underlying tensor (real neighbours, zeros past its ends), out = ispec(freq) + time, center_trim'd, weighted by
 *   the triangle (1..L/2, L-L/2..1)/max ** transition_power cut to the chunk length, divided by the summed weights.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { loadFftProvider, type FftProvider } from '../../../src/media/dsp/fft.js';
import { DemucsStage } from '../../../src/engines/separation/onnx/htdemucs.js';
import { findPreset, type DemucsPreset } from '../../../src/engines/separation/onnx/presets.js';
import type { Stereo } from '../../../src/engines/separation/onnx/overlap-add.js';
import { buildOnnxModel } from '../../fixtures/onnx-builder.js';
import { torchIstft, torchStft, type Complex } from './reference-dsp.js';

const SAMPLE_RATE = 44100;
const MAX_SHIFT = Math.trunc(0.5 * SAMPLE_RATE);

/**
 * Stand-in with the demucs.onnx I/O: "input" [1, 2, L] and "x" [1, 4, F, T] -> "output" [1, S, 4, F, T] =
 * x * A[s, c, f] * B[t] and "add_67" [1, S, 2, L] = input * G[s, c]. Per-bin, per-frame and per-source weights make
 * a misplaced bin, frame, channel or source visible.
 */
function standInDemucs(p: DemucsPreset, bins: number, frames: number): Buffer {
  const S = p.sources.length;
  const a = Float32Array.from({ length: S * 4 * bins }, (_, k) => 0.2 + 0.5 * Math.abs(Math.sin(0.37 * k + 0.11 * Math.floor(k / bins))));
  const b = Float32Array.from({ length: frames }, (_, t) => 0.7 + 0.3 * Math.cos(0.5 * t));
  const g = Float32Array.from({ length: S * 2 }, (_, k) => 0.05 + 0.1 * k);
  if (p.layout === 'waveform') {
    // STFT inside the graph: mix [1, 2, L] -> sources [1, S, 2, L] = mix * G[s, c] * W[i]; the per-sample weight
    // makes a misplaced sample (padding, center_trim) visible.
    const w = Float32Array.from({ length: p.segment }, (_, i) => 0.6 + 0.4 * Math.sin(0.002 * i));
    return buildOnnxModel({
      name: 'htdemucs_waveform_standin',
      inputs: [{ name: 'mix', elemType: 'float', shape: [1, 2, p.segment] }],
      outputs: [{ name: 'sources', elemType: 'float', shape: [1, S, 2, p.segment] }],
      initializers: [
        { name: 'axis1', dataType: 'int64', dims: [1], values: [1] },
        { name: 'g', dataType: 'float', dims: [1, S, 2, 1], values: g },
        { name: 'w', dataType: 'float', dims: [1, 1, 1, p.segment], values: w },
      ],
      nodes: [
        { opType: 'Unsqueeze', inputs: ['mix', 'axis1'], outputs: ['m4'] },
        { opType: 'Mul', inputs: ['m4', 'g'], outputs: ['mg'] },
        { opType: 'Mul', inputs: ['mg', 'w'], outputs: ['sources'] },
      ],
    });
  }
  if (p.layout === 'spectral-core') {
    // openkara-models spectral-core contract v1: spectral [1, 2, 2, F, T] + mix [1, 2, L] -> spectral_out
    // [1, S, 2, 2, F, T] + time_out [1, S, 2, L]; the same weights, reshaped, as the sevagh stand-in below.
    return buildOnnxModel({
      name: 'htdemucs_spectral_core_standin',
      inputs: [
        { name: 'spectral', elemType: 'float', shape: [1, 2, 2, bins, frames] },
        { name: 'mix', elemType: 'float', shape: [1, 2, p.segment] },
      ],
      outputs: [
        { name: 'spectral_out', elemType: 'float', shape: [1, S, 2, 2, bins, frames] },
        { name: 'time_out', elemType: 'float', shape: [1, S, 2, p.segment] },
      ],
      initializers: [
        { name: 'axis1', dataType: 'int64', dims: [1], values: [1] },
        { name: 'a', dataType: 'float', dims: [1, S, 2, 2, bins, 1], values: a },
        { name: 'b', dataType: 'float', dims: [1, 1, 1, 1, 1, frames], values: b },
        { name: 'g', dataType: 'float', dims: [1, S, 2, 1], values: g },
      ],
      nodes: [
        { opType: 'Unsqueeze', inputs: ['spectral', 'axis1'], outputs: ['x6'] },
        { opType: 'Mul', inputs: ['x6', 'a'], outputs: ['xa'] },
        { opType: 'Mul', inputs: ['xa', 'b'], outputs: ['spectral_out'] },
        { opType: 'Unsqueeze', inputs: ['mix', 'axis1'], outputs: ['w4'] },
        { opType: 'Mul', inputs: ['w4', 'g'], outputs: ['time_out'] },
      ],
    });
  }
  return buildOnnxModel({
    name: 'htdemucs_standin',
    inputs: [
      { name: 'input', elemType: 'float', shape: [1, 2, p.segment] },
      { name: 'x', elemType: 'float', shape: [1, 4, bins, frames] },
    ],
    outputs: [
      { name: 'output', elemType: 'float', shape: [1, S, 4, bins, frames] },
      { name: 'add_67', elemType: 'float', shape: [1, S, 2, p.segment] },
    ],
    initializers: [
      { name: 'axis1', dataType: 'int64', dims: [1], values: [1] },
      { name: 'a', dataType: 'float', dims: [1, S, 4, bins, 1], values: a },
      { name: 'b', dataType: 'float', dims: [1, 1, 1, 1, frames], values: b },
      { name: 'g', dataType: 'float', dims: [1, S, 2, 1], values: g },
    ],
    nodes: [
      { opType: 'Unsqueeze', inputs: ['x', 'axis1'], outputs: ['x5'] },
      { opType: 'Mul', inputs: ['x5', 'a'], outputs: ['xa'] },
      { opType: 'Mul', inputs: ['xa', 'b'], outputs: ['output'] },
      { opType: 'Unsqueeze', inputs: ['input', 'axis1'], outputs: ['w4'] },
      { opType: 'Mul', inputs: ['w4', 'g'], outputs: ['add_67'] },
    ],
  });
}

function signal(n: number, seed: number): Stereo {
  let s = seed >>> 0 || 1;
  const rnd = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32 - 0.5;
  };
  const l = Float32Array.from({ length: n }, (_, i) => 0.3 * Math.sin(0.013 * i) + 0.15 * Math.sin(0.21 * i) + 0.1 * rnd());
  const r = Float32Array.from({ length: n }, (_, i) => 0.25 * Math.cos(0.017 * i) + 0.1 * Math.sin(0.33 * i) + 0.1 * rnd());
  return [l, r];
}

/** numpy/torch 'reflect' padding by (left, right). */
function reflectPad(x: Float64Array, left: number, right: number): Float64Array {
  const n = x.length;
  return Float64Array.from({ length: n + left + right }, (_, i) => {
    let j = i - left;
    while (j < 0 || j >= n) j = j < 0 ? -j : 2 * (n - 1) - j;
    return x[j]!;
  });
}

/** HTDemucs._spec: frames [2, 2 + le) of a normalised STFT of the reflect-padded signal, Nyquist bin dropped. */
function refSpec(x: Float64Array, nFft: number): Complex[] {
  const hl = nFft / 4;
  const le = Math.ceil(x.length / hl);
  const pad = Math.floor(hl / 2) * 3;
  const frames = torchStft(reflectPad(x, pad, pad + le * hl - x.length), nFft, hl);
  expect(frames.length).toBe(le + 4);
  const norm = 1 / Math.sqrt(nFft);
  return frames.slice(2, 2 + le).map((f) => ({ re: f.re.slice(0, nFft / 2).map((v) => v * norm), im: f.im.slice(0, nFft / 2).map((v) => v * norm) }));
}

/** HTDemucs._ispec: Nyquist and 2 frames per side zero-padded back, normalised iSTFT of length le, [pad, pad + length). */
function refIspec(z: Complex[], nFft: number, length: number): Float64Array {
  const hl = nFft / 4;
  const bins = nFft / 2 + 1;
  const zero = (): Complex => ({ re: new Float64Array(bins), im: new Float64Array(bins) });
  const scale = Math.sqrt(nFft);
  const frames = [zero(), zero(), ...z.map((f) => {
    const g = zero();
    for (let k = 0; k < f.re.length; k++) {
      g.re[k] = f.re[k]! * scale;
      g.im[k] = f.im[k]! * scale;
    }
    return g;
  }), zero(), zero()];
  const pad = Math.floor(hl / 2) * 3;
  const le = hl * Math.ceil(length / hl) + 2 * pad;
  return torchIstft(frames, nFft, hl, le).slice(pad, pad + length);
}

/** One model call on a padded segment: cac spectrogram in, ispec(freq) + time out, per source and channel. */
async function refModel(session: ort.InferenceSession, p: DemucsPreset, seg: Float64Array[]): Promise<Float64Array[][]> {
  const L = p.segment;
  if (p.layout === 'waveform') {
    const mix = new Float32Array(2 * L);
    mix.set(seg[0]!, 0);
    mix.set(seg[1]!, L);
    const y = ((await session.run({ mix: new ort.Tensor('float32', mix, [1, 2, L]) })).sources as ort.Tensor).data as Float32Array;
    return p.sources.map((_, s) => [0, 1].map((c) => Float64Array.from(y.subarray((s * 2 + c) * L, (s * 2 + c + 1) * L))));
  }
  const specs = seg.map((ch) => refSpec(ch, p.nFft));
  const T = specs[0]!.length;
  const F = p.nFft / 2;
  const x = new Float32Array(4 * F * T);
  specs.forEach((s, c) => {
    for (let f = 0; f < F; f++) {
      for (let t = 0; t < T; t++) {
        x[((2 * c) * F + f) * T + t] = s[t]!.re[f]!;
        x[((2 * c + 1) * F + f) * T + t] = s[t]!.im[f]!;
      }
    }
  });
  const wave = new Float32Array(2 * L);
  wave.set(seg[0]!, 0);
  wave.set(seg[1]!, L);
  // The contract's (channel, re/im) axes are the sevagh layout's complex-as-channels axis split in two.
  const core = p.layout === 'spectral-core';
  const res = core
    ? await session.run({ mix: new ort.Tensor('float32', wave, [1, 2, L]), spectral: new ort.Tensor('float32', x, [1, 2, 2, F, T]) })
    : await session.run({ input: new ort.Tensor('float32', wave, [1, 2, L]), x: new ort.Tensor('float32', x, [1, 4, F, T]) });
  const freq = ((core ? res.spectral_out : res.output) as ort.Tensor).data as Float32Array;
  const time = ((core ? res.time_out : res.add_67) as ort.Tensor).data as Float32Array;
  return p.sources.map((_, s) =>
    [0, 1].map((c) => {
      const z: Complex[] = [];
      for (let t = 0; t < T; t++) {
        const re = new Float64Array(F);
        const im = new Float64Array(F);
        for (let f = 0; f < F; f++) {
          re[f] = freq[(((s * 4 + 2 * c) * F) + f) * T + t]!;
          im[f] = freq[(((s * 4 + 2 * c + 1) * F) + f) * T + t]!;
        }
        z.push({ re, im });
      }
      const y = refIspec(z, p.nFft, L);
      return y.map((v, i) => v + time[(s * 2 + c) * L + i]!);
    }),
  );
}

/** apply_model(shifts=1 with the given random offset, split=True, overlap, transition_power). */
async function refApplyModel(session: ort.InferenceSession, p: DemucsPreset, mix: Stereo, offset: number, overlap: number, power = 1): Promise<Float64Array[][]> {
  const n = mix[0].length;
  // padded_mix = mix.padded(n + 2 * max_shift): max_shift zeros each side.
  const base = mix.map((ch) => {
    const a = new Float64Array(n + 2 * MAX_SHIFT);
    a.set(ch, MAX_SHIFT);
    return a;
  });
  // shifted = TensorChunk(padded_mix, offset, n + max_shift - offset)
  const shiftedLen = Math.min(base[0]!.length - offset, n + MAX_SHIFT - offset);
  const L = p.segment;
  const stride = Math.trunc((1 - overlap) * L);
  const half = Math.floor(L / 2);
  const tri = Float64Array.from({ length: L }, (_, i) => (i < half ? i + 1 : L - i));
  const wmax = tri.reduce((m, v) => Math.max(m, v), 0);
  const weight = tri.map((v) => (v / wmax) ** power);
  const out = p.sources.map(() => [new Float64Array(shiftedLen), new Float64Array(shiftedLen)]);
  const sum = new Float64Array(shiftedLen);
  for (let off = 0; off < shiftedLen; off += stride) {
    // TensorChunk(shifted, off, L).padded(L): start in the underlying tensor, zeros outside it.
    const length = Math.min(shiftedLen - off, L);
    const delta = L - length;
    const start = offset + off - Math.floor(delta / 2);
    const seg = base.map((b) => Float64Array.from({ length: L }, (_, i) => (start + i >= 0 && start + i < b.length ? b[start + i]! : 0)));
    const y = await refModel(session, p, seg);
    // center_trim to `length`, then weight[:length].
    const trimAt = Math.floor(delta / 2);
    y.forEach((src, s) => src.forEach((ch, c) => {
      for (let k = 0; k < length; k++) out[s]![c]![off + k]! += weight[k]! * ch[trimAt + k]!;
    }));
    for (let k = 0; k < length; k++) sum[off + k]! += weight[k]!;
  }
  // out /= sum_weight, then shifted_out[..., max_shift - offset:]
  return out.map((src) => src.map((ch) => ch.map((v, i) => v / sum[i]!).slice(MAX_SHIFT - offset)));
}

async function soundry(session: ort.InferenceSession, p: DemucsPreset, fft: FftProvider, mix: Stereo, shiftSamples: number, overlap: number, piece: number) {
  const stage = new DemucsStage(session, p, fft.create(p.nFft), { shiftSamples, overlap });
  const parts: Array<Record<string, Stereo>> = [];
  for (let at = 0; at < mix[0].length; at += piece) parts.push(...(await stage.push([mix[0].subarray(at, at + piece), mix[1].subarray(at, at + piece)])));
  parts.push(...(await stage.end()));
  return p.sources.map((name) =>
    [0, 1].map((c) => {
      const y = new Float32Array(parts.reduce((s, x) => s + x[name]![c]!.length, 0));
      let o = 0;
      for (const x of parts) {
        y.set(x[name]![c]!, o);
        o += x[name]![c]!.length;
      }
      return y;
    }),
  );
}

/** Small stand-in geometry (the real one, 343980 samples at n_fft 4096, makes the plain-DFT reference too slow). */
const SMALL: DemucsPreset = { family: 'htdemucs', name: 'standin-htdemucs', file: 'standin-htdemucs.onnx', sources: ['drums', 'bass', 'other', 'vocals'], segment: 6000, nFft: 256 };

describe('HTDemucs pipeline vs demucs apply_model', () => {
  let dir = '';
  let fft: FftProvider;
  let session: ort.InferenceSession;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-demucs-diff-'));
    fft = await loadFftProvider();
    const path = join(dir, SMALL.file);
    const hl = SMALL.nFft / 4;
    await writeFile(path, standInDemucs(SMALL, SMALL.nFft / 2, Math.ceil(SMALL.segment / hl)));
    session = await ort.InferenceSession.create(path, { intraOpNumThreads: 1 });
  });
  afterAll(async () => {
    await session?.release();
    await rm(dir, { recursive: true, force: true });
  });

  /** Max |Soundry - reference| over every source and channel, and the reference's peak. */
  function compare(got: Float32Array[][], ref: Float64Array[][], n: number): { diff: number; peak: number } {
    let diff = 0;
    let peak = 0;
    ref.forEach((src, s) => src.forEach((ch, c) => {
      expect(got[s]![c]!.length).toBe(n);
      for (let i = 0; i < n; i++) {
        diff = Math.max(diff, Math.abs(got[s]![c]![i]! - ch[i]!));
        peak = Math.max(peak, Math.abs(ch[i]!));
      }
    }));
    return { diff, peak };
  }

  it.each([
    { n: 4000, lead: 0, overlap: 0.25, piece: 999 },
    { n: 6000, lead: 0, overlap: 0.25, piece: 6000 },
    { n: 20_011, lead: 0, overlap: 0.25, piece: 1500 },
    { n: 20_011, lead: 1234, overlap: 0.25, piece: 2048 },
    { n: 15_000, lead: MAX_SHIFT, overlap: 0.5, piece: 4410 },
  ])('agrees sample for sample: n=$n shift lead $lead overlap=$overlap', async ({ n, lead, overlap, piece }) => {
    const mix = signal(n, n + lead);
    const ref = await refApplyModel(session, SMALL, mix, MAX_SHIFT - lead, overlap);
    const { diff, peak } = compare(await soundry(session, SMALL, fft, mix, lead, overlap, piece), ref, n);
    console.log(`HTDemucs n=${n} lead=${lead} overlap=${overlap}: max |diff| = ${diff.toExponential(2)} (peak ${peak.toFixed(3)})`);
    expect(peak).toBeGreaterThan(0.05);
    expect(diff).toBeLessThan(1e-5);
  }, 60_000);

  it.each([
    { n: 20_011, lead: 1234, overlap: 0.25, piece: 2048 },
    { n: 15_000, lead: MAX_SHIFT, overlap: 0.5, piece: 4410 },
  ])('spectral-core layout (openkara contract v1) agrees too, and equals the sevagh layout: n=$n lead $lead', async ({ n, lead, overlap, piece }) => {
    const p: DemucsPreset = { ...SMALL, name: 'standin-htdemucs-core', file: 'standin-htdemucs-core.onnx', layout: 'spectral-core' };
    const path = join(dir, p.file);
    await writeFile(path, standInDemucs(p, p.nFft / 2, Math.ceil(p.segment / (p.nFft / 4))));
    const s = await ort.InferenceSession.create(path, { intraOpNumThreads: 1 });
    try {
      const mix = signal(n, n + lead);
      const ref = await refApplyModel(s, p, mix, MAX_SHIFT - lead, overlap);
      const got = await soundry(s, p, fft, mix, lead, overlap, piece);
      const { diff, peak } = compare(got, ref, n);
      console.log(`HTDemucs spectral-core n=${n} lead=${lead}: max |diff| = ${diff.toExponential(2)} (peak ${peak.toFixed(3)})`);
      expect(peak).toBeGreaterThan(0.05);
      expect(diff).toBeLessThan(1e-5);
      // Same weights in both stand-ins: a layout mix-up (axes, ranks, input order) would break this equality.
      const sevagh = await soundry(session, SMALL, fft, mix, lead, overlap, piece);
      expect(compare(got, sevagh.map((src) => src.map((ch) => Float64Array.from(ch))), n).diff).toBeLessThan(1e-6);
    } finally {
      await s.release();
    }
  }, 60_000);

  it.each([
    { n: 20_011, lead: 1234, overlap: 0.25, piece: 2048 },
    { n: 15_000, lead: MAX_SHIFT, overlap: 0.5, piece: 4410 },
  ])('waveform layout (STFT inside the graph, 6 sources) agrees too: n=$n lead $lead', async ({ n, lead, overlap, piece }) => {
    const p: DemucsPreset = { ...SMALL, name: 'standin-htdemucs-wave', file: 'standin-htdemucs-wave.onnx', sources: [...SMALL.sources, 'guitar', 'piano'] };
    const path = join(dir, p.file);
    await writeFile(path, standInDemucs({ ...p, layout: 'waveform' }, p.nFft / 2, Math.ceil(p.segment / (p.nFft / 4))));
    const s = await ort.InferenceSession.create(path, { intraOpNumThreads: 1 });
    try {
      const mix = signal(n, n + lead);
      // The preset does not say `waveform`: the stage must read it from the graph's inputs.
      const ref = await refApplyModel(s, { ...p, layout: 'waveform' }, mix, MAX_SHIFT - lead, overlap);
      const { diff, peak } = compare(await soundry(s, p, fft, mix, lead, overlap, piece), ref, n);
      console.log(`HTDemucs waveform n=${n} lead=${lead}: max |diff| = ${diff.toExponential(2)} (peak ${peak.toFixed(3)})`);
      expect(peak).toBeGreaterThan(0.05);
      expect(diff).toBeLessThan(1e-6);
    } finally {
      await s.release();
    }
  }, 60_000);

  it.each(['htdemucs', 'htdemucs-openkara'])('agrees at the real geometry of preset %s (segment 343980, n_fft 4096: 2048 bins x 336 frames)', async (name) => {
    const real = findPreset(name);
    if (real?.family !== 'htdemucs') throw new Error(`${name} preset missing`);
    const p: DemucsPreset = { ...real, name: `standin-${name}-real`, file: `standin-${name}-real.onnx` };
    const path = join(dir, p.file);
    await writeFile(path, standInDemucs(p, p.nFft / 2, Math.ceil(p.segment / (p.nFft / 4))));
    const s = await ort.InferenceSession.create(path, { intraOpNumThreads: 1 });
    try {
      // One segment with an odd padding delta (center_trim drops the extra sample on the right), no shift.
      const n = 200_001;
      const mix = signal(n, 5);
      const ref = await refApplyModel(s, p, mix, MAX_SHIFT, 0.25);
      const { diff, peak } = compare(await soundry(s, p, fft, mix, 0, 0.25, 44_100), ref, n);
      console.log(`HTDemucs real geometry (${name}) n=${n}: max |diff| = ${diff.toExponential(2)} (peak ${peak.toFixed(3)})`);
      expect(peak).toBeGreaterThan(0.05);
      expect(diff).toBeLessThan(1e-5);
    } finally {
      await s.release();
    }
  }, 240_000);
});
