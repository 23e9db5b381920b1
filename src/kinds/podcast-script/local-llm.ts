/**
 * The local language model's side of podcast scripts (LLM_ENGINE auto without LLM_BASE_URL, or llama): the model
 * is used only once every file is verified against the catalog (src/models/verified.ts); a missing one is pulled
 * first when MODELS_AUTO_PULL is on. Whatever stops it (no model, a corrupt or foreign file, a failed download, a
 * file llama.cpp refuses, no usable reply) the built-in generator writes the script and the result says why.
 */
import { TaskFailure } from '../../domain/errors.js';
import type { ScriptGenerator, ScriptRequest, PodcastScript } from '../../engines/podcast/script.js';
import { AutoPuller } from '../../models/auto-pull.js';
import type { ModelEntry } from '../../models/catalog.js';
import { verifiedModel } from '../../models/verified.js';
import type { EngineThreads } from '../threads.js';

export interface LocalLlmOptions {
  threads: EngineThreads;
  modelsDir: string;
  /** The effective catalog (MODELS_CATALOG_FILE included). */
  catalog: readonly ModelEntry[];
  /** LLM_LOCAL_MODEL: a catalog entry of kind llm with one .gguf file. */
  model: string;
  /** LLM_ENGINE=llama: the operator asked for it, so its absence is worth a note even without a download. */
  required: boolean;
  autoPull: boolean;
  baseUrl?: string;
  stallMs?: number;
  /** LLM_THREADS, LLM_CONTEXT_TOKENS, LLM_MAX_TOKENS, LLM_GPU. */
  llamaThreads: number;
  maxContext: number;
  maxTokens?: number;
  gpu: 'auto' | false;
}

export interface GeneratedScript {
  script: PodcastScript;
  engine: string;
  /** Why the built-in generator wrote it although the local model was wanted. */
  note?: string;
}

/** One per handler (long-lived): it remembers failed downloads so a site without network does not retry each task. */
export class LocalLlmScripts {
  private readonly puller = new AutoPuller();

  constructor(
    private readonly opts: LocalLlmOptions,
    private readonly fallback: ScriptGenerator,
  ) {}

  async generate(req: ScriptRequest, ctx: { signal: AbortSignal; onProgress(f: number): void }): Promise<GeneratedScript> {
    const o = this.opts;
    const source = { modelsDir: o.modelsDir, catalog: o.catalog };
    let found = await verifiedModel(source, o.model);
    let why = found.ok ? null : found.reason;
    const entry = o.catalog.find((e) => e.name === o.model);
    if (!found.ok && o.autoPull && entry) {
      // First use: download (0.2..0.5 of the task), verified while streaming, then checked again before use.
      const pullNote = await this.puller.pull([entry], {
        modelsDir: o.modelsDir, signal: ctx.signal, onProgress: (f) => ctx.onProgress(0.2 + 0.3 * f),
        ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}), ...(o.stallMs ? { stallMs: o.stallMs } : {}),
      });
      if (!pullNote) found = await verifiedModel(source, o.model);
      why = pullNote ?? (found.ok ? null : found.reason);
    }
    if (!found.ok) {
      const reason = why ?? (o.required ? `${o.model} is not installed and MODELS_AUTO_PULL is off` : null);
      return this.builtin(req, ctx.signal, reason);
    }
    const gguf = [...found.files.entries()].find(([path]) => path.endsWith('.gguf'))?.[1];
    if (!gguf) return this.builtin(req, ctx.signal, `${o.model} has no .gguf file in the catalog`);
    try {
      const out = await o.threads.run(
        'llm',
        {
          modelPath: gguf, model: o.model, request: req, threads: o.llamaThreads, maxContext: o.maxContext, gpu: o.gpu,
          ...(o.maxTokens ? { maxTokens: o.maxTokens } : {}),
        },
        { signal: ctx.signal, onProgress: (f) => ctx.onProgress(0.5 + 0.45 * f) },
      );
      return { script: out.script, engine: out.engine };
    } catch (err) {
      // Cancelled, or the thread died (a retry may land on a healthy node): not the model's fault, not a fallback.
      if (ctx.signal.aborted || !(err instanceof TaskFailure) || err.retryable) throw err;
      return this.builtin(req, ctx.signal, err.message);
    }
  }

  private async builtin(req: ScriptRequest, signal: AbortSignal, reason: string | null): Promise<GeneratedScript> {
    const script = await this.fallback.generate(req, signal);
    return { script, engine: this.fallback.id, ...(reason ? { note: `${reason}; the script was written by the built-in generator` } : {}) };
  }
}
