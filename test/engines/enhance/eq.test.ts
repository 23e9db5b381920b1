import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AudioData } from '../../../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { BANDS, biquadGainDb, BiquadStage, CompressorStage, DeEsserStage, designAutoEq, SPEECH_TARGET, SpectrumAnalysis } from '../../../src/engines/enhance/eq.js';
import { blocksOf, processWhole } from '../../../src/engines/enhance/stage.js';

const file = new URL('../../../../shared/corpus/speech/clean/cmu_arctic_a0010.wav', import.meta.url).pathname;
const tools = resolveMediaTools({ preferSystem: true });

async function ltas(a: AudioData): Promise<Float64Array> {
  const s = new SpectrumAnalysis(a.sampleRate);
  for await (const b of blocksOf(a, 4096)) s.push(b);
  return s.result();
}

/** Distance to the target shape (mean removed) over the bands below 0.45 fs. */
function shapeError(levels: Float64Array, fs: number): number {
  const idx = BANDS.map((f, b) => b).filter((b) => BANDS[b]! < fs * 0.45);
  const d = idx.map((b) => SPEECH_TARGET[b]! - levels[b]!);
  const m = d.reduce((a, v) => a + v, 0) / d.length;
  return Math.sqrt(d.reduce((a, v) => a + (v - m) ** 2, 0) / d.length);
}

describe.skipIf(!existsSync(file))('autoeq and studio stages', () => {
  it('autoeq moves a muffled recording toward the speech target with gains within +-6 dB', async () => {
    const a = await decodeAudio(file, { ffmpeg: tools.ffmpeg, sampleRate: 16000 });
    // Muffle: a -10 dB high shelf at 1.5 kHz and a +6 dB bump at 200 Hz.
    const muffle = new BiquadStage('muffle', designAutoEq(Float64Array.from(SPEECH_TARGET.map((t, b) => t - (BANDS[b]! > 1500 ? -10 : BANDS[b] === 200 ? 6 : 0))), 16000, { maxGainDb: 12 }), 1);
    const muffled = await processWhole([muffle], a);
    const before = await ltas(muffled);
    const filters = designAutoEq(before, 16000);
    expect(filters.length).toBeGreaterThan(0);
    // The cascade's response stays near the +-6 dB bound (overlapping filters may add a little).
    for (let f = 100; f < 7000; f *= 1.1) expect(Math.abs(filters.reduce((s, q) => s + biquadGainDb(q, f, 16000), 0))).toBeLessThan(7.5);
    const after = await ltas(await processWhole([new BiquadStage('autoeq', filters, 1)], muffled));
    expect(shapeError(after, 16000)).toBeLessThan(shapeError(before, 16000) - 1);
  });

  it('compressor narrows the level range of speech', async () => {
    const a = await decodeAudio(file, { ffmpeg: tools.ffmpeg });
    const y = await processWhole([new CompressorStage(a.sampleRate, { thresholdDb: -30, ratio: 3 })], a);
    const spread = (s: Float32Array) => {
      const e: number[] = [];
      for (let i = 0; i + 800 <= s.length; i += 800) { let v = 0; for (let k = 0; k < 800; k++) v += s[i + k]! ** 2; if (v > 1e-6) e.push(10 * Math.log10(v)); }
      e.sort((p, q) => p - q);
      return e[Math.floor(e.length * 0.95)]! - e[Math.floor(e.length * 0.5)]!;
    };
    expect(spread(y.channels[0]!)).toBeLessThan(spread(a.channels[0]!) - 1);
  });

  it('de-esser attenuates a hiss burst but leaves a vowel-like tone alone', async () => {
    const fs = 32000;
    const n = fs;
    const x = new Float32Array(n);
    let seed = 7;
    for (let i = 0; i < n; i++) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      const noise = (seed / 2 ** 32) * 2 - 1;
      x[i] = i < n / 2 ? 0.3 * Math.sin((2 * Math.PI * 220 * i) / fs) : 0.2 * noise;
    }
    const y = (await processWhole([new DeEsserStage(fs, 1)], { sampleRate: fs, channels: [x] })).channels[0]!;
    const e = (s: Float32Array, a: number, b: number) => { let v = 0; for (let i = a; i < b; i++) v += s[i]! ** 2; return v; };
    expect(e(y, 2000, n / 2) / e(x, 2000, n / 2)).toBeGreaterThan(0.97);
    expect(e(y, n / 2 + 2000, n) / e(x, n / 2 + 2000, n)).toBeLessThan(0.8);
  });
});
