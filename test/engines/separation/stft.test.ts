import { describe, expect, it } from 'vitest';
import { jsFftProvider, loadFftProvider, type FftProvider } from '../../../src/media/dsp/fft.js';
import { hannWindow, istft, stft, frameCount } from '../../../src/media/dsp/stft.js';

/** Reference written independently of the code under test: O(N^2) DFT in float64. */
function naiveRfft(x: ArrayLike<number>): { re: number[]; im: number[] } {
  const n = x.length;
  const re: number[] = [];
  const im: number[] = [];
  for (let k = 0; k <= n >> 1; k++) {
    let r = 0;
    let i = 0;
    for (let t = 0; t < n; t++) {
      const a = (-2 * Math.PI * k * t) / n;
      r += x[t]! * Math.cos(a);
      i += x[t]! * Math.sin(a);
    }
    re.push(r);
    im.push(i);
  }
  return { re, im };
}

function noise(n: number, seed = 1): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (s * 1664525 + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

const providers: Array<[string, () => Promise<FftProvider>]> = [
  ['pffft-wasm', () => loadFftProvider()],
  ['js', async () => jsFftProvider()],
];

describe.each(providers)('real FFT (%s)', (_name, load) => {
  it.each([32, 64, 96, 400, 255, 1024])('matches a naive DFT at n=%i', async (n) => {
    const fft = (await load()).create(n);
    const x = noise(n, n);
    const re = new Float32Array((n >> 1) + 1);
    const im = new Float32Array((n >> 1) + 1);
    fft.forward(x, re, im);
    const ref = naiveRfft(x);
    const scale = Math.sqrt(n);
    for (let k = 0; k <= n >> 1; k++) {
      expect(Math.abs(re[k]! - ref.re[k]!) / scale).toBeLessThan(1e-5);
      expect(Math.abs(im[k]! - ref.im[k]!) / scale).toBeLessThan(1e-5);
    }
    const back = new Float32Array(n);
    fft.inverse(re, im, back);
    for (let i = 0; i < n; i++) expect(Math.abs(back[i]! - x[i]!)).toBeLessThan(1e-5);
    fft.dispose();
  });
});

describe('STFT', () => {
  it('uses the pffft backend for usual sizes and JS for others', async () => {
    const p = await loadFftProvider();
    expect(p.create(4096).backend).toBe('pffft-wasm');
    expect(p.create(400).backend).toBe('js');
  });

  it('has torch/librosa frame count and closed-form Hann values', async () => {
    const n = 512;
    const hop = 128;
    const fft = (await loadFftProvider()).create(n);
    expect(frameCount(44100, n, hop)).toBe(1 + Math.floor(44100 / hop));
    // A cosine exactly on bin 16 of amplitude A: periodic Hann gives X[16] = A*N/4 and X[15] = X[17] = -A*N/8
    // in every interior frame (the cosine's phase is 0 at each frame start because hop*16/N is an integer).
    const A = 0.5;
    const x = new Float32Array(8192);
    for (let i = 0; i < x.length; i++) x[i] = A * Math.cos((2 * Math.PI * 16 * i) / n);
    const spec = stft(x, fft, { nFft: n, hop });
    const t = 10;
    const at = (k: number) => spec.re[t * spec.bins + k]!;
    expect(at(16)).toBeCloseTo((A * n) / 4, 3);
    expect(at(15)).toBeCloseTo((-A * n) / 8, 3);
    expect(at(17)).toBeCloseTo((-A * n) / 8, 3);
    expect(Math.abs(at(40))).toBeLessThan(1e-3);
    // A constant c: DC = c * sum(hann) = c*N/2, in every frame including the reflect-padded edges.
    const c = new Float32Array(3000).fill(0.25);
    const cs = stft(c, fft, { nFft: n, hop });
    for (let f = 0; f < cs.frames; f++) expect(cs.re[f * cs.bins]!).toBeCloseTo((0.25 * n) / 2, 3);
  });

  it('reflect-pads the edges exactly as numpy pad(mode="reflect")', async () => {
    const n = 64;
    const hop = 16;
    const fft = (await loadFftProvider()).create(n);
    const x = noise(200, 7);
    // Build the padded signal the numpy way: x[pad:0:-1] + x + x[-2:-pad-2:-1].
    const pad = n / 2;
    const padded = [...Array.from(x.slice(1, pad + 1)).reverse(), ...x, ...Array.from(x.slice(x.length - pad - 1, x.length - 1)).reverse()];
    const w = hannWindow(n);
    const spec = stft(x, fft, { nFft: n, hop });
    expect(spec.frames).toBe(1 + Math.floor(200 / hop));
    for (const t of [0, 1, spec.frames - 1]) {
      const ref = naiveRfft(Array.from({ length: n }, (_, i) => padded[t * hop + i]! * w[i]!));
      for (let k = 0; k < spec.bins; k++) {
        expect(spec.re[t * spec.bins + k]!).toBeCloseTo(ref.re[k]!, 4);
        expect(spec.im[t * spec.bins + k]!).toBeCloseTo(ref.im[k]!, 4);
      }
    }
  });

  it.each([
    [4096, 1024],
    [2048, 512],
    [400, 160],
    [255, 64],
    [512, 128],
  ])('round-trips nFft=%i hop=%i within 1e-5', async (nFft, hop) => {
    const fft = (await loadFftProvider()).create(nFft);
    for (const len of [44100, 44100 + 333]) {
      const x = noise(len, len);
      const y = istft(stft(x, fft, { nFft, hop }), fft, { nFft, hop, length: len });
      let maxErr = 0;
      for (let i = 0; i < len; i++) maxErr = Math.max(maxErr, Math.abs(y[i]! - x[i]!));
      expect(maxErr).toBeLessThan(1e-5);
    }
  });
});
