/**
 * BSS Eval v4 SDR (src/media/bsseval.ts, the separation-quality bench's metric) against museval 0.4.1 itself, from
 * the committed golden harness/cases/bsseval.py wrote: every window's SDR (and ISR/SIR/SAR through the 512-tap
 * distortion filters, src/media/bsseval-images.ts) and every source's track median, on a
 * MUSDB-style vocals/accompaniment pair at 44.1 kHz, four stems with silent windows, and overlapping windows with an
 * antiphase source. No Python needed.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compareCase, readBssevalCase, readBssevalGolden, refusal } from './bsseval.js';

const DIR = join(import.meta.dirname, '..', '..', 'fixtures', 'golden', 'bsseval');
/** museval stores each window's value to 1e-5 dB; the medians are compared after that quantisation. */
const TOLERANCE_DB = 1e-3;

describe('BSS Eval v4 SDR vs museval (small golden)', () => {
  it('the golden is a real test: a spread of SDRs, NaN windows where museval skips, a MUSDB-shaped scenario', async () => {
    const c = await readBssevalCase(DIR);
    const g = await readBssevalGolden(DIR, c.int16_scale);
    const musdb = c.scenarios.find((s) => s.name === 'musdb_pair')!;
    expect(musdb).toMatchObject({ call: 'evaluate', rate: 44100, window: 44100, hop: 44100, filters_len: 512 });
    expect(c.scenarios.flatMap((s) => s.nan_windows).length).toBeGreaterThanOrEqual(3);
    const medians = c.scenarios.flatMap((s) => [...g.get(`${s.name}.median_sdr`)!.data]);
    expect(Math.max(...medians) - Math.min(...medians)).toBeGreaterThan(10);
    expect(medians.every(Number.isFinite)).toBe(true);
  });

  // The full decomposition's cost grows with the cube of sources x channels x taps: the four-stem scenario (4096
  // unknowns, about 40 s of CPU) is left to the full-size check (scripts/reference-check.ts), which runs everything.
  it(`matches museval's per-window SDR, ISR, SIR, SAR and track medians within ${TOLERANCE_DB} dB`, async () => {
    const errors = await compareCase(DIR, { allMetricsUpTo: 2048 });
    for (const e of errors) console.log(`bsseval ${e.name}: max abs ${e.maxAbs.toExponential(2)} dB`);
    expect(errors.map((e) => e.name)).toEqual(expect.arrayContaining(['four_stems.sdr', 'musdb_pair.images.sir', 'filters_64.images.sar']));
    expect(errors).toHaveLength(6 + 2 * 8);
    for (const e of errors) expect(e.maxAbs, e.name).toBeLessThanOrEqual(TOLERANCE_DB);
  }, 240_000);

  it('refuses a wholly silent estimate or reference, as museval does', async () => {
    const c = await readBssevalCase(DIR);
    expect(c.errors.map((e) => e.silent).sort()).toEqual(['est', 'ref']);
    for (const e of c.errors) {
      expect(e.message).toMatch(e.silent === 'est' ? /estimated sources is all 0s/ : /reference sources is all 0s/);
      expect(refusal(e.silent)).toMatch(e.silent === 'est' ? /estimate 1 is silent/ : /reference 1 is silent/);
    }
  });
});
