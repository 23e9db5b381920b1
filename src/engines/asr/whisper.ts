/**
 * Whisper speech recognition through onnxruntime-node, on the Hugging Face / onnx-community export
 * layout: encoder_model.onnx (input_features [1,80,3000] -> last_hidden_state) and
 * decoder_model_merged.onnx (input_ids, encoder_hidden_states, past_key_values.N.{decoder,encoder}.
 * {key,value}, use_cache_branch -> logits, present.N.*), plus tokenizer.json and config.json.
 *
 * Greedy decoding per 30 s window with <|startoftranscript|><|lang|><|transcribe|><|notimestamps|>;
 * the language comes from the first step's language-token logits on the first window with sound,
 * as openai/whisper does when no language is given.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import * as ort from 'onnxruntime-node';
import { MODEL_CATALOG } from '../../models/catalog.js';
import { modelSource, verifiedModel, type ModelSource } from '../../models/verified.js';
import { LogMelExtractor, N_FRAMES, N_MELS, SAMPLE_RATE } from './features.js';
import { WhisperTokenizer } from './tokenizer.js';

/** Catalog names, best first: the larger model wins when both are installed. */
export const ASR_MODEL_NAMES = ['whisper-base', 'whisper-tiny'] as const;

/** Whisper's own cap per window (sample_len = n_text_ctx / 2). */
export const DEFAULT_MAX_TOKENS = 224;

export interface WhisperFiles {
  encoder: string;
  decoder: string;
  tokenizer: string;
  config: string;
  /** Optional: its suppress_tokens / begin_suppress_tokens are applied as openai/whisper does. */
  generation?: string;
}

/**
 * Full-precision names first, then the quantized ones; either at the top or under onnx/ as on the Hub. With
 * `allowed` (the catalog's file paths of a verified model) only those files are candidates, so an unverified
 * full-precision file beside a verified quantized one is never picked.
 */
export function whisperFiles(dir: string, allowed?: readonly string[]): WhisperFiles | null {
  const ok = (p: string) => existsSync(p) && (!allowed || allowed.includes(relative(dir, p).split(sep).join('/')));
  const pick = (names: string[]) => names.flatMap((n) => [join(dir, n), join(dir, 'onnx', n)]).find(ok);
  const encoder = pick(['encoder_model.onnx', 'encoder_model_quantized.onnx']);
  const decoder = pick(['decoder_model_merged.onnx', 'decoder_model_merged_quantized.onnx']);
  const tokenizer = join(dir, 'tokenizer.json');
  const config = join(dir, 'config.json');
  if (!encoder || !decoder || !ok(tokenizer) || !ok(config)) return null;
  const generation = join(dir, 'generation_config.json');
  return { encoder, decoder, tokenizer, config, ...(ok(generation) ? { generation } : {}) };
}

export type AsrModelLookup = { name: string; files: WhisperFiles } | { name: null; /** What is wrong with a model that is present but not verified. */ reason: string | null };

/**
 * The best verified ASR model: catalog entries of kind asr, ASR_MODEL_NAMES first (the larger wins), then a site
 * catalog's own. A folder that only exists (LFS pointers, a truncated copy, files the catalog has no checksum for)
 * is not installed.
 */
export async function findAsrModel(models: string | ModelSource): Promise<AsrModelLookup> {
  const src = modelSource(models);
  const names: readonly string[] = ASR_MODEL_NAMES;
  const rank = (n: string) => (names.includes(n) ? names.indexOf(n) : names.length);
  const entries = (src.catalog ?? MODEL_CATALOG).filter((e) => e.kind === 'asr').sort((a, b) => rank(a.name) - rank(b.name));
  const problems: string[] = [];
  for (const entry of entries) {
    const m = await verifiedModel(src, entry.name);
    if (!m.ok) {
      if (m.reason) problems.push(m.reason);
      continue;
    }
    const files = whisperFiles(m.dir, entry.files.map((f) => f.path));
    if (files) return { name: entry.name, files };
    problems.push(`${entry.name}: the catalog's files are not a Whisper encoder, merged decoder, tokenizer.json and config.json`);
  }
  return { name: null, reason: problems.length ? problems.join('; ') : null };
}

export interface TranscribeOptions {
  signal?: AbortSignal;
  /** Called after each window with the seconds of audio done so far. */
  onProgress?: (secondsDone: number) => void;
  maxTokensPerWindow?: number;
  /** A Whisper language code to force (skips detection). */
  language?: string;
}

export interface Transcript {
  text: string;
  /** Whisper language code ("en", "zh", "yue", ...), or null when every window was silent. */
  language: string | null;
  windows: number;
  seconds: number;
  /** Text tokens decoded per window (0 for a silent one): what decoding cost, next to the encoder's one run a window. */
  tokens: number[];
}

interface DecoderDims {
  layers: number;
  heads: number;
  headDim: number;
}

/** Tokens never emitted (symbols, speaker tags), and those never emitted first (a blank, <|endoftext|>). */
interface Suppression {
  always: Set<number>;
  atStart: Set<number>;
}

type Feeds = Record<string, ort.Tensor>;

export class WhisperAsr {
  private readonly features = new LogMelExtractor();
  private readonly useCache: boolean;

  private constructor(
    private readonly encoder: ort.InferenceSession,
    private readonly decoder: ort.InferenceSession,
    readonly tokenizer: WhisperTokenizer,
    private readonly dims: DecoderDims,
    private readonly suppress: Suppression,
  ) {
    // A merged export switches between its first-step and cached graphs on use_cache_branch; a plain
    // decoder_model.onnx has no cache inputs and is fed the whole sequence every step instead.
    this.useCache = decoder.inputNames.includes('use_cache_branch');
  }

  /** From verified files (findAsrModel), or from a folder (tests, tools: whatever whisperFiles finds there). */
  static async load(from: string | WhisperFiles, opts: { threads?: number; executionProviders?: readonly string[] } = {}): Promise<WhisperAsr> {
    const files = typeof from === 'string' ? whisperFiles(from) : from;
    if (!files) throw new Error(`no complete Whisper model in ${String(from)}`);
    const so: ort.InferenceSession.SessionOptions = {
      executionProviders: [...(opts.executionProviders ?? ['cpu'])],
      intraOpNumThreads: Math.max(1, opts.threads ?? 1),
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
    };
    const cfg = JSON.parse(await readFile(files.config, 'utf8')) as Record<string, unknown>;
    // The error names the file: the task's failure says which one would not load.
    const open = (path: string) => ort.InferenceSession.create(path, so).catch((err: unknown) => {
      throw new Error(`${path} could not be loaded (${so.executionProviders?.join(', ')}): ${(err as Error).message.split('\n')[0]}`);
    });
    const encoder = await open(files.encoder);
    const decoder = await open(files.decoder).catch(async (err: unknown) => {
      await encoder.release();
      throw err;
    });
    const layersFromNames = decoder.inputNames.filter((n) => /^past_key_values\.\d+\.decoder\.key$/.test(n)).length;
    const heads = Number(cfg.decoder_attention_heads);
    const dModel = Number(cfg.d_model);
    if (!(heads > 0) || !(dModel > 0)) throw new Error(`${files.config} lacks decoder_attention_heads / d_model`);
    const dims = { layers: layersFromNames || Number(cfg.decoder_layers), heads, headDim: dModel / heads };
    const gen = files.generation ? (JSON.parse(await readFile(files.generation, 'utf8')) as Record<string, unknown>) : {};
    const ids = (v: unknown) => new Set(Array.isArray(v) ? v.filter((x): x is number => Number.isInteger(x)) : []);
    const suppress = { always: ids(gen.suppress_tokens ?? cfg.suppress_tokens), atStart: ids(gen.begin_suppress_tokens ?? cfg.begin_suppress_tokens) };
    return new WhisperAsr(encoder, decoder, await WhisperTokenizer.load(files.tokenizer), dims, suppress);
  }

  async release(): Promise<void> {
    await this.encoder.release();
    await this.decoder.release();
  }

  /** Transcribes 16 kHz mono windows of at most 30 s each, one at a time (memory stays at one window). */
  async transcribe(windows: AsyncIterable<Float32Array>, opts: TranscribeOptions = {}): Promise<Transcript> {
    // A forced language the model has no token for (yue on pre-v3 models) falls back to detection.
    let language = opts.language && this.tokenizer.languages.has(opts.language) ? opts.language : null;
    const parts: string[] = [];
    const tokens: number[] = [];
    let seconds = 0;
    let count = 0;
    for await (const win of windows) {
      opts.signal?.throwIfAborted();
      count++;
      seconds += win.length / SAMPLE_RATE;
      // Whisper invents text on digital silence; a window under -80 dBFS RMS has nothing to say.
      if (rms(win) > 1e-4) {
        const hidden = await this.encode(win);
        language ??= await this.detectLanguage(hidden);
        const ids = await this.decodeWindow(hidden, language, opts);
        tokens.push(ids.length);
        const text = this.tokenizer.decode(ids).trim();
        if (text) parts.push(text);
      } else tokens.push(0);
      opts.onProgress?.(seconds);
    }
    return { text: parts.join(' ').replace(/\s+/g, ' ').trim(), language, windows: count, seconds, tokens };
  }

  private async encode(win: Float32Array): Promise<ort.Tensor> {
    const feats = this.features.extract(win);
    const out = await this.encoder.run({ input_features: new ort.Tensor('float32', feats, [1, N_MELS, N_FRAMES]) });
    const hidden = out.last_hidden_state ?? out[this.encoder.outputNames[0]!];
    if (!hidden) throw new Error('the Whisper encoder returned no last_hidden_state');
    return hidden;
  }

  /** One decoder step on [<|startoftranscript|>]: the most likely language token wins. */
  async detectLanguage(hidden: ort.Tensor): Promise<string> {
    const { logits } = await this.step([this.tokenizer.sot], hidden, null, null);
    let best: string | null = null;
    let bestScore = -Infinity;
    for (const [code, id] of this.tokenizer.languages) {
      const s = logits[id]!;
      if (s > bestScore) {
        bestScore = s;
        best = code;
      }
    }
    return best!;
  }

  /** Greedy decoding of one window; returns the text token ids (prompt and <|endoftext|> excluded). */
  async decodeWindow(hidden: ort.Tensor, language: string, opts: TranscribeOptions = {}): Promise<number[]> {
    const tk = this.tokenizer;
    const langId = tk.languages.get(language);
    if (langId === undefined) throw new Error(`the model has no language token for ${language}`);
    const prompt = [tk.sot, langId, tk.transcribe, tk.noTimestamps];
    const maxTokens = opts.maxTokensPerWindow ?? DEFAULT_MAX_TOKENS;
    const out: number[] = [];
    let r = await this.step(prompt, hidden, null, null);
    const encoderPast = r.present; // the cross-attention keys/values are computed once, on the first step
    for (let n = 0; n < maxTokens; n++) {
      opts.signal?.throwIfAborted();
      const next = this.pick(r.logits, n === 0);
      if (next === tk.eot) break;
      out.push(next);
      if (repeatsAtEnd(out)) return trimRepeat(out);
      r = this.useCache ? await this.step([next], hidden, r.present, encoderPast) : await this.step([...prompt, ...out], hidden, null, null);
    }
    return out;
  }

  /** Argmax over text tokens and <|endoftext|>: timestamps and other control tokens never win. */
  private pick(logits: Float32Array, first: boolean): number {
    const tk = this.tokenizer;
    const { always, atStart } = this.suppress;
    const blocked = (id: number) => always.has(id) || (first && atStart.has(id));
    let best = -1;
    let bestScore = -Infinity;
    if (!blocked(tk.eot)) {
      best = tk.eot;
      bestScore = logits[tk.eot] ?? -Infinity;
    }
    const limit = Math.min(tk.eot, logits.length);
    for (let id = 0; id < limit; id++) {
      const s = logits[id]!;
      if (s > bestScore && tk.isText(id) && !blocked(id)) {
        bestScore = s;
        best = id;
      }
    }
    return best < 0 ? tk.eot : best;
  }

  /**
   * Runs the decoder on `ids`. Without `past` this is the first step (use_cache_branch false, empty
   * caches); with it, only the new token is fed. Returns the last position's logits and the present.*
   * outputs keyed as the next step's past_key_values.* inputs.
   */
  private async step(ids: number[], hidden: ort.Tensor, past: Feeds | null, encoderPast: Feeds | null): Promise<{ logits: Float32Array; present: Feeds }> {
    const { layers, heads, headDim } = this.dims;
    const feeds: Feeds = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
      encoder_hidden_states: hidden,
    };
    if (this.useCache) {
      const empty = () => new ort.Tensor('float32', new Float32Array(0), [1, heads, 0, headDim]);
      for (let l = 0; l < layers; l++) {
        for (const part of ['decoder', 'encoder'] as const) {
          for (const kv of ['key', 'value'] as const) {
            const name = `past_key_values.${l}.${part}.${kv}`;
            feeds[name] = (part === 'decoder' ? past?.[name] : encoderPast?.[name]) ?? empty();
          }
        }
      }
      feeds.use_cache_branch = new ort.Tensor('bool', new Uint8Array([past ? 1 : 0]), [1]);
    }
    for (const name of Object.keys(feeds)) if (!this.decoder.inputNames.includes(name)) delete feeds[name];
    const out = await this.decoder.run(feeds);
    const logitsT = out.logits;
    if (!logitsT) throw new Error('the Whisper decoder returned no logits');
    const vocab = logitsT.dims[logitsT.dims.length - 1]!;
    const data = logitsT.data as Float32Array;
    const logits = data.subarray(data.length - vocab);
    const present: Feeds = {};
    for (const [name, t] of Object.entries(out)) if (name.startsWith('present.')) present[`past_key_values.${name.slice('present.'.length)}`] = t;
    return { logits, present };
  }
}

function rms(x: Float32Array): number {
  let acc = 0;
  for (let i = 0; i < x.length; i++) acc += x[i]! * x[i]!;
  return x.length ? Math.sqrt(acc / x.length) : 0;
}

/** Greedy decoding can loop on a phrase; three back-to-back copies of the same n-gram stop it. */
export function repeatsAtEnd(ids: readonly number[]): boolean {
  for (let p = 1; p <= 16 && p * 3 <= ids.length; p++) {
    const end = ids.length;
    let same = true;
    for (let i = 0; i < p * 2 && same; i++) same = ids[end - 1 - i] === ids[end - 1 - i - p];
    if (same) return true;
  }
  return false;
}

/** Keeps one copy of a loop that repeatsAtEnd detected. */
function trimRepeat(ids: number[]): number[] {
  for (let p = 1; p <= 16 && p * 3 <= ids.length; p++) {
    const end = ids.length;
    let same = true;
    for (let i = 0; i < p * 2 && same; i++) same = ids[end - 1 - i] === ids[end - 1 - i - p];
    if (same) return ids.slice(0, end - 2 * p);
  }
  return ids;
}
