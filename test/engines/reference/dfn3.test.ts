/**
 * DeepFilterNet3 against DeepFilterNet's own Python pipeline (df.enhance.enhance with libdf's features;
 * harness/cases/dfn3.py), from the committed small golden in test/fixtures/golden/dfn3/: a seeded-random-weight DFN3
 * with the published [df] configuration and small network widths, exported by the authors' export() and packed as
 * the published archive. No Python needed here; the full-size case (the published widths) runs through
 * `bash harness/check.sh dfn3`.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadFftProvider } from '../../../src/media/dsp/fft.js';
import { DfStream, enhanceDf } from '../../../src/engines/enhance/deepfilter-core.js';
import { erbWidths, normAlpha } from '../../../src/engines/enhance/deepfilter-features.js';
import { compareCase, openDfn3Archive, readDfn3Case, streamed } from './dfn3.js';
import { REL_TOLERANCE, channels, compareOutput, goldenTensor, readGolden } from './golden.js';

const DIR = join(import.meta.dirname, '..', '..', 'fixtures', 'golden', 'dfn3');

async function input(): Promise<Float32Array> {
  const [x] = channels(goldenTensor(await readGolden(DIR), 'input', DIR));
  if (!x) throw new Error('no input');
  return x;
}

describe('DeepFilterNet3 vs df.enhance.enhance (small golden dfn3)', () => {
  it('the golden is a real test: the published [df] values, and an output the network really changed', async () => {
    const c = await readDfn3Case(DIR);
    const model = await openDfn3Archive(join(DIR, c.archive));
    await model.release();
    expect(model.cfg).toMatchObject({ sampleRate: 48000, fftSize: 960, hopSize: 480, nbErb: 32, nbDf: 96, dfOrder: 5, dfLookahead: 2, convLookahead: 2, normTau: 1, minNbErbFreqs: 2, postFilter: false });
    // libdf's DF(48000, 960, 480, 32, 2).erb_widths(), as deepfilterlib 0.5.6 returns them.
    expect(erbWidths(48000, 960, 32, 2)).toEqual([2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 5, 5, 7, 7, 8, 10, 12, 13, 15, 18, 20, 24, 28, 31, 37, 42, 50, 56, 67]);
    expect(normAlpha(48000, 480, 1)).toBe(Math.fround(0.99));
    const g = await readGolden(DIR);
    const x = await input();
    const [y] = channels(goldenTensor(g, 'output.enhanced', DIR));
    expect(y!.length).toBe(x.length);
    // Far from the identity: the output differs from the input by more than half the input's peak.
    expect(compareOutput('enhanced vs input', [y!], [x]).rel).toBeGreaterThan(0.5);
  });

  it(`matches the reference features and outputs within rel ${REL_TOLERANCE}`, async () => {
    const errors = await compareCase(DIR, { threads: 1 });
    for (const e of errors) console.log(`dfn3 small ${e.name}: max abs ${e.maxAbs.toExponential(2)}, rel ${e.rel.toExponential(2)}`);
    expect(errors.map((e) => e.name)).toEqual(['feat_erb (libdf erb + erb_norm)', 'feat_spec (libdf unit_norm)', 'enhanced', 'enhanced_atten12', 'enhanced_pf']);
    for (const e of errors) expect(e.rel, e.name).toBeLessThanOrEqual(REL_TOLERANCE);
  });

  it('fails when the feature look-ahead is wrong (the comparison can see an off-by-one frame)', async () => {
    const c = await readDfn3Case(DIR);
    const model = await openDfn3Archive(join(DIR, c.archive));
    try {
      const got = await enhanceDf(await input(), { ...model.cfg, convLookahead: 1 }, model.sessions);
      const err = compareOutput('conv_lookahead 1', [got], channels(goldenTensor(await readGolden(DIR), 'output.enhanced', DIR)));
      expect(err.rel).toBeGreaterThan(100 * REL_TOLERANCE);
    } finally {
      await model.release();
    }
  });

  it('streams in windows: with context over the whole past it equals one pass; the seam error of a short context is measured', async () => {
    const c = await readDfn3Case(DIR);
    const model = await openDfn3Archive(join(DIR, c.archive));
    const fft = (await loadFftProvider()).create(model.cfg.fftSize);
    try {
      const x = await input();
      const whole = await enhanceDf(x, model.cfg, model.sessions, { fft });
      const run = (windowFrames: number, contextFrames: number, piece: number) =>
        streamed(new DfStream(model.cfg, model.sessions, fft, { windowFrames, contextFrames }), x, piece);
      const exact = await run(7, 1000, 1234);
      expect(exact.length).toBe(x.length);
      const e = compareOutput('windows of 7 frames, full context', [exact], [whole]);
      expect(e.rel).toBeLessThanOrEqual(1e-6);
      const short = await run(16, 4, 997);
      const seam = compareOutput('windows of 16 frames, 4 of context', [short], [whole]);
      console.log(`dfn3 small seam: windows 7/context 1000 rel ${e.rel.toExponential(2)}; windows 16/context 4 rel ${seam.rel.toExponential(2)}`);
      expect(short.length).toBe(x.length);
    } finally {
      fft.dispose();
      await model.release();
    }
  });
});
