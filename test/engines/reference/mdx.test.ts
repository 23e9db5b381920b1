/**
 * MDX-Net against python-audio-separator's own MDXSeparator (harness/cases/mdx.py), from the committed small golden
 * in test/fixtures/golden/mdx/: a seeded-random-weight ONNX model with MDX-Net's I/O, a stereo mixture over four
 * chunks (the last one short), the reference's primary and secondary stems; once with audio-separator's defaults
 * and once with its enable_denoise (mdx_denoise). No Python needed here; the full-size
 * case (Kim_Vocal_2's n_fft 7680, dim_f 3072, dim_t 256) runs through `bash harness/check.sh`.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compareCase, readMdxCase } from './mdx.js';
import { REL_TOLERANCE, channels, goldenTensor, readGolden } from './golden.js';

const GOLDEN = join(import.meta.dirname, '..', '..', 'fixtures', 'golden');

// mdx: audio-separator's defaults; mdx_denoise: the same with enable_denoise (Soundry's `denoise: true`).
describe.each(['mdx', 'mdx_denoise'])('MDX-Net vs audio-separator MDXSeparator (small golden %s)', (name) => {
  const DIR = join(GOLDEN, name);

  it('the golden is a real test: several chunks, non-trivial stems, secondary = mix - compensate * primary', async () => {
    const c = await readMdxCase(DIR);
    const g = await readGolden(DIR);
    const mix = channels(goldenTensor(g, 'input', DIR));
    const chunk = c.hop * (c.dim_t - 1);
    expect(mix[0]!.length).toBeGreaterThan(2 * chunk);
    const primary = channels(goldenTensor(g, `output.${c.primary}`, DIR));
    const secondary = channels(goldenTensor(g, `output.${c.secondary}`, DIR));
    let peak = 0;
    let identity = 0;
    for (let ch = 0; ch < 2; ch++) {
      for (let i = 0; i < mix[ch]!.length; i++) {
        peak = Math.max(peak, Math.abs(primary[ch]![i]!));
        identity = Math.max(identity, Math.abs(mix[ch]![i]! - c.compensate * primary[ch]![i]! - secondary[ch]![i]!));
      }
    }
    expect(peak).toBeGreaterThan(0.05);
    expect(identity).toBeLessThan(1e-6);
  });

  it(`matches the reference stems within rel ${REL_TOLERANCE}`, async () => {
    const errors = await compareCase(DIR, { threads: 1, piece: 9973 });
    for (const e of errors) console.log(`${name} small ${e.name}: max abs ${e.maxAbs.toExponential(2)}, rel ${e.rel.toExponential(2)}`);
    expect(errors).toHaveLength(2);
    for (const e of errors) expect(e.rel, e.name).toBeLessThanOrEqual(REL_TOLERANCE);
  });
});
