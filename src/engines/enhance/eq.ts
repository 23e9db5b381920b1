import type { AudioData } from '../../media/audio.js';
import { RealFFT } from '../../media/dsp/fft.js';
import { hann, nextPow2 } from '../../media/dsp/stft-stream.js';
import type { Biquad } from './loudness.js';
import type { AnalysisPass, AudioStage } from './stage.js';

/**
 * autoeq: long-term average spectrum of the voiced frames (analysis pass), compared with a speech
 * target curve; the difference (bounded to +-6 dB) becomes shelf + peaking biquads. studio_sound
 * adds a gentle compressor and a de-esser.
 */

/** Third-octave centres (Hz) used for analysis and the target. */
export const BANDS = [125, 160, 200, 250, 315, 400, 500, 630, 800, 1000, 1250, 1600, 2000, 2500, 3150, 4000, 5000, 6300, 8000];
/** Speech target, dB relative (shape of the long-term average speech spectrum, Byrne et al. 1994, smoothed). */
export const SPEECH_TARGET = [-6, -3, -1, 0, 0, 0, 0, -1, -3, -5, -6.5, -7.5, -8.5, -9.5, -10.5, -11.5, -12.5, -14, -16];

export class SpectrumAnalysis implements AnalysisPass<Float64Array> {
  private readonly fft: RealFFT;
  private readonly win: Float32Array;
  private readonly buf: Float32Array;
  private fill = 0;
  private readonly acc: Float64Array;
  private frames = 0;
  private loudest = 0;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  private readonly frame: Float64Array;
  private readonly pow: Float64Array;

  constructor(readonly sampleRate: number) {
    const size = nextPow2(Math.round(0.064 * sampleRate));
    this.fft = new RealFFT(size);
    this.win = hann(size);
    this.buf = new Float32Array(size);
    this.acc = new Float64Array(BANDS.length);
    this.re = new Float64Array(size / 2 + 1);
    this.im = new Float64Array(size / 2 + 1);
    this.frame = new Float64Array(size);
    this.pow = new Float64Array(BANDS.length);
  }

  push(block: AudioData): void {
    const n = block.channels[0]?.length ?? 0;
    const size = this.fft.size;
    for (let i = 0; i < n; i++) {
      let v = 0;
      for (const ch of block.channels) v += ch[i]!;
      this.buf[this.fill++] = v / block.channels.length;
      if (this.fill === size) {
        this.analyzeFrame();
        this.buf.copyWithin(0, size / 2);
        this.fill = size / 2;
      }
    }
  }

  private analyzeFrame(): void {
    const { fft, win, buf, frame, re, im, pow } = this;
    let e = 0;
    for (let i = 0; i < fft.size; i++) { frame[i] = buf[i]! * win[i]!; e += frame[i]! ** 2; }
    // Only frames within 30 dB of the loudest so far: pauses would pull the average toward the noise.
    if (e > this.loudest) this.loudest = e;
    if (e < this.loudest * 1e-3 || e === 0) return;
    fft.forward(frame, re, im);
    pow.fill(0);
    const hz = this.sampleRate / fft.size;
    for (let b = 0; b < BANDS.length; b++) {
      const lo = BANDS[b]! / 2 ** (1 / 6), hi = BANDS[b]! * 2 ** (1 / 6);
      let s = 0, c = 0;
      for (let k = Math.ceil(lo / hz); k <= Math.min(re.length - 1, Math.floor(hi / hz)); k++) { s += re[k]! ** 2 + im[k]! ** 2; c++; }
      pow[b] = c ? s / c : 0;
    }
    for (let b = 0; b < BANDS.length; b++) this.acc[b] = this.acc[b]! + pow[b]! / e;
    this.frames++;
  }

  /** Band levels in dB (NaN for bands above Nyquist or never seen). */
  result(): Float64Array {
    return this.acc.map((v) => (this.frames && v > 0 ? 10 * Math.log10(v / this.frames) : NaN));
  }
}

function rbj(type: 'peak' | 'lowshelf' | 'highshelf', f0: number, gainDb: number, q: number, fs: number): Biquad {
  const A = 10 ** (gainDb / 40);
  const w = (2 * Math.PI * Math.min(f0, fs * 0.45)) / fs;
  const cw = Math.cos(w), alpha = Math.sin(w) / (2 * q);
  let b0, b1, b2, a0, a1, a2;
  if (type === 'peak') {
    b0 = 1 + alpha * A; b1 = -2 * cw; b2 = 1 - alpha * A; a0 = 1 + alpha / A; a1 = -2 * cw; a2 = 1 - alpha / A;
  } else {
    const s = 2 * Math.sqrt(A) * alpha, sg = type === 'lowshelf' ? 1 : -1;
    b0 = A * (A + 1 - sg * (A - 1) * cw + s);
    b1 = sg * 2 * A * (A - 1 - sg * (A + 1) * cw);
    b2 = A * (A + 1 - sg * (A - 1) * cw - s);
    a0 = A + 1 + sg * (A - 1) * cw + s;
    a1 = -sg * 2 * (A - 1 + sg * (A + 1) * cw);
    a2 = A + 1 + sg * (A - 1) * cw - s;
  }
  return { b0: b0 / a0, b1: b1 / a0, b2: b2 / a0, a1: a1 / a0, a2: a2 / a0 };
}

export function biquadGainDb(f: Biquad, hz: number, fs: number): number {
  const w = (2 * Math.PI * hz) / fs;
  const c1 = Math.cos(w), s1 = Math.sin(w), c2 = Math.cos(2 * w), s2 = Math.sin(2 * w);
  const nr = f.b0 + f.b1 * c1 + f.b2 * c2, ni = -(f.b1 * s1 + f.b2 * s2);
  const dr = 1 + f.a1 * c1 + f.a2 * c2, di = -(f.a1 * s1 + f.a2 * s2);
  return 10 * Math.log10((nr * nr + ni * ni) / (dr * dr + di * di));
}

export interface AutoEqOptions {
  maxGainDb?: number;
  target?: number[];
}

/** Correction filters from measured band levels: low/high shelves + peaks, refined so the cascade hits the bounded target. */
export function designAutoEq(levels: Float64Array, fs: number, opts: AutoEqOptions = {}): Biquad[] {
  const max = opts.maxGainDb ?? 6;
  const target = opts.target ?? SPEECH_TARGET;
  const valid = BANDS.map((f, b) => f < fs * 0.45 && Number.isFinite(levels[b]!));
  // Align levels: the mean difference over the valid bands is overall gain, left to `normalize`.
  let mean = 0, cnt = 0;
  BANDS.forEach((_f, b) => { if (valid[b]) { mean += target[b]! - levels[b]!; cnt++; } });
  if (cnt < 3) return [];
  mean /= cnt;
  const want = BANDS.map((_f, b) => (valid[b] ? Math.max(-max, Math.min(max, target[b]! - levels[b]! - mean)) : 0));
  // Smooth across neighbours: a third-octave notch in the average is rarely worth a filter.
  const smooth = want.map((_v, b) => (want[Math.max(0, b - 1)]! + 2 * want[b]! + want[Math.min(want.length - 1, b + 1)]!) / 4);
  const centers = [{ t: 'lowshelf' as const, f: 160 }, ...[250, 500, 1000, 2000, 3150].map((f) => ({ t: 'peak' as const, f })), { t: 'highshelf' as const, f: 5000 }]
    .filter((c) => c.f < fs * 0.45);
  const gains = centers.map((c) => smooth[BANDS.indexOf(c.f === 160 ? 125 : c.f === 5000 ? 6300 : c.f)] ?? 0);
  const build = () => centers.map((c, i) => rbj(c.t, c.f, gains[i]!, c.t === 'peak' ? 0.9 : 0.7, fs));
  for (let it = 0; it < 8; it++) {
    const fl = build();
    centers.forEach((c, i) => {
      const probe = c.t === 'lowshelf' ? 125 : c.t === 'highshelf' ? Math.min(6300, fs * 0.4) : c.f;
      const b = BANDS.indexOf(BANDS.reduce((p, f) => (Math.abs(f - probe) < Math.abs(p - probe) ? f : p)));
      const resp = fl.reduce((a, f) => a + biquadGainDb(f, probe, fs), 0);
      gains[i] = Math.max(-max, Math.min(max, gains[i]! + 0.6 * (smooth[b]! - resp)));
    });
  }
  return build().filter((_f, i) => Math.abs(gains[i]!) > 0.25);
}

/** A biquad cascade per channel (autoeq). */
export class BiquadStage implements AudioStage {
  private readonly state: Float64Array[];
  constructor(readonly name: string, private readonly filters: Biquad[], channelCount: number) {
    this.state = Array.from({ length: channelCount }, () => new Float64Array(filters.length * 2));
  }

  async push(block: AudioData): Promise<AudioData | null> {
    return { sampleRate: block.sampleRate, channels: block.channels.map((x, c) => this.run(x, this.state[c]!)) };
  }

  private run(x: Float32Array, st: Float64Array): Float32Array {
    const y = Float32Array.from(x);
    this.filters.forEach((f, k) => {
      let z1 = st[2 * k]!, z2 = st[2 * k + 1]!;
      for (let i = 0; i < y.length; i++) {
        const v = y[i]!, o = f.b0 * v + z1;
        z1 = f.b1 * v - f.a1 * o + z2;
        z2 = f.b2 * v - f.a2 * o;
        y[i] = o;
      }
      st[2 * k] = z1; st[2 * k + 1] = z2;
    });
    return y;
  }

  async flush(): Promise<AudioData | null> {
    return null;
  }
}

export interface CompressorOptions {
  thresholdDb?: number;
  ratio?: number;
  kneeDb?: number;
  attackMs?: number;
  releaseMs?: number;
  makeupDb?: number;
}

/** Gentle feed-forward RMS compressor, stereo-linked, soft knee (no look-ahead: attack 10 ms is fine for voice). */
export class CompressorStage implements AudioStage {
  readonly name = 'compressor';
  private env = 0;
  private gainDb = 0;
  constructor(readonly sampleRate: number, private readonly opts: CompressorOptions = {}) {}

  async push(block: AudioData): Promise<AudioData | null> {
    const { thresholdDb = -24, ratio = 2.5, kneeDb = 8, attackMs = 10, releaseMs = 200, makeupDb = 0 } = this.opts;
    const fs = this.sampleRate;
    const aA = Math.exp(-1 / ((attackMs / 1000) * fs)), aR = Math.exp(-1 / ((releaseMs / 1000) * fs));
    const aE = Math.exp(-1 / (0.005 * fs));
    const n = block.channels[0]?.length ?? 0;
    const out = block.channels.map((c) => new Float32Array(c.length));
    let env = this.env, g = this.gainDb;
    for (let i = 0; i < n; i++) {
      let p = 0;
      for (const ch of block.channels) p = Math.max(p, ch[i]! * ch[i]!);
      env = aE * env + (1 - aE) * p;
      const lvl = 10 * Math.log10(env + 1e-12);
      const over = lvl - thresholdDb;
      // Soft knee: quadratic blend over kneeDb around the threshold.
      const red = over <= -kneeDb / 2 ? 0 : over >= kneeDb / 2 ? over * (1 - 1 / ratio) : ((1 - 1 / ratio) * (over + kneeDb / 2) ** 2) / (2 * kneeDb);
      const target = -red;
      const a = target < g ? aA : aR;
      g = a * g + (1 - a) * target;
      const lin = 10 ** ((g + makeupDb) / 20);
      for (let c = 0; c < out.length; c++) out[c]![i] = block.channels[c]![i]! * lin;
    }
    this.env = env; this.gainDb = g;
    return { sampleRate: block.sampleRate, channels: out };
  }

  async flush(): Promise<AudioData | null> {
    return null;
  }
}

/**
 * De-esser: when the high band (above ~5 kHz) carries more than `ratio` of the frame's energy (an "s"),
 * the high band is pulled down by up to `maxReductionDb`; y = x - (1 - g) * hp(x).
 */
export class DeEsserStage implements AudioStage {
  readonly name = 'deesser';
  private readonly hp: Biquad;
  private readonly st: Float64Array[];
  private eh = 0;
  private ea = 0;
  private g = 1;
  constructor(readonly sampleRate: number, channelCount: number, private readonly opts: { freq?: number; ratio?: number; maxReductionDb?: number } = {}) {
    const f = Math.min(opts.freq ?? 5000, sampleRate * 0.4);
    const w = (2 * Math.PI * f) / sampleRate, cw = Math.cos(w), al = Math.sin(w) / (2 * 0.707);
    const a0 = 1 + al;
    this.hp = { b0: (1 + cw) / 2 / a0, b1: -(1 + cw) / a0, b2: (1 + cw) / 2 / a0, a1: (-2 * cw) / a0, a2: (1 - al) / a0 };
    this.st = Array.from({ length: channelCount }, () => new Float64Array(2));
  }

  async push(block: AudioData): Promise<AudioData | null> {
    const fs = this.sampleRate, ratio = this.opts.ratio ?? 0.35;
    const floor = 10 ** (-(this.opts.maxReductionDb ?? 8) / 20);
    const aE = Math.exp(-1 / (0.005 * fs)), aG = Math.exp(-1 / (0.01 * fs));
    const n = block.channels[0]?.length ?? 0;
    const C = block.channels.length;
    const hpOut = block.channels.map((x, c) => {
      const y = new Float32Array(n), s = this.st[c]!, f = this.hp;
      let z1 = s[0]!, z2 = s[1]!;
      for (let i = 0; i < n; i++) { const v = x[i]!, o = f.b0 * v + z1; z1 = f.b1 * v - f.a1 * o + z2; z2 = f.b2 * v - f.a2 * o; y[i] = o; }
      s[0] = z1; s[1] = z2;
      return y;
    });
    const out = block.channels.map(() => new Float32Array(n));
    let eh = this.eh, ea = this.ea, g = this.g;
    for (let i = 0; i < n; i++) {
      let ph = 0, pa = 0;
      for (let c = 0; c < C; c++) { ph += hpOut[c]![i]! ** 2; pa += block.channels[c]![i]! ** 2; }
      eh = aE * eh + (1 - aE) * ph;
      ea = aE * ea + (1 - aE) * pa;
      const frac = eh / (ea + 1e-12);
      const want = frac > ratio && ea > 1e-7 ? Math.max(floor, Math.sqrt(ratio / frac)) : 1;
      g = aG * g + (1 - aG) * want;
      for (let c = 0; c < C; c++) out[c]![i] = block.channels[c]![i]! - (1 - g) * hpOut[c]![i]!;
    }
    this.eh = eh; this.ea = ea; this.g = g;
    return { sampleRate: block.sampleRate, channels: out };
  }

  async flush(): Promise<AudioData | null> {
    return null;
  }
}
