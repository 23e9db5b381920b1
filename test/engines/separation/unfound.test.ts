import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AudioData } from '../../../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { BuiltinSeparationEngine, missingStems, otherNote, residualGain } from '../../../src/engines/separation/builtin.js';
import { collectingSink, sourceFromAudio, type SeparationRun } from '../../../src/engines/separation/engine.js';
import { findPreset, NEURAL_PRESETS, type NeuralPreset } from '../../../src/engines/separation/onnx/presets.js';
import { servingModels, unfoundStemsMessage } from '../../../src/engines/separation/remedy.js';
import { SelectingSeparationEngine } from '../../../src/engines/separation/select.js';
import { MODEL_CATALOG, type ModelEntry } from '../../../src/models/catalog.js';
import { planOutputs, unfoundStems } from '../../../src/kinds/separation/worker.js';
import { makeSeparableSong } from '../../helpers/separable-song.js';

/** A stem the built-in engine finds nowhere is reported (`missing`), with what would have served it (`remedy`). */
const RATE = 44100;
const ctx = () => ({ tmpDir: tmpdir(), signal: new AbortController().signal, onProgress: () => {} });
const tones = (seconds: number): AudioData => ({
  sampleRate: RATE,
  channels: [440, 660].map((f) => Float32Array.from({ length: RATE * seconds }, (_, i) => 0.3 * Math.sin((2 * Math.PI * f * i) / RATE))),
});
/** A catalog that lists these presets (files not installed: only the names and routes matter here). */
const listing = (presets: readonly NeuralPreset[]): ModelEntry[] =>
  presets.map((p) => ({ name: p.name, kind: 'separation', description: 'test', license: 'test', files: [{ path: p.file, url: `http://127.0.0.1:9/${p.file}`, sizeBytes: 1, sha256: '0'.repeat(64) }] }));

/** The MDX-Net presets alone: which models serve 350 and 490 among them does not change as others are catalogued. */
const MDX = NEURAL_PRESETS.filter((p) => p.family === 'mdx');
let dir: string;
let separable: AudioData;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-unfound-'));
  const tools = resolveMediaTools({ preferSystem: true });
  separable = await decodeAudio(await makeSeparableSong(tools.ffmpeg, join(dir, 'song.wav'), 4), { ffmpeg: tools.ffmpeg, sampleRate: RATE, channels: 2 });
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

async function builtin(audio: AudioData, modelType: number): Promise<SeparationRun> {
  return (await new BuiltinSeparationEngine().separate(sourceFromAudio(audio), modelType, ctx(), collectingSink())) as SeparationRun;
}

describe('stems the built-in engine found nowhere', () => {
  it('a stem is missing only when every segment found nothing of it', () => {
    expect(missingStems({ piano: [0, 0, 0], drums: [0.25, 0.25], guitar: [0, 0.5, 0], bass: [] })).toEqual(['piano']);
  });

  it('plain tones: no drums and no vocals are found, and the run says so; a found stem is not listed', async () => {
    const run = await builtin(tones(3), 501);
    expect(run.missing?.sort()).toEqual(['drums', 'vocals']);
    expect(run.stems?.drums).toMatch(/could not find this instrument/);
    expect(run.missing).not.toContain('bass');
  }, 60_000);

  it('the separable test song: drums, bass and vocals are all found, and the doubted ones keep their stem_notes', async () => {
    for (const modelType of [501, 350, 340, 360]) {
      const run = await builtin(separable, modelType);
      expect(run.missing, `${modelType}`).toBeUndefined();
    }
    const run = await builtin(separable, 340);
    // Found but doubted: returned turned down, with the note (carved stems are always hedged).
    expect(run.stems?.drums).toMatch(/unsure of this stem: turned down by up to 12\.0 dB/);
  }, 120_000);
});

describe('which stems a task depends on', () => {
  it('those it returns, and those its accompaniment is the mixture without', () => {
    expect(unfoundStems(['drums', 'vocals'], 501, planOutputs(501, 'stems'))).toEqual(['drums', 'vocals']);
    expect(unfoundStems(['piano'], 380, planOutputs(380, 'accompaniment'))).toEqual(['piano']);
    // 320's accompaniment is the mixture less the vocals: a missing piano does not change it.
    expect(unfoundStems(['piano', 'guitar'], 320, planOutputs(320, 'accompaniment'))).toEqual([]);
    expect(unfoundStems(['vocals'], 320, planOutputs(320, 'accompaniment'))).toEqual(['vocals']);
    expect(unfoundStems(undefined, 350, planOutputs(350, 'stems'))).toEqual([]);
  });
});

describe('what would serve a model type (derived from the catalog and the routes)', () => {
  it('names the models of the route the auto-pull would take, from whatever catalog is in force', () => {
    expect(servingModels(350, listing(MDX))).toEqual(['Kim_Vocal_2']);
    expect(servingModels(490, listing(MDX))).toEqual(['Kim_Vocal_2', 'UVR_MDXNET_KARA_2']);
    const sixStem = findPreset('htdemucs_6s')!;
    expect(servingModels(380, listing([sixStem]))).toEqual(['htdemucs_6s']);
    expect(servingModels(320, listing([sixStem]))).toEqual(['htdemucs_6s']);
    expect(servingModels(380, [])).toEqual([]);
    // Never-auto-pulled models are named only where nothing else serves the type.
    const ft = findPreset('htdemucs_ft-openkara')!;
    expect(servingModels(501, listing([ft, findPreset('htdemucs-openkara')!]))).toEqual(['htdemucs-openkara']);
    expect(servingModels(501, listing([ft]))).toEqual(['htdemucs_ft-openkara']);
    // The built-in catalog: every name given is one `models pull` knows.
    for (const t of [350, 490, 501, 320, 380, 390, 491, 492, 493]) {
      for (const name of servingModels(t)) expect(MODEL_CATALOG.some((m) => m.name === name), `${t}: ${name}`).toBe(true);
    }
  });
});

describe('the message a failed task carries', () => {
  it('says what was not found, that nothing was charged, and the command that installs a model, without operator detail', () => {
    const m = unfoundStemsMessage(380, ['piano'], { cause: 'not-installed', models: ['htdemucs_6s'], detail: 'http://mirror/x 404' });
    expect(m).toBe('The built-in engine could not find piano in this input, and no installed model can separate piano; nothing was charged. An operator can install one with `soundry models pull htdemucs_6s`.');
    const failed = unfoundStemsMessage(490, ['lead_vocals', 'backing_vocals'], { cause: 'download-failed', models: ['Kim_Vocal_2', 'UVR_MDXNET_KARA_2'], detail: 'UVR_MDXNET_KARA_2 could not be installed: checksum mismatch for http://mirror/k.onnx' });
    expect(failed).toMatch(/^The built-in engine could not find lead vocals and backing vocals in this input, and the model that separates lead vocals and backing vocals \(Kim_Vocal_2 with UVR_MDXNET_KARA_2\) could not be downloaded; nothing was charged\. Try again later, or an operator can install it with `soundry models pull Kim_Vocal_2` and `soundry models pull UVR_MDXNET_KARA_2`\.$/);
    expect(failed).not.toMatch(/checksum|http|minutes/);
    expect(unfoundStemsMessage(491, ['strings'], { cause: 'none', models: [] })).toBe('The built-in engine could not find strings in this input, and no model this server knows can separate strings; nothing was charged.');
    expect(unfoundStemsMessage(350, ['vocals'], { cause: 'builtin-only', models: ['Kim_Vocal_2'] })).toMatch(/set to use only its built-in separation engine; nothing was charged\. An operator can set SEPARATION_ENGINE=auto and install a model that separates vocals with `soundry models pull Kim_Vocal_2`\.$/);
    expect(unfoundStemsMessage(350, ['vocals'], { cause: 'load-failed', models: ['Kim_Vocal_2'], detail: '/models/Kim_Vocal_2/Kim_Vocal_2.onnx: bad' })).not.toMatch(/\/models/);
  });

  it('points a 6-stem task whose piano and guitar were not found at the model type of the stems that were', () => {
    expect(unfoundStemsMessage(320, ['piano', 'guitar'], { cause: 'none', models: [] })).toMatch(/could not find piano and guitar .* Model type 501 separates bass, drums, vocals and other\.$/);
    expect(unfoundStemsMessage(501, ['drums'], { cause: 'none', models: [] })).not.toMatch(/Model type/);
  });
});

describe('the selecting engine says why no model served', () => {
  it('SEPARATION_ENGINE=builtin: builtin-only, naming what would serve the type', async () => {
    const engine = new SelectingSeparationEngine({ modelsDir: dir, choice: 'builtin', catalog: listing(MDX) });
    const run = await engine.separate(sourceFromAudio(tones(1)), 350, ctx(), collectingSink());
    expect(run.missing).toEqual(['vocals']);
    expect(run.remedy).toEqual({ cause: 'builtin-only', models: ['Kim_Vocal_2'] });
  }, 60_000);

  it('auto without auto-pull: not installed (or no model known)', async () => {
    const engine = new SelectingSeparationEngine({ modelsDir: dir, choice: 'auto', threads: 1, autoPull: false, catalog: listing(MDX) });
    expect((await engine.separate(sourceFromAudio(tones(1)), 350, ctx(), collectingSink())).remedy).toEqual({ cause: 'not-installed', models: ['Kim_Vocal_2'] });
    expect((await engine.separate(sourceFromAudio(tones(1)), 380, ctx(), collectingSink())).remedy).toEqual({ cause: 'none', models: [] });
  }, 60_000);

  it('a failed download: download-failed, the reason kept as operator detail', async () => {
    const server = createServer((_req, res) => res.writeHead(404).end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const engine = new SelectingSeparationEngine({ modelsDir: dir, choice: 'auto', threads: 1, autoPull: true, baseUrl, catalog: listing([findPreset('Kim_Vocal_2')!]) });
      const run = await engine.separate(sourceFromAudio(tones(1)), 350, ctx(), collectingSink());
      expect(run.remedy?.cause).toBe('download-failed');
      expect(run.remedy?.models).toEqual(['Kim_Vocal_2']);
      expect(run.remedy?.detail).toMatch(/Kim_Vocal_2 could not be installed/);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  }, 60_000);

  it('a found stem needs no remedy', async () => {
    const engine = new SelectingSeparationEngine({ modelsDir: dir, choice: 'builtin' });
    const run = await engine.separate(sourceFromAudio(separable), 340, ctx(), collectingSink());
    expect(run.missing).toBeUndefined();
    expect(run.remedy).toBeUndefined();
  }, 60_000);
});

describe("320's `other` inherits the doubt of the piano and guitar it excludes", () => {
  it('takes the lowest gain of the template stems; a residual that excludes none keeps its level', () => {
    expect(residualGain({ drums: 0.25, bass: 0.25, vocals: 1, piano: 0, guitar: 1 })).toBe(0);
    expect(residualGain({ drums: 0.25, bass: 0.25, vocals: 1, piano: 0.5, guitar: 1 })).toBe(0.5);
    expect(residualGain({ drums: 0.25, bass: 0.25, vocals: 1, piano: 1, guitar: 1 })).toBe(1);
    // 501: `other` excludes only carved and vocal stems, whose leftovers are not what drove it below silence.
    expect(residualGain({ drums: 0.25, bass: 0.25, vocals: 1 })).toBeUndefined();
  });

  it('says so in stem_notes, never as an instrument it could not find (it is not `missing`)', () => {
    expect(otherNote([1, 1], ['piano', 'guitar'])).toBeUndefined();
    expect(otherNote([0, 1, 0], ['piano', 'guitar'])).toBe('the built-in engine doubts the piano or guitar it took out of this stem in 2 of 3 segments and cannot tell what it missed of them from the other instruments: the stem is silent there');
    expect(otherNote([0.5, 1], ['piano', 'guitar'])).toMatch(/in 1 of 2 segments: turned down by up to 6\.0 dB/);
    expect(missingStems({ piano: [1, 0], guitar: [0, 1] })).toEqual([]);
  });

  it('a 320 run notes `other` exactly where it doubted the piano or guitar, and never reports `other` missing', async () => {
    // Piano-like notes (decaying harmonics) and nothing else.
    const rate = RATE;
    const n = rate * 4;
    const ch = Float32Array.from({ length: n }, (_, i) => {
      const t = i / rate;
      const note = [261.6, 329.6, 392, 523.3][Math.floor(t) % 4]!;
      let v = 0;
      for (let h = 1; h <= 10; h++) v += (0.3 / h ** 1.3) * Math.sin(2 * Math.PI * note * h * t) * Math.exp(-3 * (t % 1));
      return v;
    });
    const run = await builtin({ sampleRate: rate, channels: [ch, ch.slice()] }, 320);
    const notes = run.stems ?? {};
    // Whatever the engine concluded about piano and guitar, `other` carries a note exactly when one was doubted.
    const doubted = Boolean(notes.piano || notes.guitar);
    expect(Boolean(notes.other)).toBe(doubted);
    expect(run.missing ?? []).not.toContain('other');
  }, 120_000);
});
