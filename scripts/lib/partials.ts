import type { RealFft } from '../../src/media/dsp/fft.js';

/**
 * Partial amplitudes and inharmonicity of one pitched tone, measured the way the NMF template bank uses
 * them: amplitude of harmonic h (peak magnitude, linear) and B of f_h = h f0 sqrt(1 + B h^2).
 */
export interface PartialFit {
  f0: number;
  inharmonicity: number;
  /** amps[h - 1], linear, unnormalised; 0 where the partial is above the analysed band. */
  amps: number[];
}

/** Hann-windowed power spectrum averaged over frames of `x` (hop N/2). */
export function powerSpectrum(x: Float32Array, fft: RealFft): Float64Array {
  const n = fft.size;
  const bins = (n >> 1) + 1;
  const acc = new Float64Array(bins);
  const frame = new Float32Array(n);
  const re = new Float32Array(bins);
  const im = new Float32Array(bins);
  let count = 0;
  for (let a = 0; a + n <= x.length; a += n >> 1) {
    for (let i = 0; i < n; i++) frame[i] = x[a + i]! * (0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n));
    fft.forward(frame, re, im);
    for (let k = 0; k < bins; k++) acc[k]! += re[k]! * re[k]! + im[k]! * im[k]!;
    count++;
  }
  if (count) for (let k = 0; k < bins; k++) acc[k]! /= count;
  return acc;
}

/**
 * Walk the harmonics upward from the f0 guess: each partial is the strongest bin within a quarter of f0 of
 * where the current (f0, B) fit predicts it; clear peaks refine (f0, B) by least squares on
 * (f_h / h)^2 = f0^2 + f0^2 B h^2, so stretched piano partials are still found high up.
 */
export function fitPartials(power: Float64Array, sampleRate: number, nFft: number, f0Guess: number, partials: number, maxHz: number): PartialFit {
  const binHz = sampleRate / nFft;
  const bins = power.length;
  const amps: number[] = [];
  const pts: Array<[number, number, number]> = [];
  let f0 = f0Guess;
  let B = 0;
  let strongest = 0;
  const peakAt = (center: number, halfWidth: number) => {
    let best = -1;
    for (let k = Math.max(1, Math.floor(center - halfWidth)); k <= Math.min(bins - 2, Math.ceil(center + halfWidth)); k++) {
      if (best < 0 || power[k]! > power[best]!) best = k;
    }
    return best;
  };
  for (let h = 1; h <= partials; h++) {
    const predicted = h * f0 * Math.sqrt(1 + B * h * h);
    if (predicted > maxHz || predicted / binHz >= bins - 3) {
      amps.push(0);
      continue;
    }
    const k = peakAt(predicted / binHz, Math.max(1.5, (0.25 * f0) / binHz));
    // Hann main lobe is +-2 bins: its energy is the partial's (the window's gain is the same for every partial).
    let e = 0;
    for (let j = k - 2; j <= k + 2; j++) if (j >= 0 && j < bins) e += power[j]!;
    const amp = Math.sqrt(e);
    amps.push(amp);
    strongest = Math.max(strongest, amp);
    // Only a local maximum well above the floor says where the partial is.
    const isPeak = power[k]! >= power[k - 1]! && power[k]! >= power[k + 1]! && amp > 0.03 * strongest;
    if (!isPeak) continue;
    const [a, b, c] = [Math.log(power[k - 1]! + 1e-30), Math.log(power[k]! + 1e-30), Math.log(power[k + 1]! + 1e-30)];
    const den = a - 2 * b + c;
    const fh = (k + (den < 0 ? (0.5 * (a - c)) / den : 0)) * binHz;
    pts.push([h, fh, amp]);
    if (pts.length >= 2) {
      const fit = regress(pts);
      if (fit) [f0, B] = fit;
    } else if (h === 1) {
      f0 = fh;
    }
  }
  return { f0, inharmonicity: significant(pts, B) ? B : 0, amps };
}

/**
 * Whether B is measurable: the straight-line fit's slope must be at least three standard errors from zero.
 * Without this, a few mis-picked peaks of a chorus-detuned synth read as a small spurious stretch.
 */
function significant(pts: Array<[number, number, number]>, B: number): boolean {
  if (B <= 0 || pts.length < 5) return false;
  const xs = pts.map(([h]) => h * h);
  const ys = pts.map(([h, fh]) => (fh / h) ** 2);
  const n = pts.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxx = 0, sxy = 0;
  for (let i = 0; i < n; i++) { sxx += (xs[i]! - mx) ** 2; sxy += (xs[i]! - mx) * (ys[i]! - my); }
  const slope = sxy / sxx;
  let rss = 0;
  for (let i = 0; i < n; i++) rss += (ys[i]! - my - slope * (xs[i]! - mx)) ** 2;
  const se = Math.sqrt(rss / (n - 2) / sxx);
  return slope > 3 * se;
}

/** Weighted least squares of y = (f_h/h)^2 on x = h^2: intercept f0^2, slope f0^2 B. */
function regress(pts: Array<[number, number, number]>): [number, number] | undefined {
  let sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const [h, fh, w] of pts) {
    const x = h * h;
    const y = (fh / h) ** 2;
    sw += w; sx += w * x; sy += w * y; sxx += w * x * x; sxy += w * x * y;
  }
  const det = sw * sxx - sx * sx;
  if (pts.length < 3 || det <= 0) {
    // Two points cannot separate f0 from B: assume harmonic.
    return [Math.sqrt(sy / sw), 0];
  }
  const slope = (sw * sxy - sx * sy) / det;
  const icpt = (sy - slope * sx) / sw;
  if (icpt <= 0) return undefined;
  // B beyond 1e-2 is no string: a mis-picked peak, so keep the previous fit.
  const B = slope / icpt;
  return B < -1e-4 || B > 1e-2 ? undefined : [Math.sqrt(icpt), Math.max(0, B)];
}
