import { describe, expect, it } from 'vitest';
import { DisfluencyStage, type DisfluencyOptions } from '../../../src/engines/enhance/fillers.js';
import { dtwSimilarity, pitch } from '../../../src/engines/enhance/speech-features.js';
import { processWhole } from '../../../src/engines/enhance/stage.js';
import { concat, filler, silence, speechLike, syllable } from '../../helpers/speech-synth.js';

const R = 16000;
const ALL: DisfluencyOptions = { fillers: true, hesitations: true, stutters: true };

async function run(x: Float32Array, opts: DisfluencyOptions, rate = R, block = 7000, channels = 1) {
  const stage = await DisfluencyStage.create(rate, channels, opts);
  const y = await processWhole([stage], { sampleRate: rate, channels: Array.from({ length: channels }, () => x) }, block);
  return { stage, y, inSeconds: x.length / rate, outSeconds: y.channels[0]!.length / rate };
}

describe('speech features', () => {
  it('pitch finds the F0 of a harmonic tone', () => {
    const x = new Float32Array(512).map((_, i) => Math.sin((2 * Math.PI * 150 * i) / R) + 0.5 * Math.sin((2 * Math.PI * 300 * i) / R));
    const p = pitch(x);
    expect(Math.abs(p.f0 - 150)).toBeLessThan(2);
    expect(p.clarity).toBeGreaterThan(0.9);
  });

  it('DTW similarity is high for a sequence and its time-warped copy, lower for an unrelated one', () => {
    const a = Array.from({ length: 12 }, (_, i) => new Float32Array(12).map((_, k) => Math.sin(i * 0.5 + k)));
    const warped = a.flatMap((f, i) => (i % 3 === 0 ? [f, f] : [f]));
    const other = Array.from({ length: 12 }, (_, i) => new Float32Array(12).map((_, k) => Math.cos(i * 1.7 + 2 * k)));
    expect(dtwSimilarity(a, warped)).toBeGreaterThan(0.95);
    expect(dtwSimilarity(a, other)).toBeLessThan(dtwSimilarity(a, warped) - 0.3);
  });
});

describe('disfluency stage', () => {
  const before = speechLike(8, R, 1);
  const uh = filler(0.5, R);
  const withFiller = concat([before, silence(0.3, R), uh, silence(0.3, R), speechLike(8, R, 2)]);
  const fillerAt = (before.length + 0.3 * R) / R;

  it('a sustained flat-pitch vowel between speech-like segments is a filler and is removed', async () => {
    const { stage, inSeconds, outSeconds } = await run(withFiller, { fillers: true });
    expect(stage.report.fillers).toBe(1);
    const ev = stage.report.events[0]!;
    expect(ev.kind).toBe('filler');
    expect(Math.abs(ev.start - fillerAt)).toBeLessThan(0.06);
    expect(Math.abs(ev.end - (fillerAt + 0.5))).toBeLessThan(0.06);
    expect(inSeconds - outSeconds).toBeGreaterThan(0.42);
    expect(inSeconds - outSeconds).toBeLessThan(0.6);
    expect(Math.abs(inSeconds - stage.report.removedSeconds - outSeconds)).toBeLessThan(1e-3);
  });

  it('chirpy, varying speech-like content is left alone (fillers and hesitations)', async () => {
    const x = speechLike(40, R, 3);
    const { stage, inSeconds, outSeconds } = await run(x, { fillers: true, hesitations: true });
    expect(stage.report.events).toEqual([]);
    expect(outSeconds).toBe(inSeconds);
  });

  it('a lengthened vowel inside a word is shortened to a natural length, not deleted', async () => {
    // "soooo": a consonant, then a 0.8 s held vowel, then more of the word without a pause.
    const word = concat([before, silence(0.2, R), syllable(R, 0).subarray(0, Math.round(0.05 * R)), filler(0.8, R, 140), speechLike(4, R, 8)]);
    const { stage, inSeconds, outSeconds } = await run(word, { hesitations: true });
    expect(stage.report.hesitations).toBe(1);
    const removed = inSeconds - outSeconds;
    // 0.8 s (+/- the stability window) down to ~0.16 s: about 0.55-0.7 s removed.
    expect(removed).toBeGreaterThan(0.45);
    expect(removed).toBeLessThan(0.75);
  });

  it('repeated syllable onsets are a stutter: the repeats go, the last one stays', async () => {
    const lead = speechLike(6, R, 4);
    const at = (lead.length + 0.2 * R) / R;
    const syl = syllable(R, 0);
    const x = concat([lead, silence(0.2, R), syl, silence(0.08, R), syllable(R, 1), silence(0.2, R), speechLike(6, R, 5)]);
    const { stage, inSeconds, outSeconds } = await run(x, { stutters: true });
    const st = stage.report.events.filter((e) => e.kind === 'stutter' && Math.abs(e.start - at) < 0.08);
    expect(st).toHaveLength(1);
    // The first syllable and its gap (~0.255 s) are removed; the second one (start ~at+0.255) stays.
    expect(st[0]!.end).toBeLessThan(at + syl.length / R + 0.08 + 0.05);
    expect(inSeconds - outSeconds).toBeGreaterThan(0.2);
  });

  it('keeps memory bounded: holds at most a few seconds however long the input', async () => {
    const stage = await DisfluencyStage.create(R, 1, ALL);
    const block = speechLike(10, R, 6);
    let inN = 0, outN = 0, maxLag = 0;
    for (let i = 0; i < 30; i++) {
      inN += block.length;
      const y = await stage.push({ sampleRate: R, channels: [block.slice()] });
      outN += y?.channels[0]?.length ?? 0;
      maxLag = Math.max(maxLag, inN - outN - Math.round(stage.report.removedSeconds * R));
    }
    outN += (await stage.flush())?.channels[0]?.length ?? 0;
    expect(maxLag / R).toBeLessThan(8);
    expect(Math.abs(inN - outN - Math.round(stage.report.removedSeconds * R))).toBeLessThanOrEqual(2);
  });

  it('works at 44.1 kHz stereo with odd block sizes (same filler found, channels cut alike)', async () => {
    const rate = 44100;
    const up = new Float32Array(Math.round((withFiller.length * rate) / R));
    for (let i = 0; i < up.length; i++) {
      const t = (i * R) / rate, k = Math.floor(t), f = t - k;
      up[i] = (withFiller[k] ?? 0) * (1 - f) + (withFiller[k + 1] ?? 0) * f;
    }
    const { stage, y, inSeconds, outSeconds } = await run(up, { fillers: true }, rate, 3333, 2);
    expect(stage.report.fillers).toBe(1);
    expect(inSeconds - outSeconds).toBeGreaterThan(0.42);
    expect(y.channels[0]).toEqual(y.channels[1]);
  });
});
