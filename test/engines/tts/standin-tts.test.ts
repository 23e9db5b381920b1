import { describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { buildStandinKokoro, buildStandinPiper, kokoroParams, piperParams } from '../../fixtures/standin-tts.js';
import { MODEL_CATALOG } from '../../../src/models/catalog.js';
import { KOKORO_MODELS } from '../../../src/models/catalog-kokoro.js';

/**
 * The real-size TTS stand-ins (bench/tts-cost.ts) are only as good as their layout: the full-size parameter count is
 * checked against the real files' sizes (4 bytes per fp32 parameter plus the graph), and reduced-width graphs of the
 * same builders run in onnxruntime with the engines' input/output signatures.
 */
const ids = (n: number, max: number) => new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt((i * 7) % max)), [1, n]);

describe('real-size TTS stand-in layouts', () => {
  it('Piper medium (VITS) holds the parameters of a 63,201,294-byte voice file (within 0.5%)', () => {
    const real = MODEL_CATALOG.flatMap((m) => m.files).find((f) => f.path.endsWith('-medium.onnx'))!.sizeBytes;
    const bytes = 4 * piperParams();
    expect(bytes).toBeLessThan(real);
    expect(real - bytes).toBeLessThan(0.005 * real);
    // the "high" HiFi-GAN (512 channels) would not fit: the medium decoder is what the file size allows
    expect(piperParams({ decoderChannels: 512 }) * 4).toBeGreaterThan(real);
  });

  it('Kokoro-82M holds the parameters of the fp32 model.onnx (within 0.5%)', () => {
    const real = KOKORO_MODELS.flatMap((m) => m.files).find((f) => f.path.endsWith('model.onnx'))!.sizeBytes;
    const bytes = 4 * kokoroParams();
    expect(bytes).toBeLessThan(real);
    expect(real - bytes).toBeLessThan(0.005 * real);
  });

  it('a reduced Piper runs with the engine signature and yields framesPerId x 256 samples per id', async () => {
    const session = await ort.InferenceSession.create(buildStandinPiper({ hidden: 16, filter: 32, layers: 2, decoderChannels: 32, framesPerId: 3 }));
    const n = 11;
    const out = await session.run({ input: ids(n, 200), input_lengths: new ort.Tensor('int64', BigInt64Array.of(BigInt(n)), [1]), scales: new ort.Tensor('float32', Float32Array.of(0.667, 1, 0.8), [3]) });
    expect(out.output!.dims).toEqual([1, 1, 1, n * 3 * 256]);
    const data = out.output!.data as Float32Array;
    expect(data.every(Number.isFinite)).toBe(true);
    expect(data.some((v) => v !== 0)).toBe(true);
    // a fractional expansion (the bench's speaking rate) gives floor(ids x framesPerId) frames
    const frac = await ort.InferenceSession.create(buildStandinPiper({ hidden: 16, filter: 32, layers: 1, decoderChannels: 32, framesPerId: 2.5 }));
    const o2 = await frac.run({ input: ids(n, 200), input_lengths: new ort.Tensor('int64', BigInt64Array.of(BigInt(n)), [1]), scales: new ort.Tensor('float32', Float32Array.of(0.667, 1, 0.8), [3]) });
    expect(o2.output!.dims).toEqual([1, 1, 1, Math.floor(n * 2.5) * 256]);
  });

  it('a reduced Kokoro runs with the engine signature and yields framesPerToken x 600 samples per token', async () => {
    const shape = { bert: 24, bertHeads: 2, bertFfn: 32, bertLayers: 2, hidden: 16, style: 8, genChannels: 16, framesPerToken: 2 };
    const session = await ort.InferenceSession.create(buildStandinKokoro(shape));
    const n = 9;
    const out = await session.run({ input_ids: ids(n, 178), style: new ort.Tensor('float32', new Float32Array(16).fill(0.1), [1, 16]), speed: new ort.Tensor('float32', Float32Array.of(1), [1]) });
    expect(out.waveform!.dims).toEqual([1, n * 2 * 600]);
    const data = out.waveform!.data as Float32Array;
    expect(data.every(Number.isFinite)).toBe(true);
    expect(data.some((v) => v !== 0)).toBe(true);
  });
});
