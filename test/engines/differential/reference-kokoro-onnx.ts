/**
 * The Kokoro runtime side of the reference pipelines, ported independently for the differential tests (shared by
 * kokoro.test.ts and kokoro-ja.test.ts; no Soundry code here):
 *   - tokens: kokoro-onnx Tokenizer.tokenize (each symbol through the vocab, unknown ones dropped);
 *   - chunks: kokoro-onnx Kokoro._split_phonemes (re.split on [.,!?;], batches within 510, hard truncation);
 *   - model inputs: kokoro-js generate_from_ids (pads 0 at both ends, style row min(T, 509), speed [1]).
 */
import * as ort from 'onnxruntime-node';
import { TEST_KOKORO_VOCAB } from '../../fixtures/kokoro-fixture.js';

/** kokoro-onnx: phonemes filtered to the vocab, tokenize drops what it lacks. */
export const refFilter = (ps: string) => Array.from(ps).filter((p) => p in TEST_KOKORO_VOCAB).join('');
export const refTokenize = (ps: string) => Array.from(ps).map((p) => TEST_KOKORO_VOCAB[p]).filter((i): i is number => i !== undefined);

/** kokoro-onnx Kokoro._split_phonemes, then its truncation of an over-long batch. */
export function refSplit(phonemes: string, max = 510): string[] {
  const words = phonemes.split(/([.,!?;])/);
  const batches: string[] = [];
  let current = '';
  for (let part of words) {
    part = part.trim();
    if (!part) continue;
    if (current.length + part.length + 1 > max) {
      batches.push(current.trim());
      current = part;
    } else if ('.,!?;'.includes(part)) {
      current += part;
    } else {
      if (current) current += ' ';
      current += part;
    }
  }
  if (current) batches.push(current.trim());
  return batches.map((b) => (b.length > max ? b.slice(0, max) : b));
}

/** kokoro-js generate_from_ids on the stand-in graph, run by onnxruntime here. */
export async function refGenerate(session: ort.InferenceSession, ids: number[], table: Float32Array, speed: number): Promise<Float32Array> {
  const inputIds = [0, ...ids, 0];
  const numTokens = Math.min(Math.max(inputIds.length - 2, 0), 509);
  const style = table.slice(numTokens * 256, numTokens * 256 + 256);
  const out = await session.run({
    input_ids: new ort.Tensor('int64', BigInt64Array.from(inputIds.map(BigInt)), [1, inputIds.length]),
    style: new ort.Tensor('float32', style, [1, 256]),
    speed: new ort.Tensor('float32', Float32Array.of(speed), [1]),
  });
  return out.waveform!.data as Float32Array;
}

/** Phonemes -> the stand-in's audio as kokoro-onnx would run them: filtered, split, each batch generated, joined. */
export async function refSpeak(session: ort.InferenceSession, phonemes: string, table: Float32Array, speed: number): Promise<Float32Array> {
  const parts: Float32Array[] = [];
  for (const batch of refSplit(refFilter(phonemes))) parts.push(await refGenerate(session, refTokenize(batch), table, speed));
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
