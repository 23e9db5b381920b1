import type { RealFft } from '../../media/dsp/fft.js';

/**
 * DeepFilterNet's signal path around its three networks, as libDF (Rikorose/DeepFilterNet libDF/src/lib.rs and
 * transforms.rs, deepfilterlib 0.5.6) and DeepFilterNet3's Python model (df/deepfilternet3.py, df/multiframe.py)
 * define it. Everything is per frame and stateful, so a long signal streams through with the same result as one pass:
 *
 * - analysis: a Vorbis window over the last fft_size samples (analysis memory + the new hop), a real FFT scaled by
 *   wnorm = hop / (fft_size * sum(w^2)) (libDF normalises in analysis only);
 * - synthesis: the unscaled inverse FFT, the same window, overlap-add with the synthesis memory; the imaginary parts of
 *   DC and Nyquist are ignored (as libDF's realfft inverse does, checked on deepfilterlib 0.5.6);
 * - ERB feature: per band the mean power of its bins, 10*log10(x + 1e-10), an exponential mean normalisation (state
 *   starts as a ramp -60..-90 dB), divided by 40;
 * - complex feature: the first nb_df bins divided by sqrt of an exponential mean of their magnitude (state starts as a
 *   ramp 0.001..0.0001);
 * - the ERB gains applied band by band, the deep filter (complex FIR over df_order frames ending df_lookahead frames
 *   ahead) on the unmasked spectrum's first nb_df bins, and the post-filter DfNet.forward applies when mask_pf is on.
 *
 * Arithmetic is float64 here where libDF uses float32; the differences are far under the 1e-4 bar the reference test
 * holds them to.
 */

/** libDF's freq2erb / erb2freq (the ERB-rate scale of Glasberg & Moore, in libDF's constants). */
function freq2erb(hz: number): number {
  return Math.fround(9.265 * Math.log1p(Math.fround(hz / Math.fround(24.7 * 9.265))));
}
function erb2freq(erb: number): number {
  return Math.fround(Math.fround(24.7 * 9.265) * Math.fround(Math.exp(Math.fround(erb / 9.265)) - 1));
}

/**
 * Bins per ERB band, as libDF's erb_fb computes them in float32: equal steps on the ERB scale, each band at least
 * minNbFreqs bins (bins borrowed by that floor are repaid by the next band), the last band takes the Nyquist bin.
 */
export function erbWidths(sampleRate: number, fftSize: number, nbBands: number, minNbFreqs: number): number[] {
  const freqWidth = Math.fround(sampleRate / fftSize);
  const erbLow = freq2erb(0);
  const erbHigh = freq2erb(Math.floor(sampleRate / 2));
  const step = Math.fround(Math.fround(erbHigh - erbLow) / nbBands);
  const widths: number[] = [];
  let prev = 0;
  let over = 0;
  for (let i = 1; i <= nbBands; i++) {
    const f = erb2freq(Math.fround(erbLow + Math.fround(i * step)));
    // Rust's f32::round rounds half away from zero; f is never negative.
    const fb = Math.floor(Math.fround(f / freqWidth) + 0.5);
    let nb = fb - prev - over;
    if (nb < minNbFreqs) {
      over = minNbFreqs - nb;
      nb = minNbFreqs;
    } else {
      over = 0;
    }
    widths.push(nb);
    prev = fb;
  }
  widths[nbBands - 1]! += 1;
  const tooLarge = widths.reduce((a, b) => a + b, 0) - (fftSize / 2 + 1);
  if (tooLarge > 0) widths[nbBands - 1]! -= tooLarge;
  if (widths.reduce((a, b) => a + b, 0) !== fftSize / 2 + 1 || widths.some((w) => w <= 0)) {
    throw new Error(`ERB bands for fft ${fftSize}, ${nbBands} bands do not cover the ${fftSize / 2 + 1} bins`);
  }
  return widths;
}

/**
 * The feature normalisation's decay, as df.utils.get_norm_alpha computes it: exp(-hop / sr / tau) rounded to 3
 * decimals (more if that rounds to 1), then handed to libDF as float32 (0.99 for 48 kHz, hop 480, tau 1 s).
 */
export function normAlpha(sampleRate: number, hopSize: number, tau: number): number {
  const exact = Math.exp(-hopSize / sampleRate / tau);
  let a = 1;
  for (let precision = 3; a >= 1; precision++) {
    const scale = 10 ** precision;
    a = Math.round(exact * scale) / scale;
  }
  return Math.fround(a);
}

/** libDF's window: sin(pi/2 * sin^2(pi * (i + 0.5) / fft_size)), computed in float64 and stored as float32. */
export function vorbisWindow(fftSize: number): Float32Array {
  const w = new Float32Array(fftSize);
  const half = fftSize / 2;
  for (let i = 0; i < fftSize; i++) {
    const s = Math.sin((0.5 * Math.PI * (i + 0.5)) / half);
    w[i] = Math.sin(0.5 * Math.PI * s * s);
  }
  return w;
}

/** One spectrum frame: fftSize/2+1 bins as split re/im. */
export interface SpecFrame {
  re: Float32Array;
  im: Float32Array;
}

/** libDF's frame_analysis: one hop of samples in, one normalised spectrum out; keeps fft_size - hop samples. */
export class DfAnalysis {
  private readonly mem: Float32Array;
  private readonly buf: Float32Array;
  private readonly wnorm: number;

  constructor(private readonly fft: RealFft, private readonly window: Float32Array, private readonly hop: number) {
    const n = window.length;
    if (fft.size !== n) throw new Error(`FFT of size ${fft.size} for a window of ${n}`);
    this.mem = new Float32Array(n - hop);
    this.buf = new Float32Array(n);
    let sum = 0;
    for (const v of window) sum += v * v;
    this.wnorm = hop / n / sum;
  }

  /** `input` holds exactly one hop. */
  frame(input: Float32Array): SpecFrame {
    const { mem, buf, window, hop } = this;
    const keep = mem.length;
    for (let i = 0; i < keep; i++) buf[i] = mem[i]! * window[i]!;
    for (let i = 0; i < hop; i++) buf[keep + i] = input[i]! * window[keep + i]!;
    mem.copyWithin(0, hop);
    mem.set(input.subarray(0, hop), keep - hop);
    const bins = window.length / 2 + 1;
    const out = { re: new Float32Array(bins), im: new Float32Array(bins) };
    this.fft.forward(buf, out.re, out.im);
    for (let k = 0; k < bins; k++) {
      out.re[k] = out.re[k]! * this.wnorm;
      out.im[k] = out.im[k]! * this.wnorm;
    }
    return out;
  }
}

/** libDF's frame_synthesis: unscaled inverse FFT, window, overlap-add; one hop of samples per frame. */
export class DfSynthesis {
  private readonly mem: Float32Array;
  private readonly x: Float32Array;

  constructor(private readonly fft: RealFft, private readonly window: Float32Array, private readonly hop: number) {
    this.mem = new Float32Array(window.length - hop);
    this.x = new Float32Array(window.length);
  }

  frame(spec: SpecFrame, out: Float32Array): void {
    const { x, mem, window, hop } = this;
    const n = window.length;
    // The shared FFT's inverse divides by n; libDF's does not.
    this.fft.inverse(spec.re, spec.im, x);
    for (let i = 0; i < n; i++) x[i] = x[i]! * n * window[i]!;
    for (let i = 0; i < hop; i++) out[i] = x[i]! + mem[i]!;
    const split = mem.length - hop;
    mem.copyWithin(0, hop);
    for (let i = 0; i < split; i++) mem[i] = mem[i]! + x[hop + i]!;
    for (let i = split; i < mem.length; i++) mem[i] = x[hop + i]!;
  }
}

/** ERB band feature with libDF's exponential mean normalisation (band_mean_norm_erb); state carries across frames. */
export class ErbFeature {
  private readonly state: Float64Array;

  constructor(private readonly widths: readonly number[], private readonly alpha: number) {
    const nb = widths.length;
    this.state = new Float64Array(nb);
    for (let i = 0; i < nb; i++) this.state[i] = -60 + (i * (-90 - -60)) / (nb - 1);
  }

  frame(spec: SpecFrame, out: Float32Array): void {
    const a = this.alpha;
    let bin = 0;
    for (let b = 0; b < this.widths.length; b++) {
      const w = this.widths[b]!;
      let p = 0;
      for (let j = 0; j < w; j++, bin++) p += spec.re[bin]! * spec.re[bin]! + spec.im[bin]! * spec.im[bin]!;
      const db = 10 * Math.log10(p / w + 1e-10);
      const s = db * (1 - a) + this.state[b]! * a;
      this.state[b] = s;
      out[b] = (db - s) / 40;
    }
  }
}

/** Unit-norm complex feature of the first nb bins (band_unit_norm); out is interleaved re, im per bin. */
export class UnitNormFeature {
  private readonly state: Float64Array;

  constructor(private readonly nb: number, private readonly alpha: number) {
    this.state = new Float64Array(nb);
    for (let i = 0; i < nb; i++) this.state[i] = 0.001 + (i * (0.0001 - 0.001)) / (nb - 1);
  }

  frame(spec: SpecFrame, outRe: Float32Array, outIm: Float32Array): void {
    const a = this.alpha;
    for (let k = 0; k < this.nb; k++) {
      const re = spec.re[k]!;
      const im = spec.im[k]!;
      const s = Math.hypot(re, im) * (1 - a) + this.state[k]! * a;
      this.state[k] = s;
      const d = Math.sqrt(s);
      outRe[k] = re / d;
      outIm[k] = im / d;
    }
  }
}

/**
 * The enhanced spectrum of one frame, as DfNet.forward composes it: bins from nbDf up are the noisy spectrum times
 * the ERB gain of their band; bins under nbDf are the deep filter over the unmasked noisy frames
 * t - (order - 1 - lookahead) .. t + lookahead (`frames[n]`, null where outside the signal), with the coefficients
 * `coefs` laid out as the df_dec output [nbDf, order, re/im] for this frame.
 */
export function enhanceFrame(
  frames: readonly (SpecFrame | null)[],
  current: SpecFrame,
  gains: Float32Array,
  widths: readonly number[],
  coefs: Float32Array,
  nbDf: number,
  out: SpecFrame,
): void {
  let bin = 0;
  for (let b = 0; b < widths.length; b++) {
    const g = gains[b]!;
    for (let j = 0; j < widths[b]!; j++, bin++) {
      if (bin < nbDf) continue;
      out.re[bin] = current.re[bin]! * g;
      out.im[bin] = current.im[bin]! * g;
    }
  }
  const order = frames.length;
  for (let f = 0; f < nbDf; f++) {
    let re = 0;
    let im = 0;
    const c = f * order * 2;
    for (let n = 0; n < order; n++) {
      const s = frames[n];
      if (!s) continue;
      const cr = coefs[c + 2 * n]!;
      const ci = coefs[c + 2 * n + 1]!;
      re += s.re[f]! * cr - s.im[f]! * ci;
      im += s.re[f]! * ci + s.im[f]! * cr;
    }
    out.re[f] = re;
    out.im[f] = im;
  }
}

/**
 * DfNet.forward's post-filter (mask_pf): with m = clamp(|enhanced| / (|noisy| + 1e-12), 1e-12, 1), every bin is
 * scaled by (1 + beta) / (1 + beta * (1 / max(sin(pi m / 2), 1e-12))^2) (Valin et al.'s perceptual post-filter,
 * written on the ratio of the enhanced to the noisy magnitude).
 */
export function postFilter(noisy: SpecFrame, enhanced: SpecFrame, beta: number): void {
  const eps = 1e-12;
  for (let k = 0; k < enhanced.re.length; k++) {
    const m = Math.min(1, Math.max(eps, Math.hypot(enhanced.re[k]!, enhanced.im[k]!) / (Math.hypot(noisy.re[k]!, noisy.im[k]!) + eps)));
    const sin = Math.max(Math.sin((Math.PI * m) / 2), eps);
    const r = 1 / sin; // mask / (mask * sin)
    const pf = (1 + beta) / (1 + beta * r * r);
    enhanced.re[k] = enhanced.re[k]! * pf;
    enhanced.im[k] = enhanced.im[k]! * pf;
  }
}

/** enhance()'s attenuation limit: noisy * lim + enhanced * (1 - lim), lim = 10^(-|dB| / 20). */
export function attenuationLimit(noisy: SpecFrame, enhanced: SpecFrame, limDb: number): void {
  const lim = 10 ** (-Math.abs(limDb) / 20);
  for (let k = 0; k < enhanced.re.length; k++) {
    enhanced.re[k] = noisy.re[k]! * lim + enhanced.re[k]! * (1 - lim);
    enhanced.im[k] = noisy.im[k]! * lim + enhanced.im[k]! * (1 - lim);
  }
}
