import type { RealFft } from './fft.js';

/**
 * STFT / iSTFT matching torch.stft(center=True, pad_mode='reflect', onesided, unnormalised, periodic Hann)
 * and librosa.stft / istft: frame t covers input samples [t*hop - nFft/2, t*hop + nFft/2).
 */
export interface StftOptions {
  nFft: number;
  hop: number;
  /** Reflect-pad nFft/2 on both sides (torch/librosa default). */
  center?: boolean;
  /** Defaults to a periodic Hann window of nFft samples. */
  window?: Float32Array;
}

/** Frame-major spectrogram: bin k of frame t is at index t*bins + k. */
export interface Spectrogram {
  frames: number;
  bins: number;
  re: Float32Array;
  im: Float32Array;
}

/** Periodic Hann (torch.hann_window default, scipy get_window('hann', fftbins=True)). */
export function hannWindow(n: number, periodic = true): Float32Array {
  const w = new Float32Array(n);
  const denom = periodic ? n : n - 1;
  for (let i = 0; i < n; i++) w[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / denom);
  return w;
}

/** Index into x of padded position i (0-based in the padded signal) with numpy 'reflect' (edge not repeated). */
function reflectIndex(j: number, len: number): number {
  if (len === 1) return 0;
  const period = 2 * (len - 1);
  let m = j % period;
  if (m < 0) m += period;
  return m < len ? m : period - m;
}

export function frameCount(length: number, nFft: number, hop: number, center = true): number {
  const padded = center ? length + 2 * Math.floor(nFft / 2) : length;
  return padded < nFft ? 0 : 1 + Math.floor((padded - nFft) / hop);
}

export function stft(x: Float32Array, fft: RealFft, opts: StftOptions): Spectrogram {
  const { nFft, hop } = opts;
  if (fft.size !== nFft) throw new Error(`stft: FFT size ${fft.size} != nFft ${nFft}`);
  const center = opts.center ?? true;
  const window = opts.window ?? hannWindow(nFft);
  const pad = center ? Math.floor(nFft / 2) : 0;
  const len = x.length;
  const frames = frameCount(len, nFft, hop, center);
  const bins = (nFft >> 1) + 1;
  const re = new Float32Array(frames * bins);
  const im = new Float32Array(frames * bins);
  const buf = new Float32Array(nFft);
  for (let t = 0; t < frames; t++) {
    const start = t * hop - pad;
    if (start >= 0 && start + nFft <= len) {
      for (let i = 0; i < nFft; i++) buf[i] = x[start + i]! * window[i]!;
    } else {
      for (let i = 0; i < nFft; i++) buf[i] = x[reflectIndex(start + i, len)]! * window[i]!;
    }
    fft.forward(buf, re.subarray(t * bins, (t + 1) * bins), im.subarray(t * bins, (t + 1) * bins));
  }
  return { frames, bins, re, im };
}

/**
 * Inverse STFT by weighted overlap-add divided by the summed squared window (librosa's normalisation,
 * positions where that sum is ~0 are left unscaled), trimmed to `length` samples of the original signal.
 */
export function istft(spec: Spectrogram, fft: RealFft, opts: StftOptions & { length: number }): Float32Array {
  const { nFft, hop, length } = opts;
  const center = opts.center ?? true;
  const window = opts.window ?? hannWindow(nFft);
  const pad = center ? Math.floor(nFft / 2) : 0;
  const { frames, bins } = spec;
  const out = new Float32Array(length);
  // float64 accumulators: summing many frames in float32 costs about 1e-7 relative per add.
  const acc = new Float64Array(length);
  const wsum = new Float64Array(length);
  const frame = new Float32Array(nFft);
  for (let t = 0; t < frames; t++) {
    fft.inverse(spec.re.subarray(t * bins, (t + 1) * bins), spec.im.subarray(t * bins, (t + 1) * bins), frame);
    const start = t * hop - pad;
    const i0 = Math.max(0, -start);
    const i1 = Math.min(nFft, length - start);
    for (let i = i0; i < i1; i++) {
      const w = window[i]!;
      acc[start + i]! += frame[i]! * w;
      wsum[start + i]! += w * w;
    }
  }
  for (let i = 0; i < length; i++) {
    const s = wsum[i]!;
    out[i] = s > 1e-10 ? acc[i]! / s : acc[i]!;
  }
  return out;
}
