import { describe, expect, it } from 'vitest';
import type { AudioData } from '../../../src/media/audio.js';
import { MUSIC_PRESENT_SHARE, MusicDetector } from '../../../src/engines/enhance/music-detect.js';
import { planEnhancement, type InputStats } from '../../../src/engines/enhance/chain.js';
import type { LoudnessResult } from '../../../src/engines/enhance/loudness.js';

const RATE = 16000;
const SECONDS = 14;
const N = RATE * SECONDS;

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/**
 * Speech-like: a harmonic voice whose pitch glides (as intonation does), in 0.2-0.5 s "words" with
 * 4 Hz syllable modulation, separated by 0.15-0.45 s pauses of silence.
 */
function speechLike(): Float32Array {
  const x = new Float32Array(N);
  const r = rng(7);
  let t = 0.3;
  let phase = 0;
  while (t < SECONDS - 0.6) {
    const len = 0.2 + 0.3 * r();
    const s0 = Math.round(t * RATE);
    const s1 = Math.round((t + len) * RATE);
    const base = 110 + 60 * r();
    for (let i = s0; i < s1; i++) {
      const tt = i / RATE;
      const u = (i - s0) / (s1 - s0);
      const f0 = base * (1 + 0.15 * Math.sin(2 * Math.PI * 2.3 * tt) + 0.1 * (u - 0.5));
      phase += (2 * Math.PI * f0) / RATE;
      let v = 0;
      for (let k = 1; k * f0 < 4000; k++) v += Math.sin(k * phase) / k;
      x[i] = 0.3 * v * Math.sin(Math.PI * u) * (0.6 + 0.4 * Math.sin(2 * Math.PI * 4 * tt));
    }
    t += len + 0.15 + 0.3 * r();
  }
  return x;
}

const rms = (x: Float32Array) => Math.sqrt(x.reduce((a, v) => a + v * v, 0) / x.length);
const scaled = (x: Float32Array, ref: Float32Array, db: number) => {
  const g = (rms(ref) / rms(x)) * 10 ** (db / 20);
  return x.map((v) => v * g);
};
const add = (...xs: Float32Array[]) => xs.reduce((a, b) => a.map((v, i) => v + b[i]!));

/** A chord pad (three notes with five partials each) that changes chord every 2 s, as a music bed does. */
function chordPad(): Float32Array {
  const chords = [[261.6, 329.6, 392], [220, 261.6, 329.6], [174.6, 220, 261.6], [196, 246.9, 293.7]];
  const x = new Float32Array(N);
  for (let i = 0; i < N; i++) {
    const t = i / RATE;
    const c = chords[Math.floor(t / 2) % chords.length]!;
    let v = 0;
    for (const f of c) for (let k = 1; k <= 5; k++) v += Math.sin(2 * Math.PI * f * k * t) / k;
    x[i] = v;
  }
  return x;
}

function whiteNoise(): Float32Array {
  const r = rng(3);
  return Float32Array.from({ length: N }, () => r() * 2 - 1);
}

/** Paul Kellet's pink filter on white noise. */
function pinkNoise(): Float32Array {
  const w = whiteNoise();
  let b0 = 0, b1 = 0, b2 = 0;
  return w.map((v) => {
    b0 = 0.99765 * b0 + v * 0.099046;
    b1 = 0.963 * b1 + v * 0.2965164;
    b2 = 0.57 * b2 + v * 1.0526913;
    return b0 + b1 + b2 + v * 0.1848;
  });
}

/** Mains hum: 50 Hz and its harmonics (a buzz reaches well above 200 Hz). */
function hum(): Float32Array {
  return Float32Array.from({ length: N }, (_, i) => {
    let v = 0;
    for (let k = 1; k <= 12; k++) v += Math.sin(2 * Math.PI * 50 * k * (i / RATE)) / k;
    return v;
  });
}

function share(x: Float32Array, block = 5 * RATE): number {
  const d = new MusicDetector(RATE);
  for (let s = 0; s < x.length; s += block) d.push({ sampleRate: RATE, channels: [x.subarray(s, s + block)] });
  return d.result().musicShare;
}

describe('MusicDetector', () => {
  const speech = speechLike();
  it('a chord pad under speech-like sound reads music, at -12 and -20 dB', () => {
    for (const db of [-12, -20]) expect(share(add(speech, scaled(chordPad(), speech, db)))).toBeGreaterThan(MUSIC_PRESENT_SHARE * 2);
  });

  it('speech-like sound alone, white or pink noise under it, and a 50 Hz hum read no music', () => {
    expect(share(speech)).toBeLessThan(MUSIC_PRESENT_SHARE / 2);
    expect(share(add(speech, scaled(whiteNoise(), speech, -15)))).toBeLessThan(MUSIC_PRESENT_SHARE / 2);
    expect(share(add(speech, scaled(pinkNoise(), speech, -15)))).toBeLessThan(MUSIC_PRESENT_SHARE / 2);
    expect(share(add(speech, scaled(hum(), speech, -20)))).toBeLessThan(MUSIC_PRESENT_SHARE / 2);
    expect(share(hum())).toBeLessThan(MUSIC_PRESENT_SHARE / 2);
  });

  it('streams: the block size does not change the result; nothing analysed means no music', () => {
    const x = add(speech, scaled(chordPad(), speech, -15));
    expect(share(x, 777)).toBe(share(x, 5 * RATE));
    expect(new MusicDetector(RATE).result().musicShare).toBe(0);
  });
});

describe('autoid with music presence', () => {
  const loudness = { integratedLufs: -20 } as LoudnessResult;
  const stats = (musicShare: number): InputStats => ({ loudness, snrDb: 20, silenceRatio: 0.1, spectrum: new Float64Array(8), musicShare });

  it('music under the speech: keep_music semantics, so the denoiser runs on the voice only', () => {
    const plan = planEnhancement(new Set(['autoid']), stats(0.6));
    expect(plan.separation).toBe('keep_music');
    expect(plan.stages.slice(0, 2)).toEqual(['separate', 'denoise']);
    expect(plan.reasons.separate).toBe('autoid: music under the speech in 60% of the pauses: speech cleaned alone, music kept');
    expect(plan.reasons.denoise).toMatch(/^autoid: noise removed from the separated voice only/);
  });

  it('no music: unchanged; explicit remove_background_audio keeps its own semantics', () => {
    const plan = planEnhancement(new Set(['autoid']), stats(0.02));
    expect(plan.separation).toBeUndefined();
    expect(plan.stages).not.toContain('separate');
    expect(plan.reasons.denoise).toMatch(/estimated SNR/);
    expect(planEnhancement(new Set(['autoid', 'remove_background_audio']), stats(0.6)).separation).toBe('voice');
    expect(planEnhancement(new Set(['remove_noise']), stats(0.6)).separation).toBeUndefined();
  });
});

describe('autoid and reverberation', () => {
  const loudness = { integratedLufs: -20 } as LoudnessResult;
  const stats = (t60: number | null, snrDb: number): InputStats => ({ loudness, snrDb, silenceRatio: 0.1, spectrum: new Float64Array(8), musicShare: 0, t60 });
  it('dereverberates a reverberant clean recording and says why; not dry speech, not a noisy one, not an unknown decay', () => {
    // Measured: Dutch speech through a 0.79 s RIR 0.44 s at 98 dB; the same dry 0.14 s; under bike noise 0.44 s at 11 dB.
    const rev = planEnhancement(new Set(['autoid']), stats(0.44, 98));
    expect(rev.stages).toContain('dereverb');
    expect(rev.reasons.dereverb).toBe('autoid: estimated T60 0.44 s (>= 0.25) at SNR 98 dB');
    expect(planEnhancement(new Set(['autoid']), stats(0.14, 98)).stages).not.toContain('dereverb');
    expect(planEnhancement(new Set(['autoid']), stats(0.44, 11)).stages).not.toContain('dereverb');
    expect(planEnhancement(new Set(['autoid']), stats(null, 40)).stages).not.toContain('dereverb');
  });
});
