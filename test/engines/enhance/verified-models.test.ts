import { cp, mkdir, mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseDenoiser, createDenoiser, createVad } from '../../../src/engines/enhance/engine-choice.js';
import { onnxDenoiserAvailable, OnnxDenoiseStage } from '../../../src/engines/enhance/onnx-denoise.js';
import { sileroModelPath } from '../../../src/engines/enhance/vad.js';
import { chooseExecutionProviders } from '../../../src/engines/onnx-provider.js';
import { buildStages, planEnhancement } from '../../../src/engines/enhance/chain.js';
import { MODEL_CATALOG } from '../../../src/models/catalog.js';
import { pinFolder } from '../../fixtures/pinned-catalog.js';
import { processWhole } from '../../../src/engines/enhance/stage.js';

/**
 * The enhancement models (DTLN, GTCRN, Silero VAD) are used only when verified against the catalog, as the separation
 * models are: the shared corpus copies are the published files (the built-in catalog's sha256 match them), and a
 * copy that is an LFS pointer, truncated, or another file is not installed however its name looks.
 */
const corpus = new URL('../../../../shared/corpus/models', import.meta.url).pathname;
const have = ['dtln/model_1.onnx', 'dtln/model_2.onnx', 'gtcrn/gtcrn.onnx', 'silero_vad/silero_vad.onnx'].every((f) => existsSync(join(corpus, f)));

describe.skipIf(!have)('verified enhancement models', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-enh-models-'));
    for (const m of ['dtln', 'gtcrn', 'silero_vad']) await cp(join(corpus, m), join(dir, m), { recursive: true });
    // Only the catalog's files: the corpus has extra exports (gtcrn_simple.onnx, silero_vad_16k_op15.onnx).
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('the shared corpus copies match the built-in catalog (size and sha256), so they count as installed', () => {
    expect(onnxDenoiserAvailable(corpus, 'dtln')).toBe(true);
    expect(onnxDenoiserAvailable(corpus, 'gtcrn')).toBe(true);
    expect(sileroModelPath(corpus)).toBe(join(corpus, 'silero_vad', 'silero_vad.onnx'));
  });

  it('an LFS pointer, a truncated file or another model of the same name is not installed', async () => {
    const bad = await mkdtemp(join(tmpdir(), 'soundry-enh-bad-'));
    try {
      await cp(dir, bad, { recursive: true });
      await writeFile(join(bad, 'gtcrn', 'gtcrn.onnx'), `version https://git-lfs.github.com/spec/v1\noid sha256:${'f'.repeat(64)}\nsize 352084\n`);
      await truncate(join(bad, 'silero_vad', 'silero_vad.onnx'), 1000);
      // The other DTLN stage in place of the first: the right name, the wrong bytes.
      await cp(join(bad, 'dtln', 'model_2.onnx'), join(bad, 'dtln', 'model_1.onnx'));
      expect(onnxDenoiserAvailable(bad, 'gtcrn')).toBe(false);
      expect(onnxDenoiserAvailable(bad, 'dtln')).toBe(false);
      expect(sileroModelPath(bad)).toBeNull();
      expect(chooseDenoiser('auto', bad, 0.1)).toEqual({ kind: 'rnnoise', why: 'auto: no neural denoiser installed; RNNoise (built in)' });
      expect((await createVad(bad)).engine).toBe('webrtc-vad');
      await expect(OnnxDenoiseStage.create(16000, 1, { modelsDir: bad, kind: 'gtcrn' })).rejects.toThrow(/gtcrn is not installed \(gtcrn\/gtcrn\.onnx: Git LFS pointer/);
    } finally {
      await rm(bad, { recursive: true, force: true });
    }
  });

  it('a verified file that onnxruntime refuses: the stage runs on RNNoise and the note names the file', async () => {
    const odd = await mkdtemp(join(tmpdir(), 'soundry-enh-odd-'));
    try {
      await cp(join(dir, 'gtcrn'), join(odd, 'gtcrn'), { recursive: true });
      await writeFile(join(odd, 'gtcrn', 'gtcrn.onnx'), Buffer.alloc(352084, 3));
      // A site catalog pins these bytes (as it would its own build), so the file is verified; it still is no model.
      const catalog = [pinFolder(odd, 'gtcrn', 'enhance')];
      const made = await createDenoiser('gtcrn', 16000, 1, { modelsDir: odd, catalog });
      expect(made.kind).toBe('rnnoise');
      expect(made.fallback).toContain(`${join(odd, 'gtcrn', 'gtcrn.onnx')} could not be loaded (cpu)`);
      const built = await buildStages(planEnhancement(new Set(['remove_noise']), null), { sampleRate: 16000, channels: 1, modelsDir: odd, catalog, spectrum: null, denoiser: 'gtcrn' });
      expect(built.engines).toContain('rnnoise');
      expect(built.notes.denoise).toMatch(/^ENHANCE_DENOISER=gtcrn; gtcrn not used: .*gtcrn\.onnx could not be loaded/);
    } finally {
      await rm(odd, { recursive: true, force: true });
    }
  });

  it('auto: a verified DTLN that onnxruntime refuses is passed over for GTCRN, and the reason names the file', async () => {
    const odd = await mkdtemp(join(tmpdir(), 'soundry-enh-odd-dtln-'));
    try {
      await cp(join(dir, 'gtcrn'), join(odd, 'gtcrn'), { recursive: true });
      await mkdir(join(odd, 'dtln'));
      for (const f of ['model_1.onnx', 'model_2.onnx']) await writeFile(join(odd, 'dtln', f), Buffer.alloc(4096, 5));
      const catalog = [pinFolder(odd, 'dtln', 'enhance'), MODEL_CATALOG.find((e) => e.name === 'gtcrn')!];
      // Dry input: auto would run DTLN; it will not load, so GTCRN runs rather than RNNoise.
      const built = await buildStages(planEnhancement(new Set(['remove_noise']), null), { sampleRate: 16000, channels: 1, modelsDir: odd, catalog, spectrum: null, denoiser: 'auto', t60: 0.1 });
      expect(built.engines).toEqual(['gtcrn']);
      expect(built.notes.denoise).toMatch(new RegExp(`^auto: DTLN could not be used: ${join(odd, 'dtln', 'model_1.onnx')} could not be loaded \\(cpu\\): .*; GTCRN used instead$`));
    } finally {
      await rm(odd, { recursive: true, force: true });
    }
  });

  it('ONNX_EXECUTION_PROVIDER: auto falls back to CPU here and the denoisers and Silero run; cuda without its provider falls back with the file named', async () => {
    const auto = chooseExecutionProviders('auto');
    expect(auto.providers).toEqual(['cpu']);
    const x = Float32Array.from({ length: 16000 }, (_, i) => 0.1 * Math.sin((2 * Math.PI * 300 * i) / 16000) + 0.02 * Math.sin(i * 1.7));
    for (const kind of ['dtln', 'gtcrn'] as const) {
      const made = await createDenoiser(kind, 16000, 1, { modelsDir: dir, catalog: MODEL_CATALOG }, auto.providers);
      expect(made.kind).toBe(kind);
      const y = await processWhole([made.stage], { sampleRate: 16000, channels: [x] }, 4000);
      expect(y.channels[0]!.length).toBe(x.length);
    }
    expect((await createVad(dir, auto.providers)).engine).toBe('silero-vad');
    const cuda = chooseExecutionProviders('cuda').providers;
    const onCuda = await createDenoiser('gtcrn', 16000, 1, dir, cuda);
    expect(onCuda.kind).toBe('rnnoise');
    expect(onCuda.fallback).toContain(`${join(dir, 'gtcrn', 'gtcrn.onnx')} could not be loaded (cuda)`);
    const vad = await createVad(dir, cuda);
    expect(vad.engine).toBe('webrtc-vad');
    expect(vad.fallback).toContain('silero_vad.onnx could not be loaded (cuda)');
  });
});
