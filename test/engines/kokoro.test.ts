import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskFailure } from '../../src/domain/errors.js';
import { KokoroEngine } from '../../src/engines/tts/kokoro.js';
import { synthesize } from '../../src/engines/tts/synthesize.js';
import { createTtsRegistry } from '../../src/engines/tts/registry.js';
import { createVoiceLibrary } from '../../src/engines/tts/setup.js';
import { defaultSpeakers } from '../../src/kinds/podcast-script/worker.js';
import { openAiVoice } from '../../src/kinds/tts/openai.js';
import { modelFilePath } from '../../src/models/download.js';
import { buildTinyPiperModel, tinyPiperConfig } from '../fixtures/onnx-builder.js';
import { BUILTIN_VOICE_IDS } from '../../src/engines/tts/voices.js';
import { MODEL_CATALOG, kokoroEntries, piperModels, type ModelEntry } from '../../src/models/catalog.js';
import { KOKORO_REVISION } from '../../src/models/catalog-kokoro.js';
import { CatalogFile, mergeCatalog } from '../../src/models/catalog-file.js';
import { installKokoroStandIns, kokoroStandIns, TEST_KOKORO_VOCAB } from '../fixtures/kokoro-fixture.js';
import { JapaneseReader } from '../../src/engines/tts/japanese.js';
import { pinToBytes } from '../fixtures/pinned-catalog.js';

const LFS_POINTER = `version https://git-lfs.github.com/spec/v1\noid sha256:${'0'.repeat(64)}\nsize 522240\n`;
const ctx = { tmpDir: tmpdir(), signal: new AbortController().signal, onProgress: () => {} };
const prosody = { rate: 1, pitch: 1, pitchRange: 1, energy: 1 };
/** The front end is tested against espeak elsewhere; here a fixed phonemizer keeps the engine's own checks in view. */
const phonemize = async () => 'həlˈoʊ wˈɜːld.';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-kokoro-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function fresh(name: string): Promise<string> {
  return join(dir, name);
}

describe('Kokoro catalog', () => {
  const { models, voices } = kokoroEntries(MODEL_CATALOG);

  it('pins every file to the revision, with sha256 and the real sizes', () => {
    expect(models).toHaveLength(1);
    for (const e of [...models, ...voices]) {
      for (const f of e.files) {
        expect(f.url).toBe(`https://huggingface.co/onnx-community/Kokoro-82M-v1.0-ONNX/resolve/${KOKORO_REVISION}/${f.path}`);
        expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
      }
    }
    expect(models[0]!.files.map((f) => [f.path, f.sizeBytes])).toEqual([['onnx/model.onnx', 325532232], ['tokenizer.json', 3497]]);
    for (const v of voices) expect(v.files).toEqual([expect.objectContaining({ path: `voices/${v.kokoroVoice.voice}.bin`, sizeBytes: 510 * 256 * 4 })]);
  });

  it('gives voices stable ids in 6001-6999 that no other voice uses, with language, accent and gender from the name', () => {
    const ids = voices.map((v) => v.kokoroVoice.apiId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => id >= 6001 && id <= 6999)).toBe(true);
    const others = [...Object.values(BUILTIN_VOICE_IDS), ...piperModels().flatMap((m) => m.piper.voices.map((v) => v.apiId))];
    expect(ids.filter((id) => others.includes(id))).toEqual([]);
    const heart = voices.find((v) => v.kokoroVoice.voice === 'af_heart')!.kokoroVoice;
    expect(heart).toEqual(expect.objectContaining({ apiId: 6001, language: 'en', dialect: 'en-us', espeakVoice: 'en-us', gender: 'female' }));
    const george = voices.find((v) => v.kokoroVoice.voice === 'bm_george')!.kokoroVoice;
    expect(george).toEqual(expect.objectContaining({ language: 'en', dialect: 'en-gb', espeakVoice: 'en', gender: 'male' }));
  });

  it('ships the Spanish, French, Portuguese and Japanese voices and am_santa at 6028-6040, after the 27 English ids it never renumbers', () => {
    const byId = voices.map((v) => [v.kokoroVoice.apiId, v.kokoroVoice.voice, v.kokoroVoice.language, v.kokoroVoice.espeakVoice, v.kokoroVoice.dialect, v.kokoroVoice.gender]);
    expect(byId.slice(0, 27).map(([id]) => id)).toEqual(Array.from({ length: 27 }, (_, i) => 6001 + i));
    expect(byId.slice(0, 27).every(([, , language]) => language === 'en')).toBe(true);
    expect(byId.slice(27)).toEqual([
      [6028, 'ef_dora', 'es', 'es', 'es', 'female'],
      [6029, 'em_alex', 'es', 'es', 'es', 'male'],
      [6030, 'em_santa', 'es', 'es', 'es', 'male'],
      [6031, 'ff_siwis', 'fr', 'fr', 'fr', 'female'],
      [6032, 'pf_dora', 'pt', 'pt-br', 'pt-br', 'female'],
      [6033, 'pm_alex', 'pt', 'pt-br', 'pt-br', 'male'],
      [6034, 'pm_santa', 'pt', 'pt-br', 'pt-br', 'male'],
      [6035, 'am_santa', 'en', 'en-us', 'en-us', 'male'],
      [6036, 'jf_alpha', 'ja', 'ja', 'ja', 'female'],
      [6037, 'jf_gongitsune', 'ja', 'ja', 'ja', 'female'],
      [6038, 'jf_nezumi', 'ja', 'ja', 'ja', 'female'],
      [6039, 'jf_tebukuro', 'ja', 'ja', 'ja', 'female'],
      [6040, 'jm_kumo', 'ja', 'ja', 'ja', 'male'],
    ]);
    // The digests that arrived with them (catalog-kokoro.ts names the manifests), each distinct from every other voice's.
    const digests = voices.map((v) => v.files[0]!.sha256);
    expect(new Set(digests).size).toBe(digests.length);
    expect(voices.find((v) => v.kokoroVoice.voice === 'ff_siwis')!.files[0]!.sha256).toBe('a35f5675ad08948e326ae75fd0ea16ba5d0042e4f76b5f3d1df77d0a48c54861');
    expect(voices.find((v) => v.kokoroVoice.voice === 'jm_kumo')!.files[0]!.sha256).toBe('09e959d239724c734d65661f06f14cdabcddfd476bfaaad905a937099ae9e64f');
  });
});

describe('KokoroEngine', () => {
  it('offers only verified voices, or every catalog voice when auto-pull will fetch them', async () => {
    const modelsDir = await fresh('offer');
    const s = kokoroStandIns(['af_heart', 'am_adam']);
    await installKokoroStandIns(modelsDir, s);
    // am_adam's file is replaced by an LFS pointer: never a voice, and named as what a first use must fetch.
    await writeFile(join(modelsDir, 'kokoro-am_adam', 'voices/am_adam.bin'), LFS_POINTER);
    const engine = new KokoroEngine({ modelsDir, catalog: s.entries, phonemize });
    const listed = await engine.listVoices();
    expect(listed.map((v) => [v.apiId, v.key, v.gender])).toEqual([[6001, 'kokoro:en-us:af_heart', 'female']]);
    const offering = new KokoroEngine({ modelsDir, catalog: s.entries, phonemize, listPullable: true });
    const all = await offering.listVoices();
    expect(all.map((v) => [v.apiId, v.neural, v.pullModels])).toEqual([[6001, true, undefined], [6012, true, ['kokoro-am_adam']]]);
    await expect(offering.synthesize({ text: 'hi', voice: all[1]!, prosody }, ctx)).rejects.toThrow(/am_adam is not installed .*Git LFS pointer/);
  });

  it('reads the kokoro-onnx release names (tokens -> audio) as well as onnx-community\'s', async () => {
    const modelsDir = await fresh('names');
    const s = kokoroStandIns(['af_heart'], [], { idsName: 'tokens', outputName: 'audio' });
    await installKokoroStandIns(modelsDir, s);
    const engine = new KokoroEngine({ modelsDir, catalog: s.entries, phonemize });
    const [voice] = await engine.listVoices();
    const out = await engine.synthesize({ text: 'hello world', voice: voice!, prosody }, ctx);
    expect(out.sampleRate).toBe(24000);
    expect(out.channels[0]!.length).toBeGreaterThan(1000);
    await engine.close();
  });

  it('a verified model file that onnxruntime cannot load is a permanent failure naming the file', async () => {
    const modelsDir = await fresh('broken');
    const s = kokoroStandIns(['af_heart']);
    // A site pinned bytes that are not an ONNX graph: they verify, and must still never become a retried "internal error".
    s.files.get('kokoro-82m-v1.0')!['onnx/model.onnx'] = Buffer.from('not an onnx graph at all');
    const pinned = kokoroStandIns(['af_heart']);
    const entries: ModelEntry[] = pinned.entries.map((e) => (e.name === 'kokoro-82m-v1.0' ? pinToBytes(e, s.files.get(e.name)!) : e));
    await installKokoroStandIns(modelsDir, s);
    const engine = new KokoroEngine({ modelsDir, catalog: entries, phonemize });
    const [voice] = await engine.listVoices();
    const err = await engine.synthesize({ text: 'hello', voice: voice!, prosody }, ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskFailure);
    expect((err as TaskFailure).retryable).toBe(false);
    expect((err as Error).message).toContain(join(modelsDir, 'kokoro-82m-v1.0', 'onnx/model.onnx'));
  });

  it('falls back to the built-in voice of the same language, gender and accent when the models cannot be had', async () => {
    const modelsDir = await fresh('fallback');
    const s = kokoroStandIns(['bm_george']);
    const kokoro = new KokoroEngine({ modelsDir, catalog: s.entries, phonemize, listPullable: true });
    const registry = createTtsRegistry({ extraEngines: [kokoro] });
    const george = (await kokoro.listVoices())[0]!;
    // Nothing installed: both the shared model and the voice's table are what a first use must download.
    expect(george.pullModels).toEqual(['kokoro-82m-v1.0', 'kokoro-bm_george']);
    const job = { text: 'Good morning.', language: 'en', voiceId: george.apiId!, emotion: 0, speed: 1 };
    const off = await synthesize(job, registry, ctx);
    expect(off.engine).toBe('espeak');
    expect(off.voiceKey).toBe('espeak:en-gb:m1');
    expect(off.engineNote).toMatch(/^voice 6026 \(George \(British English, Kokoro\)\) was not used: its models kokoro-82m-v1.0 and kokoro-bm_george are not downloaded yet; spoken by the built-in voice \d+/);
    const failed = await synthesize({ ...job, unavailable: 'mirror said 404' }, registry, ctx);
    expect(failed.voiceKey).toBe('espeak:en-gb:m1');
    expect(failed.engineNote).toContain('was not used: mirror said 404;');
    expect(BUILTIN_VOICE_IDS['espeak:en-gb:m1']).toBe(Number(/built-in voice (\d+)/.exec(failed.engineNote!)![1]));
    // Once the files are installed (verified) the voice is no longer marked, and speaks itself.
    await installKokoroStandIns(modelsDir, s);
    expect((await kokoro.listVoices())[0]!.pullModels).toBeUndefined();
  });

  it('takes a Kokoro voice a site pins in MODELS_CATALOG_FILE, and refuses a misnamed one or a taken id', async () => {
    const modelsDir = await fresh('site');
    const s = kokoroStandIns([]);
    const bytes = Buffer.alloc(522240, 7);
    // A style table of the site's own (a blend, say): no catalog entry has its name.
    const file = { path: 'voices/ef_mezcla.bin', url: 'https://example.invalid/voices/ef_mezcla.bin', sizeBytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    const catalog = mergeCatalog(CatalogFile.parse({ models: [{ name: 'kokoro-ef_mezcla', kokoroVoice: { voice: 'ef_mezcla', apiId: 6101 }, files: [file] }] }), s.entries);
    await installKokoroStandIns(modelsDir, s);
    await mkdir(join(modelsDir, 'kokoro-ef_mezcla', 'voices'), { recursive: true });
    await writeFile(join(modelsDir, 'kokoro-ef_mezcla', 'voices/ef_mezcla.bin'), bytes);
    const engine = new KokoroEngine({ modelsDir, catalog, phonemize });
    expect((await engine.listVoices()).map((v) => [v.apiId, v.key, v.language, v.gender])).toEqual([[6101, 'kokoro:es:ef_mezcla', 'es', 'female']]);
    expect(() => mergeCatalog(CatalogFile.parse({ models: [{ name: 'mezcla', kokoroVoice: { voice: 'ef_mezcla', apiId: 6101 }, files: [file] }] }))).toThrow(/must be named kokoro-ef_mezcla/);
    expect(() => mergeCatalog(CatalogFile.parse({ models: [{ name: 'kokoro-ef_mezcla', kokoroVoice: { voice: 'ef_mezcla', apiId: 6001 }, files: [file] }] }))).toThrow(/6001 .* already another voice's/);
  });

  it('a site that pinned ff_siwis under its own id before the catalog shipped it keeps that id (clients stored it)', () => {
    const bytes = Buffer.alloc(522240, 9);
    const file = { path: 'voices/ff_siwis.bin', url: 'https://mirror.invalid/voices/ff_siwis.bin', sizeBytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    const merged = mergeCatalog(CatalogFile.parse({ models: [{ name: 'kokoro-ff_siwis', kokoroVoice: { voice: 'ff_siwis', apiId: 6101 }, files: [file] }] }));
    const siwis = kokoroEntries(merged).voices.filter((v) => v.kokoroVoice.voice === 'ff_siwis');
    expect(siwis.map((v) => [v.name, v.kokoroVoice.apiId, v.kokoroVoice.language, v.files])).toEqual([['kokoro-ff_siwis', 6101, 'fr', [file]]]);
    expect(merged).toHaveLength(MODEL_CATALOG.length);
    // The same pin with the catalog's own id is fine too; another voice's id is not.
    expect(kokoroEntries(mergeCatalog(CatalogFile.parse({ models: [{ name: 'kokoro-ff_siwis', kokoroVoice: { voice: 'ff_siwis', apiId: 6031 }, files: [file] }] }))).voices.find((v) => v.kokoroVoice.voice === 'ff_siwis')!.kokoroVoice.apiId).toBe(6031);
    expect(() => mergeCatalog(CatalogFile.parse({ models: [{ name: 'kokoro-ff_siwis', kokoroVoice: { voice: 'ff_siwis', apiId: 6028 }, files: [file] }] }))).toThrow(/6028 .* already another voice's/);
  });

  it('Spanish, French and Portuguese voices phonemize with their espeak voice and speak through the model', async () => {
    const modelsDir = await fresh('romance');
    const s = kokoroStandIns(['ef_dora', 'ff_siwis', 'pm_alex']);
    await installKokoroStandIns(modelsDir, s);
    const asked: string[] = [];
    // A fixed IPA per call (espeak itself is exercised in the differential test): what matters here is which voice.
    const recording = async (_text: string, voice: string) => {
      asked.push(voice);
      return 'tʃˈau, tsˈar';
    };
    const engine = new KokoroEngine({ modelsDir, catalog: s.entries, phonemize: recording });
    const listed = await engine.listVoices();
    expect(listed.map((v) => [v.apiId, v.key, v.language, v.gender])).toEqual([
      [6028, 'kokoro:es:ef_dora', 'es', 'female'],
      [6031, 'kokoro:fr:ff_siwis', 'fr', 'female'],
      [6033, 'kokoro:pt-br:pm_alex', 'pt', 'male'],
    ]);
    for (const voice of listed) {
      const out = await engine.synthesize({ text: 'hola', voice, prosody }, ctx);
      // The stand-in echoes its ids first: pad, then the non-English table's mapping (tʃ -> ʧ, ts -> ʦ), then pad.
      const ids = Array.from(out.channels[0]!.subarray(0, 13), (x) => Math.round(x / 0.001));
      const want = [0, ...Array.from('ʧˈau, ʦˈar', (c) => TEST_KOKORO_VOCAB[c]!), 0];
      expect(ids.slice(0, want.length)).toEqual(want);
      expect(out.channels[0]!.length).toBeGreaterThan(1000);
    }
    expect(asked).toEqual(['es', 'fr', 'pt-br']);
    await engine.close();
  });

  it('Japanese voices read the text as written through the pipeline, with the kana front end and never espeak', async () => {
    const modelsDir = await fresh('japanese');
    const s = kokoroStandIns(['jf_alpha', 'jm_kumo']);
    await installKokoroStandIns(modelsDir, s);
    const reader = new JapaneseReader();
    const read: string[] = [];
    const espeakAsked: string[] = [];
    const kokoro = new KokoroEngine({
      modelsDir,
      catalog: s.entries,
      phonemize: async (_text, voice) => {
        espeakAsked.push(voice);
        return '';
      },
      readJapanese: (text) => {
        read.push(text);
        return reader.words(text);
      },
    });
    const listed = await kokoro.listVoices();
    expect(listed.map((v) => [v.apiId, v.key, v.language, v.gender])).toEqual([[6036, 'kokoro:ja:jf_alpha', 'ja', 'female'], [6040, 'kokoro:ja:jm_kumo', 'ja', 'male']]);
    // The stand-in echoes its ids: pad, misaki's phonemes for the sentence (kokoro-ja.ts), pad.
    const direct = await kokoro.synthesize({ text: '東京へ行った。', voice: listed[0]!, prosody }, ctx);
    const want = [0, ...Array.from('toːkʲoː e iʔta.', (c) => TEST_KOKORO_VOCAB[c]!), 0];
    expect(Array.from(direct.channels[0]!.subarray(0, want.length), (x) => Math.round(x / 0.001))).toEqual(want);
    // Through the task's pipeline the engine gets the kanji, not the kana the built-in voices are given.
    read.length = 0;
    const registry = createTtsRegistry({ extraEngines: [kokoro] });
    const out = await synthesize({ text: '東京へ行った。新聞を読みます。', language: 'ja', voiceId: 6040, emotion: 0, speed: 1 }, registry, ctx);
    expect([out.engine, out.voiceKey]).toEqual(['kokoro', 'kokoro:ja:jm_kumo']);
    expect(read.join('')).toContain('東京へ行った');
    expect(read.join('')).toContain('新聞を読みます');
    expect(out.audio.channels[0]!.length).toBeGreaterThan(1000);
    expect(espeakAsked).toEqual([]);
    await kokoro.close();
  });

  it('installed Japanese Kokoro voices become the Japanese defaults, jf_alpha and jm_kumo; the fallback is espeak\'s ja', async () => {
    const modelsDir = await fresh('defaults-ja');
    const s = kokoroStandIns(['jf_alpha', 'jf_nezumi', 'jm_kumo']);
    const offered = createVoiceLibrary({ modelsDir, catalog: s.entries, autoPull: true });
    const before = defaultSpeakers(await offered.list(), 'ja').map((v) => v.name);
    expect(before.every((name) => name.startsWith('espeak:ja:'))).toBe(true);
    await installKokoroStandIns(modelsDir, s);
    const all = await createVoiceLibrary({ modelsDir, catalog: s.entries }).list();
    expect(all.filter((v) => v.id > 6000).map((v) => [v.id, v.language])).toEqual([[6036, 'ja'], [6038, 'ja'], [6040, 'ja']]);
    expect(defaultSpeakers(all, 'ja').map((v) => v.name)).toEqual(['kokoro:ja:jf_alpha', 'kokoro:ja:jm_kumo']);
    const kokoro = new KokoroEngine({ modelsDir, catalog: s.entries, phonemize });
    const registry = createTtsRegistry({ extraEngines: [kokoro] });
    const alpha = (await kokoro.listVoices())[0]!;
    expect((await registry.builtinVoice(alpha))?.voice.key).toMatch(/^espeak:ja:/);
  });

  it('installed Kokoro voices become the podcast default for their language, best graded first; offered ones do not', async () => {
    const modelsDir = await fresh('defaults');
    const s = kokoroStandIns(['af_heart', 'am_adam', 'am_michael']);
    const offered = createVoiceLibrary({ modelsDir, catalog: s.entries, autoPull: true });
    expect((await offered.list()).filter((v) => v.id > 6000).map((v) => [v.id, v.neural, v.downloaded])).toEqual([[6001, true, false], [6017, true, false], [6012, true, false]]);
    expect(defaultSpeakers(await offered.list(), 'en').map((v) => v.name)).toEqual(['espeak:en-us:f1', 'espeak:en-us:m1']);
    await installKokoroStandIns(modelsDir, s);
    const installed = createVoiceLibrary({ modelsDir, catalog: s.entries });
    // Listed best graded first (af_heart, am_michael), then the catalog's order.
    expect((await installed.list()).filter((v) => v.id > 6000).map((v) => [v.id, v.neural, v.downloaded])).toEqual([[6001, true, undefined], [6017, true, undefined], [6012, true, undefined]]);
    expect(defaultSpeakers(await installed.list(), 'en').map((v) => v.name)).toEqual(['kokoro:en-us:af_heart', 'kokoro:en-us:am_michael']);
    // Other languages keep their built-in voices.
    expect(defaultSpeakers(await installed.list(), 'de').map((v) => v.name)).toEqual(['espeak:de:f1', 'espeak:de:m1']);
  });

  it('installed Spanish, French and Portuguese Kokoro voices become their language\'s defaults as English ones do', async () => {
    const modelsDir = await fresh('defaults-romance');
    const s = kokoroStandIns(['ef_dora', 'em_alex', 'em_santa', 'ff_siwis', 'pf_dora', 'pm_alex', 'pm_santa']);
    const offered = createVoiceLibrary({ modelsDir, catalog: s.entries, autoPull: true });
    expect(defaultSpeakers(await offered.list(), 'es').map((v) => v.name)).toEqual(['espeak:es:f1', 'espeak:es:m1']);
    await installKokoroStandIns(modelsDir, s);
    const all = await createVoiceLibrary({ modelsDir, catalog: s.entries }).list();
    expect(all.filter((v) => v.id > 6000).map((v) => [v.id, v.language])).toEqual([
      [6028, 'es'], [6029, 'es'], [6030, 'es'], [6031, 'fr'], [6032, 'pt'], [6033, 'pt'], [6034, 'pt'],
    ]);
    // The catalog's first voice of each language and gender; French has no male Kokoro voice, so espeak's stays.
    expect(defaultSpeakers(all, 'es').map((v) => v.name)).toEqual(['kokoro:es:ef_dora', 'kokoro:es:em_alex']);
    expect(defaultSpeakers(all, 'fr').map((v) => v.name)).toEqual(['kokoro:fr:ff_siwis', 'espeak:fr:m1']);
    expect(defaultSpeakers(all, 'pt').map((v) => v.name)).toEqual(['kokoro:pt-br:pf_dora', 'kokoro:pt-br:pm_alex']);
    expect(defaultSpeakers(all, 'en').map((v) => v.name)).toEqual(['espeak:en-us:f1', 'espeak:en-us:m1']);
  });

  it('with Kokoro and Piper voices of English both installed, the defaults are Kokoro\'s (the list puts Kokoro first)', async () => {
    const modelsDir = await fresh('both');
    const s = kokoroStandIns(['af_heart', 'am_michael']);
    await installKokoroStandIns(modelsDir, s);
    // Piper's Lessac (5001, female) and Ryan (5002, male), installed as verified stand-ins pinned in the catalog.
    const piper = piperModels(MODEL_CATALOG).filter((m) => m.piper.voices.some((v) => v.apiId === 5001 || v.apiId === 5002)).map((entry) => {
      const bytes = {
        [entry.piper.modelFile]: buildTinyPiperModel({ sampleRate: entry.piper.sampleRate }),
        [entry.piper.configFile]: Buffer.from(JSON.stringify(tinyPiperConfig({ sampleRate: entry.piper.sampleRate }))),
      };
      return { entry: pinToBytes(entry, bytes), bytes };
    });
    for (const { entry, bytes } of piper) {
      for (const [path, data] of Object.entries(bytes)) {
        const file = modelFilePath(modelsDir, entry, { path });
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, data);
      }
    }
    const library = createVoiceLibrary({ modelsDir, catalog: [...s.entries, ...piper.map((p) => p.entry)] });
    const all = await library.list();
    expect(all.filter((v) => v.neural).map((v) => [v.id, v.downloaded])).toEqual([[6001, undefined], [6017, undefined], [5001, undefined], [5002, undefined]]);
    expect(defaultSpeakers(all, 'en').map((v) => v.id)).toEqual([6001, 6017]);
    // OpenAI names: no Kokoro namesake is installed here, so the names of a gender spread over its neural voices in list
    // order (female names alloy, coral, ...: Kokoro's Heart, then Piper's Lessac; echo is the third male name).
    expect([openAiVoice('alloy', all)?.id, openAiVoice('coral', all)?.id, openAiVoice('echo', all)?.id]).toEqual([6001, 5001, 6017]);
  });
});
