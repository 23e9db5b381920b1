import type { AudioData } from '../../media/audio.js';
import { hann, RealFFT } from '../../media/dsp/stft-stream.js';
import { StreamResampler } from '../../media/dsp/resample.js';

/**
 * Frame features for disfluency detection, computed on 16 kHz mono whatever the input: level,
 * fundamental frequency with its periodicity (normalised autocorrelation, McLeod/NSDF style), and a
 * 12-coefficient mel cepstrum (spectral envelope). 32 ms windows every 10 ms. Streaming: input of
 * any block size goes in, frames come out as soon as their window is complete.
 */
export const FEATURE_RATE = 16000;
export const HOP = 160;
export const WIN = 512;
const MELS = 24;
export const CEPS = 12;
const MIN_F0 = 70;
const MAX_F0 = 400;

export interface SpeechFrame {
  /** Frame number since the start of the stream; its window starts at 16 kHz sample index*HOP. */
  index: number;
  db: number;
  /** Hz, 0 when the frame is not periodic enough to call voiced. */
  f0: number;
  /** Peak of the normalised autocorrelation in the pitch range, 0..1. */
  clarity: number;
  /** Mel cepstrum c1..c12 (c0, the level, is `db`). */
  mfcc: Float32Array;
}

/** Centre of frame k in seconds. */
export function frameTime(k: number): number {
  return (k * HOP + WIN / 2) / FEATURE_RATE;
}

function melFilterbank(size: number, rate: number, bands: number, lo = 80, hi = 7600): Array<{ from: number; w: Float32Array }> {
  const mel = (f: number) => 2595 * Math.log10(1 + f / 700);
  const inv = (m: number) => 700 * (10 ** (m / 2595) - 1);
  const edges = Array.from({ length: bands + 2 }, (_, i) => inv(mel(lo) + ((mel(hi) - mel(lo)) * i) / (bands + 1)));
  const binHz = rate / size;
  return Array.from({ length: bands }, (_, b) => {
    const [l, c, r] = [edges[b]!, edges[b + 1]!, edges[b + 2]!];
    const from = Math.floor(l / binHz);
    const to = Math.ceil(r / binHz);
    const w = new Float32Array(Math.max(1, to - from + 1));
    for (let k = from; k <= to; k++) {
      const f = k * binHz;
      w[k - from] = f <= c ? Math.max(0, (f - l) / (c - l)) : Math.max(0, (r - f) / (r - c));
    }
    return { from, w };
  });
}

/** One per stream: holds the resampler state, a window of pending samples and FFT scratch buffers. */
export class SpeechFeatureTracker {
  private pending = new Float32Array(0);
  private next = 0;
  private readonly fft = new RealFFT(WIN);
  private readonly win = hann(WIN);
  private readonly buf = new Float64Array(WIN);
  private readonly re = new Float64Array(WIN / 2 + 1);
  private readonly im = new Float64Array(WIN / 2 + 1);
  private readonly bank = melFilterbank(WIN, FEATURE_RATE, MELS);
  private readonly dct: Float32Array[];
  private readonly logMel = new Float64Array(MELS);
  private readonly pitchWork = new PitchWork(WIN);

  private constructor(private readonly rs: StreamResampler) {
    this.dct = Array.from({ length: CEPS }, (_, i) => {
      const row = new Float32Array(MELS);
      for (let m = 0; m < MELS; m++) row[m] = Math.cos((Math.PI * (i + 1) * (m + 0.5)) / MELS) * Math.sqrt(2 / MELS);
      return row;
    });
  }

  static async create(sampleRate: number): Promise<SpeechFeatureTracker> {
    return new SpeechFeatureTracker(await StreamResampler.create(1, sampleRate, FEATURE_RATE));
  }

  push(block: AudioData): SpeechFrame[] {
    const n = block.channels[0]?.length ?? 0;
    const mono = new Float32Array(n);
    const g = 1 / block.channels.length;
    for (const ch of block.channels) for (let i = 0; i < n; i++) mono[i] = mono[i]! + ch[i]! * g;
    return this.frames(this.rs.process([mono])[0]!);
  }

  /** End of stream: the last partial window is padded with zeros so every input sample is covered. */
  flush(): SpeechFrame[] {
    const tail = this.rs.flush()[0]!;
    const out = this.frames(tail);
    if (this.pending.length > 0) out.push(...this.frames(new Float32Array(WIN - HOP)));
    this.pending = new Float32Array(0);
    return out;
  }

  private frames(x16: Float32Array): SpeechFrame[] {
    const all = new Float32Array(this.pending.length + x16.length);
    all.set(this.pending);
    all.set(x16, this.pending.length);
    const out: SpeechFrame[] = [];
    let o = 0;
    for (; o + WIN <= all.length; o += HOP) out.push(this.analyse(all.subarray(o, o + WIN), this.next++));
    this.pending = all.slice(o);
    return out;
  }

  private analyse(x: Float32Array, index: number): SpeechFrame {
    let e = 0;
    for (let i = 0; i < WIN; i++) e += x[i]! * x[i]!;
    const db = 10 * Math.log10(e / WIN + 1e-12);
    const { f0, clarity } = pitch(x, FEATURE_RATE, this.pitchWork);
    const { buf, re, im } = this;
    for (let i = 0; i < WIN; i++) buf[i] = x[i]! * this.win[i]!;
    this.fft.forward(buf, re, im);
    for (let b = 0; b < MELS; b++) {
      const { from, w } = this.bank[b]!;
      let s = 0;
      for (let k = 0; k < w.length; k++) {
        const bin = from + k;
        if (bin < re.length) s += w[k]! * (re[bin]! * re[bin]! + im[bin]! * im[bin]!);
      }
      this.logMel[b] = Math.log(s + 1e-10);
    }
    const mfcc = new Float32Array(CEPS);
    for (let i = 0; i < CEPS; i++) {
      const row = this.dct[i]!;
      let s = 0;
      for (let m = 0; m < MELS; m++) s += row[m]! * this.logMel[m]!;
      mfcc[i] = s;
    }
    return { index, db, f0, clarity, mfcc };
  }
}

/** Scratch of pitch(): an FFT long enough for the linear (not circular) autocorrelation of a frame. */
export class PitchWork {
  readonly fft: RealFFT;
  readonly buf: Float64Array;
  readonly re: Float64Array;
  readonly im: Float64Array;
  readonly sq: Float64Array;

  constructor(readonly frameLength: number, rate = FEATURE_RATE) {
    const maxLag = Math.ceil(rate / MIN_F0) + 1;
    let size = 4;
    while (size < frameLength + maxLag + 1) size *= 2;
    this.fft = new RealFFT(size);
    this.buf = new Float64Array(size);
    this.re = new Float64Array(size / 2 + 1);
    this.im = new Float64Array(size / 2 + 1);
    this.sq = new Float64Array(frameLength + 1);
  }
}

/**
 * Normalised square difference function (McLeod & Wyvill, "A smarter way to find pitch"): robust
 * to level changes inside the window; the first peak above 0.8 of the highest one is the period,
 * refined by parabolic interpolation. The cross term of every lag comes from one FFT autocorrelation
 * (zero-padded, so not circular) and the energy term from prefix sums of the squares: the direct
 * double loop was ~100 k multiply-adds per frame and the largest JS cost of the disfluency stages.
 */
export function pitch(x: Float32Array, rate = FEATURE_RATE, work?: PitchWork): { f0: number; clarity: number } {
  const n = x.length;
  const minLag = Math.floor(rate / MAX_F0);
  const maxLag = Math.min(n - 64, Math.ceil(rate / MIN_F0));
  const nsdf = new Float64Array(maxLag + 2);
  // Scratch made for another frame length or a lower rate (longer lags) would wrap around: make one.
  const w = work && work.frameLength === n && work.fft.size >= n + maxLag + 1 ? work : new PitchWork(n, rate);
  const { fft, buf, re, im, sq } = w;
  buf.fill(0);
  for (let i = 0; i < n; i++) {
    const v = x[i]!;
    buf[i] = v;
    sq[i + 1] = sq[i]! + v * v;
  }
  fft.forward(buf, re, im);
  for (let k = 0; k < re.length; k++) {
    re[k] = re[k]! * re[k]! + im[k]! * im[k]!;
    im[k] = 0;
  }
  fft.inverse(re, im, buf); // buf[tau] = sum_i x[i] x[i + tau]
  const total = sq[n]!;
  for (let tau = minLag - 1; tau <= maxLag + 1; tau++) {
    // Squares of x[0..n-tau) plus squares of x[tau..n).
    const m = sq[n - tau]! + (total - sq[tau]!);
    nsdf[tau] = m > 1e-12 ? (2 * buf[tau]!) / m : 0;
  }
  let best = 0;
  for (let t = minLag; t <= maxLag; t++) best = Math.max(best, nsdf[t]!);
  if (best <= 0) return { f0: 0, clarity: 0 };
  for (let t = minLag; t <= maxLag; t++) {
    const v = nsdf[t]!;
    if (v >= 0.8 * best && v >= nsdf[t - 1]! && v >= nsdf[t + 1]!) {
      const a = nsdf[t - 1]!, b = v, c = nsdf[t + 1]!;
      const d = a - 2 * b + c;
      const shift = d < 0 ? (0.5 * (a - c)) / d : 0;
      return { f0: rate / (t + shift), clarity: Math.min(1, b) };
    }
  }
  return { f0: 0, clarity: best };
}

/** Cosine similarity of two cepstra. */
export function cosine(a: Float32Array, b: Float32Array): number {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return aa > 0 && bb > 0 ? ab / Math.sqrt(aa * bb) : 0;
}

/** Euclidean distance between two cepstra (spectral-envelope change). */
export function cepDistance(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i]! - b[i]!) ** 2;
  return Math.sqrt(s);
}

/**
 * Mean frame similarity along the best monotonic alignment (DTW, steps (1,0),(0,1),(1,1)) of two
 * short cepstral sequences, after removing each sequence's own mean (channel and level effects).
 * O(|a|·|b|); callers keep both under ~40 frames.
 */
export function dtwSimilarity(a: Float32Array[], b: Float32Array[]): number {
  const na = a.length, nb = b.length;
  if (!na || !nb) return 0;
  const centre = (s: Float32Array[]) => {
    const mean = new Float32Array(CEPS);
    for (const f of s) for (let i = 0; i < CEPS; i++) mean[i] = mean[i]! + f[i]! / s.length;
    return s.map((f) => f.map((v, i) => v - mean[i]!));
  };
  // Mean removal needs a few frames to be meaningful; very short units are compared raw.
  const A = na >= 4 && nb >= 4 ? centre(a) : a;
  const B = na >= 4 && nb >= 4 ? centre(b) : b;
  const cost = new Float64Array((na + 1) * (nb + 1)).fill(Infinity);
  const len = new Float64Array((na + 1) * (nb + 1));
  cost[0] = 0;
  const at = (i: number, j: number) => i * (nb + 1) + j;
  for (let i = 1; i <= na; i++) {
    for (let j = 1; j <= nb; j++) {
      const d = 1 - cosine(A[i - 1]!, B[j - 1]!);
      let k = at(i - 1, j - 1);
      if (cost[at(i - 1, j)]! < cost[k]!) k = at(i - 1, j);
      if (cost[at(i, j - 1)]! < cost[k]!) k = at(i, j - 1);
      cost[at(i, j)] = cost[k]! + d;
      len[at(i, j)] = len[k]! + 1;
    }
  }
  return 1 - cost[at(na, nb)]! / Math.max(1, len[at(na, nb)]!);
}
