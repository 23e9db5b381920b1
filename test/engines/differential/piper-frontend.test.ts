/**
 * Differential test of Soundry's Piper front end against the reference rules, without the real weights.
 *
 * - Coverage: every phoneme our espeak front end emits (the same phonemizeIpa path setup.ts hands to
 *   PiperEngine) over real paragraphs in every Piper language of our catalog is in the real Lessac voice's
 *   phoneme_id_map. Piper's espeak voices of every language share that IPA inventory (the map is
 *   piper-phonemize's default espeak map), so the Lessac map is the reference for all of them.
 * - Id sequence and inference inputs: an independent port of piper-phonemize's phonemes_to_ids (BOS '^',
 *   PAD '_' after BOS and after every phoneme, EOS '$'; NFD codepoints; unknown ones dropped) and of Piper's
 *   scales [noise_scale, length_scale / speed, noise_w] is compared with what a stand-in model that echoes its
 *   inputs receives from PiperEngine.
 *
 * Skips when ../shared (the real config and texts) is absent.
 */
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EspeakEngine } from '../../../src/engines/tts/espeak.js';
import { PiperEngine, phonemesToIds } from '../../../src/engines/tts/piper.js';
import { MODEL_CATALOG, piperModels } from '../../../src/models/catalog.js';
import type { EngineContext } from '../../../src/ports/engines.js';
import { buildOnnxModel } from '../../fixtures/onnx-builder.js';
import { pinToFiles } from '../../fixtures/pinned-catalog.js';

const SHARED = resolve(process.cwd(), '../shared/corpus');
const LESSAC_CONFIG = join(SHARED, 'models/piper-en_US-lessac-medium/en_US-lessac-medium.onnx.json');
const TEXTS = join(SHARED, 'tts_text/piper_rainbow');
const haveShared = existsSync(LESSAC_CONFIG) && existsSync(TEXTS);

const PiperConfig = z.object({
  espeak: z.object({ voice: z.string() }),
  inference: z.object({ noise_scale: z.number(), length_scale: z.number(), noise_w: z.number() }),
  phoneme_map: z.record(z.string(), z.array(z.string())).optional(),
  phoneme_id_map: z.record(z.string(), z.array(z.number().int())),
});
type PiperConfig = z.infer<typeof PiperConfig>;

/** Reference rule (piper-phonemize phonemes_to_ids), ported independently of src/engines/tts/piper.ts. */
function referenceIds(phonemes: string, cfg: PiperConfig): number[] {
  const map = cfg.phoneme_id_map;
  const out = [...map['^']!, ...map['_']!];
  for (const ch of [...phonemes.normalize('NFD')]) {
    const ids = map[ch];
    if (ids === undefined) continue;
    out.push(...ids, ...map['_']!);
  }
  out.push(...map['$']!);
  return out;
}

/**
 * Echo stand-in with Piper's real signature: input int64 [1,N], input_lengths int64 [1], scales float [3]
 * -> output float [1,1,T] = [MARK, ...input, input_lengths, ...scales]. MARK dominates the peak, so the
 * engine's peak normalization scales everything by 0.95 / MARK and the test can undo it exactly enough.
 */
const MARK = 4096;
function echoModel(): Buffer {
  return buildOnnxModel({
    name: 'piper_echo',
    inputs: [
      { name: 'input', elemType: 'int64', shape: [1, 'phonemes'] },
      { name: 'input_lengths', elemType: 'int64', shape: [1] },
      { name: 'scales', elemType: 'float', shape: [3] },
    ],
    outputs: [{ name: 'output', elemType: 'float', shape: [1, 1, 'time'] }],
    initializers: [
      { name: 'mark', dataType: 'float', dims: [1], values: [MARK] },
      { name: 'flat', dataType: 'int64', dims: [1], values: [-1] },
      { name: 'out_shape', dataType: 'int64', dims: [3], values: [1, 1, -1] },
    ],
    nodes: [
      { opType: 'Cast', inputs: ['input'], outputs: ['ids_f'], attributes: { to: { i: 1 } } },
      { opType: 'Reshape', inputs: ['ids_f', 'flat'], outputs: ['ids_flat'] },
      { opType: 'Cast', inputs: ['input_lengths'], outputs: ['len_f'], attributes: { to: { i: 1 } } },
      { opType: 'Concat', inputs: ['mark', 'ids_flat', 'len_f', 'scales'], outputs: ['all'], attributes: { axis: { i: 0 } } },
      { opType: 'Reshape', inputs: ['all', 'out_shape'], outputs: ['output'] },
    ],
  });
}

describe.skipIf(!haveShared)('Piper front end vs the real Lessac phoneme_id_map', () => {
  const espeak = new EspeakEngine();
  const cfg = haveShared ? PiperConfig.parse(JSON.parse(readFileSync(LESSAC_CONFIG, 'utf8'))) : undefined;
  // Every Piper language of our catalog, with the espeak voice its voices' configs name.
  const languages = [...new Map(piperModels(MODEL_CATALOG).map((m) => [m.piper.language, m.piper.espeakVoice])).entries()];

  it('covers the languages the catalog lists', () => {
    expect(languages.map(([l]) => l).sort()).toEqual(['ar', 'de', 'en', 'es', 'fr', 'pt', 'ru', 'zh']);
  });

  it.each(languages)('every phoneme emitted for %s (espeak %s) is in the map', async (language, voice) => {
    const text = readFileSync(join(TEXTS, `${language}.txt`), 'utf8');
    const ipa = await espeak.phonemizeIpa(text, voice);
    const lines = ipa.split('\n').filter((l) => l.trim());
    expect(lines.length).toBeGreaterThan(0);
    const emitted = new Set<string>();
    const missing = new Map<string, number>();
    for (const line of lines) {
      for (const ch of line.normalize('NFD')) emitted.add(ch);
      for (const m of phonemesToIds(line, cfg!.phoneme_id_map, cfg!.phoneme_map).missing) missing.set(m, (missing.get(m) ?? 0) + 1);
    }
    const named = [...missing].map(([ch, n]) => `${ch} U+${ch.codePointAt(0)!.toString(16).toUpperCase()} x${n}`);
    expect(named, `phonemes missing from the Lessac map for ${language}`).toEqual([]);
    // A real phoneme inventory, not an empty or ASCII-only string that would pass trivially.
    expect([...emitted].filter((ch) => ch.codePointAt(0)! > 0x7f).length).toBeGreaterThan(3);
  }, 60_000);

  it('the coverage check sees what Piper cannot map (tie bars, CJK)', () => {
    expect(phonemesToIds('t\u0361ʃ', cfg!.phoneme_id_map).missing).toEqual(['\u0361']);
    expect(phonemesToIds('彩', cfg!.phoneme_id_map).missing).toEqual(['彩']);
  });

  describe('ids and scales fed to the model', () => {
    let dir = '';
    let engine: PiperEngine;
    const entry = piperModels(MODEL_CATALOG).find((m) => m.piper.key === 'en_US-lessac-medium')!;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'soundry-piper-diff-'));
    });
    afterAll(async () => {
      await engine?.close();
      await rm(dir, { recursive: true, force: true });
    });

    /** The real catalog entry pinned to the echo model + the real Lessac config, as a site catalog file would. */
    async function install(): Promise<PiperEngine> {
      await mkdir(join(dir, entry.name), { recursive: true });
      await writeFile(join(dir, entry.name, entry.piper.modelFile), echoModel());
      await copyFile(LESSAC_CONFIG, join(dir, entry.name, entry.piper.configFile));
      return new PiperEngine({
        modelsDir: dir,
        catalog: [pinToFiles(entry, dir)],
        phonemize: (text, voice) => espeak.phonemizeIpa(text, voice),
      });
    }

    const ctx = (): EngineContext => ({ tmpDir: dir, signal: new AbortController().signal, onProgress: () => {} });

    it.each([1, 1.5, 0.8])('matches the reference at speed %s', async (speed) => {
      engine ??= await install();
      const [voice] = await engine.listVoices();
      expect(voice?.engineVoice).toBe(entry.name);
      const sentence = readFileSync(join(TEXTS, 'en.txt'), 'utf8').split(/(?<=\.)\s/)[0]!;
      const audio = await engine.synthesize({ text: sentence, voice: voice!, prosody: { rate: speed, pitch: 1, pitchRange: 1, energy: 1 } }, ctx());
      const echoed = Array.from(audio.channels[0]!, (x) => (x * MARK) / 0.95);

      const phonemes = await espeak.phonemizeIpa(sentence, cfg!.espeak.voice);
      expect(phonemes.split('\n')).toHaveLength(1);
      const ids = referenceIds(phonemes, cfg!);
      const inf = cfg!.inference;
      const expected = [MARK, ...ids, ids.length, inf.noise_scale, inf.length_scale / speed, inf.noise_w];
      expect(echoed.length).toBe(expected.length);
      const idsGot = echoed.slice(1, 2 + ids.length).map(Math.round);
      expect(idsGot).toEqual([...ids, ids.length]);
      const scalesGot = echoed.slice(-3);
      for (let k = 0; k < 3; k++) expect(scalesGot[k]).toBeCloseTo(expected[expected.length - 3 + k]!, 4);
    });
  });
});
