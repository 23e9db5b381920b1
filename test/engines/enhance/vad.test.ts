import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { buildStages, planEnhancement } from '../../../src/engines/enhance/chain.js';
import { LongSilenceStage } from '../../../src/engines/enhance/silences.js';
import { processWhole } from '../../../src/engines/enhance/stage.js';
import { AllVad, Dilator, VoicingVad, type FrameVad } from '../../../src/engines/enhance/vad.js';

describe('VAD helpers', () => {
  it('Dilator widens each speech frame by h frames both ways, whatever the chunking, and keeps the count', () => {
    const d = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0];
    const want = [0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1];
    for (const chunk of [1, 4, 15]) {
      const dil = new Dilator(2);
      const out: number[] = [];
      for (let i = 0; i < d.length; i += chunk) out.push(...dil.push(d.slice(i, i + chunk)));
      out.push(...dil.flush());
      expect(out).toEqual(want);
    }
  });

  it('VoicingVad hears a voiced (periodic) frame, not white noise or silence', async () => {
    const v = new VoicingVad();
    const tone = Float32Array.from({ length: 480 }, (_, i) => 0.3 * (Math.sin((2 * Math.PI * 140 * i) / 16000) + 0.5 * Math.sin((2 * Math.PI * 280 * i) / 16000)));
    let s = 1;
    const noise = Float32Array.from({ length: 480 }, () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32 - 0.5) * 0.5);
    expect(await v.frame(tone)).toBe(1);
    expect(await v.frame(noise)).toBe(0);
    expect(await v.frame(new Float32Array(480))).toBe(0);
  });

  it('AllVad is speech only where every VAD hears it', async () => {
    const fixed = (p: number): FrameVad => ({ frameSamples: 480, frame: async () => p, close: async () => undefined });
    expect(await new AllVad([fixed(1), fixed(0.3)]).frame(new Float32Array(480))).toBe(0.3);
    expect(() => new AllVad([fixed(1), { ...fixed(1), frameSamples: 512 }])).toThrow();
  });
});

const base = new URL('../../../../shared/corpus/speech/', import.meta.url).pathname;
const pairsFile = `${base}constructed_pairs_16k/pairs.json`;

describe.skipIf(!existsSync(pairsFile))('long_silences with the built-in VAD under noise (corpus)', () => {
  interface Pair { file: string; clean: string; noise_src?: string; speech_segments_s?: Array<[number, number, string]> }
  const pairs = existsSync(pairsFile) ? (JSON.parse(readFileSync(pairsFile, 'utf8')) as Pair[]) : [];
  const tools = resolveMediaTools({ preferSystem: true });

  it('at 0 dB of bike noise, finds the 3/6/10 s pauses (>= 16 s of the 17.2 s) and cuts no speech energy', async () => {
    // Before the voicing check the built-in path removed 2.2 s here (bench/results/enhance-autoid.md).
    const p = pairs.find((q) => q.file.endsWith('four_utterances_3-6-10s_gaps__bike_snr10.wav'))!;
    const clean = (await decodeAudio(`${base}constructed_pairs_16k/${p.clean}`, { ffmpeg: tools.ffmpeg, sampleRate: 16000, channels: 1 })).channels[0]!;
    const noise = (await decodeAudio(base + p.noise_src!, { ffmpeg: tools.ffmpeg, sampleRate: 16000, channels: 1 })).channels[0]!;
    const pc = clean.reduce((a, v) => a + v * v, 0) / clean.length;
    const nz = Float32Array.from({ length: clean.length }, (_, i) => noise[i % noise.length]!);
    const g = Math.sqrt(pc / (nz.reduce((a, v) => a + v * v, 0) / nz.length));
    const x = clean.map((v, i) => v + g * nz[i]!);
    const built = await buildStages(planEnhancement(new Set(['long_silences']), null), { sampleRate: 16000, channels: 1, modelsDir: '/nonexistent-models', spectrum: null });
    expect(built.engines).toEqual(['webrtc-vad']);
    const st = built.stages.find((s): s is LongSilenceStage => s instanceof LongSilenceStage)!;
    await processWhole(built.stages, { sampleRate: 16000, channels: [x] }, 16000);
    expect(st.removedSeconds).toBeGreaterThan(16);
    // The utterance bounds include each recording's own lead-in and tail silence, so speech is judged by energy: the
    // clean reference's energy inside the removed ranges.
    let total = 0, lost = 0;
    for (const v of clean) total += v * v;
    for (const [a, b] of st.cuts) for (let i = Math.round(a * 16000); i < Math.round(b * 16000); i++) lost += clean[i]! ** 2;
    expect(lost / total).toBeLessThan(1e-3);
  }, 120_000);
});
