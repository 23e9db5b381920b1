import type { AudioData } from '../../media/audio.js';
import type { AnalysisPass } from './stage.js';

/**
 * ITU-R BS.1770-4 / EBU R128 loudness as a streaming analysis (bounded memory: a histogram of block
 * loudness, as libebur128 and ffmpeg do), and the 4x true-peak interpolator; normalize.ts applies them.
 */

export interface Biquad {
  b0: number; b1: number; b2: number; a1: number; a2: number;
}

/**
 * K-weighting at any rate: the analog prototype behind the BS.1770 48 kHz coefficients (libebur128's
 * derivation), redone through the bilinear transform, so 16/22.05/44.1 kHz need no resampling.
 */
export function kWeighting(fs: number): [Biquad, Biquad] {
  let f0 = 1681.974450955533;
  const G = 3.999843853973347;
  let Q = 0.7071752369554196;
  let K = Math.tan((Math.PI * f0) / fs);
  const Vh = 10 ** (G / 20);
  const Vb = Vh ** 0.4996667741545416;
  let a0 = 1 + K / Q + K * K;
  const shelf: Biquad = {
    b0: (Vh + (Vb * K) / Q + K * K) / a0,
    b1: (2 * (K * K - Vh)) / a0,
    b2: (Vh - (Vb * K) / Q + K * K) / a0,
    a1: (2 * (K * K - 1)) / a0,
    a2: (1 - K / Q + K * K) / a0,
  };
  f0 = 38.13547087602444;
  Q = 0.5003270373238773;
  K = Math.tan((Math.PI * f0) / fs);
  a0 = 1 + K / Q + K * K;
  const hp: Biquad = { b0: 1, b1: -2, b2: 1, a1: (2 * (K * K - 1)) / a0, a2: (1 - K / Q + K * K) / a0 };
  return [shelf, hp];
}

/** BS.1770 channel weights by position for 5.1 (LFE excluded, surrounds +1.5 dB); 1 otherwise. */
function channelWeights(n: number): number[] {
  if (n === 6) return [1, 1, 1, 0, 1.41, 1.41];
  if (n === 5) return [1, 1, 1, 1.41, 1.41];
  return Array.from({ length: n }, () => 1);
}

/** 4x oversampling interpolator for true peak: 49-tap Kaiser-windowed sinc, 6 input samples of delay. */
export function truePeakFilter(): Float64Array[] {
  const taps = 49;
  const h = new Float64Array(taps);
  const beta = 6;
  const i0 = (x: number) => {
    let s = 1, t = 1;
    for (let k = 1; k < 25; k++) { t *= (x / (2 * k)) ** 2; s += t; }
    return s;
  };
  for (let m = 0; m < taps; m++) {
    const t = (m - 24) / 4;
    const sinc = t === 0 ? 1 : Math.sin(Math.PI * t) / (Math.PI * t);
    const r = (m - 24) / 24;
    h[m] = sinc * (i0(beta * Math.sqrt(Math.max(0, 1 - r * r))) / i0(beta));
  }
  // Phase p holds taps h[4k+p]: y[4n+p] = sum_k x[n-k] h[4k+p].
  return [0, 1, 2, 3].map((p) => {
    const ph = new Float64Array(13);
    for (let k = 0; k * 4 + p < taps; k++) ph[k] = h[4 * k + p]!;
    return ph;
  });
}

/** Per-sample absolute peak of the 4x-interpolated signal (delayed by 6 samples), per channel history. */
export class PeakInterpolator {
  private readonly phases = truePeakFilter();
  private readonly hist: Float64Array;
  private pos = 0;
  static readonly delay = 6;

  constructor() {
    this.hist = new Float64Array(32);
  }

  /** Writes into out[i] the max |interpolated| around input sample i - 6. */
  run(x: Float32Array, out: Float32Array, gain = 1): void {
    const { hist, phases } = this;
    const p0 = phases[0]!, p1 = phases[1]!, p2 = phases[2]!, p3 = phases[3]!;
    let pos = this.pos;
    for (let i = 0; i < x.length; i++) {
      pos = (pos + 1) & 31;
      hist[pos] = x[i]! * gain;
      let y0 = 0, y1 = 0, y2 = 0, y3 = 0;
      for (let k = 0; k < 13; k++) {
        const v = hist[(pos - k) & 31]!;
        y0 += v * p0[k]!; y1 += v * p1[k]!; y2 += v * p2[k]!; y3 += v * p3[k]!;
      }
      out[i] = Math.max(Math.abs(y0), Math.abs(y1), Math.abs(y2), Math.abs(y3));
    }
    this.pos = pos;
  }
}

export interface LoudnessResult {
  /** Integrated loudness in LUFS; -Infinity when everything is below the absolute gate. */
  integratedLufs: number;
  truePeakDbtp: number;
  samplePeakDbfs: number;
  durationSeconds: number;
}

const HIST_MIN = -70;
const HIST_STEP = 0.01;
const HIST_BINS = 9000; // -70 .. +20 LUFS

export class LoudnessMeter implements AnalysisPass<LoudnessResult> {
  private readonly filters: [Biquad, Biquad];
  private readonly state: Float64Array[];
  private readonly weights: number[];
  private readonly subLen: number;
  private subFill = 0;
  private subSum = 0;
  private readonly subs = new Float64Array(4);
  private subCount = 0;
  private readonly histCount = new Float64Array(HIST_BINS);
  private readonly histPower = new Float64Array(HIST_BINS);
  private readonly peaks: PeakInterpolator[];
  private scratch = new Float32Array(0);
  private truePeak = 0;
  private samplePeak = 0;
  private frames = 0;
  /** K-weighted energy of the whole input, for clips shorter than one gating block. */
  private totalPower = 0;

  constructor(readonly sampleRate: number, readonly channelCount: number, private readonly measurePeak = true) {
    this.filters = kWeighting(sampleRate);
    this.state = Array.from({ length: channelCount }, () => new Float64Array(4));
    this.weights = channelWeights(channelCount);
    this.subLen = Math.round(sampleRate / 10);
    this.peaks = Array.from({ length: channelCount }, () => new PeakInterpolator());
  }

  push(block: AudioData): void {
    const n = block.channels[0]?.length ?? 0;
    if (this.scratch.length < n) this.scratch = new Float32Array(n);
    // Weighted squares summed over channels into `scratch`, then cut into 100 ms sub-blocks.
    const acc = new Float64Array(n);
    for (let c = 0; c < this.channelCount; c++) {
      const x = block.channels[c]!;
      this.filterSquares(x, this.state[c]!, acc, this.weights[c]!);
      let sp = this.samplePeak;
      for (let i = 0; i < n; i++) { const a = Math.abs(x[i]!); if (a > sp) sp = a; }
      this.samplePeak = sp;
      if (this.measurePeak) {
        const tp = this.scratch.subarray(0, n);
        this.peaks[c]!.run(x, tp);
        let m = this.truePeak;
        for (let i = 0; i < n; i++) if (tp[i]! > m) m = tp[i]!;
        this.truePeak = m;
      }
    }
    this.frames += n;
    for (let i = 0; i < n; i++) {
      this.totalPower += acc[i]!;
      this.subSum += acc[i]!;
      if (++this.subFill === this.subLen) this.endSubBlock();
    }
  }

  private filterSquares(x: Float32Array, s: Float64Array, acc: Float64Array, w: number): void {
    const [f1, f2] = this.filters;
    let z1 = s[0]!, z2 = s[1]!, z3 = s[2]!, z4 = s[3]!;
    for (let i = 0; i < x.length; i++) {
      // Transposed direct form II, two sections.
      const v = x[i]!;
      const y1 = f1.b0 * v + z1;
      z1 = f1.b1 * v - f1.a1 * y1 + z2;
      z2 = f1.b2 * v - f1.a2 * y1;
      const y2 = f2.b0 * y1 + z3;
      z3 = f2.b1 * y1 - f2.a1 * y2 + z4;
      z4 = f2.b2 * y1 - f2.a2 * y2;
      acc[i] = acc[i]! + w * y2 * y2;
    }
    s[0] = z1; s[1] = z2; s[2] = z3; s[3] = z4;
  }

  private endSubBlock(): void {
    this.subs[this.subCount & 3] = this.subSum;
    this.subCount++;
    this.subSum = 0;
    this.subFill = 0;
    if (this.subCount < 4) return;
    const power = (this.subs[0]! + this.subs[1]! + this.subs[2]! + this.subs[3]!) / (4 * this.subLen);
    const l = -0.691 + 10 * Math.log10(power);
    if (!(l > HIST_MIN)) return;
    const bin = Math.min(HIST_BINS - 1, Math.floor((l - HIST_MIN) / HIST_STEP));
    this.histCount[bin]! += 1;
    this.histPower[bin]! += power;
  }

  result(): LoudnessResult {
    let cnt = 0, pow = 0;
    for (let b = 0; b < HIST_BINS; b++) { cnt += this.histCount[b]!; pow += this.histPower[b]!; }
    let integrated = -Infinity;
    if (cnt > 0) {
      const rel = -0.691 + 10 * Math.log10(pow / cnt) - 10;
      const from = Math.max(0, Math.ceil((rel - HIST_MIN) / HIST_STEP));
      let c2 = 0, p2 = 0;
      for (let b = from; b < HIST_BINS; b++) { c2 += this.histCount[b]!; p2 += this.histPower[b]!; }
      if (c2 > 0) integrated = -0.691 + 10 * Math.log10(p2 / c2);
    } else if (this.subCount < 4 && this.frames > 0) {
      // Shorter than one 400 ms gating block (BS.1770 gives no value; ffmpeg prints -70): the whole clip
      // is taken as the one block, absolute gate included, so a 0.3 s clip is still normalized.
      const l = -0.691 + 10 * Math.log10(this.totalPower / this.frames);
      if (l > HIST_MIN) integrated = l;
    }
    const db = (v: number) => (v > 0 ? 20 * Math.log10(v) : -Infinity);
    return {
      integratedLufs: integrated,
      truePeakDbtp: db(Math.max(this.truePeak, this.samplePeak)),
      samplePeakDbfs: db(this.samplePeak),
      durationSeconds: this.frames / this.sampleRate,
    };
  }
}

/** Parses the summary ffmpeg's `ebur128` filter prints at the end (for cross-checks). */
export function parseEbur128Summary(stderr: string): { integratedLufs: number; truePeakDbtp: number | null } {
  const summary = stderr.slice(stderr.lastIndexOf('Summary:'));
  const i = /I:\s+(-?[\d.]+|-inf)\s+LUFS/.exec(summary);
  const p = /Peak:\s+(-?[\d.]+|-inf)\s+dBFS/.exec(summary);
  const num = (s: string | undefined) => (s === undefined ? NaN : s === '-inf' ? -Infinity : Number(s));
  return { integratedLufs: num(i?.[1]), truePeakDbtp: p ? num(p[1]) : null };
}
