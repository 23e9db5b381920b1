import type { AudioData } from '../../media/audio.js';
import { jsFftProvider, type FftProvider, type RealFft } from '../../media/dsp/fft.js';
import { hannWindow } from '../../media/dsp/stft.js';
import type { Biquad } from './loudness.js';
import { MonoFrames, type AnalysisPass } from './stage.js';

/**
 * Mains hum: a line at 50 or 60 Hz and its harmonics that stays put for the whole recording. The long-term power
 * spectrum at about 2-3 Hz resolution shows it as narrow peaks standing above their neighbourhood, where speech
 * (whose pitch moves) spreads into a smooth hump. Bounded memory: one accumulated spectrum up to 1 kHz.
 */

export const HUM_MAX_HZ = 1000;
/** A harmonic counts when its line stands this far above the median of its neighbourhood (4-20 Hz away). */
export const HUM_LINE_DB = 8;

/** A single line at the mains frequency or its double is hum when it stands this far out. */
export const HUM_STRONG_DB = 15;

export interface HumProfile {
  /** 50 or 60 when hum was found, else null. */
  mainsHz: 50 | 60 | null;
  /** The harmonics found (Hz) with how far each stands above its neighbourhood, dB. */
  lines: Array<{ hz: number; prominenceDb: number }>;
  /** Power of the lines above their neighbourhood, summed, dBFS (-Infinity when none). */
  levelDbfs: number;
}

export class HumDetector implements AnalysisPass<HumProfile> {
  private readonly fft: RealFft;
  private readonly win: Float32Array;
  // Half-overlapping frames: a short file still gives the long-term average enough frames to be smooth.
  private readonly framer: MonoFrames;
  private readonly re: Float32Array;
  private readonly im: Float32Array;
  private readonly frame: Float32Array;
  private readonly acc: Float64Array;
  private frames = 0;
  private readonly scale: number;

  /** `fft`: the shared provider (loadFftProvider's pffft WASM is several times the JS one); JS when absent. */
  constructor(readonly sampleRate: number, fft: FftProvider = jsFftProvider()) {
    // About 2.0-2.9 Hz per bin at 16-48 kHz: 50 Hz lines and their neighbourhood resolve.
    let size = 1;
    while (size < sampleRate / 3) size *= 2;
    this.fft = fft.create(size);
    this.win = hannWindow(size);
    this.framer = new MonoFrames(size, size / 2, (buf) => this.analyze(buf));
    this.re = new Float32Array(size / 2 + 1);
    this.im = new Float32Array(size / 2 + 1);
    this.frame = new Float32Array(size);
    this.acc = new Float64Array(Math.min(size / 2, Math.ceil((HUM_MAX_HZ * size) / sampleRate) + 16));
    // Power of a bin as a share of the frame's mean square (one-sided, Hann power undone).
    this.scale = 2 / (size * size * (this.win.reduce((a, w) => a + w * w, 0) / size));
  }

  push(block: AudioData): void {
    this.framer.push(block);
  }

  private analyze(buf: Float32Array): void {
    const { fft, win, frame, re, im, acc } = this;
    for (let i = 0; i < fft.size; i++) frame[i] = buf[i]! * win[i]!;
    fft.forward(frame, re, im);
    for (let k = 0; k < acc.length; k++) acc[k] = acc[k]! + (re[k]! ** 2 + im[k]! ** 2) * this.scale;
    this.frames++;
  }

  result(): HumProfile {
    const none: HumProfile = { mainsHz: null, lines: [], levelDbfs: -Infinity };
    if (this.frames === 0) return none;
    const hz = this.sampleRate / this.fft.size;
    const spec = Array.from(this.acc, (v) => v / this.frames);
    const lineAt = (f: number) => {
      const k0 = Math.round(f / hz);
      if (k0 + Math.ceil(20 / hz) >= spec.length || k0 < 2) return null;
      let k = k0;
      for (const j of [k0 - 1, k0 + 1]) if (spec[j]! > spec[k]!) k = j;
      const near: number[] = [];
      for (let j = Math.floor((f - 20) / hz); j <= Math.ceil((f + 20) / hz); j++) if (j > 0 && Math.abs(j * hz - f) >= 4) near.push(spec[j]!);
      near.sort((a, b) => a - b);
      const med = near[Math.floor(near.length / 2)] ?? 0;
      // The line's power: its peak bin and the Hann main lobe beside it, above the neighbourhood.
      const line = spec[k]! + spec[k - 1]! + spec[k + 1]! - 3 * med;
      return { hz: f, prominenceDb: 10 * Math.log10((spec[k]! + 1e-20) / (med + 1e-20)), power: Math.max(0, line) };
    };
    let best: HumProfile = none;
    let bestScore = 0;
    for (const mains of [50, 60] as const) {
      const found = [];
      for (let h = 1; h * mains <= HUM_MAX_HZ; h++) {
        const l = lineAt(h * mains);
        if (l && l.prominenceDb >= HUM_LINE_DB) found.push(l);
      }
      // Hum has a line at the mains frequency or its double (rectified supplies): with another of the first four
      // harmonics, or alone when it stands HUM_STRONG_DB out. A voice's pitch moves, so it makes a line at most by chance
      // (a clean CMU ARCTIC file shows one at 850 Hz, 8 dB), never a series low on the 50 or 60 Hz grid.
      const low = found.filter((l) => l.hz <= 2 * mains);
      const first4 = found.filter((l) => l.hz <= 4 * mains);
      const score = found.reduce((a, l) => a + l.prominenceDb, 0);
      const hum = low.length > 0 && (first4.length >= 2 || low.some((l) => l.prominenceDb >= HUM_STRONG_DB));
      if (hum && score > bestScore) {
        bestScore = score;
        const p = found.reduce((a, l) => a + l.power, 0);
        best = { mainsHz: mains, lines: found.map(({ hz: f, prominenceDb }) => ({ hz: f, prominenceDb })), levelDbfs: p > 0 ? 10 * Math.log10(p) : -Infinity };
      }
    }
    return best;
  }
}

/** Notch filters (RBJ) on the hum lines found: about 4 Hz wide each, so speech beside them is left alone. */
export function humNotches(lines: ReadonlyArray<{ hz: number }>, fs: number): Biquad[] {
  return lines.filter((l) => l.hz < fs * 0.45).map(({ hz }) => {
    const w = (2 * Math.PI * hz) / fs;
    const alpha = Math.sin(w) / (2 * (hz / 4));
    const a0 = 1 + alpha;
    return { b0: 1 / a0, b1: (-2 * Math.cos(w)) / a0, b2: 1 / a0, a1: (-2 * Math.cos(w)) / a0, a2: (1 - alpha) / a0 };
  });
}
