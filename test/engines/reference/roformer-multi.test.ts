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
import { readRoformerConfig } from '../../../src/engines/separation/onnx/roformer-config.js';
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
