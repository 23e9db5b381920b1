import { describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { buildRealDemucs, buildRealMdx, demucsParams, mdxParams } from '../../fixtures/standin-real.js';
import { SEPARATION_MODELS } from '../../../src/models/catalog-separation.js';

/**
 * The real-size stand-ins (bench/standin-real.ts) are only as good as their layout: the full-size parameter count
 * is checked against the real files' sizes, and reduced-width graphs of the same builders are run to check that
 * onnxruntime accepts every op and that the shapes come out as the engines expect.
 */
const size = (name: string) => SEPARATION_MODELS.find((m) => m.name === name)!.files[0]!.sizeBytes;

function noise(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    out[i] = s / 2147483648 - 0.5;
  }
  return out;
}

describe('real-size stand-in layouts', () => {
  it('MDX-Net TFC-TDF U-Net has the parameters of the UVR files (fp32, within the graph overhead)', () => {
    // The files hold 4 bytes per parameter plus ~34 kB of graph; a wrong layer count or width misses by megabytes.
    for (const [name, dimF] of [['Kim_Vocal_2', 3072], ['UVR-MDX-NET-Voc_FT', 3072], ['UVR-MDX-NET-Inst_HQ_3', 3072], ['UVR_MDXNET_KARA_2', 2048]] as const) {
      const bytes = 4 * mdxParams({ dimF, dimT: 256 });
      const overhead = size(name) - bytes;
      expect(overhead, name).toBeGreaterThan(0);
      expect(overhead, name).toBeLessThan(50_000);
    }
  });

  it('HTDemucs layout holds about 39 M parameters (+ 2 M of positional tables: ~42 M values in an export)', () => {
    const p = demucsParams({ segment: 343980, bins: 2048, frames: 336, sources: 4 });
    expect(p).toBeGreaterThan(38e6);
    expect(p + (2688 + 1344) * 512).toBeLessThan(42.5e6);
    // the 6-source variant differs only in its last decoder layers: 2 more sources x (4 spectral + 2 time channels)
    expect(demucsParams({ segment: 343980, bins: 2048, frames: 336, sources: 6 }) - p).toBe((48 * 8 * 8 + 8) + (48 * 4 * 8 + 4));
  });

  it('a reduced MDX-Net runs in onnxruntime with the model signature', async () => {
    const dimF = 256;
    const dimT = 32;
    const session = await ort.InferenceSession.create(buildRealMdx({ dimF, dimT, g: 8 }));
    const out = await session.run({ input: new ort.Tensor('float32', noise(4 * dimF * dimT, 7), [1, 4, dimF, dimT]) });
    const y = out.output!;
    expect(y.dims).toEqual([1, 4, dimF, dimT]);
    const data = y.data as Float32Array;
    expect(data.every(Number.isFinite)).toBe(true);
    expect(data.some((v) => v !== 0)).toBe(true);
  });

  it('a reduced HTDemucs (self and cross layers) runs in onnxruntime with the sevagh/demucs.onnx signature', async () => {
    const shape = { segment: 16384, bins: 1024, frames: 32, sources: 4, channels: 8, tDim: 32, heads: 4, tLayers: 2 };
    const session = await ort.InferenceSession.create(buildRealDemucs(shape));
    const out = await session.run({
      input: new ort.Tensor('float32', noise(2 * shape.segment, 3), [1, 2, shape.segment]),
      x: new ort.Tensor('float32', noise(4 * shape.bins * shape.frames, 5), [1, 4, shape.bins, shape.frames]),
    });
    expect(out.output!.dims).toEqual([1, 4, 4, shape.bins, shape.frames]);
    expect(out.add_67!.dims).toEqual([1, 4, 2, shape.segment]);
    for (const t of [out.output!, out.add_67!]) expect((t.data as Float32Array).every(Number.isFinite)).toBe(true);
  });
});
