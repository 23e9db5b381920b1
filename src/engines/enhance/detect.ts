import type { AudioData } from '../../media/audio.js';
import { jsFftProvider, type FftProvider, type RealFft } from '../../media/dsp/fft.js';
import { hannWindow } from '../../media/dsp/stft.js';
import { FrameLevels, MonoFrames, type AnalysisPass } from './stage.js';

/**
 * What autoid listens for before it plans (chain.ts): the noise floor under the speech and its spectrum (broadband
 * hiss against a low rumble), the speech level above it, and clipping. One streamed pass, bounded memory
 * (histograms), on 32 ms Hann frames of the channel mix.
 *
 * The floor is found the way minimum-statistics noise trackers find it: in each third-octave band, a low quantile of
 * the band's power over time. Speech is sparse in time and frequency, so even a file without pauses leaves each band
 * near its noise for a tenth of the time, while a steady hiss holds the quantile up in every band. The old blind
 * estimate (90th minus 10th percentile of broadband 50 ms levels) misses a steady hiss under continuous speech: the
 * 1961 JFK recording, whose hiss is plainly audible, measured "SNR" 30+ dB on it.
 */

/** The quantile of each band's power taken as its noise floor. */
export const FLOOR_QUANTILE = 0.1;
/** The quantile of frame power taken as the speech level. */
export const SPEECH_QUANTILE = 0.9;
/** Hiss region: bands from here up carry little speech energy, so a floor there is heard as hiss in the pauses and under the voice. */
export const HISS_FROM_HZ = 2000;

export interface BandFloor {
  /** Band centre, Hz. */
  hz: number;
  /** Noise floor of the band (low quantile of its power), dBFS. */
  floorDb: number;
  /** The band's level in loud frames (90th percentile), dBFS. */
  speechDb: number;
}

export interface NoiseProfile {
  /** Broadband noise floor: the band floors summed, dBFS (a full-scale sine is -3 dBFS). */
  floorDbfs: number;
  /** Speech level: 90th percentile of 32 ms frame power, dBFS. */
  speechDbfs: number;
  /** speechDbfs - floorDbfs. */
  snrDb: number;
  /**
   * The floor A-weighted (IEC 61672 at each band centre), dBFS: what of it the ear hears at moderate levels. A
   * low rumble counts little, a hiss fully.
   */
  floorDbA: number;
  /** Floor of the bands from HISS_FROM_HZ up, summed, dBFS (-Infinity when the sample rate has none). */
  hissDbfs: number;
  /**
   * Share of the floor's power above HISS_FROM_HZ, 0..1, against the share white noise would have: 1 for a white
   * floor, near 0 for hum or rumble. Above 0.3 the floor is called broadband.
   */
  hissShare: number;
  bands: BandFloor[];
  /**
   * How steady the floor is: the median over the bands of the spread between the 30th and the 5th percentile of the
   * band power, dB. A stationary noise keeps each band within a few dB; the gaps of clean or reverberant speech (tails
   * decaying into silence) spread over tens of dB.
   */
  spreadDb: number;
  /** Samples in runs of 3 or more equal full-scale values (flat tops), over all samples of all channels. */
  clippedShare: number;
  /** Level of those flat tops, dBFS (null when none). */
  clipLevelDbfs: number | null;
  frames: number;
}

const HIST_MIN = -150;
const HIST_STEP = 0.5;
const HIST_BINS = 320; // -150 .. +10 dB

function quantileDb(hist: Float64Array, total: number, q: number): number {
  let run = 0;
  for (let b = 0; b < HIST_BINS; b++) {
    run += hist[b]!;
    if (run >= q * total) return HIST_MIN + (b + 0.5) * HIST_STEP;
  }
  return HIST_MIN + HIST_BINS * HIST_STEP;
}

/** IEC 61672 A-weighting, dB (0 at 1 kHz). */
export function aWeightDb(hz: number): number {
  const f2 = hz * hz;
  const ra = (12194 ** 2 * f2 * f2) / ((f2 + 20.6 ** 2) * Math.sqrt((f2 + 107.7 ** 2) * (f2 + 737.9 ** 2)) * (f2 + 12194 ** 2));
  return 20 * Math.log10(ra) + 2.0;
}

function histBin(db: number): number {
  return Math.max(0, Math.min(HIST_BINS - 1, Math.floor((db - HIST_MIN) / HIST_STEP)));
}

/** Counts flat tops: runs of >= 3 equal samples at >= -6 dBFS (a clipper's or a saturated converter's output), per channel. */
class ClipCounter {
  private last: number[] = [];
  private run: number[] = [];
  /** Histogram of flat-top levels (0.1 dB bins, -6 .. 0 dBFS) weighted by run length. */
  readonly hist = new Float64Array(61);
  samples = 0;

  push(block: AudioData): void {
    block.channels.forEach((ch, c) => {
      let last = this.last[c] ?? NaN, run = this.run[c] ?? 0;
      for (let i = 0; i < ch.length; i++) {
        const a = Math.abs(ch[i]!);
        if (a === last && a >= 0.5) run++;
        else {
          this.close(last, run);
          last = a;
          run = 1;
        }
      }
      this.last[c] = last;
      this.run[c] = run;
      this.samples += ch.length;
    });
  }

  private close(level: number, run: number): void {
    if (run < 3) return;
    const db = 20 * Math.log10(level);
    this.hist[Math.max(0, Math.min(60, Math.round((db + 6) * 10)))]! += run;
  }

  result(): { clippedShare: number; clipLevelDbfs: number | null } {
    this.last.forEach((l, c) => this.close(l, this.run[c] ?? 0));
    this.run = this.run.map(() => 0);
    // The top level with flat runs is the clip level; runs within 0.3 dB under it count too (a gain after the clipper).
    let top = -1;
    for (let b = 60; b >= 0; b--) if (this.hist[b]! > 0) { top = b; break; }
    if (top < 0 || this.samples === 0) return { clippedShare: 0, clipLevelDbfs: null };
    let n = 0;
    for (let b = Math.max(0, top - 3); b <= top; b++) n += this.hist[b]!;
    return { clippedShare: n / this.samples, clipLevelDbfs: top / 10 - 6 };
  }
}

export class NoiseFloorAnalysis implements AnalysisPass<NoiseProfile> {
  private readonly fft: RealFft;
  private readonly win: Float32Array;
  private readonly winPower: number;
  // Frames side by side, no overlap: quantiles need no more, at half the FFTs.
  private readonly framer: MonoFrames;
  private readonly re: Float32Array;
  private readonly im: Float32Array;
  private readonly frame: Float32Array;
  /** [lo, hi) bin ranges and centres of the bands. */
  private readonly bands: Array<{ lo: number; hi: number; hz: number }> = [];
  private readonly bandHist: Float64Array[];
  private readonly loudHist: Float64Array[];
  private readonly frameHist = new Float64Array(HIST_BINS);
  private readonly bandPow: Float64Array;
  private frames = 0;
  private readonly clips = new ClipCounter();

  /** `fft`: the shared provider (loadFftProvider's pffft WASM is faster than the JS one); JS when absent. */
  constructor(readonly sampleRate: number, fft: FftProvider = jsFftProvider()) {
    let size = 1;
    while (size < 0.032 * sampleRate) size *= 2;
    this.fft = fft.create(size);
    this.win = hannWindow(size);
    this.winPower = this.win.reduce((a, w) => a + w * w, 0) / size;
    this.framer = new MonoFrames(size, size, (buf) => this.analyze(buf));
    this.re = new Float32Array(size / 2 + 1);
    this.im = new Float32Array(size / 2 + 1);
    this.frame = new Float32Array(size);
    const hz = sampleRate / size;
    // Third-octave bands from 100 Hz to 20 kHz (or Nyquist); a band with fewer than 3 bins is widened into the next.
    let lo = Math.max(1, Math.round(100 * 2 ** (-1 / 6) / hz));
    const top = Math.min(size / 2, Math.floor(20000 / hz));
    for (let c = 100; lo < top; c *= 2 ** (1 / 3)) {
      const hi = Math.min(top, Math.round((c * 2 ** (1 / 6)) / hz));
      if (hi - lo < 3 && hi < top) continue;
      this.bands.push({ lo, hi: Math.max(hi, lo + 1), hz: Math.sqrt(lo * Math.max(hi, lo + 1)) * hz });
      lo = Math.max(hi, lo + 1);
    }
    this.bandHist = this.bands.map(() => new Float64Array(HIST_BINS));
    this.loudHist = this.bands.map(() => new Float64Array(HIST_BINS));
    this.bandPow = new Float64Array(this.bands.length);
  }

  push(block: AudioData): void {
    this.clips.push(block);
    this.framer.push(block);
  }

  private analyze(buf: Float32Array): void {
    const { fft, win, frame, re, im, bandPow } = this;
    const N = fft.size;
    for (let i = 0; i < N; i++) frame[i] = buf[i]! * win[i]!;
    fft.forward(frame, re, im);
    // Band power as a share of the frame's mean square (Parseval, one-sided spectrum, window power undone).
    const scale = 2 / (N * N * this.winPower);
    let total = 0;
    for (let b = 0; b < this.bands.length; b++) {
      const { lo, hi } = this.bands[b]!;
      let s = 0;
      for (let k = lo; k < hi; k++) s += re[k]! ** 2 + im[k]! ** 2;
      bandPow[b] = s * scale;
      total += bandPow[b]!;
    }
    const frameDb = 10 * Math.log10(total + 1e-15);
    this.frameHist[histBin(frameDb)]! += 1;
    for (let b = 0; b < this.bands.length; b++) this.bandHist[b]![histBin(10 * Math.log10(bandPow[b]! + 1e-15))]! += 1;
    this.frames++;
    // Band levels of the loud frames are only kept for the report (each band's speech level); loudness is judged later.
    if (frameDb > -60) for (let b = 0; b < this.bands.length; b++) this.loudHist[b]![histBin(10 * Math.log10(bandPow[b]! + 1e-15))]! += 1;
  }

  result(): NoiseProfile {
    const clip = this.clips.result();
    if (this.frames === 0) {
      return { floorDbfs: -Infinity, speechDbfs: -Infinity, snrDb: 0, floorDbA: -Infinity, hissDbfs: -Infinity, hissShare: 0, bands: [], spreadDb: 0, frames: 0, ...clip };
    }
    const bands: BandFloor[] = this.bands.map((band, b) => {
      const loudN = this.loudHist[b]!.reduce((a, v) => a + v, 0);
      return {
        hz: band.hz,
        floorDb: quantileDb(this.bandHist[b]!, this.frames, FLOOR_QUANTILE),
        speechDb: loudN ? quantileDb(this.loudHist[b]!, loudN, SPEECH_QUANTILE) : -Infinity,
      };
    });
    const spreads = this.bandHist.map((h) => quantileDb(h, this.frames, 0.3) - quantileDb(h, this.frames, 0.05)).sort((a, b) => a - b);
    const spreadDb = spreads[Math.floor(spreads.length / 2)] ?? 0;
    const power = (list: BandFloor[]) => list.reduce((a, x) => a + 10 ** (x.floorDb / 10), 0);
    const floor = power(bands);
    const floorA = bands.reduce((a, x) => a + 10 ** ((x.floorDb + aWeightDb(x.hz)) / 10), 0);
    const hissBands = bands.filter((x) => x.hz >= HISS_FROM_HZ);
    const hiss = power(hissBands);
    // White noise puts a share of its power above HISS_FROM_HZ proportional to the bandwidth there.
    const width = (list: BandFloor[]) => list.reduce((a, x) => { const i = bands.indexOf(x); const { lo, hi } = this.bands[i]!; return a + (hi - lo); }, 0);
    const whiteShare = width(hissBands) / Math.max(1, width(bands));
    const floorDbfs = 10 * Math.log10(floor);
    const speechDbfs = quantileDb(this.frameHist, this.frames, SPEECH_QUANTILE);
    return {
      floorDbfs,
      speechDbfs,
      snrDb: speechDbfs - floorDbfs,
      floorDbA: 10 * Math.log10(floorA),
      hissDbfs: hiss > 0 ? 10 * Math.log10(hiss) : -Infinity,
      hissShare: whiteShare > 0 ? Math.min(1, hiss / floor / whiteShare) : 0,
      bands,
      spreadDb,
      frames: this.frames,
      ...clip,
    };
  }
}

/** Frame-energy statistics for autoid (bounded memory: a histogram of 50 ms frame levels). */
export class EnergyStats implements AnalysisPass<{ snrDb: number; silenceRatio: number }> {
  private readonly hist = new Float64Array(200); // -120 .. +0 dB in 0.6 dB bins
  private readonly frames: FrameLevels;

  constructor(sampleRate: number) {
    this.frames = new FrameLevels(sampleRate, 0.05, (db) => {
      this.hist[Math.max(0, Math.min(199, Math.floor((db + 120) / 0.6)))]! += 1;
    });
  }

  push(block: AudioData): void {
    this.frames.push(block);
  }

  private percentile(p: number): number {
    const total = this.hist.reduce((a, b) => a + b, 0);
    let run = 0;
    for (let b = 0; b < 200; b++) {
      run += this.hist[b]!;
      if (run >= p * total) return -120 + b * 0.6;
    }
    return 0;
  }

  result(): { snrDb: number; silenceRatio: number } {
    const total = this.hist.reduce((a, b) => a + b, 0);
    if (total === 0) return { snrDb: 0, silenceRatio: 1 };
    const loud = this.percentile(0.9);
    const quiet = this.percentile(0.1);
    let silent = 0;
    for (let b = 0; b < 200; b++) if (-120 + b * 0.6 < loud - 35) silent += this.hist[b]!;
    return { snrDb: loud - quiet, silenceRatio: silent / total };
  }
}
