import { describe, expect, it } from 'vitest';
import { MODEL_CATALOG } from '../../src/models/catalog.js';
import { modelFilePath } from '../../src/models/download.js';
import { SEPARATION_MODELS } from '../../src/models/catalog-separation.js';
import { CHECKPOINT_SEPARATION_MODELS, MEGA53_INSTRUMENTS } from '../../src/models/catalog-separation-checkpoints.js';
import { findPreset, presetPath } from '../../src/engines/separation/onnx/presets.js';
import { MODEL_TYPES, STEMS_BY_MODEL_TYPE } from '../../src/domain/vocabulary.js';
import type { OtherModelEntry } from '../../src/models/catalog.js';

const CHECKPOINT_ENGINES = ['htdemucs-checkpoint', 'roformer-checkpoint'];
const isCheckpoint = (m: OtherModelEntry) => CHECKPOINT_ENGINES.includes(String(m.meta?.engine));
const byName = (name: string) => CHECKPOINT_SEPARATION_MODELS.find((m) => m.name === name)!;

describe('separation model catalog', () => {
  it('is part of the catalog with a pinned https URL and a sha256 for every file, at 44.1 kHz', () => {
    expect(SEPARATION_MODELS.length).toBeGreaterThan(0);
    for (const m of SEPARATION_MODELS) {
      expect(MODEL_CATALOG).toContain(m);
      expect(m.kind).toBe('separation');
      expect(m.license.length, m.name).toBeGreaterThan(20);
      for (const f of m.files) {
        expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
        expect(f.url).toMatch(/^https:\/\//);
        // A moving branch would let the bytes change under a fixed checksum: Hugging Face and raw GitHub URLs name
        // a revision or commit.
        expect(f.url, `${m.name}/${f.path}`).not.toMatch(/\/(resolve|raw)\/main\/|githubusercontent\.com\/[^/]+\/[^/]+\/main\//);
      }
      expect(m.meta?.sampleRate).toBe(44100);
    }
  });

  it('lands each ONNX model file where the engine preset looks for it', () => {
    for (const m of SEPARATION_MODELS.filter((e) => !isCheckpoint(e))) {
      const preset = findPreset(m.name);
      expect(preset, m.name).toBeDefined();
      expect(m.files.map((f) => modelFilePath('/models', m, f))).toContain(presetPath('/models', preset!));
    }
  });

  it('describes every checkpoint model with what its engine needs, for model types whose stems it produces', () => {
    expect(CHECKPOINT_SEPARATION_MODELS.length).toBe(8);
    for (const m of CHECKPOINT_SEPARATION_MODELS) {
      expect(SEPARATION_MODELS).toContain(m);
      const meta = m.meta!;
      const stems = meta.stems as string[];
      const types = meta.modelTypes as number[];
      expect(types.length, m.name).toBeGreaterThan(0);
      for (const t of types) {
        expect(MODEL_TYPES as readonly number[]).toContain(t);
        // Each type's stems come from the model, except 490's backing/other split, which a later stage makes.
        if (t !== 490) for (const s of STEMS_BY_MODEL_TYPE[t as keyof typeof STEMS_BY_MODEL_TYPE]) expect(stems, `${m.name} ${t}`).toContain(s);
      }
      const paths = m.files.map((f) => f.path);
      if (meta.engine === 'roformer-checkpoint') {
        expect(paths, m.name).toEqual([meta.checkpointFile, meta.configFile]);
        expect(['bs_roformer', 'mel_band_roformer']).toContain(meta.architecture);
        // audio-separator steps by chunk // num_overlap: a whole step of at least one sample.
        expect(Math.floor((meta.chunkSize as number) / (meta.numOverlap as number)), m.name).toBeGreaterThan(0);
      } else {
        const models = meta.models as { file: string; kwargsFile?: string }[];
        for (const x of models) {
          expect(paths).toContain(x.file);
          if (meta.format === 'safetensors') expect(paths).toContain(x.kwargsFile);
        }
        if (meta.format === 'safetensors') expect(paths).toContain(meta.bagFile);
        const weights = meta.bagWeights as number[][];
        expect(weights.length).toBe(models.length);
        for (const row of weights) expect(row.length).toBe((meta.sources as string[]).length);
        expect(meta.sources).toEqual(stems);
      }
    }
  });

  it("pins Meta's .th files to the sha256 whose first 8 hex digits the name carries (all demucs itself checks)", () => {
    const th = CHECKPOINT_SEPARATION_MODELS.flatMap((m) => m.files).filter((f) => f.path.endsWith('.th'));
    expect(th.length).toBe(6);
    for (const f of th) {
      const [, prefix] = /^[0-9a-f]{8}-([0-9a-f]{8})\.th$/.exec(f.path)!;
      expect(f.sha256!.slice(0, 8), f.path).toBe(prefix);
      expect(f.url).toBe(`https://dl.fbaipublicfiles.com/demucs/hybrid_transformer/${f.path}`);
    }
    // htdemucs_ft: the bag of demucs' remote/htdemucs_ft.yaml, each network kept for its own source only.
    const ft = byName('htdemucs_ft-th').meta!;
    expect((ft.models as { signature: string }[]).map((x) => x.signature)).toEqual(['f7e0c4bc', 'd12395a8', '92cfc3b6', '04573f0d']);
    expect(ft.bagWeights).toEqual([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]);
    expect(ft.sources).toEqual(['drums', 'bass', 'other', 'vocals']);
  });

  it('maps the Mega model\'s heads to the instruments of its yaml, never pulled without a site asking', () => {
    const mega = byName('bs-roformer-mvsep-mega-53').meta!;
    expect(mega.instruments).toEqual([...MEGA53_INSTRUMENTS]);
    expect(MEGA53_INSTRUMENTS.length).toBe(53);
    const heads = mega.heads as Record<string, number>;
    const named = Object.fromEntries(Object.entries(heads).map(([stem, i]) => [stem, MEGA53_INSTRUMENTS[i]]));
    expect(named).toEqual({
      piano: 'piano', guitar: 'guitar', strings: 'strings', wind: 'wind', synthesizer: 'synth',
      vocals: 'vocal', drums: 'drums', bass: 'bass', lead_vocals: 'lead-vocal', backing_vocals: 'back-vocal',
    });
    for (const s of mega.stems as string[]) expect(heads[s], s).toBeDefined();
    expect(mega.autoPull).toBe(false);
    expect(byName('htdemucs_ft-th').meta!.autoPull).toBe(false);
  });

  it('states the demucs licence conflict on every HTDemucs entry instead of calling the weights MIT', () => {
    const demucs = SEPARATION_MODELS.filter((m) => m.name.startsWith('htdemucs'));
    expect(demucs.length).toBe(7);
    for (const m of demucs) {
      expect(m.license, m.name).toContain('facebookresearch/demucs#327');
      expect(m.license, m.name).toMatch(/research/);
    }
  });
});
