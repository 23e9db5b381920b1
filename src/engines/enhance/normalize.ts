import type { AudioData } from '../../media/audio.js';
import { LoudnessMeter, PeakInterpolator, type LoudnessResult } from './loudness.js';
import { LatencyTrim, SampleFifo, type AnalysisPass, type AudioStage } from './stage.js';

/** `normalize`: a gain to the target loudness under a true-peak ceiling (look-ahead limiter on the 4x-interpolated peak). */

export interface NormalizeOptions {
  targetLufs?: number;
  ceilingDbtp?: number;
  lookaheadMs?: number;
  releaseMs?: number;
  /**
   * Never boost more than this (default 45 dB: anything measuring above -61 LUFS reaches -16; the
   * absolute gate at -70 LUFS already gives pure noise floors no gain at all). 30 dB left quiet but real
   * recordings (a -52.8 LUFS reverberant file) 6.9 LU short.
   */
  maxGainDb?: number;
  /** Extra gain that makes up for the loudness the limiter takes away (see LimitedLoudnessPass). */
  compensationDb?: number;
}

/**
 * Second pass of `normalize`: a constant gain to the target loudness; when that gain would push the
 * true peak over the ceiling, a look-ahead limiter on the (interpolated) peak keeps it under.
 */
export class NormalizeStage implements AudioStage {
  readonly name = 'normalize';
  readonly gainDb: number;
  readonly limiting: boolean;
  private readonly gain: number;
  private readonly ceiling: number;
  private readonly L: number;
  private readonly release: number;
  private readonly peaks: PeakInterpolator[] = [];
  private readonly fifo: SampleFifo;
  private readonly trim: LatencyTrim;
  // Sliding-min deque over detection gains, then release, then an L-long boxcar mean.
  private readonly dqVal: Float64Array;
  private readonly dqIdx: Float64Array;
  private dqHead = 0;
  private dqTail = 0;
  private readonly box: Float64Array;
  private boxSum = 0;
  private held = 1;
  private t = 0;

  constructor(measured: LoudnessResult, readonly sampleRate: number, readonly channelCount: number, opts: NormalizeOptions = {}) {
    const target = opts.targetLufs ?? -16;
    const ceilingDb = opts.ceilingDbtp ?? -1;
    let g = Number.isFinite(measured.integratedLufs) ? target - measured.integratedLufs : 0;
    g = Math.min(g, opts.maxGainDb ?? 45) + (opts.compensationDb ?? 0);
    this.gainDb = g;
    this.gain = 10 ** (g / 20);
    // A small margin: the detector's interpolation is not the meter's exact one.
    this.ceiling = 10 ** ((ceilingDb - 0.1) / 20);
    this.limiting = measured.truePeakDbtp + g > ceilingDb - 0.1;
    this.L = Math.max(1, Math.round(((opts.lookaheadMs ?? 5) / 1000) * sampleRate));
    this.release = Math.exp(-1 / (((opts.releaseMs ?? 80) / 1000) * sampleRate));
    for (let c = 0; c < channelCount; c++) this.peaks.push(new PeakInterpolator());
    this.fifo = new SampleFifo(channelCount);
    // Audio waits in the fifo for its gain, so output keeps its own timing: no samples to drop, only a cap.
    this.trim = new LatencyTrim(0);
    this.dqVal = new Float64Array(this.L + 1);
    this.dqIdx = new Float64Array(this.L + 1);
    this.box = new Float64Array(this.L).fill(1);
    this.boxSum = this.L;
  }

  async push(block: AudioData): Promise<AudioData | null> {
    return this.pushSync(block);
  }

  async flush(): Promise<AudioData | null> {
    return this.flushSync();
  }

  /** The work is synchronous; analysis passes call these directly. */
  pushSync(block: AudioData): AudioData | null {
    const n = block.channels[0]?.length ?? 0;
    this.trim.countInput(n);
    if (!this.limiting) {
      return { sampleRate: block.sampleRate, channels: block.channels.map((c) => scaled(c, this.gain)) };
    }
    return this.limit(block.channels.map((c) => scaled(c, this.gain)));
  }

  flushSync(): AudioData | null {
    if (!this.limiting) return null;
    const pad = Array.from({ length: this.channelCount }, () => new Float32Array(PeakInterpolator.delay + this.L - 1));
    return this.limit(pad);
  }

  private limit(x: Float32Array[]): AudioData | null {
    const n = x[0]?.length ?? 0;
    const det = new Float32Array(n);
    const tmp = new Float32Array(n);
    for (let c = 0; c < this.channelCount; c++) {
      this.peaks[c]!.run(x[c]!, tmp);
      for (let i = 0; i < n; i++) if (tmp[i]! > det[i]!) det[i] = tmp[i]!;
    }
    // Input sample j's detection refers to sample j-6; audio is delayed to match (fifo), so the gain
    // computed at step j applies to fifo sample j - 6 - (L - 1).
    this.fifo.push(x);
    const gains = new Float32Array(n);
    this.gainCurve(det, gains);
    const D = PeakInterpolator.delay + this.L - 1;
    const ready = Math.max(0, this.fifo.length - D);
    const out = this.fifo.take(Math.min(ready, n));
    // The first D steps produce gains for not-yet-existing samples (before time 0): skip them.
    const off = n - out[0]!.length;
    for (const ch of out) for (let i = 0; i < ch.length; i++) ch[i] = ch[i]! * gains[off + i]!;
    const trimmed = this.trim.apply(out);
    return trimmed ? { sampleRate: this.sampleRate, channels: trimmed } : null;
  }

  private gainCurve(det: Float32Array, gains: Float32Array): void {
    const { L, ceiling, release, dqVal, dqIdx, box } = this;
    const cap = dqVal.length;
    let head = this.dqHead, tail = this.dqTail, held = this.held, sum = this.boxSum, t = this.t;
    for (let i = 0; i < det.length; i++, t++) {
      const d = det[i]!;
      const gt = d > ceiling ? ceiling / d : 1;
      // Monotonic deque: minimum of gt over the last L steps.
      while (tail > head && dqVal[(tail - 1) % cap]! >= gt) tail--;
      dqVal[tail % cap] = gt;
      dqIdx[tail % cap] = t;
      tail++;
      while (dqIdx[head % cap]! <= t - L) head++;
      const h = dqVal[head % cap]!;
      // Release toward 1 slowly, never above the required minimum.
      held = Math.min(h, 1 - (1 - held) * release);
      // Boxcar over the last L held values: every value in it is <= the gain needed L-1 steps ago.
      const k = t % L;
      sum += held - box[k]!;
      box[k] = held;
      gains[i] = sum / L;
    }
    this.dqHead = head; this.dqTail = tail; this.held = held; this.boxSum = sum; this.t = t;
  }
}

/**
 * Optional middle pass when the limiter engages: runs the planned gain + limiter and measures the
 * result, so the final pass can add back the loudness the limiter removed (one refinement gets
 * within about 0.2 LU; the limiter works slightly harder with the extra gain).
 */
export class LimitedLoudnessPass implements AnalysisPass<number> {
  private readonly stage: NormalizeStage;
  private readonly meter: LoudnessMeter;
  private done = false;

  constructor(measured: LoudnessResult, sampleRate: number, channelCount: number, private readonly opts: NormalizeOptions = {}) {
    this.stage = new NormalizeStage(measured, sampleRate, channelCount, opts);
    this.meter = new LoudnessMeter(sampleRate, channelCount, false);
  }

  push(block: AudioData): void {
    const out = this.stage.pushSync(block);
    if (out) this.meter.push(out);
  }

  /** The compensation in dB to pass as `compensationDb` (0 when no limiting happens). */
  result(): number {
    if (!this.done) {
      const tail = this.stage.flushSync();
      if (tail) this.meter.push(tail);
      this.done = true;
    }
    const after = this.meter.result().integratedLufs;
    if (!this.stage.limiting || !Number.isFinite(after)) return 0;
    const target = (this.opts.targetLufs ?? -16) + (this.opts.compensationDb ?? 0);
    return Math.max(0, Math.min(6, target - after));
  }
}

function scaled(x: Float32Array, g: number): Float32Array {
  const y = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = x[i]! * g;
  return y;
}
