import type { AudioData } from '../../media/audio.js';
import type { AnalysisPass } from './stage.js';
import { hann, nextPow2, RealFFT } from '../../media/dsp/stft-stream.js';

/**
 * Music presence for autoid, in one streamed pass with bounded memory.
 *
 * Classic speech/music discrimination: in the quiet frames between words (the bottom energy percentile),
 * pure speech leaves silence or noise, whose spectrum has no stable narrow peaks, while a music bed keeps
 * sounding notes: several narrow spectral peaks that persist at the same frequency for about 100 ms. A
 * voice's own harmonics glide with its pitch and fade within a syllable, so they rarely persist that long
 * at a low level. The pass labels every frame "tonal" or not and files it in a histogram of frame levels
 * (count and tonal count per 1 dB), so the pause threshold, known only at the end, needs no stored frames.
 *
 * What must read "no music", and how:
 * - stationary noise: its periodogram peaks are random and do not persist (about 1 in 10^3 per bin);
 * - mains hum and fan whine: tones that never move. Peaks below 200 Hz are ignored (hum's fundamental and
 *   first harmonics), and a bin that has been a persistent peak in over half the frames so far is treated as
 *   a stationary tone, not music. A held drone is therefore also ignored; real music beds change notes;
 * - silence and word tails: pause frames under -70 dBFS or 35 dB under the speech level count as pauses without music.
 */
export interface MusicPresence {
  /** Share of the pause frames (bottom 20% by level) where music sounds, 0..1. */
  musicShare: number;
  /** Frames analysed and pause frames among them. */
  frames: number;
  pauseFrames: number;
  /** Median level of the pause frames relative to the 90th-percentile (speech) level, dB. */
  pauseLevelDb: number;
}

const LEVEL_BINS = 160; // -140 .. +20 dBFS in 1 dB steps
const PAUSE_PERCENTILE = 0.2;
/** A peak stands this far above the spectrum 3 bins to each side (a Hann-windowed sine: > 30 dB). */
const PEAK_RATIO = 10 ** (8 / 10);
/** Persistent peaks a frame needs to be tonal: one tone could be a whistle or a hum harmonic; a chord has many. */
const MIN_PEAKS = 2;
const STATIONARY_SHARE = 0.5;

export class MusicDetector implements AnalysisPass<MusicPresence> {
  private readonly fft: RealFFT;
  private readonly win: Float32Array;
  private readonly buf: Float32Array;
  private fill = 0;
  private readonly frame: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  private readonly pow: Float64Array;
  /** Consecutive frames each bin has carried a peak (tracking +-1 bin), and the new values for this frame. */
  private run: Uint16Array;
  private next: Uint16Array;
  /** Frames in which each bin carried a persistent peak: stationary tones (hum, whine) show up here. */
  private readonly occupied: Float64Array;
  private readonly lo: number;
  private readonly hi: number;
  private readonly persist: number;
  private readonly count = new Float64Array(LEVEL_BINS);
  private readonly tonal = new Float64Array(LEVEL_BINS);
  private frames = 0;

  constructor(readonly sampleRate: number) {
    // About 40 ms frames (2048 at 44.1/48 kHz, 1024 at 16 kHz): 16-23 Hz bins separate the partials of a chord.
    const size = nextPow2(Math.round(0.04 * sampleRate));
    this.fft = new RealFFT(size);
    this.win = hann(size);
    this.buf = new Float32Array(size);
    this.frame = new Float64Array(size);
    this.re = new Float64Array(size / 2 + 1);
    this.im = new Float64Array(size / 2 + 1);
    this.pow = new Float64Array(size / 2 + 1);
    this.run = new Uint16Array(size / 2 + 1);
    this.next = new Uint16Array(size / 2 + 1);
    this.occupied = new Float64Array(size / 2 + 1);
    const hz = sampleRate / size;
    // 200 Hz up: mains hum and its first harmonics stay out. 5 kHz: where music partials still stand out of noise.
    this.lo = Math.max(3, Math.ceil(200 / hz));
    this.hi = Math.min(size / 2 - 3, Math.floor(Math.min(5000, 0.45 * sampleRate) / hz));
    // A note held about 100 ms: longer than the random coincidences of noise, shorter than most notes.
    const hopSeconds = size / 2 / sampleRate;
    this.persist = Math.max(3, Math.round(0.1 / hopSeconds) + 1);
  }

  push(block: AudioData): void {
    const n = block.channels[0]?.length ?? 0;
    const size = this.fft.size;
    const nc = block.channels.length;
    for (let i = 0; i < n; i++) {
      let v = 0;
      for (const ch of block.channels) v += ch[i]!;
      this.buf[this.fill++] = v / nc;
      if (this.fill === size) {
        this.analyzeFrame();
        this.buf.copyWithin(0, size / 2);
        this.fill = size / 2;
      }
    }
  }

  private analyzeFrame(): void {
    const { fft, win, buf, frame, re, im, pow, lo, hi } = this;
    const size = fft.size;
    let e = 0;
    for (let i = 0; i < size; i++) {
      frame[i] = buf[i]! * win[i]!;
      e += buf[i]! * buf[i]!;
    }
    const db = 10 * Math.log10(e / size + 1e-14);
    fft.forward(frame, re, im);
    for (let k = 0; k < pow.length; k++) pow[k] = re[k]! * re[k]! + im[k]! * im[k]!;
    this.frames++;
    const next = this.next;
    next.fill(0);
    let peaks = 0;
    for (let k = lo; k <= hi; k++) {
      const p = pow[k]!;
      if (p <= 0 || p < pow[k - 1]! || p < pow[k - 2]! || p <= pow[k + 1]! || p <= pow[k + 2]!) continue;
      if (p < PEAK_RATIO * pow[k - 3]! || p < PEAK_RATIO * pow[k + 3]!) continue;
      const r = 1 + Math.max(this.run[k - 1]!, this.run[k]!, this.run[k + 1]!);
      next[k] = Math.min(r, 65535);
      if (r >= this.persist) {
        this.occupied[k]! += 1;
        // A tone that has sounded through most of the input so far (hum, whine, a held drone) is not a music bed.
        const held = Math.max(this.occupied[k - 1]!, this.occupied[k]!, this.occupied[k + 1]!);
        if (held <= STATIONARY_SHARE * this.frames) peaks++;
      }
    }
    this.next = this.run;
    this.run = next;
    const b = Math.max(0, Math.min(LEVEL_BINS - 1, Math.floor(db + 140)));
    this.count[b]! += 1;
    if (peaks >= MIN_PEAKS) this.tonal[b]! += 1;
  }

  private percentileBin(p: number, total: number): number {
    let acc = 0;
    for (let b = 0; b < LEVEL_BINS; b++) {
      acc += this.count[b]!;
      if (acc >= p * total) return b;
    }
    return LEVEL_BINS - 1;
  }

  result(): MusicPresence {
    const total = this.count.reduce((a, v) => a + v, 0);
    if (total === 0) return { musicShare: 0, frames: 0, pauseFrames: 0, pauseLevelDb: 0 };
    const loud = this.percentileBin(0.9, total);
    const pauseTop = this.percentileBin(PAUSE_PERCENTILE, total);
    const median = this.percentileBin(PAUSE_PERCENTILE / 2, total);
    // Pauses quieter than -70 dBFS or 35 dB under the speech are no music bed a listener would miss; in clean
    // speech they are the fading ends of words, whose harmonics can still look persistent.
    const audible = Math.max(140 - 70, loud - 35);
    let pause = 0;
    let music = 0;
    for (let b = 0; b <= pauseTop; b++) {
      pause += this.count[b]!;
      if (b >= audible) music += this.tonal[b]!;
    }
    return { musicShare: pause ? music / pause : 0, frames: this.frames, pauseFrames: pause, pauseLevelDb: median - loud };
  }
}

/** autoid calls music present at this share of tonal pauses (bench/results/enhance.md "autoid music presence"). */
export const MUSIC_PRESENT_SHARE = 0.15;
