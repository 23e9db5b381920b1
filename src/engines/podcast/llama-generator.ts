/**
 * Script generator over an embedded llama.cpp (node-llama-cpp) running a local instruct GGUF: no endpoint, no
 * account. It shares prompts, validation and host filling with the OpenAI-compatible generator (script-prompt.ts).
 *
 * The reply is constrained by a JSON-schema grammar, so it is always a valid JSON prefix with the hosts' role
 * letters; every string and array in that schema is bounded and the reply has a token limit derived from the
 * episode's length, so a model that rambles still stops. A reply stopped at the limit is closed after its last
 * complete value (closeJsonPrefix) rather than thrown away. Runs in an engine thread (src/kinds/podcast-script/
 * llm-thread.ts), never on the API's event loop: llama.cpp's threads do the math, the grammar runs on this thread.
 */
import { getLlama, LlamaChatSession, LlamaLogLevel, type Llama, type LlamaGrammar, type LlamaModel } from 'node-llama-cpp';
import { TaskFailure } from '../../domain/errors.js';
import { isCharCounted, targetSize, type PodcastScript, type ScriptGenerator, type ScriptRequest } from './script.js';
import { closedScript, closeJsonPrefix, finishScript, joinSummaries, languageProblem, scriptMessages, sourceChunks, summaryMessages, type ModelScript } from './script-prompt.js';

export interface LlamaGeneratorOptions {
  modelPath: string;
  /** The catalog name, for the engine id (`llama:<name>`). */
  model: string;
  /** llama.cpp threads for one generation (LLM_THREADS). */
  threads: number;
  /** Largest context (prompt plus reply) one call may take, in tokens; the model's own limit applies too. Default 16,384. */
  maxContext?: number;
  /** Cap on the reply's tokens whatever the episode length (LLM_MAX_TOKENS). */
  maxTokens?: number;
  /** 'auto': CUDA or Vulkan where node-llama-cpp finds one, else CPU. */
  gpu?: 'auto' | false;
  /** Generations per script when a reply is unusable. Default 2. */
  attempts?: number;
  temperature?: number;
  seed?: number;
}

/** Bounds of the grammar: a real episode fits well inside them, a rambling model is stopped by them. */
export interface ScriptBounds {
  lines: number;
  lineChars: number;
  maxTokens: number;
}

const TITLE_CHARS = 120;
const INTRO_CHARS = 800;
const OUTLINE_CHARS = 1500;
const HIGHLIGHTS = 6;
const HIGHLIGHT_CHARS = 160;
/** Room for the reply to the map step's summary prompt (at most 250 words). */
const SUMMARY_TOKENS = 500;

/**
 * Bounds for one request: about twice the lines and three times the tokens the target length needs (tokens are
 * counted at 3 characters each for space-separated languages, 1 for zh/ja/ko), so only a runaway reaches them.
 */
export function scriptBounds(req: Pick<ScriptRequest, 'duration' | 'language'>, maxTokens?: number): ScriptBounds {
  const target = targetSize(req.duration, req.language);
  const cjk = isCharCounted(req.language);
  const words = cjk ? target / 3 : target;
  const scriptChars = cjk ? target * 1.3 : target * 6.5;
  const lines = Math.min(300, Math.max(8, Math.ceil(words / 10) + 6));
  const extraChars = TITLE_CHARS + INTRO_CHARS + OUTLINE_CHARS / 2 + HIGHLIGHTS * HIGHLIGHT_CHARS;
  const budget = Math.ceil(((scriptChars + extraChars) / (cjk ? 1 : 3)) * 3) + 256;
  return { lines, lineChars: 600, maxTokens: Math.min(budget, maxTokens ?? Infinity) };
}

/** The reply's JSON schema for the grammar: the shared shape, with the hosts' letters and every length bounded. */
export function boundedScriptSchema(roles: readonly string[], bounds: ScriptBounds) {
  const text = (maxLength: number, minLength = 0) => ({ type: 'string', minLength, maxLength }) as const;
  return {
    type: 'object',
    // The outline first: a model that plans before it talks writes a better dialogue, and a reply cut at the
    // token limit then loses highlights, not the introduction.
    properties: {
      title: text(TITLE_CHARS, 1),
      processed_content: text(INTRO_CHARS),
      train_data: text(OUTLINE_CHARS),
      podcast_script: {
        type: 'array', minItems: 2, maxItems: bounds.lines,
        items: { type: 'object', properties: { role: { enum: [...roles] }, text: text(bounds.lineChars, 1) } },
      },
      hightlights: {
        type: 'array', maxItems: HIGHLIGHTS,
        items: { type: 'object', properties: { highlight: text(HIGHLIGHT_CHARS, 1), index: { type: 'integer' }, script_start_index: { type: 'integer' }, script_end_index: { type: 'integer' } } },
      },
    },
  } as const;
}

/** A reply as a script: parsed (closed first if it was cut), incomplete trailing items dropped, validated. */
export function parseReply(reply: string, cut: boolean): ModelScript | string {
  const text = cut ? closeJsonPrefix(reply) : reply;
  if (!text) return 'the reply ended before any complete value';
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  if (raw && typeof raw === 'object' && cut) {
    // A line or highlight cut in the middle was closed with fields missing: it is dropped, the rest kept.
    const r = raw as Record<string, unknown>;
    const complete = (keys: string[]) => (item: unknown) => Boolean(item && typeof item === 'object' && keys.every((k) => k in item));
    if (Array.isArray(r.podcast_script)) r.podcast_script = r.podcast_script.filter(complete(['role', 'text']));
    if (Array.isArray(r.hightlights)) r.hightlights = r.hightlights.filter(complete(['highlight', 'index', 'script_start_index', 'script_end_index']));
    if (typeof r.processed_content !== 'string') r.processed_content = '';
  }
  const parsed = closedScript.safeParse(raw);
  return parsed.success ? parsed.data : parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
}

export class LlamaScriptGenerator implements ScriptGenerator {
  readonly id: string;

  private constructor(
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly opts: LlamaGeneratorOptions,
  ) {
    this.id = `llama:${opts.model}`;
  }

  /** Loads the model (memory-mapped: a second load of the same file shares the page cache). */
  static async load(opts: LlamaGeneratorOptions): Promise<LlamaScriptGenerator> {
    // build 'never': a host without the prebuilt binary fails here instead of trying to compile llama.cpp.
    const llama = await getLlama({ gpu: opts.gpu ?? 'auto', build: 'never', maxThreads: opts.threads, logLevel: LlamaLogLevel.error, logger: () => {} });
    try {
      const model = await llama.loadModel({ modelPath: opts.modelPath });
      return new LlamaScriptGenerator(llama, model, opts);
    } catch (err) {
      await llama.dispose();
      throw err;
    }
  }

  /** Where llama.cpp runs: 'cpu' or the GPU backend node-llama-cpp picked. */
  get backend(): string {
    return this.llama.gpu === false ? 'cpu' : this.llama.gpu;
  }

  async dispose(): Promise<void> {
    await this.model.dispose();
    await this.llama.dispose();
  }

  async generate(req: ScriptRequest, signal: AbortSignal, onProgress: (fraction: number) => void = () => {}): Promise<PodcastScript> {
    if (!req.speakers.length) throw new TaskFailure('No podcast voices are configured for this language');
    const maxContext = Math.min(this.opts.maxContext ?? 16_384, this.model.trainContextSize);
    // At most half the context for the reply (still 1.5x what a level-7 episode needs in a 16k context): the source
    // keeps the other half, summarised part by part when it is longer.
    const bounds = scriptBounds(req, Math.min(this.opts.maxTokens ?? Infinity, Math.floor(maxContext / 2)));
    const material = await this.material(req, maxContext - bounds.maxTokens, signal);
    const { system, user } = scriptMessages(req, material);
    const grammar = await this.llama.createGrammarForJsonSchema(boundedScriptSchema(req.speakers.map((s) => s.role), bounds));
    const attempts = this.opts.attempts ?? 2;
    let problem = '';
    for (let attempt = 0; attempt < attempts; attempt++) {
      signal.throwIfAborted();
      const prompt = problem ? `${user}\n\nA previous answer was not usable (${problem}). Write the JSON object again.` : user;
      const { text, cut } = await this.chat(system, prompt, { maxTokens: bounds.maxTokens, maxContext, grammar, seed: (this.opts.seed ?? 1) + attempt, signal, onProgress });
      const parsed = parseReply(text, cut);
      if (typeof parsed === 'string') {
        problem = parsed;
        continue;
      }
      const wrongLanguage = languageProblem(req, parsed);
      if (!wrongLanguage) return finishScript(parsed, req);
      problem = wrongLanguage;
    }
    throw new TaskFailure(`The local language model wrote no usable script in ${attempts} attempts (${problem})`);
  }

  /** The source, or when it does not fit the context beside the reply, its chunk summaries (the map step). */
  private async material(req: ScriptRequest, room: number, signal: AbortSignal): Promise<string> {
    const text = req.source.text;
    // The prompt's own words take a few hundred tokens beside the source.
    const available = room - 600;
    const tokens = this.model.tokenize(text).length;
    if (tokens <= available) return text;
    if (available < SUMMARY_TOKENS) throw new TaskFailure('The local language model has too small a context for this episode length');
    const charsPerToken = text.length / Math.max(1, tokens);
    const maxContext = Math.min(this.opts.maxContext ?? 16_384, this.model.trainContextSize);
    const chunkChars = Math.max(1000, Math.floor((maxContext - SUMMARY_TOKENS - 300) * charsPerToken * 0.9));
    const chunks = sourceChunks(text, chunkChars);
    // Summaries of 250 words are ~350 tokens each: only as many as fit beside the reply are kept.
    const keep = chunks.slice(0, Math.max(1, Math.floor(available / SUMMARY_TOKENS)));
    const summaries: string[] = [];
    for (const [i, chunk] of keep.entries()) {
      const [sys, usr] = summaryMessages(req.source.title, i, keep.length, chunk);
      const reply = await this.chat(sys!.content, usr!.content, { maxTokens: SUMMARY_TOKENS, maxContext, seed: this.opts.seed ?? 1, signal, onProgress: () => {} });
      summaries.push(reply.text);
    }
    // Summaries are capped in tokens as written; read back they can take more (another segmentation): cut to fit.
    const material = joinSummaries(summaries);
    const written = this.model.tokenize(material);
    return written.length <= available ? material : this.model.detokenize(written.slice(0, available));
  }

  /** One chat turn in a context sized for it (the prompt's tokens plus the reply's), freed afterwards. */
  private async chat(
    system: string,
    user: string,
    o: { maxTokens: number; maxContext: number; grammar?: LlamaGrammar; seed: number; signal: AbortSignal; onProgress(f: number): void },
  ): Promise<{ text: string; cut: boolean }> {
    const promptTokens = this.model.tokenize(`${system}\n${user}`).length + 64;
    const contextSize = Math.min(o.maxContext, promptTokens + o.maxTokens + 16);
    if (promptTokens >= contextSize) throw new TaskFailure('The source does not fit the local language model\'s context');
    const context = await this.model.createContext({ contextSize, threads: this.opts.threads, batchSize: Math.min(512, contextSize) });
    try {
      const session = new LlamaChatSession({ contextSequence: context.getSequence(), systemPrompt: system });
      let generated = 0;
      const maxTokens = Math.max(1, contextSize - promptTokens);
      const out = await session.promptWithMeta(user, {
        maxTokens,
        temperature: this.opts.temperature ?? 0.7,
        seed: o.seed,
        signal: o.signal,
        ...(o.grammar ? { grammar: o.grammar } : {}),
        onToken: (t) => {
          generated += t.length;
          o.onProgress(Math.min(1, generated / maxTokens));
        },
      });
      return { text: out.responseText, cut: out.stopReason === 'maxTokens' };
    } finally {
      await context.dispose();
    }
  }
}
