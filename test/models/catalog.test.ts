import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MODEL_CATALOG, findModel, modelSizeBytes, piperModels } from '../../src/models/catalog.js';

const SPEC_LANGUAGES = ['zh', 'en', 'ar', 'ru', 'es', 'fr', 'pt', 'de', 'ko', 'ja', 'zh_yue'];

describe('model catalog', () => {
  it('has unique names and a published checksum and size for every file', () => {
    const names = MODEL_CATALOG.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    for (const m of MODEL_CATALOG) {
      expect(m.files.length).toBeGreaterThan(0);
      for (const f of m.files) {
        expect(f.sha256 ?? f.md5).toBeTruthy();
        if (f.md5) expect(f.md5).toMatch(/^[0-9a-f]{32}$/);
        if (f.sha256) expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
        expect(f.sizeBytes).toBeGreaterThan(0);
        expect(f.path).not.toMatch(/(^|\/)\.\.(\/|$)/);
      }
    }
  });

  it('gives Piper voices stable unique API ids, spec languages and official URLs', () => {
    const piper = piperModels();
    const ids = piper.flatMap((m) => m.piper.voices.map((v) => v.apiId));
    expect(new Set(ids).size).toBe(ids.length);
    expect(Math.min(...ids)).toBe(5001);
    for (const m of piper) {
      expect(SPEC_LANGUAGES).toContain(m.piper.language);
      expect(m.piper.espeakVoice).toBeTruthy();
      expect(m.files.map((f) => f.path)).toEqual([m.piper.modelFile, m.piper.configFile]);
      const [locale, dataset, quality] = m.piper.key.split('-');
      for (const f of m.files) {
        expect(f.url).toBe(
          `https://huggingface.co/rhasspy/piper-voices/resolve/v1.0.0/${locale!.split('_')[0]}/${locale}/${dataset}/${quality}/${f.path}`,
        );
      }
    }
    // Every language Piper covers among the spec's has a voice of some gender.
    expect(new Set(piper.map((m) => m.piper.language))).toEqual(new Set(['en', 'de', 'fr', 'es', 'pt', 'ru', 'ar', 'zh']));
  });

  it('finds entries by name and sums their sizes', () => {
    const lessac = findModel('piper-en_US-lessac-medium');
    expect(lessac?.kind).toBe('tts');
    expect(modelSizeBytes(lessac!)).toBe(63201294 + 4885);
    expect(findModel('nope')).toBeUndefined();
  });
});

describe('catalog checksums', () => {
  it('every file has a checksum; the real Lessac config from the shared corpus verifies against both', () => {
    for (const m of MODEL_CATALOG) for (const f of m.files) expect(f.sha256 ?? f.md5, `${m.name}/${f.path}`).toMatch(/^[0-9a-f]{32}([0-9a-f]{32})?$/);
    const path = new URL('../../../shared/corpus/models/piper-en_US-lessac-medium/en_US-lessac-medium.onnx.json', import.meta.url);
    if (!existsSync(path)) return; // the corpus lives beside the repository on the project's machines only
    const bytes = readFileSync(path);
    const file = findModel('piper-en_US-lessac-medium')!.files[1]!;
    expect(bytes.length).toBe(file.sizeBytes);
    expect(createHash('md5').update(bytes).digest('hex')).toBe(file.md5);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(file.sha256);
  });

  it('Piper files keep the published md5 and carry the published sha256 wherever one was found (kerstin has none)', () => {
    const piper = piperModels();
    for (const m of piper) for (const f of m.files) expect(f.md5, `${m.name}/${f.path}`).toMatch(/^[0-9a-f]{32}$/);
    const withoutOnnxSha = piper.filter((m) => !m.files[0]!.sha256).map((m) => m.name);
    expect(withoutOnnxSha).toEqual(['piper-de_DE-kerstin-low']);
    const withoutJsonSha = piper.filter((m) => !m.files[1]!.sha256).map((m) => m.name).sort();
    expect(withoutJsonSha).toEqual(['piper-de_DE-kerstin-low', 'piper-es_ES-sharvard-medium', 'piper-fr_FR-gilles-low']);
    // One digest per file: no two catalog files share a sha256.
    const all = piper.flatMap((m) => m.files.flatMap((f) => (f.sha256 ? [f.sha256] : [])));
    expect(new Set(all).size).toBe(all.length);
  });
});
