/**
 * WPE against nara_wpe, the reference implementation: the committed small golden (harness/cases/wpe.py) holds a
 * seeded reverberant signal's STFT and nara_wpe's offline WPE of it for three (taps, delay, iterations); Soundry's
 * filter, run as one block over every frame with nara's regularisation, must match each within rel 1e-4.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { REL_TOLERANCE } from './golden.js';
import { compareCase } from './wpe.js';
import { wpeOffline } from '../../../src/engines/enhance/dereverb.js';

const GOLDEN = join(import.meta.dirname, '..', '..', 'fixtures', 'golden', 'wpe');

describe('WPE against nara_wpe (small golden)', () => {
  it(`matches nara_wpe's offline wpe for every configuration within rel ${REL_TOLERANCE}`, async () => {
    const results = await compareCase(GOLDEN);
    expect(results.map((r) => r.name)).toEqual(['k10_d3_i3', 'k10_d3_i1', 'k5_d2_i2']);
    for (const r of results) expect(r.rel, `${r.name}: max abs ${r.maxAbs}`).toBeLessThanOrEqual(REL_TOLERANCE);
  });

  it('the comparison can fail: another delay than the reference used is far off', async () => {
    // The same input through a configuration the golden was not made with must not pass the bar.
    const { readGolden, goldenTensor } = await import('./golden.js');
    const g = await readGolden(GOLDEN);
    const t = goldenTensor(g, 'input', GOLDEN);
    const ref = goldenTensor(g, 'output.k10_d3_i3', GOLDEN);
    const [, frames, bins] = t.shape as [number, number, number];
    const rows = (d: Float32Array, part: number) => Array.from({ length: frames }, (_, f) => Float64Array.from(d.subarray((part * frames + f) * bins, (part * frames + f + 1) * bins)));
    const got = wpeOffline(rows(t.data, 0), rows(t.data, 1), { taps: 10, delay: 2, iterations: 3, powerFloor: 'max', loading: 0 });
    let maxAbs = 0, peak = 0;
    got.re.forEach((r, f) => r.forEach((v, b) => {
      const rv = ref.data[f * bins + b]!;
      maxAbs = Math.max(maxAbs, Math.abs(v - rv));
      peak = Math.max(peak, Math.abs(rv));
    }));
    expect(maxAbs / peak).toBeGreaterThan(100 * REL_TOLERANCE);
  });
});
