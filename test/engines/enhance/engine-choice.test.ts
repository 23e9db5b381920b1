import { describe, expect, it } from 'vitest';
import { decideDenoiser, DTLN_MAX_T60 } from '../../../src/engines/enhance/engine-choice.js';

/**
 * The denoiser choice from facts alone (installed models, why one cannot be used, the input's T60). Found from
 * outside: with auto, a DTLN whose download failed left RNNoise although GTCRN could be had, and the reason did not
 * say that GTCRN was passed over.
 */
const both = { dtln: true, gtcrn: true };
const onlyGtcrn = { dtln: false, gtcrn: true };
const none = { dtln: false, gtcrn: false };
const dtlnFailed = 'automatic download failed: dtln could not be installed: download of http://mirror/dtln/model_1.onnx failed: HTTP 404';
const gtcrnFailed = 'automatic download failed: gtcrn could not be installed: download of http://mirror/gtcrn/gtcrn.onnx failed: HTTP 404';

describe('decideDenoiser (auto)', () => {
  it('with both usable: DTLN on dry input, GTCRN on reverberant input or with dereverberation', () => {
    expect(decideDenoiser('auto', both, DTLN_MAX_T60 - 0.05).kind).toBe('dtln');
    expect(decideDenoiser('auto', both, 0.5)).toEqual({ kind: 'gtcrn', why: 'auto: estimated T60 0.50 s > 0.22 s (reverberant): DTLN avoided, worst on reverberant input; GTCRN' });
    expect(decideDenoiser('auto', both, 0.1, true)).toEqual({ kind: 'gtcrn', why: 'auto: dereverberation requested (reverberant input): DTLN avoided, worst on reverberant input; GTCRN' });
    expect(decideDenoiser('auto', onlyGtcrn, 0.1)).toEqual({ kind: 'gtcrn', why: 'auto: DTLN not installed; GTCRN' });
    expect(decideDenoiser('auto', none, 0.1)).toEqual({ kind: 'rnnoise', why: 'auto: no neural denoiser installed; RNNoise (built in)' });
  });

  it('DTLN that could not be had: GTCRN is used instead, and the reason says why DTLN was not', () => {
    expect(decideDenoiser('auto', onlyGtcrn, 0.1, false, { dtln: dtlnFailed })).toEqual({
      kind: 'gtcrn',
      why: `auto: DTLN could not be used: ${dtlnFailed}; GTCRN used instead`,
    });
    // A DTLN that is installed but would not load counts the same (the problem outranks the installed state).
    const refused = '/models/dtln/model_1.onnx could not be loaded (cpu): bad graph';
    expect(decideDenoiser('auto', both, 0.1, false, { dtln: refused })).toEqual({ kind: 'gtcrn', why: `auto: DTLN could not be used: ${refused}; GTCRN used instead` });
  });

  it('both could not be had: RNNoise, and the reason says why for each', () => {
    expect(decideDenoiser('auto', none, 0.1, false, { dtln: dtlnFailed, gtcrn: gtcrnFailed })).toEqual({
      kind: 'rnnoise',
      why: `auto: DTLN could not be used: ${dtlnFailed}; GTCRN could not be used: ${gtcrnFailed}; RNNoise (built in)`,
    });
    expect(decideDenoiser('auto', none, null, false, { dtln: dtlnFailed })).toEqual({
      kind: 'rnnoise',
      why: `auto: DTLN could not be used: ${dtlnFailed}; GTCRN not installed; RNNoise (built in)`,
    });
  });

  it('GTCRN that could not be had with DTLN usable: DTLN on dry input, else RNNoise saying why neither', () => {
    const onlyDtln = { dtln: true, gtcrn: false };
    expect(decideDenoiser('auto', onlyDtln, 0.1, false, { gtcrn: gtcrnFailed }).kind).toBe('dtln');
    expect(decideDenoiser('auto', onlyDtln, null, false, { gtcrn: gtcrnFailed })).toEqual({
      kind: 'rnnoise',
      why: `auto: estimated T60 unknown (too few decays to tell): DTLN avoided, worst on reverberant input; GTCRN could not be used: ${gtcrnFailed}; RNNoise (built in)`,
    });
  });

  it('DTLN alone (GTCRN never installed): DTLN on dry input, RNNoise on reverberant or unknown input, the reason giving the T60', () => {
    // Found from outside: the thread measured the T60 only with both models installed, so DTLN alone never ran.
    const onlyDtln = { dtln: true, gtcrn: false };
    expect(decideDenoiser('auto', onlyDtln, 0.2)).toEqual({ kind: 'dtln', why: 'auto: estimated T60 0.20 s <= 0.22 s (dry): DTLN, best on additive noise' });
    expect(decideDenoiser('auto', onlyDtln, DTLN_MAX_T60).kind).toBe('dtln');
    expect(decideDenoiser('auto', onlyDtln, 0.26)).toEqual({
      kind: 'rnnoise',
      why: 'auto: estimated T60 0.26 s > 0.22 s (reverberant): DTLN avoided, worst on reverberant input; GTCRN not installed; RNNoise (built in)',
    });
    expect(decideDenoiser('auto', onlyDtln, null).why).toBe('auto: estimated T60 unknown (too few decays to tell): DTLN avoided, worst on reverberant input; GTCRN not installed; RNNoise (built in)');
    // Dereverberation asked says the input is reverberant whatever the estimate, as with GTCRN installed.
    expect(decideDenoiser('auto', onlyDtln, 0.1, true)).toEqual({
      kind: 'rnnoise',
      why: 'auto: dereverberation requested (reverberant input): DTLN avoided, worst on reverberant input; GTCRN not installed; RNNoise (built in)',
    });
  });
});

describe('decideDenoiser (forced)', () => {
  it('a forced model that could not be had falls to GTCRN, then RNNoise, saying why', () => {
    expect(decideDenoiser('dtln', none, 0.1)).toEqual({ kind: 'rnnoise', why: 'DTLN not installed; RNNoise (built in)' });
    expect(decideDenoiser('dtln', onlyGtcrn, 0.1, false, { dtln: dtlnFailed })).toEqual({ kind: 'gtcrn', why: `DTLN could not be used: ${dtlnFailed}; GTCRN` });
    expect(decideDenoiser('gtcrn', none, 0.1, false, { gtcrn: gtcrnFailed })).toEqual({ kind: 'rnnoise', why: `GTCRN could not be used: ${gtcrnFailed}; RNNoise (built in)` });
    expect(decideDenoiser('rnnoise', both, 0.1).kind).toBe('rnnoise');
    expect(decideDenoiser('spectral', both, 0.1).kind).toBe('spectral-gate');
  });
});
