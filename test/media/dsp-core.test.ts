import { describe, expect, it } from 'vitest';
import { jsFftProvider, loadFftProvider, RealFFT } from '../../src/media/dsp/fft.js';
import { resampleOnce, StreamResampler, type ResampleQuality } from '../../src/media/dsp/resample.js';
import { hann, sqrtHann, StftProcessor } from '../../src/media/dsp/stft-stream.js';

/**
 * The shared audio core the enhancement stages now run on (issue 28, "one audio core"). bench/dsp-core.ts shows the
 * moved FFT and streaming STFT bit-identical to the engine's former copies; here the properties that must hold
 * whatever the implementation: a naive DFT as reference, perfect reconstruction, block-size invariance, alias rejection.
 */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
}

function chunks(x: Float32Array, seed: number, max: number): Float32Array[] {
  const r = rng(seed);
  const out: Float32Array[] = [];
  for (let s = 0; s < x.length;) {
    const k = Math.min(x.length - s, Math.floor((r() + 0.5) * max)); // 0-sample blocks included on purpose
    out.push(x.subarray(s, s + k));
    s += k;
  }
  return out;
}

const concat = (parts: Float32Array[]) => {
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
};

describe('RealFFT (the JS real FFT every provider uses for powers of two)', () => {
  it.each([4, 8, 64, 512, 2048])('matches a naive float64 DFT at n=%i and inverts it', (n) => {
    const r = rng(n);
    const x = Float64Array.from({ length: n }, r);
    const fft = new RealFFT(n);
    const re = new Float64Array(n / 2 + 1), im = new Float64Array(n / 2 + 1);
    fft.forward(x, re, im);
    let peak = 0, err = 0;
    for (let k = 0; k <= n / 2; k++) {
      let sr = 0, si = 0;
      for (let t = 0; t < n; t++) {
        sr += x[t]! * Math.cos((2 * Math.PI * k * t) / n);
        si -= x[t]! * Math.sin((2 * Math.PI * k * t) / n);
      }
      peak = Math.max(peak, Math.hypot(sr, si));
      err = Math.max(err, Math.hypot(sr - re[k]!, si - im[k]!));
    }
    // float64 all the way: error is rounding only (~n * 1e-16 of the peak).
    expect(err / peak).toBeLessThan(1e-12);
    const back = new Float64Array(n);
    fft.inverse(re, im, back);
    for (let i = 0; i < n; i++) expect(Math.abs(back[i]! - x[i]!)).toBeLessThan(1e-13);
  });

  it('is what jsFftProvider gives for powers of two, and agrees with pffft (float32) within 1e-6 of the peak', async () => {
    expect(jsFftProvider().create(1024)).toBeInstanceOf(RealFFT);
    const pffft = (await loadFftProvider()).create(1024);
    const x = Float32Array.from({ length: 1024 }, rng(7));
    const a = [new Float32Array(513), new Float32Array(513)] as const;
    const b = [new Float32Array(513), new Float32Array(513)] as const;
    new RealFFT(1024).forward(x, a[0], a[1]);
    pffft.forward(x, b[0], b[1]);
    let peak = 0, err = 0;
    for (let k = 0; k < 513; k++) {
      peak = Math.max(peak, Math.hypot(a[0][k]!, a[1][k]!));
      err = Math.max(err, Math.hypot(a[0][k]! - b[0][k]!, a[1][k]! - b[1][k]!));
    }
    expect(err / peak).toBeLessThan(1e-6);
    pffft.dispose();
  });

  it('refuses sizes that are not powers of two', () => {
    expect(() => new RealFFT(48)).toThrow(/power of two/);
  });
});

describe('StftProcessor (streaming STFT / overlap-add)', () => {
  const x = Float32Array.from({ length: 48000 }, rng(11));
  const cases = [
    { name: 'hann 2048 / hop 512', size: 2048, hop: 512, win: hann(2048) },
    { name: 'hann 512 / hop 128', size: 512, hop: 128, win: hann(512) },
    { name: 'sqrt-hann 512 / hop 256', size: 512, hop: 256, win: sqrtHann(512) },
  ];

  it.each(cases)('reconstructs its input exactly, delayed by size - hop ($name), whatever the block sizes', ({ size, hop, win }) => {
    const run = (seed: number) => {
      const p = new StftProcessor({ size, hop, analysis: win, synthesis: win }, () => undefined);
      return { out: concat(chunks(x, seed, 3000).map((c) => p.process(c))), latency: p.latency };
    };
    const { out, latency } = run(1);
    expect(latency).toBe(size - hop);
    // Whole frames only: the last partial hop stays inside until more input comes.
    expect(out.length).toBe(Math.floor((x.length) / hop) * hop);
    let maxErr = 0;
    for (let i = latency; i < out.length; i++) maxErr = Math.max(maxErr, Math.abs(out[i]! - x[i - latency]!));
    // float64 transforms and overlap-add, rounded once to float32 at the output.
    expect(maxErr).toBeLessThan(1e-6);
    expect(run(2).out).toEqual(out); // block-size invariant, bit for bit
  });

  it('runs on an injected pffft transform within float32 rounding of the JS one', async () => {
    const provider = await loadFftProvider();
    const fft = provider.create(512);
    expect(fft.backend).toBe('pffft-wasm');
    const mask = (re: Float64Array, im: Float64Array) => { for (let k = 0; k < re.length; k++) { re[k]! *= k < 64 ? 1 : 0.1; im[k]! *= k < 64 ? 1 : 0.1; } };
    const a = new StftProcessor({ size: 512, hop: 128, analysis: hann(512), synthesis: hann(512) }, mask).process(x);
    const b = new StftProcessor({ size: 512, hop: 128, analysis: hann(512), synthesis: hann(512), fft }, mask).process(x);
    let err = 0;
    for (let i = 0; i < a.length; i++) err = Math.max(err, Math.abs(a[i]! - b[i]!));
    expect(err).toBeLessThan(1e-5);
    expect(err).toBeGreaterThan(0); // really a different transform
    expect(() => new StftProcessor({ size: 1024, hop: 256, analysis: hann(1024), synthesis: hann(1024), fft }, mask)).toThrow(/FFT size/);
    fft.dispose();
  });
});

describe('StreamResampler (the one resampling kernel)', () => {
  const pairs: Array<[number, number]> = [[48000, 16000], [16000, 48000], [44100, 48000], [44100, 16000], [22050, 8000], [8000, 11025]];

  it.each(pairs)('%i -> %i: blocks of any size give exactly the one-shot result, round(n * out/in) samples', (from, to) => {
    for (const quality of ['fast', 'high'] as ResampleQuality[]) {
      const left = Float32Array.from({ length: from + 123 }, rng(from));
      const right = Float32Array.from({ length: from + 123 }, rng(to));
      const rs = new StreamResampler(2, from, to, quality);
      const outL: Float32Array[] = [], outR: Float32Array[] = [];
      const blocks = chunks(left, from + to, 5000);
      let s = 0;
      for (const b of blocks) {
        const y = rs.process([b, right.subarray(s, s + b.length)]);
        s += b.length;
        outL.push(y[0]!);
        outR.push(y[1]!);
      }
      const tail = rs.flush();
      outL.push(tail[0]!);
      outR.push(tail[1]!);
      const want = Math.round((left.length * to) / from);
      expect(concat(outL)).toEqual(resampleOnce(left, from, to, quality));
      expect(concat(outR)).toEqual(resampleOnce(right, from, to, quality));
      expect(concat(outL).length).toBe(want);
    }
  });

  it('high: keeps in-band tones (error under -90 dB) and rejects a tone at 1.1x the new Nyquist by over 90 dB', () => {
    const tone = (f: number, rate: number, n: number) => Float32Array.from({ length: n }, (_, i) => 0.5 * Math.sin((2 * Math.PI * f * i) / rate));
    const inBand = resampleOnce(tone(5000, 48000, 48000), 48000, 16000, 'high');
    const ref = tone(5000, 16000, 16000);
    let err = 0, pow = 0;
    for (let i = 200; i < inBand.length - 200; i++) { err += (inBand[i]! - ref[i]!) ** 2; pow += ref[i]! ** 2; }
    expect(10 * Math.log10(err / pow)).toBeLessThan(-90);
    const alias = resampleOnce(tone(8800, 48000, 48000), 48000, 16000, 'high').subarray(200, -200);
    const level = 10 * Math.log10(alias.reduce((a, v) => a + v * v, 0) / alias.length / 0.125);
    expect(level).toBeLessThan(-90);
    // The fast setting (resample()) lets it through: the reason the enhancement stages use high.
    const fast = resampleOnce(tone(8800, 48000, 48000), 48000, 16000, 'fast').subarray(200, -200);
    expect(10 * Math.log10(fast.reduce((a, v) => a + v * v, 0) / fast.length / 0.125)).toBeGreaterThan(-40);
  });

  it('is time-aligned: an impulse at input sample 3000 peaks at output sample 1000 (48 -> 16 kHz) and 9000 (16 -> 48 kHz)', () => {
    const imp = (n: number, at: number) => { const x = new Float32Array(n); x[at] = 1; return x; };
    const argmax = (y: Float32Array) => y.reduce((best, v, i) => (v > y[best]! ? i : best), 0);
    expect(argmax(resampleOnce(imp(6000, 3000), 48000, 16000, 'high'))).toBe(1000);
    expect(argmax(resampleOnce(imp(6000, 3000), 16000, 48000, 'high'))).toBe(9000);
  });

  it('passes audio through at equal rates, and refuses rates that are not positive integers', async () => {
    const rs = await StreamResampler.create(1, 16000, 16000);
    const x = new Float32Array([1, 2, 3]);
    expect(rs.process([x])[0]).toEqual(x);
    expect(rs.flush()[0]!.length).toBe(0);
    expect(() => new StreamResampler(1, 0, 16000)).toThrow(/positive integers/);
    expect(() => new StreamResampler(1, 44100.5, 16000)).toThrow(/positive integers/);
  });
});
