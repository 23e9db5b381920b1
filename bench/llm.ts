/**
 * `npm run bench -- llm`: the cost of the embedded language model (node-llama-cpp) at the real size of the catalog's
 * default, Qwen2.5 1.5B Instruct Q4_K_M, against the built-in generator in the same run. No real weights can be
 * downloaded here, so a random-weight GGUF with the real tensor shapes is written (test/fixtures/gguf-writer.ts:
 * qwen2 architecture, 28 layers, hidden 1536, 12 heads / 2 KV heads, FFN 8960, vocabulary 151,936, tied embeddings,
 * Q4_K blocks with sane scales). Cost depends on shapes, not on the weights' values.
 *
 * BENCH_LLM_LAYERS=n writes fewer layers (the per-layer cost is then scaled to 28, said in the result);
 * BENCH_LLM_THREADS (default 2) sets llama.cpp's threads; BENCH_LLM_GPU=1 measures the GPU build as well.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token } from 'node-llama-cpp';
import { LlamaScriptGenerator, scriptBounds } from '../src/engines/podcast/llama-generator.js';
import { BuiltinScriptGenerator } from '../src/engines/podcast/builtin-generator.js';
import type { ScriptRequest } from '../src/engines/podcast/script.js';
import { writeGguf, type GgufModelSpec } from '../test/fixtures/gguf-writer.js';
import { machine, writeResult } from './lib.js';

const FULL_LAYERS = 28;
const PROMPT_TOKENS = 2048;
const GEN_TOKENS = 128;
/** Qwen's tokenizer gives about 1.3 tokens per English word; the random model's vocabulary is made of other pieces. */
const TOKENS_PER_WORD = 1.3;
const SOURCE_WORDS = 3000;

const SENTENCES = [
  'Honey bees pollinate a third of the crops people eat, from almonds to apples.',
  'A strong colony holds fifty thousand workers in summer and shrinks to ten thousand in winter.',
  'Beekeepers move hives to orchards in spring, when growers pay for pollination by the hive.',
  'Varroa mites, pesticides and poor forage have raised winter losses above thirty percent in some years.',
  'Researchers breed hygienic bees that find and remove infested brood before the mites multiply.',
];

/** A source of `words` English words (the built-in generator's input), sentences repeated in varied order. */
function englishSource(words: number): string {
  const out: string[] = [];
  let n = 0;
  for (let i = 0; n < words; i++) {
    const s = SENTENCES[(i * 3 + Math.floor(i / 5)) % SENTENCES.length]!;
    out.push(s);
    n += s.split(' ').length;
    if (i % 6 === 5) out.push('\n\n');
  }
  return out.join(' ');
}

function request(text: string): ScriptRequest {
  return {
    source: { title: 'Honey bees and the crops they pollinate', text, language: 'en', kind: 'text' },
    sourceData: text.slice(0, 300),
    language: 'en',
    style: 1,
    duration: 2,
    speakers: [
      { role: 'A', name: 'Maya', avatar: '', voiceId: '1', gender: 'female' },
      { role: 'B', name: 'Leo', avatar: '', voiceId: '2', gender: 'male' },
    ],
  };
}

interface Speeds {
  backend: string;
  loadS: number;
  ppTokS: number;
  genTokS: number;
}

/** Prompt processing (one batch of PROMPT_TOKENS) and generation (GEN_TOKENS, one at a time), each on a fresh context. */
async function speeds(llama: Llama, model: LlamaModel, threads: number, loadS: number): Promise<Speeds> {
  const tokens = Array.from({ length: PROMPT_TOKENS }, (_, i) => (300 + ((i * 7919) % 150_000)) as Token);
  const ctx = await model.createContext({ contextSize: PROMPT_TOKENS + GEN_TOKENS + 16, threads, batchSize: 512 });
  try {
    const seq = ctx.getSequence();
    // Warm-up: the first evaluation pages the weights in and builds the graph.
    await seq.evaluateWithoutGeneratingNewTokens(tokens.slice(0, 32));
    seq.eraseContextTokenRanges([{ start: 0, end: seq.nextTokenIndex }]);
    let t = performance.now();
    await seq.evaluateWithoutGeneratingNewTokens(tokens);
    const ppTokS = PROMPT_TOKENS / ((performance.now() - t) / 1000);
    let n = 0;
    t = performance.now();
    for await (const _ of seq.evaluate(tokens.slice(-1), { temperature: 0.8 })) if (++n >= GEN_TOKENS) break;
    const genTokS = n / ((performance.now() - t) / 1000);
    return { backend: llama.gpu === false ? `cpu, ${threads} thread${threads > 1 ? 's' : ''}` : `${llama.gpu} GPU`, loadS, ppTokS, genTokS };
  } finally {
    await ctx.dispose();
  }
}

export async function benchLlm(): Promise<string> {
  const layers = Number(process.env.BENCH_LLM_LAYERS ?? FULL_LAYERS);
  const threads = Number(process.env.BENCH_LLM_THREADS ?? 2);
  const dir = await mkdtemp(join(tmpdir(), 'soundry-bench-llm-'));
  const spec: GgufModelSpec = {
    architecture: 'qwen2', layers, hidden: 1536, heads: 12, kvHeads: 2, ffn: 8960, vocabSize: 151_936, contextLength: 32_768, weightType: 'q4_k', tiedEmbeddings: true, seed: 1, name: 'random qwen2.5-1.5b shapes',
  };
  const path = join(dir, 'random-qwen2.5-1.5b-q4_k.gguf');
  try {
    let t = performance.now();
    const bytes = writeGguf(path, spec);
    const writeS = (performance.now() - t) / 1000;

    const rows: Speeds[] = [];
    t = performance.now();
    const cpu = await getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: LlamaLogLevel.error, logger: () => {} });
    const cpuModel = await cpu.loadModel({ modelPath: path });
    rows.push(await speeds(cpu, cpuModel, threads, (performance.now() - t) / 1000));
    // Printed as measured: a whole script can outlast a session on a busy host, and these figures must not be lost with it.
    console.log('llm bench', JSON.stringify(rows.at(-1)));
    await cpuModel.dispose();
    await cpu.dispose();
    if (process.env.BENCH_LLM_GPU === '1') {
      t = performance.now();
      const gpu = await getLlama({ gpu: 'auto', build: 'never', logLevel: LlamaLogLevel.error, logger: () => {} });
      const gpuModel = await gpu.loadModel({ modelPath: path });
      rows.push(await speeds(gpu, gpuModel, threads, (performance.now() - t) / 1000));
      await gpuModel.dispose();
      await gpu.dispose();
    }

    // A whole script through the engine's own path (prompt, grammar, context, closing), on CPU. The random model
    // never stops on its own, so its reply is capped at what a real model writes for this episode: about 320 words
    // of dialogue plus title, introduction, outline and highlights, ~900 tokens.
    const replyTokens = 900;
    const sourceTokens = Math.round(SOURCE_WORDS * TOKENS_PER_WORD);
    // One vocabulary piece is one token of the random model: the source is as many tokens as Qwen's tokenizer gives 3,000 words.
    const llmSource = Array.from({ length: sourceTokens }, (_, i) => `w${(i * 7919) % 150_000}`).join(' ');
    const generator = await LlamaScriptGenerator.load({ modelPath: path, model: 'random-1.5b', threads, gpu: false, maxTokens: replyTokens });
    t = performance.now();
    const script = await generator.generate(request(llmSource), AbortSignal.timeout(1_800_000));
    const scriptS = (performance.now() - t) / 1000;
    await generator.dispose();

    const english = englishSource(SOURCE_WORDS);
    t = performance.now();
    const builtin = await new BuiltinScriptGenerator().generate(request(english), AbortSignal.timeout(600_000));
    const builtinS = (performance.now() - t) / 1000;
    const rssMiB = process.resourceUsage().maxRSS / 1024;

    const scale = FULL_LAYERS / layers;
    const scaled = (tokS: number) => (layers === FULL_LAYERS ? tokS : tokS / scale);
    const fmt = (x: number, d = 1) => x.toFixed(d);
    const md = [
      '# Podcast scripts: embedded LLM (node-llama-cpp) vs built-in generator',
      '',
      `Machine: ${machine()}. Command: \`${process.env.BENCH_LLM_GPU === '1' ? 'BENCH_LLM_GPU=1 ' : ''}${layers === FULL_LAYERS ? '' : `BENCH_LLM_LAYERS=${layers} `}npm run bench -- llm\`.`,
      '',
      `Model: a random-weight GGUF with Qwen2.5 1.5B Instruct's shapes (${layers} of ${FULL_LAYERS} layers, hidden 1536, 12/2 heads, FFN 8960, vocabulary 151,936, tied embeddings), every matrix Q4_K: ${fmt(bytes / 2 ** 20, 0)} MiB, written in ${fmt(writeS)} s. The catalog's real file is 1,066 MiB (Q4_K_M mixes Q4_K and Q6_K blocks, a little more work per token than all-Q4_K).`,
      layers === FULL_LAYERS ? '' : `Fewer layers than the real model: token rates below are the measured ones times ${layers}/${FULL_LAYERS}, as if every part of the work grew with the layers; the output head does not, so the real model is somewhat faster than these figures.`,
      '',
      '| backend | load s | prompt tokens/s | generated tokens/s |',
      '| --- | ---: | ---: | ---: |',
      ...rows.map((r) => `| ${r.backend} | ${fmt(r.loadS)} | ${fmt(scaled(r.ppTokS))} | ${fmt(scaled(r.genTokS), 2)} |`),
      '',
      `Prompt: one batch of ${PROMPT_TOKENS} tokens; generation: ${GEN_TOKENS} tokens one by one, no grammar; each on a fresh context after a warm-up.`,
      '',
      '## One script, 3,000-word source, duration level 2 (1-3 min), CPU',
      '',
      '| generator | seconds | lines |',
      '| --- | ---: | ---: |',
      `| llama (random ${layers}-layer model, ${threads} thread${threads > 1 ? 's' : ''}): ${sourceTokens}-token prompt, reply capped at ${replyTokens} tokens | ${fmt(scriptS)} | ${script.podcast_script.length} |`,
      `| builtin (the same request, ${SOURCE_WORDS} English words) | ${fmt(builtinS, 2)} | ${builtin.podcast_script.length} |`,
      '',
      `The random model's prompt is ${sourceTokens} vocabulary pieces, the token count Qwen's tokenizer gives ${SOURCE_WORDS} English words at ~${TOKENS_PER_WORD} tokens a word; its reply is capped at ${replyTokens} tokens, about what a real model writes for this level (${scriptBounds({ duration: 2, language: 'en' }).maxTokens} is the engine's own limit for a rambling one). The grammar checks every token against the JSON schema; that time is included.`,
      `Peak RSS of the bench process (every model above loaded once, one at a time): ${fmt(rssMiB, 0)} MiB.`,
      '',
    ].filter((l, i, a) => l !== '' || a[i - 1] !== '').join('\n');
    return await writeResult('podcast-llm', md);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
