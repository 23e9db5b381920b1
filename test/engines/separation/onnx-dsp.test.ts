import { describe, expect, it } from 'vitest';
import { jsFftProvider, loadFftProvider } from '../../../src/media/dsp/fft.js';
import { istft, stft } from '../../../src/media/dsp/stft.js';
import { demucsIspec, demucsSpec } from '../../../src/engines/separation/onnx/htdemucs.js';
import { demucsTriangle, OverlapAddStream, symmetricHann, type ChunkPlan, type Stereo } from '../../../src/engines/separation/onnx/overlap-add.js';
import { mdxPlan } from '../../../src/engines/separation/onnx/mdx.js';
import { StreamResampler } from '../../../src/engines/separation/onnx/stream.js';
import { resample } from '../../../src/media/resample.js';

/** torch.stft(center=True, reflect, periodic hann, onesided), straight from the definition in float64. */
function naiveTorchStft(x: ArrayLike<number>, nFft: number, hop: number, t: number, k: number): [number, number] {
  const n = x.length;
  const refl = (j: number) => (j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j);
  let re = 0;
  let im = 0;
  for (let m = 0; m < nFft; m++) {
    const v = x[refl(t * hop + m - nFft / 2)]! * (0.5 - 0.5 * Math.cos((2 * Math.PI * m) / nFft));
    re += v * Math.cos((-2 * Math.PI * k * m) / nFft);
    im += v * Math.sin((-2 * Math.PI * k * m) / nFft);
  }
  return [re, im];
}

const ramp = Float32Array.from({ length: 30 }, (_, i) => Math.sin(0.01 * i * i) + (0.1 * i) / 30);
const noise = (n: number, seed: number) => {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 31 - 1) * 0.5);
};

describe('STFT with torch.stft semantics at the model sizes', () => {
  it('matches numbers computed with numpy (reflect pad, periodic Hann) for n_fft 8, hop 2', () => {
    const s = stft(ramp, jsFftProvider().create(8), { nFft: 8, hop: 2 });
    expect(s.frames).toBe(16);
    // numpy: np.fft.rfft of the reflect-padded, Hann-windowed frames.
    const ref: Array<[number, number, number, number]> = [
      [0, 0, 0.09867088985110375, 0],
      [2, 3, -0.025982590713229115, -0.10038626589587729],
      [4, 15, 0.16269699967607454, 0],
      [1, 7, -1.96475844229177, -0.4090586065888383],
    ];
    for (const [k, t, re, im] of ref) {
      expect(s.re[t * s.bins + k]).toBeCloseTo(re, 5);
      expect(s.im[t * s.bins + k]).toBeCloseTo(im, 5);
    }
  });

  it.each([7680, 6144, 5120, 4096])('matches a direct DFT and inverts exactly at n_fft %i', async (nFft) => {
    const fft = (await loadFftProvider()).create(nFft);
    const x = noise(1024 * 20, nFft);
    const s = stft(x, fft, { nFft, hop: 1024 });
    for (const [t, k] of [[0, 5], [3, 100], [10, nFft / 2 - 7], [20, 1]] as const) {
      const [re, im] = naiveTorchStft(x, nFft, 1024, t, k);
      expect(Math.abs(s.re[t * s.bins + k]! - re)).toBeLessThan(2e-3);
      expect(Math.abs(s.im[t * s.bins + k]! - im)).toBeLessThan(2e-3);
    }
    const y = istft(s, fft, { nFft, hop: 1024, length: x.length });
    let err = 0;
    for (let i = 0; i < x.length; i++) err = Math.max(err, Math.abs(y[i]! - x[i]!));
    expect(err).toBeLessThan(1e-5);
    fft.dispose();
  });

  it('HTDemucs _spec matches numpy numbers (normalised, Nyquist and 2 edge frames dropped)', () => {
    const z = demucsSpec(ramp, jsFftProvider().create(16), 16);
    expect([z.bins, z.frames]).toEqual([8, 8]);
    const ref: Array<[number, number, number, number]> = [
      [0, 0, 0.2607176742374101, 0],
      [1, 2, -0.897399067218439, 0.29519475255532046],
      [3, 5, 0.0337706733604486, -0.03856621098137922],
      [7, 7, -0.036651376285517956, 0.01560168534510109],
      [5, 1, 0.00022563306148255802, -0.002798880864173292],
    ];
    for (const [f, t, re, im] of ref) {
      expect(z.re[t * z.bins + f]).toBeCloseTo(re, 5);
      expect(z.im[t * z.bins + f]).toBeCloseTo(im, 5);
    }
  });

  it('HTDemucs _ispec(_spec(x)) gives x back away from the segment edges', async () => {
    const fft = (await loadFftProvider()).create(4096);
    // Band-limited: _spec drops the Nyquist bin, which white noise would miss.
    const x = Float32Array.from({ length: 343980 }, (_, i) => 0.3 * Math.sin(0.05 * i) + 0.2 * Math.sin(0.31 * i + 1));
    const y = demucsIspec(demucsSpec(x, fft, 4096), fft, 4096, x.length);
    expect(y.length).toBe(x.length);
    let err = 0;
    for (let i = 4096; i < x.length - 4096; i++) err = Math.max(err, Math.abs(y[i]! - x[i]!));
    expect(err).toBeLessThan(1e-5);
  });
});

/** The reference loops written out over whole arrays, as the Python does it. */
function wholeArrayLoop(x: Float32Array, plan: ChunkPlan, model: (chunk: Float32Array, start: number, len: number) => Float32Array): Float32Array {
  const total = plan.mixtureLength(x.length);
  const mix = new Float32Array(total);
  mix.set(x, plan.lead);
  const result = new Float64Array(total);
  const divider = new Float64Array(total);
  for (let i = 0; i < total; i += plan.step) {
    const len = Math.min(plan.chunk, total - i);
    const w = plan.window(len);
    const y = model(mix, i, len);
    for (let u = 0; u < len; u++) {
      result[i + u]! += w[u]! * y[u]!;
      divider[i + u]! += w[u]!;
    }
  }
  return Float32Array.from({ length: x.length }, (_, q) => (divider[q + plan.lead]! > 0 ? result[q + plan.lead]! / divider[q + plan.lead]! : 0));
}

describe('streamed segment loops equal the whole-array loops', () => {
  // A position-dependent "model" so that any error in windows, offsets or divisions shows.
  const model = (src: Float32Array, start: number, len: number) => Float32Array.from({ length: len }, (_, u) => src[start + u]! * (1 + 0.001 * (start / 100)) + 0.01 * Math.sin(u));
  const plans: Array<[string, ChunkPlan]> = [
    ['MDX (hann, trim, tail pad)', mdxPlan({ family: 'mdx', name: 't', file: 't', nFft: 512, dimF: 128, dimT: 32, hop: 64, compensate: 1, primary: 'vocals' })],
    ['demucs (triangle, shift)', { chunk: 1000, step: 750, lead: 123, mixtureLength: (n) => 123 + n, window: () => demucsTriangle(1000) }],
  ];
  it.each(plans)('%s', async (_n, plan) => {
    for (const n of [50, 1999, 7777]) {
      const x = noise(n, n);
      const expected = wholeArrayLoop(x, plan, model);
      // The streamed runner sees only read(); it must return what the whole-array mixture holds.
      const stream = new OverlapAddStream(plan, ['s'], async (req) => {
        const chunk = req.read(req.start, req.start + plan.chunk);
        const local = new Float32Array(req.start + plan.chunk);
        local.set(chunk[0], req.start);
        const y = model(local, req.start, req.length);
        return { s: [y, y] as Stereo };
      });
      const got: number[] = [];
      const take = (blocks: Array<Record<string, Stereo>>) => blocks.forEach((b) => got.push(...b.s![0]));
      for (let at = 0; at < n; at += 333) take(await stream.push([x.subarray(at, at + 333), x.subarray(at, at + 333)]));
      take(await stream.end());
      expect(got.length).toBe(n);
      let err = 0;
      for (let i = 0; i < n; i++) err = Math.max(err, Math.abs(got[i]! - expected[i]!));
      expect(err).toBeLessThan(1e-5);
    }
  });

  it('numpy.hanning and the demucs triangle have the reference shapes', () => {
    expect(Array.from(symmetricHann(5))).toEqual([0, 0.5, 1, 0.5, 0].map((v) => expect.closeTo(v, 12)));
    expect(Array.from(demucsTriangle(6))).toEqual([1, 2, 3, 3, 2, 1].map((v) => v / 3));
  });
});

describe('streaming resampler', () => {
  it.each([[48000, 44100], [44100, 48000], [22050, 44100], [8000, 44100]])('%i -> %i equals resampling the whole signal', (from, to) => {
    const x = noise(from, from);
    const whole = resample(x, from, to);
    const r = new StreamResampler(from, to);
    const parts: number[] = [];
    for (let at = 0; at < x.length; at += 4999) parts.push(...r.push(x.subarray(at, at + 4999)));
    parts.push(...r.end());
    expect(parts.length).toBe(whole.length);
    let err = 0;
    for (let i = 0; i < whole.length; i++) err = Math.max(err, Math.abs(parts[i]! - whole[i]!));
    expect(err).toBeLessThan(1e-6);
  });
});
