import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TINY_LLM, writeGguf, type GgufModelSpec } from '../../fixtures/gguf-writer.js';

/** The GGUF writer the tests and the bench use: llama.cpp reads what it writes, in every weight type the bench uses. */
describe('gguf-writer', () => {
  let dir: string;
  let llama: Llama;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-gguf-'));
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, logger: () => {} });
  });
  afterAll(async () => {
    await llama?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  const specs: Array<[string, GgufModelSpec]> = [
    ['llama, F32', TINY_LLM],
    ['qwen2 (attention biases, tied embeddings), Q8_0', { ...TINY_LLM, architecture: 'qwen2', weightType: 'q8_0', tiedEmbeddings: true }],
    ['qwen2, Q4_K', { ...TINY_LLM, architecture: 'qwen2', hidden: 256, ffn: 512, weightType: 'q4_k', tiedEmbeddings: true }],
  ];
  for (const [label, spec] of specs) {
    it(`${label}: loads with the written shapes and generates finite tokens`, async () => {
      const path = join(dir, `${label.replace(/\W+/g, '-')}.gguf`);
      const bytes = writeGguf(path, spec);
      expect((await stat(path)).size).toBe(bytes);
      const model = await llama.loadModel({ modelPath: path });
      try {
        const meta = model.fileInfo.metadata as unknown as Record<string, Record<string, unknown>>;
        expect(meta.general!.architecture).toBe(spec.architecture);
        expect(meta[spec.architecture]!.block_count).toBe(spec.layers);
        expect(model.tokenizer('{"a": 1}').length).toBeGreaterThan(0);
        const ctx = await model.createContext({ contextSize: 256, threads: 1 });
        const seq = ctx.getSequence();
        const out: Token[] = [];
        for await (const t of seq.evaluate(model.tokenize('hello'), { temperature: 0.8, seed: 1, yieldEogToken: true })) if (out.push(t) >= 8) break;
        // Sampling may draw an end-of-generation token before the eighth (it did once in a full run on a loaded
        // machine): generation then ends on it, which is a model working, not a broken file.
        if (out.length < 8) expect(model.isEogToken(out.at(-1))).toBe(true);
        else expect(out).toHaveLength(8);
        // Random weights with sane scales: the logits stay finite, so sampling never collapses onto one token.
        expect(out.every((t) => Number.isInteger(t) && t >= 0 && t < spec.vocabSize)).toBe(true);
        if (out.length >= 4) expect(new Set(out).size).toBeGreaterThan(1);
        await ctx.dispose();
      } finally {
        await model.dispose();
      }
    }, 60_000);
  }
});
