import { RealFFT } from '../../media/dsp/fft.js';
/**
 * Objective quality measures for tests and the benchmark: SI-SDR and STOI (Taal et al. 2011).
 */

/** Scale-invariant SDR in dB of `est` against `ref`; `lag` shifts est later by that many samples. */
export function siSdr(est: Float32Array, ref: Float32Array, lag = 0): number {
  const n = Math.min(est.length - Math.max(0, lag), ref.length + Math.min(0, lag));
  let dot = 0, rr = 0;
  for (let i = 0; i < n; i++) {
    const e = est[i + Math.max(0, lag)]!, r = ref[i - Math.min(0, lag)]!;
    dot += e * r;
    rr += r * r;
  }
  const a = dot / (rr || 1e-20);
  let s = 0, no = 0;
  for (let i = 0; i < n; i++) {
    const e = est[i + Math.max(0, lag)]!, v = a * ref[i - Math.min(0, lag)]!;
    s += v * v;
    no += (e - v) * (e - v);
  }
  return 10 * Math.log10(s / (no || 1e-20));
}

/**
 * STOI (Taal et al. 2011), following pystoi: 10 kHz, 256-sample Hann frames (hop 128, 512-point FFT),
 * silent frames (40 dB below the loudest clean frame) removed, 15 third-octave bands from 150 Hz,
 * 30-frame envelopes, clipping at -15 dB SDR, mean correlation. Inputs must be at 10 kHz already.
 */
export function stoi10k(clean: Float32Array, degraded: Float32Array): number {
  const FS = 10000, N = 30, J = 15, win = 256, hop = 128, nfft = 512;
  const len = Math.min(clean.length, degraded.length);
  const w = new Float64Array(win);
  for (let i = 0; i < win; i++) w[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * (i + 1)) / (win + 1));
  // Silent-frame removal, then overlap-add of the kept frames.
  const starts: number[] = [];
  for (let i = 0; i < len - win; i += hop) starts.push(i);
  const energy = starts.map((s) => { let e = 0; for (let i = 0; i < win; i++) e += (w[i]! * clean[s + i]!) ** 2; return 20 * Math.log10(Math.sqrt(e) + 1e-20); });
  const maxE = Math.max(...energy);
  const kept = starts.filter((_s, k) => maxE - 40 - energy[k]! < 0);
  const olen = (kept.length - 1) * hop + win;
  const xs = new Float64Array(Math.max(0, olen)), ys = new Float64Array(Math.max(0, olen));
  kept.forEach((s, k) => { for (let i = 0; i < win; i++) { xs[k * hop + i] = xs[k * hop + i]! + w[i]! * clean[s + i]!; ys[k * hop + i] = ys[k * hop + i]! + w[i]! * degraded[s + i]!; } });
  // Third-octave band edges in FFT bins.
  const f = Array.from({ length: nfft / 2 + 1 }, (_v, k) => (k * FS) / nfft);
  const argmin = (target: number) => f.reduce((b, v, k) => ((v - target) ** 2 < (f[b]! - target) ** 2 ? k : b), 0);
  const bands = Array.from({ length: J }, (_v, k) => [argmin(150 * 2 ** ((2 * k - 1) / 6)), argmin(150 * 2 ** ((2 * k + 1) / 6))] as const);
  const fft = new RealFFT(nfft);
  const re = new Float64Array(nfft / 2 + 1), im = new Float64Array(nfft / 2 + 1), buf = new Float64Array(nfft);
  const tob = (sig: Float64Array): Float64Array[] => {
    const frames: Float64Array[] = [];
    for (let s = 0; s < sig.length - win; s += hop) {
      buf.fill(0);
      for (let i = 0; i < win; i++) buf[i] = w[i]! * sig[s + i]!;
      fft.forward(buf, re, im);
      frames.push(Float64Array.from(bands, ([lo, hi]) => { let e = 0; for (let k = lo; k < hi; k++) e += re[k]! ** 2 + im[k]! ** 2; return Math.sqrt(e); }));
    }
    return frames;
  };
  const X = tob(xs), Y = tob(ys);
  const M = X.length;
  if (M < N) return NaN;
  const clip = 10 ** (15 / 20);
  let total = 0, count = 0;
  const xv = new Float64Array(N), yv = new Float64Array(N);
  for (let m = N; m <= M; m++) {
    for (let j = 0; j < J; j++) {
      let nx = 0, ny = 0;
      for (let t = 0; t < N; t++) { xv[t] = X[m - N + t]![j]!; yv[t] = Y[m - N + t]![j]!; nx += xv[t]! ** 2; ny += yv[t]! ** 2; }
      const g = Math.sqrt(nx) / (Math.sqrt(ny) + 1e-20);
      let mx = 0, my = 0;
      for (let t = 0; t < N; t++) { yv[t] = Math.min(yv[t]! * g, xv[t]! * (1 + clip)); mx += xv[t]!; my += yv[t]!; }
      mx /= N; my /= N;
      let sxy = 0, sxx = 0, syy = 0;
      for (let t = 0; t < N; t++) { const a = xv[t]! - mx, b = yv[t]! - my; sxy += a * b; sxx += a * a; syy += b * b; }
      total += sxy / ((Math.sqrt(sxx) + 1e-20) * (Math.sqrt(syy) + 1e-20));
      count++;
    }
  }
  return total / count;
}
