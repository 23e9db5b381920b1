/**
 * HTDemucs from the authors' own file formats against demucs' own apply_model (harness/cases/htdemucs.py and
 * htdemucs_6s.py), from the committed small goldens in test/fixtures/golden/htdemucs{,_6s}/: seeded random weights
 * at a small configuration of the real structure, saved as Meta's `.th` package and as the author's safetensors
 * copy, a stereo mixture over four segments (the last one short). No Python needed here; the full-size cases
 * (htdemucs and htdemucs_6s at their real configurations) run through `bash harness/check.sh`.
 */
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHtdemucsKwargs } from '../../../src/engines/separation/onnx/htdemucs-config.js';
import { loadHtdemucsCheckpoint } from '../../../src/engines/separation/onnx/htdemucs-loader.js';
import { channels, goldenTensor, readGolden, REL_TOLERANCE } from './golden.js';
import { compareCase, readHtdemucsCase } from './htdemucs.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'golden');
const CASES = ['htdemucs', 'htdemucs_6s'] as const;

describe.each(CASES)('%s vs demucs apply_model (small golden)', (name) => {
  let dir = '';
  beforeAll(async () => {
    // A copy of the committed case, so a loader that wrote into the checkpoint's folder would not touch the repository.
    dir = await mkdtemp(join(tmpdir(), `soundry-${name}-`));
    await cp(join(FIXTURES, name), dir, { recursive: true });
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the golden is a real test: several segments with a short last one, non-trivial stems', async () => {
    const c = await readHtdemucsCase(dir);
    const g = await readGolden(dir);
    const mix = channels(goldenTensor(g, 'input', dir));
    expect(mix[0]!.length).toBe(c.samples);
    const step = Math.trunc(0.75 * c.segment);
    expect(c.samples).toBeGreaterThan(3 * step);
    expect(c.samples % step).toBeLessThan(c.segment - step);
    for (const s of c.sources) {
      const stem = channels(goldenTensor(g, `output.${s}`, dir));
      const peak = Math.max(...stem.map((ch) => ch.reduce((m, v) => Math.max(m, Math.abs(v)), 0)));
      expect(peak, s).toBeGreaterThan(0.05);
    }
  });

  it.each([
    { weights: 'safetensors', label: "the author's safetensors copy" },
    { weights: 'th', label: "Meta's .th package" },
  ] as const)(`$weights ($label) matches every stem within rel ${REL_TOLERANCE}`, async ({ weights }) => {
    const errors = await compareCase(dir, { threads: 1, piece: 3001, weights });
    for (const e of errors) console.log(`${name} ${weights} ${e.name}: max abs ${e.maxAbs.toExponential(2)}, rel ${e.rel.toExponential(2)}`);
    const c = await readHtdemucsCase(dir);
    const shifted = c.shiftOffset === undefined ? [] : c.sources.map((s) => `shifts1.${s}`);
    expect(errors.map((e) => e.name)).toEqual(['net.freq', 'net.time', 'net.output', ...c.sources, ...shifted]);
    for (const e of errors) expect(e.rel, e.name).toBeLessThanOrEqual(REL_TOLERANCE);
  });

  it('builds the graph in memory: nothing is written beside the checkpoint, and each load gives the same graph', async () => {
    const c = await readHtdemucsCase(dir);
    const files = (await readdir(dir)).sort();
    const first = await loadHtdemucsCheckpoint(dir, c.weights.safetensors, { threads: 1 });
    await first.session.release();
    const again = await loadHtdemucsCheckpoint(dir, c.weights.safetensors, { threads: 1 });
    await again.session.release();
    expect((await readdir(dir)).sort()).toEqual(files);
    expect(again.graph.externalDataDir).toBe(dir);
    expect(Buffer.from(again.graph.bytes).equals(Buffer.from(first.graph.bytes))).toBe(true);
    expect(again.preset).toMatchObject({ family: 'htdemucs', layout: 'sevagh', file: c.weights.safetensors, sources: c.sources, segment: c.segment, nFft: c.nFft });
  });

  it('refuses a safetensors file that is not a demucs export, naming it', async () => {
    await expect(loadHtdemucsCheckpoint(dir, 'golden.safetensors', { threads: 1 })).rejects.toThrow(/golden\.safetensors: the safetensors metadata has no 'kwargs'/);
  });
});

describe('HTDemucs kwargs', () => {
  const real = {
    sources: ['drums', 'bass', 'other', 'vocals'], audio_channels: 2, samplerate: 44100,
    segment: { _type: 'fraction', numerator: 39, denominator: 5 }, channels: 48, nfft: 4096, depth: 4, dconv_mode: 3,
    bottom_channels: 512, t_layers: 5, multi_freqs: [],
  };

  it('reads the real configuration, the segment exactly (39/5 s at 44.1 kHz = 343980 samples, as a fraction or a float)', () => {
    expect(parseHtdemucsKwargs(real, 'x.th')).toMatchObject({ segmentSamples: 343980, nfft: 4096, bottomChannels: 512, dconvMode: 3, tHeads: 8 });
    expect(parseHtdemucsKwargs({ ...real, segment: 7.8 }, 'x.th').segmentSamples).toBe(343980);
  });

  it('refuses what the graph does not implement, naming the file and the option', () => {
    expect(() => parseHtdemucsKwargs({ ...real, cac: false }, 'm.th')).toThrow(/m\.th: .*cac=false/);
    expect(() => parseHtdemucsKwargs({ ...real, t_emb: 'cape' }, 'm.th')).toThrow(/t_emb='cape'/);
    expect(() => parseHtdemucsKwargs({ ...real, multi_freqs: [0.5] }, 'm.th')).toThrow(/multi_freqs/);
    expect(() => parseHtdemucsKwargs({ ...real, t_sparse_self_attn: true }, 'm.th')).toThrow(/sparse attention/);
    expect(() => parseHtdemucsKwargs({ ...real, depth: 5 }, 'm.th')).toThrow(/single frequency row/);
    expect(() => parseHtdemucsKwargs({ ...real, sources: 'vocals' }, 'm.th')).toThrow(/m\.th: HTDemucs kwargs are not valid/);
  });
});
