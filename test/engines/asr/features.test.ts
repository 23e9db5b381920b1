import { describe, expect, it } from 'vitest';
import { hzToMel, LogMelExtractor, melFilterBank, melToHz } from '../../../src/engines/asr/features.js';

/**
 * Reference numbers are derived here independently of the module: a direct O(N^2) DFT per frame, the
 * Slaney mel scale and filter construction written out from librosa's definitions, and the padding,
 * log10, max-8 floor and (x+4)/4 scaling that openai/whisper's log_mel_spectrogram applies.
 */

const SR = 16000;
const NFFT = 400;
const HOP = 160;
const WINDOW = 480000;

function slaneyMel(hz: number): number {
  // Linear 3 mels per 200 Hz up to 1 kHz (=15 mels), then 27 mels per factor 6.4.
  return hz < 1000 ? (3 * hz) / 200 : 15 + (27 * Math.log(hz / 1000)) / Math.log(6.4);
}
function slaneyHz(mel: number): number {
  return mel < 15 ? (200 * mel) / 3 : 1000 * Math.pow(6.4, (mel - 15) / 27);
}

function referenceFilters(): number[][] {
  const top = slaneyMel(SR / 2);
  const pts = Array.from({ length: 82 }, (_, i) => slaneyHz((top * i) / 81));
  return Array.from({ length: 80 }, (_, m) => {
    const [a, b, c] = [pts[m]!, pts[m + 1]!, pts[m + 2]!];
    return Array.from({ length: 201 }, (_, k) => {
      const f = (k * SR) / NFFT;
      const tri = f <= a || f >= c ? 0 : f <= b ? (f - a) / (b - a) : (c - f) / (c - b);
      return (tri * 2) / (c - a);
    });
  });
}

function referenceLogMel(x: Float32Array, frames: number[]): { mel: Map<number, number[]>; floorAll: number } {
  const filters = referenceFilters();
  const hann = Array.from({ length: NFFT }, (_, n) => 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / NFFT));
  const sample = (i: number) => {
    let j = i - NFFT / 2;
    if (j < 0) j = -j;
    if (j >= WINDOW) j = 2 * (WINDOW - 1) - j;
    return j < x.length ? x[j]! : 0;
  };
  const logRow = (t: number): number[] => {
    const seg = Array.from({ length: NFFT }, (_, n) => hann[n]! * sample(t * HOP + n));
    const power: number[] = [];
    for (let k = 0; k <= NFFT / 2; k++) {
      let re = 0;
      let im = 0;
      for (let n = 0; n < NFFT; n++) {
        re += seg[n]! * Math.cos((2 * Math.PI * k * n) / NFFT);
        im -= seg[n]! * Math.sin((2 * Math.PI * k * n) / NFFT);
      }
      power.push(re * re + im * im);
    }
    return filters.map((row) => Math.log10(Math.max(1e-10, row.reduce((s, w, k) => s + w * power[k]!, 0))));
  };
  // Frames past the signal's reach (plus one window) are all-zero: log10(1e-10) = -10 there.
  const lastLive = Math.ceil((x.length + NFFT) / HOP);
  let max = -10;
  const mel = new Map<number, number[]>();
  for (let t = 0; t <= lastLive; t++) {
    const row = logRow(t);
    max = Math.max(max, ...row);
    if (frames.includes(t)) mel.set(t, row);
  }
  for (const t of frames) if (!mel.has(t)) mel.set(t, new Array(80).fill(-10));
  const floorAll = max - 8;
  for (const [t, row] of mel) mel.set(t, row.map((v) => (Math.max(v, floorAll) + 4) / 4));
  return { mel, floorAll };
}

describe('Whisper log-mel features', () => {
  it('uses the Slaney mel scale librosa uses by default', () => {
    expect(hzToMel(1000)).toBeCloseTo(15, 12);
    expect(hzToMel(500)).toBeCloseTo(7.5, 12);
    expect(hzToMel(8000)).toBeCloseTo(slaneyMel(8000), 10);
    for (const hz of [0, 123, 999, 1000, 2500, 7999]) expect(melToHz(hzToMel(hz))).toBeCloseTo(hz, 8);
  });

  it('builds the 80 x 201 Slaney-normalised filter bank', () => {
    const ours = melFilterBank();
    const ref = referenceFilters();
    expect(ours).toHaveLength(80);
    for (let m = 0; m < 80; m++) for (let k = 0; k < 201; k++) expect(ours[m]![k]!).toBeCloseTo(ref[m]![k]!, 10);
    // Area normalisation: each triangle's height is 2 / its width in Hz.
    expect(Math.max(...ours[40]!)).toBeGreaterThan(0);
  });

  it('matches a direct DFT computation frame by frame, including the reflect edge and the max-8 floor', () => {
    // 0.3 s: a 440 Hz tone, a 3 kHz tone that starts later, and deterministic noise.
    const n = 4800;
    const x = new Float32Array(n);
    let seed = 7;
    for (let i = 0; i < n; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      x[i] = 0.3 * Math.sin((2 * Math.PI * 440 * i) / SR) + (i > 2000 ? 0.2 * Math.sin((2 * Math.PI * 3000 * i) / SR) : 0) + 0.01 * (seed / 2 ** 31 - 0.5);
    }
    const frames = [0, 1, 7, 15, 29, 31, 32, 100, 2999];
    const { mel } = referenceLogMel(x, frames);
    const ours = new LogMelExtractor().extract(x);
    expect(ours).toHaveLength(80 * 3000);
    for (const t of frames) {
      const row = mel.get(t)!;
      for (let m = 0; m < 80; m++) expect(ours[m * 3000 + t]!, `frame ${t} mel ${m}`).toBeCloseTo(row[m]!, 4);
    }
    // The 440 Hz tone lands in the filter centred nearest 440 Hz.
    const centres = Array.from({ length: 80 }, (_, m) => melToHz((hzToMel(8000) * (m + 1)) / 81));
    const nearest = centres.reduce((b, c, m) => (Math.abs(c - 440) < Math.abs(centres[b]! - 440) ? m : b), 0);
    const col = Array.from({ length: 80 }, (_, m) => ours[m * 3000 + 10]!);
    expect(col.indexOf(Math.max(...col))).toBe(nearest);
  });

  it('extracts a full 30 s window within a few seconds (mixed-radix FFT, not a naive DFT)', () => {
    const x = new Float32Array(480000).map((_, i) => Math.sin(i / 7));
    // CPU time, not wall time: other processes on a shared machine must not fail the test.
    const cpu = process.cpuUsage();
    new LogMelExtractor().extract(x);
    const used = process.cpuUsage(cpu);
    expect((used.user + used.system) / 1000).toBeLessThan(5000);
  });
});
