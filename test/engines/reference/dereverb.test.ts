/**
 * Learned dereverberation against python-audio-separator: the committed small golden (harness/cases/dereverb_roformer.py)
 * holds a dereverberation Mel-Band RoFormer (stems noreverb / reverb, target noreverb) on seeded random weights as a
 * torch.save .ckpt with its yaml, a reverberant stereo and a mono input, and the dry stem the reference demixed.
 * The full-size shape runs by `bash harness/check.sh dereverb_roformer`.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { REL_TOLERANCE } from './golden.js';
import { compareCase } from './dereverb.js';

const GOLDEN = join(import.meta.dirname, '..', '..', 'fixtures', 'golden', 'dereverb_roformer');

describe('learned dereverberation against python-audio-separator (small golden)', () => {
  it(`keeps the reference's dry stem, stereo and mono, within rel ${REL_TOLERANCE}`, async () => {
    const results = await compareCase(GOLDEN);
    expect(results.map((r) => r.name)).toEqual(['stereo noreverb', 'mono noreverb']);
    for (const r of results) expect(r.rel, `${r.name}: max abs ${r.maxAbs}`).toBeLessThanOrEqual(REL_TOLERANCE);
  });

  it('streams in any piece size with the same result', async () => {
    const a = await compareCase(GOLDEN, { piece: 257 });
    for (const r of a) expect(r.rel, r.name).toBeLessThanOrEqual(REL_TOLERANCE);
  });
});
