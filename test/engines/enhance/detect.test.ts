import { describe, expect, it } from 'vitest';
import type { AudioData } from '../../../src/media/audio.js';
import { NoiseFloorAnalysis, aWeightDb } from '../../../src/engines/enhance/detect.js';
import { HumDetector, humNotches } from '../../../src/engines/enhance/detect-hum.js';
import { biquadGainDb } from '../../../src/engines/enhance/eq.js';
import { planEnhancement, type InputStats } from '../../../src/engines/enhance/chain.js';
import type { LoudnessResult } from '../../../src/engines/enhance/loudness.js';

const RATE = 16000;
const N = RATE * 10;

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** Harmonic "words" (gliding pitch, 0.2-0.5 s) with 0.15-0.45 s of digital silence between them, peaking near -10 dBFS. */
function speechLike(): Float32Array {
  const x = new Float32Array(N);
  const r = rng(7);
  let t = 0.3, phase = 0;
  while (t < N / RATE - 0.6) {
    const len = 0.2 + 0.3 * r();
    const s0 = Math.round(t * RATE), s1 = Math.round((t + len) * RATE);
    const base = 110 + 60 * r();
    for (let i = s0; i < s1; i++) {
      const u = (i - s0) / (s1 - s0);
      const f0 = base * (1 + 0.15 * Math.sin(2 * Math.PI * 2.3 * (i / RATE)));
      phase += (2 * Math.PI * f0) / RATE;
      let v = 0;
      for (let k = 1; k * f0 < 4000; k++) v += Math.sin(k * phase) / k;
      x[i] = 0.15 * v * Math.sin(Math.PI * u);
    }
    t += len + 0.15 + 0.3 * r();
  }
  return x;
}

const white = (db: number, seed = 3) => {
  const r = rng(seed);
  const g = 10 ** (db / 20) * Math.sqrt(3); // uniform [-1, 1) has power 1/3: this makes the RMS `db` dBFS
  return Float32Array.from({ length: N }, () => g * (2 * r() - 1));
};
const hum = (hz: number, db: number) => Float32Array.from({ length: N }, (_, i) => 10 ** (db / 20) * Math.SQRT2 * (Math.sin((2 * Math.PI * hz * i) / RATE) + 0.5 * Math.sin((4 * Math.PI * hz * i) / RATE)));
const add = (...xs: Float32Array[]) => xs.reduce((a, b) => a.map((v, i) => v + b[i]!));

function analyse<T>(pass: { push(b: AudioData): void; result(): T }, x: Float32Array, block = 4321): T {
  for (let o = 0; o < x.length; o += block) pass.push({ sampleRate: RATE, channels: [x.subarray(o, Math.min(x.length, o + block))] });
  return pass.result();
}

describe('noise floor (detect.ts)', () => {
  const speech = speechLike();

  it('finds a white hiss under speech at its level, steady and broadband', () => {
    const p = analyse(new NoiseFloorAnalysis(RATE), add(speech, white(-50)));
    // White noise from 100 Hz to Nyquist carries ~99% of its power: the floor is within 2 dB of -50 dBFS.
    expect(p.floorDbfs).toBeGreaterThan(-53);
    expect(p.floorDbfs).toBeLessThan(-48);
    expect(p.spreadDb).toBeLessThan(8);
    expect(p.hissShare).toBeGreaterThan(0.7);
    expect(p.snrDb).toBeGreaterThan(25);
    expect(p.snrDb).toBeLessThan(45);
  });

  it('speech over digital silence has no steady floor; the block size does not matter', () => {
    const p = analyse(new NoiseFloorAnalysis(RATE), add(speech, white(-100)));
    expect(p.floorDbfs).toBeLessThan(-85);
    expect(p.snrDb).toBeGreaterThan(60);
    expect(analyse(new NoiseFloorAnalysis(RATE), speech, 777).floorDbfs).toBeCloseTo(analyse(new NoiseFloorAnalysis(RATE), speech, 16000).floorDbfs, 6);
  });

  it('counts flat tops of clipped audio, not a loud clean signal', () => {
    const loud = speech.map((v) => v * 10);
    const clipped = loud.map((v) => Math.max(-1, Math.min(1, v)));
    const p = analyse(new NoiseFloorAnalysis(RATE), clipped);
    expect(p.clippedShare).toBeGreaterThan(1e-3);
    expect(p.clipLevelDbfs).toBeCloseTo(0, 1);
    expect(analyse(new NoiseFloorAnalysis(RATE), speech).clippedShare).toBe(0);
  });

  it('A-weighting is 0 dB at 1 kHz and about -19 dB at 100 Hz (IEC 61672)', () => {
    expect(aWeightDb(1000)).toBeCloseTo(0, 1);
    expect(aWeightDb(100)).toBeCloseTo(-19.1, 0);
  });
});

describe('hum (detect-hum.ts)', () => {
  const speech = speechLike();

  it('finds 50 and 60 Hz mains hum 30 dB under speech, and none in speech or white noise', () => {
    const h60 = analyse(new HumDetector(RATE), add(speech, hum(60, -50)));
    expect(h60.mainsHz).toBe(60);
    expect(h60.lines.map((l) => l.hz)).toContain(60);
    expect(h60.levelDbfs).toBeGreaterThan(-56);
    expect(analyse(new HumDetector(RATE), add(speech, hum(50, -50))).mainsHz).toBe(50);
    expect(analyse(new HumDetector(RATE), speech).mainsHz).toBeNull();
    expect(analyse(new HumDetector(RATE), add(speech, white(-40))).mainsHz).toBeNull();
  });

  it('notches cut the lines deep and leave 20 Hz beside them nearly alone', () => {
    const f = humNotches([{ hz: 60 }, { hz: 120 }], RATE);
    const at = (hz: number) => f.reduce((a, q) => a + biquadGainDb(q, hz, RATE), 0);
    expect(at(60)).toBeLessThan(-30);
    expect(at(120)).toBeLessThan(-30);
    expect(at(90)).toBeGreaterThan(-1);
    expect(at(1000)).toBeGreaterThan(-0.1);
  });
});

describe('autoid listens (chain.ts planEnhancement with detect.ts figures)', () => {
  const loud = (lufs: number) => ({ integratedLufs: lufs, truePeakDbtp: -3, samplePeakDbfs: -3, durationSeconds: 10 }) as LoudnessResult;
  const noise = (o: Partial<NonNullable<InputStats['noise']>>): NonNullable<InputStats['noise']> => ({
    floorDbfs: -80, speechDbfs: -20, snrDb: 60, floorDbA: -80, hissDbfs: -85, hissShare: 0.5, bands: [], spreadDb: 20, clippedShare: 0, clipLevelDbfs: null, frames: 300, ...o,
  });
  const stats = (o: Partial<InputStats>): InputStats => ({ loudness: loud(-20), snrDb: 40, silenceRatio: 0.1, spectrum: new Float64Array(19), t60: 0.12, noise: noise({}), ...o });

  it('a steady hiss that levelling makes audible is denoised, the reason naming it; then no autoeq', () => {
    // Clean speech with white hiss 30 dB under it (the case the old "SNR < 30" rule missed): floor -50 dB(A) at -20 LUFS.
    const plan = planEnhancement(new Set(['autoid']), stats({ snrDb: 34, noise: noise({ floorDbfs: -50, floorDbA: -50, snrDb: 32, spreadDb: 3, hissShare: 0.9 }) }));
    expect(plan.stages).toContain('denoise');
    expect(plan.reasons.denoise).toMatch(/^autoid: steady broadband hiss 32 dB under the speech, at -46 dB\(A\) FS once levelled/);
    expect(plan.stages).not.toContain('autoeq');
    expect(plan.reasons.autoid).toMatch(/autoeq skipped/);
    expect(plan.stages).toContain('normalize');
  });

  it('a quiet floor is left alone and says so; clean speech keeps autoeq', () => {
    const plan = planEnhancement(new Set(['autoid']), stats({}));
    expect(plan.stages).toEqual(['autoeq', 'normalize']);
    expect(plan.reasons.autoid).toMatch(/noise floor -76 dB\(A\) FS once levelled, 60 dB under the speech: left alone/);
  });

  it('a floor the level gain lifts into hearing is denoised although the file is quiet', () => {
    const quiet = planEnhancement(new Set(['autoid']), stats({ loudness: loud(-50), noise: noise({ floorDbA: -86, snrDb: 40, spreadDb: 5 }) }));
    expect(quiet.stages).toContain('denoise');
    expect(quiet.reasons.autoid).toMatch(/level: -50.0 LUFS needs 34 dB of gain/);
  });

  it('long decays over a floor that is no steady noise are the room: dereverberated; over a steady noise they are not', () => {
    const room = planEnhancement(new Set(['autoid']), stats({ t60: 0.38, noise: noise({ spreadDb: 22, snrDb: 36 }) }));
    expect(room.stages).toContain('dereverb');
    expect(room.reasons.dereverb).toMatch(/^autoid: estimated T60 0.38 s .* the room's reverberation/);
    const noisy = planEnhancement(new Set(['autoid']), stats({ t60: 0.39, snrDb: 11, noise: noise({ spreadDb: 3, snrDb: 14, floorDbA: -30 }) }));
    expect(noisy.stages).not.toContain('dereverb');
    expect(noisy.stages).toContain('denoise');
    expect(noisy.reasons.autoid).toMatch(/T60 0.39 s, but a steady noise floor slows them/);
  });

  it('says when the reverberation could not be measured', () => {
    expect(planEnhancement(new Set(['autoid']), stats({ t60: null })).reasons.autoid).toMatch(/reverberation not measured/);
  });

  it('speech close to its floor is denoised whatever the floor', () => {
    const plan = planEnhancement(new Set(['autoid']), stats({ noise: noise({ spreadDb: 12, snrDb: 20, floorDbA: -70 }) }));
    expect(plan.reasons.denoise).toBe('autoid: speech only 20 dB above its noise floor (< 25)');
  });

  it('audible hum gets notched at its lines; clipping is reported', () => {
    const plan = planEnhancement(new Set(['autoid']), stats({
      hum: { mainsHz: 60, lines: [{ hz: 60, prominenceDb: 30 }, { hz: 120, prominenceDb: 20 }], levelDbfs: -55 },
      noise: noise({ clippedShare: 0.01, clipLevelDbfs: 0 }),
    }));
    expect(plan.stages[0]).toBe('dehum');
    expect(plan.dehum).toEqual([60, 120]);
    expect(plan.reasons.dehum).toMatch(/^autoid: 60 Hz mains hum \(lines at 60, 120 Hz/);
    expect(plan.reasons.autoid).toMatch(/clipping: 1.00% of the samples sit in flat tops at 0.0 dBFS/);
    // Hum's harmonics read as a music bed to the music detector: with hum heard, no separation, and the reason says so.
    const humMusic = planEnhancement(new Set(['autoid']), stats({ musicShare: 0.87, hum: { mainsHz: 50, lines: [{ hz: 50, prominenceDb: 26 }, { hz: 250, prominenceDb: 9 }], levelDbfs: -31 } }));
    expect(humMusic.stages).not.toContain('separate');
    expect(humMusic.stages[0]).toBe('dehum');
    expect(humMusic.reasons.autoid).toMatch(/music detector's 87% is taken for the hum's harmonics/);
    expect(planEnhancement(new Set(['autoid']), stats({ musicShare: 0.87 })).stages).toContain('separate');
    const faint = planEnhancement(new Set(['autoid']), stats({ hum: { mainsHz: 50, lines: [{ hz: 50, prominenceDb: 9 }], levelDbfs: -95 } }));
    expect(faint.stages).not.toContain('dehum');
  });
});
