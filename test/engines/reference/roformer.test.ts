/**
 * BS-RoFormer and Mel-Band RoFormer against python-audio-separator itself: the committed small goldens
 * (harness/cases/roformer_bs.py, roformer_mel.py) hold seeded random weights as a torch.save state dict and as
 * safetensors, the YAML, a mixture of several chunks, and what RoformerLoader + MDXCSeparator.demix made of them.
 * The full-size configurations (viperx ep_317, Kim's Mel-Band) run by `bash harness/check.sh roformer_bs roformer_mel`.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { REL_TOLERANCE } from './golden.js';
import { compareCase } from './roformer.js';
import { chunkStarts, MdxcChunker, type Stereo } from '../../../src/engines/separation/onnx/roformer-chunks.js';
import { parseRoformerConfig } from '../../../src/engines/separation/onnx/roformer-config.js';

const GOLDEN = join(import.meta.dirname, '..', '..', 'fixtures', 'golden');

describe('RoFormer stage against python-audio-separator (small goldens)', () => {
  for (const name of ['roformer_bs', 'roformer_mel']) {
    for (const format of ['ckpt', 'safetensors'] as const) {
      it(`${name} from its ${format} file matches the reference within rel ${REL_TOLERANCE}`, async () => {
        const results = await compareCase(join(GOLDEN, name), { format, piece: 1500 });
        for (const r of results) expect(r.rel, `${r.name}: max abs ${r.maxAbs}`).toBeLessThanOrEqual(REL_TOLERANCE);
        // Every stem, the single network pass, and (Mel) the band layouts were compared.
        expect(results.length).toBeGreaterThanOrEqual(name === 'roformer_mel' ? 8 : 3);
      });
    }
  }
});

describe('RoFormer chunking and configuration', () => {
  it('starts chunks on the step grid and ends with one aligned to the input end, as MDXCSeparator does', () => {
    expect(chunkStarts(5530, 2048, 1024)).toEqual([0, 1024, 2048, 3072, 3482]);
    expect(chunkStarts(1000, 2048, 1024)).toEqual([0]);
    expect(chunkStarts(2048, 2048, 1024)).toEqual([0]);
    expect(chunkStarts(2049, 2048, 1024)).toEqual([0, 1]);
  });

  it('streams: emits while input arrives, holds about two chunks, and an identity network gives the input back', async () => {
    const chunk = 1000;
    const n = 25_321;
    const x: Stereo = [Float32Array.from({ length: n }, (_, i) => Math.sin(i / 7)), Float32Array.from({ length: n }, (_, i) => Math.cos(i / 5))];
    const starts: number[] = [];
    let fed = 0;
    const chunker = new MdxcChunker(chunk, 333, ['s'], async (part) => {
      starts.push(fed);
      return { s: part };
    });
    const out: Stereo[] = [];
    let emittedBeforeEnd = 0;
    for (let i = 0; i < n; i += 700) {
      fed = i;
      const blocks = await chunker.push([x[0].subarray(i, i + 700), x[1].subarray(i, i + 700)]);
      for (const b of blocks) {
        out.push(b.stems.s!);
        emittedBeforeEnd += b.stems.s![0].length;
        expect(b.mix[0].length).toBe(b.stems.s![0].length);
      }
      // Never more than a chunk plus a step plus one push behind the input.
      expect(Math.min(n, i + 700) - emittedBeforeEnd).toBeLessThanOrEqual(chunk + 333 + 700);
    }
    for (const b of await chunker.end()) out.push(b.stems.s!);
    expect(starts.length).toBe(chunkStarts(n, chunk, 333).length);
    const y = [0, 1].map((c) => Float32Array.from(out.flatMap((b) => Array.from(b[c]!))));
    expect(y[0]!.length).toBe(n);
    for (let c = 0; c < 2; c++) for (let i = 0; i < n; i += 97) expect(y[c]![i]).toBeCloseTo(x[c]![i]!, 5);
  });

  it('refuses configurations it would run wrong, naming the file', () => {
    const base = 'model:\n  dim: 8\n  depth: 1\n  stereo: true\n  freqs_per_bands: !!python/tuple\n  - 2\n  - 127\n  stft_n_fft: 256\n  stft_win_length: 256\ntraining:\n  instruments: [vocals, other]\n  target_instrument: vocals\ninference:\n  dim_t: 9\n  num_overlap: 2\n';
    expect(parseRoformerConfig(base, 'a.yaml').freqsPerBands).toEqual([2, 127]);
    expect(() => parseRoformerConfig(base.replace('- 127', '- 126'), 'a.yaml')).toThrow(/a\.yaml: freqs_per_bands sum to 128/);
    expect(() => parseRoformerConfig(base.replace('stereo: true', 'stereo: true\n  linear_transformer_depth: 1'), 'a.yaml')).toThrow(/linear attention/);
    expect(() => parseRoformerConfig('model: [', 'b.yaml')).toThrow(/b\.yaml is not valid YAML/);
    expect(() => parseRoformerConfig('model:\n  dim: 8\n', 'c.yaml')).toThrow(/c\.yaml is not a RoFormer configuration/);
  });
});
