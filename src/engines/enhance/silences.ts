import type { AudioData } from '../../media/audio.js';
import { concatAudio, SampleFifo, type AudioStage } from './stage.js';
import type { VadTracker } from './vad.js';

/**
 * `long_silences`: pauses longer than `minSilenceSeconds` are shortened to `targetSeconds` (never to
 * zero): the first and last parts of the pause are kept and joined with an equal-power crossfade, so
 * the room tone continues and word edges the VAD missed stay intact. Look-ahead is bounded: during a
 * long pause only its head's crossfade and the last `tail` seconds are held.
 */
export interface LongSilenceOptions {
  minSilenceSeconds?: number;
  targetSeconds?: number;
  crossfadeSeconds?: number;
  /** VAD probability above which a frame is speech. */
  threshold?: number;
}

type Mode = 'speech' | 'short' | 'long';

export class LongSilenceStage implements AudioStage {
  readonly name = 'long_silences';
  private readonly fifo: SampleFifo;
  private fifoStart = 0;
  private frontier = 0;
  private k = 0;
  private mode: Mode = 'speech';
  private runStart = 0;
  private pendingS: number | null = null;
  private pendingCount = 0;
  private headTail: Float32Array[] = [];
  private readonly minSil: number;
  private readonly head: number;
  private readonly tail: number;
  private readonly xf: number;
  private readonly keep: number;
  private readonly threshold: number;
  private out: AudioData[] = [];
  /** Pauses shortened so far and the seconds removed (for reports and timestamp remapping). */
  shortened = 0;
  removedSeconds = 0;
  /** Removed input ranges in seconds (one per shortened pause: small, for remapping timestamps). */
  readonly cuts: Array<[number, number]> = [];

  constructor(private readonly vad: VadTracker, readonly sampleRate: number, readonly channelCount: number, opts: LongSilenceOptions = {}) {
    const R = sampleRate;
    const target = opts.targetSeconds ?? 0.6;
    this.xf = Math.max(1, Math.round((opts.crossfadeSeconds ?? 0.05) * R));
    this.head = Math.max(0, Math.floor((Math.round(target * R) - this.xf) / 2));
    this.tail = this.head;
    const frameLen = vad.frameEnd(0);
    // The pause must be long enough to hold head, crossfade and tail apart with frames to spare.
    this.minSil = Math.max(Math.round((opts.minSilenceSeconds ?? 1.0) * R), this.head + this.tail + 2 * this.xf + 3 * frameLen);
    this.keep = this.tail + this.xf + 3 * frameLen;
    this.threshold = opts.threshold ?? 0.5;
    this.fifo = new SampleFifo(channelCount);
  }

  async push(block: AudioData): Promise<AudioData | null> {
    this.fifo.push(block.channels);
    this.decide(await this.vad.push(block));
    return this.drain();
  }

  async flush(): Promise<AudioData | null> {
    this.decide(await this.vad.flush());
    const end = this.fifoStart + this.fifo.length;
    if (this.mode === 'long') this.finishLong(end);
    this.emitTo(end);
    return this.drain();
  }

  private decide(decisions: number[]): void {
    for (const p of decisions) {
      const fs = this.frontier;
      const fe = this.vad.frameEnd(this.k++);
      const speech = p >= this.threshold;
      if (speech) {
        if (this.mode === 'short') this.mode = 'speech';
        else if (this.mode === 'long') {
          // Two speech frames in a row end a long pause: one is often a click or a noise burst.
          if (this.pendingS === null) { this.pendingS = fs; this.pendingCount = 0; }
          if (++this.pendingCount >= 2) this.finishLong(this.pendingS);
        }
      } else if (this.mode === 'speech') {
        this.mode = 'short';
        this.runStart = fs;
      } else if (this.mode === 'short') {
        if (fe - this.runStart >= this.minSil) this.enterLong();
      } else this.pendingS = null;
      this.frontier = fe;
      if (this.mode === 'speech') this.emitTo(this.frontier);
      else if (this.mode === 'short') this.emitTo(this.runStart);
      else {
        const drop = Math.min(this.fifo.length, this.frontier - this.keep - this.fifoStart);
        if (drop > 0) { this.fifo.discard(drop); this.fifoStart += drop; }
      }
    }
  }

  private enterLong(): void {
    const cut = this.runStart + this.head;
    this.emitTo(cut);
    this.headTail = this.copyRange(cut, cut + this.xf);
    this.mode = 'long';
    this.pendingS = null;
  }

  private finishLong(s: number): void {
    const bStart = Math.max(s - this.tail - this.xf, this.fifoStart);
    const b = this.copyRange(bStart, s);
    const n = b[0]?.length ?? 0;
    const xf = Math.min(this.xf, n, this.headTail[0]?.length ?? 0);
    for (let c = 0; c < this.channelCount; c++) {
      const h = this.headTail[c]!, t = b[c]!;
      // Equal-power: the two ends of a pause are uncorrelated room tone.
      for (let i = 0; i < xf; i++) {
        const a = ((i + 0.5) / xf) * (Math.PI / 2);
        t[i] = h[i]! * Math.cos(a) + t[i]! * Math.sin(a);
      }
    }
    const removed = s - (this.runStart + this.head) - n;
    this.removedSeconds += Math.max(0, removed) / this.sampleRate;
    const from = this.runStart + this.head + xf;
    this.cuts.push([from / this.sampleRate, (from + Math.max(0, removed)) / this.sampleRate]);
    this.shortened++;
    this.out.push({ sampleRate: this.sampleRate, channels: b });
    const drop = s - this.fifoStart;
    this.fifo.discard(drop);
    this.fifoStart = s;
    this.mode = 'speech';
    this.pendingS = null;
    this.headTail = [];
  }

  private copyRange(from: number, to: number): Float32Array[] {
    const off = from - this.fifoStart;
    const n = Math.max(0, Math.min(to, this.fifoStart + this.fifo.length) - from);
    return Array.from({ length: this.channelCount }, (_, c) => this.fifo.peek(c, n, off).slice());
  }

  private emitTo(pos: number): void {
    const n = Math.min(this.fifo.length, pos - this.fifoStart);
    if (n <= 0) return;
    this.out.push({ sampleRate: this.sampleRate, channels: this.fifo.take(n) });
    this.fifoStart += n;
  }

  private drain(): AudioData | null {
    if (this.out.length === 0) return null;
    const a = this.out.length === 1 ? this.out[0]! : concatAudio(this.out, this.sampleRate, this.channelCount);
    this.out = [];
    return a;
  }
}
