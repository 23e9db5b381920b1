import { cp, mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enhanceThread } from '../../../src/kinds/enhance/thread.js';
import { resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { MODEL_CATALOG } from '../../../src/models/catalog.js';

/**
 * ENHANCE_DENOISER=auto on a server where DTLN is the only neural denoiser (the operator pulled only dtln), through the
 * enhance kind's thread entry as the worker runs it, with the shared corpus's real DTLN and real recordings. Found from
 * outside: the input's T60 was measured only with GTCRN installed too, so DTLN alone never ran and RNNoise did.
 */
const corpus = new URL('../../../../shared/corpus', import.meta.url).pathname;
const pairs = join(corpus, 'speech', 'constructed_pairs_16k');
// Measured by DecayStats: the dry noisy file 0.20 s, the reverberant one 0.26 s (DTLN_MAX_T60 is 0.22 s).
const dry = join(pairs, 'noisy', 'libri3436__fs573577_snr05.wav');
const wet = join(pairs, 'reverb', 'arctic_aew_a0001__sbrir3_rev.wav');
const have = [join(corpus, 'models', 'dtln', 'model_1.onnx'), join(corpus, 'models', 'dtln', 'model_2.onnx'), dry, wet].every((f) => existsSync(f));
const tools = resolveMediaTools({ preferSystem: true });

describe.skipIf(!have)('auto with DTLN installed and GTCRN not', () => {
  let dir: string;
  let modelsDir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-enh-dtln-only-'));
    modelsDir = join(dir, 'models');
    await cp(join(corpus, 'models', 'dtln'), join(modelsDir, 'dtln'), { recursive: true });
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  const run = (inputPath: string, out: string, flags: Array<'remove_noise' | 'remove_reverb'> = ['remove_noise']) =>
    enhanceThread({ modelsDir, separationEngine: 'builtin', catalog: MODEL_CATALOG })(
      { inputPath, outPath: join(dir, out), format: 'wav', sampleRate: 16000, channels: 1, totalFrames: 0, flags, modelsDir, ffmpeg: tools.ffmpeg, targetLufs: -16 },
      { tmpDir: dir, signal: new AbortController().signal, onProgress: () => {} },
    );

  it('dry input: the T60 is measured and DTLN runs, the reason giving the estimate', async () => {
    const out = await run(dry, 'dry.wav');
    expect(out.engines).toEqual(['dtln']);
    expect(out.reasons.denoise).toBe('remove_noise; engine: auto: estimated T60 0.20 s <= 0.22 s (dry): DTLN, best on additive noise');
    expect(out.outputSeconds).toBeCloseTo(out.inputSeconds, 2);
  }, 60_000);

  it('reverberant input: RNNoise, the reason giving the estimate and that GTCRN is not installed', async () => {
    const out = await run(wet, 'wet.wav');
    expect(out.engines).toEqual(['rnnoise']);
    expect(out.reasons.denoise).toBe(
      'remove_noise; engine: auto: estimated T60 0.26 s > 0.22 s (reverberant): DTLN avoided, worst on reverberant input; GTCRN not installed; RNNoise (built in)',
    );
  }, 60_000);

  it('dereverberation asked on dry-measuring input: not DTLN, and the reason says so', async () => {
    const out = await run(dry, 'dry-dereverb.wav', ['remove_noise', 'remove_reverb']);
    expect(out.engines).toEqual(['rnnoise', 'wpe']);
    expect(out.reasons.denoise).toBe(
      'remove_noise; engine: auto: dereverberation requested (reverberant input): DTLN avoided, worst on reverberant input; GTCRN not installed; RNNoise (built in)',
    );
  }, 60_000);
});
