import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AudioData } from '../../../src/media/audio.js';
import type { AudioSource, SeparationEngine, StemSink } from '../../../src/engines/separation/engine.js';
import { pickVocalEngine, SeparationStage } from '../../../src/engines/enhance/separate.js';
import { SpeechSeparationEngine } from '../../../src/engines/enhance/speech-separator.js';
import { chooseDenoiser, DTLN_MAX_T60 } from '../../../src/engines/enhance/engine-choice.js';
import { buildStages, planEnhancement } from '../../../src/engines/enhance/chain.js';
import { processWhole, type AudioStage } from '../../../src/engines/enhance/stage.js';

const corpusModels = new URL('../../../../shared/corpus/models', import.meta.url).pathname;
const empty = mkdtempSync(join(tmpdir(), 'no-models-'));
afterAll(() => rmSync(empty, { recursive: true, force: true }));

/** A pull-based engine that reads in 3000-frame segments (like a real one, it lags its input) and splits 1:3. */
class QuarterEngine implements SeparationEngine {
  readonly id = 'quarter';
  calls = 0;
  constructor(private readonly failAt = Infinity) {}
  supports(t: number) { return t === 501; }
  async separate(input: AudioSource, _t: number, _ctx: unknown, sink: StemSink): Promise<void> {
    let held: Float32Array[] = Array.from({ length: input.channelCount }, () => new Float32Array(0));
    let at = 0;
    const emit = async (n: number) => {
      const seg = held.map((c) => c.slice(0, n));
      held = held.map((c) => c.slice(n));
      if (at >= this.failAt) throw new Error('engine broke');
      const part = (g: number): AudioData => ({ sampleRate: input.sampleRate, channels: seg.map((c) => c.map((v) => v * g)) });
      await sink.write(at, { vocals: part(0.25), drums: part(0.5), other: part(0.25) });
      at += n;
    };
    for await (const b of input.blocks()) {
      held = held.map((c, i) => { const o = new Float32Array(c.length + b.channels[i]!.length); o.set(c); o.set(b.channels[i]!, c.length); return o; });
      while (held[0]!.length >= 3000) await emit(3000);
    }
    if (held[0]!.length) await emit(held[0]!.length);
  }
}

const ramp = (n: number, ch = 2): AudioData => ({ sampleRate: 16000, channels: Array.from({ length: ch }, (_, c) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.01 * (c + 1)))) });
const ctl = new AbortController();
const stage = (engine: SeparationEngine, mode: 'voice' | 'keep_music', voiceStages: AudioStage[] = []) =>
  new SeparationStage(16000, 2, { choice: pickVocalEngine([engine]), mode, voiceStages, signal: ctl.signal, tmpDir: empty });

/** Doubles the voice, one block late (a lagging, length-preserving stage). */
function lateDoubler(): AudioStage {
  let prev: Float32Array[] | null = null;
  return {
    name: 'double',
    async push(b) { const out = prev; prev = b.channels.map((c) => c.map((v) => 2 * v)); return out ? { sampleRate: b.sampleRate, channels: out } : null; },
    async flush() { return prev ? { sampleRate: 16000, channels: prev } : null; },
  };
}

describe('separation inside the enhancement chain', () => {
  it('prefers a given engine that makes vocals, else the built-in speech separator', () => {
    expect(pickVocalEngine([new QuarterEngine()]).modelType).toBe(501);
    expect(pickVocalEngine([]).engine.id).toBe('builtin-speech');
  });

  it('voice mode streams the vocals stem, aligned and as long as the input', async () => {
    const x = ramp(10_000);
    const y = await processWhole([stage(new QuarterEngine(), 'voice')], x, 1234);
    expect(y.channels[0]!.length).toBe(10_000);
    for (const i of [0, 2999, 3000, 9999]) expect(y.channels[1]![i]!).toBeCloseTo(0.25 * x.channels[1]![i]!, 6);
  });

  it('keep_music processes the voice only and mixes every other stem back, even when the voice stage lags', async () => {
    const x = ramp(10_000);
    const y = await processWhole([stage(new QuarterEngine(), 'keep_music', [lateDoubler()])], x, 777);
    expect(y.channels[0]!.length).toBe(10_000);
    // 2 * 0.25 (voice) + 0.75 (music) = 1.25
    for (const i of [5, 3001, 7777, 9999]) expect(y.channels[0]![i]!).toBeCloseTo(1.25 * x.channels[0]![i]!, 5);
  });

  it('an engine failure surfaces from push or flush', async () => {
    await expect(processWhole([stage(new QuarterEngine(3000), 'voice')], ramp(10_000), 1000)).rejects.toThrow('engine broke');
  });

  it('the speech separator splits a mix into stems that sum back to it', async () => {
    const x = ramp(40_000);
    const sep = new SeparationStage(16000, 2, { choice: { engine: new SpeechSeparationEngine(), modelType: 350 }, mode: 'keep_music', signal: ctl.signal, tmpDir: empty });
    const y = await processWhole([sep], x, 4096);
    let err = 0;
    for (let i = 0; i < 40_000; i++) err = Math.max(err, Math.abs(y.channels[0]![i]! - x.channels[0]![i]!));
    expect(err).toBeLessThan(1e-4);
  });
});

describe('plans and engine choice', () => {
  it('keep_music wins for the music; both flags still denoise; keep_music runs the denoiser inside separation', async () => {
    const both = planEnhancement(new Set(['remove_background_audio', 'keep_music', 'remove_noise']), null);
    expect(both.separation).toBe('keep_music');
    expect(both.stages).toEqual(['separate', 'denoise']);
    const voice = planEnhancement(new Set(['remove_background_audio']), null);
    expect(voice.separation).toBe('voice');
    expect(voice.reasons.denoise).toMatch(/ambience/);
    const built = await buildStages(both, { sampleRate: 16000, channels: 1, modelsDir: empty, spectrum: null });
    expect(built.stages.map((s) => s.name)).toEqual(['keep-music']);
    expect(built.engines).toEqual(['builtin-speech', 'rnnoise']);
  });

  it.skipIf(!existsSync(join(corpusModels, 'silero_vad/silero_vad.onnx')))('with models installed the result records DTLN/GTCRN and Silero VAD', async () => {
    const plan = planEnhancement(new Set(['remove_noise', 'long_silences']), null);
    const dry = await buildStages(plan, { sampleRate: 16000, channels: 1, modelsDir: corpusModels, spectrum: null, t60: 0.12 });
    expect(dry.engines).toEqual(['dtln', 'silero-vad']);
    expect(dry.notes.denoise).toMatch(/DTLN/);
    const wet = await buildStages(plan, { sampleRate: 16000, channels: 1, modelsDir: corpusModels, spectrum: null, t60: 0.6 });
    expect(wet.engines[0]).toBe('gtcrn');
    for (const st of [...dry.stages, ...wet.stages]) await st.flush();
  });

  it.skipIf(!existsSync(join(corpusModels, 'gtcrn/gtcrn.onnx')))('remove_background_audio leaves the work to a neural denoiser when no neural vocal model is installed', async () => {
    const plan = planEnhancement(new Set(['remove_background_audio']), null);
    const built = await buildStages(plan, { sampleRate: 16000, channels: 1, modelsDir: corpusModels, spectrum: null, t60: 0.6 });
    expect(built.stages.map((s) => s.name)).not.toContain('separate');
    expect(built.engines).toEqual(['gtcrn']);
    expect(built.notes.separate).toMatch(/skipped: no neural vocal model/);
    // keep_music still separates: the music bed must not go through the denoiser.
    const keep = await buildStages(planEnhancement(new Set(['keep_music', 'remove_noise']), null), { sampleRate: 16000, channels: 1, modelsDir: corpusModels, spectrum: null, t60: 0.6 });
    expect(keep.engines).toEqual(['builtin-speech', 'gtcrn']);
    for (const st of [...built.stages, ...keep.stages]) await st.flush();
  });

  it.skipIf(!existsSync(join(corpusModels, 'dtln/model_1.onnx')))('auto picks DTLN only on dry input, GTCRN on reverberant input or when dereverberation is asked, RNNoise with no models', () => {
    expect(chooseDenoiser('auto', corpusModels, DTLN_MAX_T60 - 0.05).kind).toBe('dtln');
    expect(chooseDenoiser('auto', corpusModels, 0.5).kind).toBe('gtcrn');
    expect(chooseDenoiser('auto', corpusModels, null).kind).toBe('gtcrn');
    expect(chooseDenoiser('auto', corpusModels, 0.1, true).kind).toBe('gtcrn');
    expect(chooseDenoiser('auto', empty, 0.1).kind).toBe('rnnoise');
    expect(chooseDenoiser('dtln', empty, 0.1)).toEqual({ kind: 'rnnoise', why: 'DTLN not installed; RNNoise (built in)' });
    expect(chooseDenoiser('spectral', corpusModels, 0.1).kind).toBe('spectral-gate');
  });
});
