import { describe, expect, it } from 'vitest';
import { MODEL_CATALOG } from '../../src/models/catalog.js';
import { modelFilePath } from '../../src/models/download.js';
import { SEPARATION_MODELS } from '../../src/models/catalog-separation.js';
import { findPreset, presetPath } from '../../src/engines/separation/onnx/presets.js';

describe('separation model catalog', () => {
  it('is part of the catalog, and each pulled file lands where the engine preset looks for it', () => {
    expect(SEPARATION_MODELS.length).toBeGreaterThan(0);
    for (const m of SEPARATION_MODELS) {
      expect(MODEL_CATALOG).toContain(m);
      expect(m.kind).toBe('separation');
      const preset = findPreset(m.name);
      expect(preset, m.name).toBeDefined();
      expect(m.files.map((f) => modelFilePath('/models', m, f))).toContain(presetPath('/models', preset!));
      for (const f of m.files) {
        expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
        expect(f.url).toMatch(/^https:\/\//);
      }
      expect(m.meta?.sampleRate).toBe(44100);
    }
  });
});
