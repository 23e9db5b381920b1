import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PiperEngine, parseEngineVoice, phonemesToIds } from '../../src/engines/tts/piper.js';
import type { TtsModelEntry } from '../../src/models/catalog.js';
import type { EngineContext, EngineVoice, Prosody } from '../../src/ports/engines.js';
import { TaskFailure } from '../../src/domain/errors.js';
import { chooseExecutionProviders } from '../../src/engines/onnx-provider.js';
import { pinToFiles } from '../fixtures/pinned-catalog.js';
import { writeTinyPiperVoice, type TinyPiperConfigOptions, type TinyPiperOptions } from '../fixtures/onnx-builder.js';

const SAMPLES_PER_ID = 256;

function testEntry(key: string, voices: TtsModelEntry['piper']['voices']): TtsModelEntry {
  return {
    name: `piper-${key}`,
    kind: 'tts',
    engine: 'piper',
    description: 'tiny test voice',
    license: 'MIT',
    files: [
      { path: `${key}.onnx`, url: 'http://127.0.0.1/unused', sizeBytes: 1, md5: '0'.repeat(32) },
      { path: `${key}.onnx.json`, url: 'http://127.0.0.1/unused', sizeBytes: 1, md5: '0'.repeat(32) },
    ],
    piper: {
      key,
      language: 'en',
      locale: 'en_US',
      quality: 'medium',
      sampleRate: 22050,
      espeakVoice: 'en-us',
      modelFile: `${key}.onnx`,
      configFile: `${key}.onnx.json`,
      voices,
    },
  };
}

const SINGLE = testEntry('en_US-tiny-medium', [
  { apiId: 9001, displayName: 'Tiny', gender: 'female', age: 'adult', genderSource: 'test' },
]);
const MULTI = testEntry('en_US-tinymulti-medium', [
  { apiId: 9002, displayName: 'Tiny M', gender: 'male', age: 'adult', genderSource: 'test', speakerId: 0 },
  { apiId: 9003, displayName: 'Tiny F', gender: 'female', age: 'adult', genderSource: 'test', speakerId: 1 },
]);

let modelsDir = '';
let phonemizeCalls: Array<{ text: string; voice: string }> = [];
// The stub "phonemizes" by lowercasing letters: every letter is in the tiny phoneme_id_map.
const phonemize = async (text: string, voice: string) => {
  phonemizeCalls.push({ text, voice });
  return text.toLowerCase().replace(/[^a-z .,!?\n]/g, '');
};

let catalog: TtsModelEntry[] = [SINGLE, MULTI];

/** Writes a stand-in voice and pins the engine's catalog to it (installed means verified against the catalog). */
async function install(entry: TtsModelEntry, opts: TinyPiperOptions & TinyPiperConfigOptions = {}) {
  await writeTinyPiperVoice(join(modelsDir, entry.name), entry.piper.key, { samplesPerId: SAMPLES_PER_ID, ...opts });
  catalog = catalog.map((e) => (e.name === entry.name ? pinToFiles(e, modelsDir) : e));
  await engine.close();
  engine = new PiperEngine({ modelsDir, catalog, phonemize, intraOpThreads: 1 });
}

function ctx(overrides: Partial<EngineContext> = {}): EngineContext {
  return { tmpDir: modelsDir, signal: new AbortController().signal, onProgress: () => {}, ...overrides };
}

const prosody = (p: Partial<Prosody> = {}): Prosody => ({ rate: 1, pitch: 1, pitchRange: 1, energy: 1, ...p });
/** Samples the tiny model yields for `letters` phonemes: ids = ^ _ (x _)* $ = 2 * letters + 3. */
const expectedSamples = (letters: number, lengthScale: number) => Math.floor((2 * letters + 3) * lengthScale * SAMPLES_PER_ID);

let engine: PiperEngine;
beforeEach(async () => {
  modelsDir = await mkdtemp(join(tmpdir(), 'soundry-piper-'));
  phonemizeCalls = [];
  catalog = [SINGLE, MULTI];
  engine = new PiperEngine({ modelsDir, catalog, phonemize, intraOpThreads: 1 });
});
afterEach(async () => {
  await engine.close();
  await rm(modelsDir, { recursive: true, force: true });
});

async function voiceFor(apiId: number): Promise<EngineVoice> {
  const v = (await engine.listVoices()).find((x) => x.apiId === apiId);
  if (!v) throw new Error(`voice ${apiId} not listed`);
  return v;
}

describe('phonemesToIds', () => {
  const map = { _: [0], '^': [1], $: [2], a: [14], b: [15], '\u0303': [141] };
  it('adds BOS, EOS and a pad after every phoneme, as Piper does', () => {
    expect(phonemesToIds('ab', map)).toEqual({ ids: [1, 0, 14, 0, 15, 0, 2], mapped: 2, missing: [] });
  });
  it('decomposes to NFD codepoints and skips unknown ones', () => {
    expect(phonemesToIds('ãz', map)).toEqual({ ids: [1, 0, 14, 0, 141, 0, 2], mapped: 2, missing: ['z'] });
  });
  it("applies the config's phoneme_map before id lookup", () => {
    expect(phonemesToIds('a', map, { a: ['b', 'a'] }).ids).toEqual([1, 0, 15, 0, 14, 0, 2]);
  });
});

describe('parseEngineVoice', () => {
  it('splits an optional speaker id', () => {
    expect(parseEngineVoice('piper-x')).toEqual({ model: 'piper-x' });
    expect(parseEngineVoice('piper-x#3')).toEqual({ model: 'piper-x', speakerId: 3 });
  });
});

describe('PiperEngine', () => {
  it('lists installed voices only, with their API ids', async () => {
    expect(await engine.listVoices()).toEqual([]);
    await install(SINGLE);
    expect(await engine.listVoices()).toEqual([
      {
        key: 'piper:en_US-tiny-medium',
        engine: 'piper',
        language: 'en',
        gender: 'female',
        age: 'adult',
        displayName: 'Tiny',
        engineVoice: 'piper-en_US-tiny-medium',
        apiId: 9001,
        neural: true,
      },
    ]);
    expect(engine.id).toBe('piper');
    expect(engine.nativeRate).toBe(true);
  });

  it('with listPullable (MODELS_AUTO_PULL) lists every catalog voice, marking those whose model must be downloaded first', async () => {
    const pullable = new PiperEngine({ modelsDir, catalog, phonemize, listPullable: true });
    const before = await pullable.listVoices();
    expect(before.map((v) => [v.apiId, v.pullModels])).toEqual([
      [9001, [SINGLE.name]],
      ...MULTI.piper.voices.map((v) => [v.apiId, [MULTI.name]]),
    ]);
    // A file that fails verification counts as not installed: its voice still needs a download, never loads as is.
    await install(SINGLE);
    await writeFile(join(modelsDir, SINGLE.name, SINGLE.piper.modelFile), 'version https://git-lfs.github.com/spec/v1\n');
    const corrupt = new PiperEngine({ modelsDir, catalog, phonemize, listPullable: true });
    expect((await corrupt.listVoices()).find((v) => v.apiId === 9001)?.pullModels).toEqual([SINGLE.name]);
    await expect(corrupt.synthesize({ text: 'Hi', voice: (await corrupt.listVoices())[0]!, prosody: prosody() }, ctx())).rejects.toThrow(/not installed/);
    await install(SINGLE);
    const installed = new PiperEngine({ modelsDir, catalog, phonemize, listPullable: true });
    const after = (await installed.listVoices()).find((v) => v.apiId === 9001)!;
    expect(after.pullModels).toBeUndefined();
    expect(after.neural).toBe(true);
    await Promise.all([pullable.close(), corrupt.close(), installed.close()]);
  });

  it('synthesizes at the model sample rate with the config espeak voice', async () => {
    await install(SINGLE, { sampleRate: 16000, espeakVoice: 'en-gb-x-rp' });
    const audio = await engine.synthesize({ text: 'Hello', voice: await voiceFor(9001), prosody: prosody() }, ctx());
    expect(audio.sampleRate).toBe(16000);
    expect(audio.channels).toHaveLength(1);
    expect(audio.channels[0]!.length).toBe(expectedSamples(5, 1));
    expect(phonemizeCalls).toEqual([{ text: 'Hello', voice: 'en-gb-x-rp' }]);
  });

  it('scales duration with rate (length_scale / rate) and with text length', async () => {
    await install(SINGLE);
    const voice = await voiceFor(9001);
    const len = async (text: string, rate: number) =>
      (await engine.synthesize({ text, voice, prosody: prosody({ rate }) }, ctx())).channels[0]!.length;
    expect(await len('hello', 1)).toBe(expectedSamples(5, 1));
    expect(await len('hello', 2)).toBe(expectedSamples(5, 0.5));
    expect(await len('hello', 0.5)).toBe(expectedSamples(5, 2));
    expect(await len('hello there', 1)).toBe(expectedSamples(11, 1));
    expect(await len('hello there', 1)).toBeGreaterThan(await len('hello', 1));
  });

  it('uses the config length_scale as the neutral rate', async () => {
    await install(SINGLE, { inference: { noise_scale: 0.667, length_scale: 1.5, noise_w: 0.8 } });
    const audio = await engine.synthesize({ text: 'hi', voice: await voiceFor(9001), prosody: prosody() }, ctx());
    expect(audio.channels[0]!.length).toBe(expectedSamples(2, 1.5));
  });

  it('normalizes the peak and applies energy as gain', async () => {
    await install(SINGLE);
    const voice = await voiceFor(9001);
    const peak = (a: Float32Array) => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    const loud = await engine.synthesize({ text: 'hello there', voice, prosody: prosody() }, ctx());
    const soft = await engine.synthesize({ text: 'hello there', voice, prosody: prosody({ energy: 0.5 }) }, ctx());
    expect(peak(loud.channels[0]!)).toBeCloseTo(0.95, 2);
    expect(peak(soft.channels[0]!)).toBeCloseTo(0.475, 2);
  });

  it('synthesizes each phonemized sentence with a pause between them', async () => {
    await install(SINGLE);
    const progress: number[] = [];
    const audio = await engine.synthesize(
      { text: 'ab\nde', voice: await voiceFor(9001), prosody: prosody() },
      ctx({ onProgress: (f) => progress.push(f) }),
    );
    expect(audio.channels[0]!.length).toBe(2 * expectedSamples(2, 1) + Math.round(0.2 * 22050));
    expect(progress).toEqual([0.5, 1]);
  });

  it('honours ctx.signal between sentences', async () => {
    await install(SINGLE);
    const ac = new AbortController();
    const run = engine.synthesize(
      { text: 'ab\ncd\nef', voice: await voiceFor(9001), prosody: prosody() },
      ctx({ signal: ac.signal, onProgress: () => ac.abort(new Error('cancelled')) }),
    );
    await expect(run).rejects.toThrow('cancelled');
  });

  it('feeds sid to multi-speaker models and accepts [1,1,1,T] output', async () => {
    await install(MULTI, { multiSpeaker: true, outputRank: 4, speakerIdMap: { M: 0, F: 1 } });
    const voices = await engine.listVoices();
    expect(voices.map((v) => [v.apiId, v.engineVoice, v.key])).toEqual([
      [9002, 'piper-en_US-tinymulti-medium#0', 'piper:en_US-tinymulti-medium:0'],
      [9003, 'piper-en_US-tinymulti-medium#1', 'piper:en_US-tinymulti-medium:1'],
    ]);
    const audio = await engine.synthesize({ text: 'abd', voice: voices[1]!, prosody: prosody() }, ctx());
    expect(audio.channels[0]!.length).toBe(expectedSamples(3, 1));
  });

  it('loads each model once per engine instance', async () => {
    await install(SINGLE);
    const voice = await voiceFor(9001);
    await Promise.all([1, 2, 3].map(() => engine.synthesize({ text: 'ab', voice, prosody: prosody() }, ctx())));
    expect((engine as unknown as { sessions: { size: number } }).sessions.size).toBe(1);
  });

  it('fails with a TaskFailure when the model is not installed or the voice is unknown', async () => {
    const voice: EngineVoice = {
      key: 'piper:en_US-tiny-medium', engine: 'piper', language: 'en', gender: 'female', age: 'adult',
      displayName: 'Tiny', engineVoice: 'piper-en_US-tiny-medium',
    };
    await expect(engine.synthesize({ text: 'ab', voice, prosody: prosody() }, ctx())).rejects.toThrow(
      /not installed .*models pull piper-en_US-tiny-medium/,
    );
    await expect(
      engine.synthesize({ text: 'ab', voice: { ...voice, engineVoice: 'nope' }, prosody: prosody() }, ctx()),
    ).rejects.toBeInstanceOf(TaskFailure);
    // Installing afterwards works: the failed load was not cached.
    await install(SINGLE);
    const audio = await engine.synthesize({ text: 'ab', voice, prosody: prosody() }, ctx());
    expect(audio.channels[0]!.length).toBe(expectedSamples(2, 1));
  });

  it('ONNX_EXECUTION_PROVIDER: auto falls back to CPU here and synthesizes; cuda without its provider is a permanent failure naming the file', async () => {
    await install(SINGLE);
    const auto = chooseExecutionProviders('auto').providers;
    expect(auto).toEqual(['cpu']);
    const onAuto = new PiperEngine({ modelsDir, catalog, phonemize, executionProviders: auto });
    const onCuda = new PiperEngine({ modelsDir, catalog, phonemize, executionProviders: chooseExecutionProviders('cuda').providers });
    try {
      const audio = await onAuto.synthesize({ text: 'ab', voice: await voiceFor(9001), prosody: prosody() }, ctx());
      expect(audio.channels[0]!.length).toBe(expectedSamples(2, 1));
      const failed = onCuda.synthesize({ text: 'ab', voice: await voiceFor(9001), prosody: prosody() }, ctx());
      await expect(failed).rejects.toBeInstanceOf(TaskFailure);
      await expect(failed).rejects.toThrow(new RegExp(`model file ${join(modelsDir, SINGLE.name, 'en_US-tiny-medium.onnx')} could not be loaded \\(cuda\\)`));
      await expect(failed).rejects.toMatchObject({ retryable: false });
    } finally {
      await onAuto.close();
      await onCuda.close();
    }
  });

  it('returns empty audio when nothing maps to phonemes', async () => {
    await install(SINGLE);
    const audio = await engine.synthesize({ text: '123', voice: await voiceFor(9001), prosody: prosody() }, ctx());
    expect(audio.channels[0]!.length).toBe(0);
  });
});
