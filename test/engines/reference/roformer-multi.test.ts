/**
 * A multi-instrument BS-RoFormer shaped like the MVSep Mega 53-stem model against python-audio-separator itself
 * (harness/cases/roformer_multi.py): five heads and no target instrument, mask-estimator mlp_expansion_factor 2,
 * weights saved as float16 (.ckpt and safetensors), and a chunk off the STFT hop grid (5292 samples, hop 512, so each
 * chunk's network output is shorter than the chunk, as Mega's 882000 vs 512 would be).
 * Every head must match the reference's stem; a subset of heads, asked for as the engine asks (`heads: [{ name,
 * index }]`), must give those heads' stems under the given names, equal to the same heads of the full run.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Stereo } from '../../../src/engines/separation/onnx/roformer-chunks.js';
import { parseRoformerConfig, readRoformerConfig } from '../../../src/engines/separation/onnx/roformer-config.js';
import { REL_TOLERANCE } from './golden.js';
import { compareCase } from './roformer.js';

const DIR = join(import.meta.dirname, '..', '..', 'fixtures', 'golden', 'roformer_multi');
const SOURCES = ['bass', 'drums', 'guitar', 'piano', 'strings'];

describe('multi-instrument BS-RoFormer (MVSep Mega shape) against python-audio-separator', () => {
  it('reads the chunk as audio-separator does: stft_hop_length else audio.hop_length, times inference.dim_t - 1', async () => {
    const cfg = await readRoformerConfig(join(DIR, 'config.yaml'));
    // No model.stft_hop_length: the network's STFT hop is BSRoformer's default, the chunk comes from audio.hop_length;
    // audio.chunk_size and inference.chunk_size (Mega's keys) are not what the reference reads.
    expect({ hop: cfg.hop, chunk: cfg.chunk, outputs: cfg.outputs, residual: cfg.residual }).toEqual({ hop: 512, chunk: 441 * 12, outputs: SOURCES, residual: undefined });
    expect(cfg.chunk % cfg.hop).not.toBe(0);
    const c = JSON.parse(await readFile(join(DIR, 'case.json'), 'utf8')) as { weights_dtype: string; tail_zero_samples: number };
    expect(c.weights_dtype).toBe('float16');
    // The reference leaves the last chunk % hop samples uncovered (zeros); the comparison below includes them.
    expect(c.tail_zero_samples).toBe(5292 % 512);
  });

  it("takes a Mega-style yaml's inference.chunk_size (882000, off the hop grid) where there is no inference.dim_t", async () => {
    const c = JSON.parse(await readFile(join(DIR, 'case.json'), 'utf8')) as { without_dim_t: { long_input: string } };
    // What audio-separator itself does with such a yaml: demix fails on the missing key (recorded by the harness).
    expect(c.without_dim_t.long_input).toMatch(/dim_t/);
    const yaml = (inference: string) =>
      `audio:\n  chunk_size: 441000\n  dim_t: 256\n  hop_length: 512\nmodel:\n  dim: 8\n  depth: 1\n  stereo: true\n  num_stems: 3\n  freqs_per_bands: !!python/tuple\n  - 2\n  - 1023\n  stft_n_fft: 2048\n  stft_hop_length: 512\n  stft_win_length: 2048\n  mlp_expansion_factor: 2\ntraining:\n  instruments: [a, b, c]\n  target_instrument: null\ninference:\n${inference}`;
    const mega = parseRoformerConfig(yaml('  batch_size: 1\n  num_overlap: 2\n  chunk_size: 882000\n'), 'mega.yaml');
    expect({ chunk: mega.chunk, hop: mega.hop, overlap: mega.overlap, outputs: mega.outputs }).toEqual({ chunk: 882000, hop: 512, overlap: 2, outputs: ['a', 'b', 'c'] });
    expect(parseRoformerConfig(yaml('  num_overlap: 2\n'), 'm.yaml').chunk).toBe(441000);
    expect(parseRoformerConfig(yaml('  num_overlap: 2\n  chunk_size: 882000\n  dim_t: 801\n'), 'm.yaml').chunk).toBe(512 * 800);
  });

  for (const format of ['ckpt', 'safetensors'] as const) {
    it(`every head from the fp16 ${format} file matches the reference within rel ${REL_TOLERANCE}`, async () => {
      const results = await compareCase(DIR, { format, piece: 1500 });
      for (const r of results) expect(r.rel, `${r.name}: max abs ${r.maxAbs}`).toBeLessThanOrEqual(REL_TOLERANCE);
      // One network pass and one demixed stem per head.
      expect(results.map((r) => r.name).sort()).toEqual([...SOURCES, ...SOURCES.map((s) => `net ${s} (one chunk)`)].sort());
    });
  }

  it('runs only the heads asked for, named by the caller, equal to those heads of the full run', async () => {
    let full: Record<string, Stereo> = {};
    await compareCase(DIR, { piece: 1500, stems: (s) => (full = s) });
    const heads = [{ name: 'keys', index: 3 }, { name: 'bass_guitar', index: 0 }];
    let subset: Record<string, Stereo> = {};
    const results = await compareCase(DIR, { piece: 1500, heads, stems: (s) => (subset = s) });
    for (const r of results) expect(r.rel, `${r.name}: max abs ${r.maxAbs}`).toBeLessThanOrEqual(REL_TOLERANCE);
    expect(results.map((r) => r.name)).toEqual(['net keys (one chunk)', 'net bass_guitar (one chunk)', 'keys (head piano)', 'bass_guitar (head bass)']);
    expect(Object.keys(subset).sort()).toEqual(['bass_guitar', 'keys']);
    for (const { name, index } of heads) {
      const ref = full[SOURCES[index]!]!;
      for (let ch = 0; ch < 2; ch++) {
        const a = subset[name]![ch]!;
        const b = ref[ch]!;
        expect(a.length).toBe(b.length);
        let peak = 0;
        let diff = 0;
        for (let i = 0; i < a.length; i++) {
          peak = Math.max(peak, Math.abs(b[i]!));
          diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
        }
        expect(peak).toBeGreaterThan(0);
        expect(diff / peak, `${name} channel ${ch}`).toBeLessThanOrEqual(1e-6);
      }
    }
  });
});
