import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WhisperAsr } from '../../../src/engines/asr/whisper.js';
import { ASR_MODELS } from '../../../src/models/catalog-asr.js';
import { buildStandinWhisperDecoder, buildStandinWhisperEncoder, whisperParams, writeStandinWhisper, type WhisperShape } from '../../fixtures/standin-whisper.js';

/**
 * The real-size Whisper tiny stand-in (bench/asr-cost.ts) is only as good as its layout: the full-size graphs are
 * checked against the catalogued 8-bit files' sizes, and reduced-width graphs of the same builders run through the
 * engine (WhisperAsr) with the merged decoder's cache and use_cache_branch.
 */
const SMALL: WhisperShape = { dModel: 16, heads: 2, encoderLayers: 1, decoderLayers: 2, ffn: 32, vocab: 2000 };

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'soundry-standin-whisper-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('real-size Whisper tiny stand-in', () => {
  it('has whisper-tiny\'s parameters, and its 8-bit files are the catalogued files\' size (within 2%)', () => {
    const p = whisperParams();
    // conv 80->384 and 384->384 (k3), 1500 + 448 positions, 51865 x 384 tied embedding, 4 + 4 layers of d 384, FFN 1536
    expect(p).toEqual({ encoder: 8_208_384, decoder: 29_552_256 });
    const real = (suffix: string) => ASR_MODELS[0]!.files.find((f) => f.path.endsWith(suffix))!.sizeBytes;
    for (const [bytes, file] of [[buildStandinWhisperEncoder().length, 'encoder_model_quantized.onnx'], [buildStandinWhisperDecoder().length, 'decoder_model_merged_quantized.onnx']] as const) {
      expect(Math.abs(bytes - real(file))).toBeLessThan(0.02 * real(file));
    }
  });

  it('the merged decoder grows its self-attention cache and projects the encoder only when use_cache_branch is false', async () => {
    const s = { ...SMALL, quantized: false };
    const session = await ort.InferenceSession.create(buildStandinWhisperDecoder(s));
    const hidden = new ort.Tensor('float32', Float32Array.from({ length: 1500 * 16 }, (_, i) => Math.sin(i)), [1, 1500, 16]);
    const empty = () => new ort.Tensor('float32', new Float32Array(0), [1, 2, 0, 8]);
    const feeds: Record<string, ort.Tensor> = { input_ids: new ort.Tensor('int64', BigInt64Array.of(1n, 2n, 3n, 4n), [1, 4]), encoder_hidden_states: hidden, use_cache_branch: new ort.Tensor('bool', Uint8Array.of(0), [1]) };
    for (const l of [0, 1]) for (const part of ['decoder', 'encoder']) for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${part}.${kv}`] = empty();
    const first = await session.run(feeds);
    expect(first.logits!.dims).toEqual([1, 4, 2000]);
    expect(first['present.1.decoder.value']!.dims).toEqual([1, 2, 4, 8]);
    expect(first['present.1.encoder.key']!.dims).toEqual([1, 2, 1500, 8]);
    const next: Record<string, ort.Tensor> = { input_ids: new ort.Tensor('int64', BigInt64Array.of(5n), [1, 1]), encoder_hidden_states: hidden, use_cache_branch: new ort.Tensor('bool', Uint8Array.of(1), [1]) };
    for (const [name, t] of Object.entries(first)) if (name.startsWith('present.')) next[`past_key_values.${name.slice(8)}`] = t;
    // a cached step must pass the encoder keys through: zeros in, zeros out (a projection of the hidden states is not zero)
    next['past_key_values.0.encoder.key'] = new ort.Tensor('float32', new Float32Array(1500 * 16), [1, 2, 1500, 8]);
    const second = await session.run(next);
    expect(second.logits!.dims).toEqual([1, 1, 2000]);
    expect(second['present.0.decoder.key']!.dims).toEqual([1, 2, 5, 8]);
    expect((second['present.0.encoder.key']!.data as Float32Array).every((v) => v === 0)).toBe(true);
    expect((first['present.0.encoder.key']!.data as Float32Array).some((v) => v !== 0)).toBe(true);
  });

  for (const quantized of [true, false]) {
    it(`${quantized ? '8-bit' : 'fp32'}: the engine transcribes with it, a different token at each step up to the cap (no early end, no loop)`, async () => {
      const dir = join(root, quantized ? 'q' : 'f');
      await writeStandinWhisper(dir, { ...SMALL, quantized });
      const asr = await WhisperAsr.load(dir, { threads: 1 });
      try {
        async function* windows() {
          for (const f of [0.01, 0.013]) yield Float32Array.from({ length: 16000 * 30 }, (_, i) => 0.3 * Math.sin(i * f));
        }
        const t = await asr.transcribe(windows(), { maxTokensPerWindow: 40 });
        expect(t.tokens).toEqual([40, 40]);
        expect(t.language).not.toBeNull();
        // Random weights speak byte pieces, some without a leading space: how many words 80 of them make depends on
        // the CPU's arithmetic (20 on an AVX2-only EPYC, more elsewhere). A loop would repeat one or two pieces.
        expect(t.text.length).toBeGreaterThan(80);
        expect(new Set(t.text.split(' ')).size).toBeGreaterThan(5);
      } finally {
        await asr.release();
      }
    });
  }
});
