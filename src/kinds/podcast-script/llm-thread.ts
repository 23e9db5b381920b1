import { TaskFailure } from '../../domain/errors.js';
import { LlamaScriptGenerator } from '../../engines/podcast/llama-generator.js';
import type { PodcastScript, ScriptRequest } from '../../engines/podcast/script.js';
import type { EngineContext } from '../../ports/engines.js';

export interface LlmThreadInput {
  /** The verified GGUF (checked on the process side, LocalLlmScripts) and its catalog name. */
  modelPath: string;
  model: string;
  request: ScriptRequest;
  /** LLM_THREADS, LLM_CONTEXT_TOKENS, LLM_MAX_TOKENS, LLM_GPU. */
  threads: number;
  maxContext: number;
  maxTokens?: number;
  gpu: 'auto' | false;
}

export interface LlmThreadOutput {
  script: PodcastScript;
  /** `llama:<model>`, as the result's engine. */
  engine: string;
  /** Where llama.cpp ran: cpu, cuda, vulkan. */
  backend: string;
}

/**
 * Thread entry of the local language model. The loaded model stays warm in this thread between tasks (memory-
 * mapped, so threads share its pages); a task for another file or other settings replaces it.
 */
export function llmThread() {
  let loaded: { key: string; generator: Promise<LlamaScriptGenerator> } | null = null;
  return async (job: LlmThreadInput, ctx: EngineContext): Promise<LlmThreadOutput> => {
    const key = JSON.stringify([job.modelPath, job.threads, job.maxContext, job.maxTokens ?? null, job.gpu]);
    if (loaded?.key !== key) {
      const previous = loaded;
      loaded = null;
      await previous?.generator.then((g) => g.dispose(), () => {});
      const generator = LlamaScriptGenerator.load({
        modelPath: job.modelPath, model: job.model, threads: job.threads, maxContext: job.maxContext, gpu: job.gpu,
        ...(job.maxTokens ? { maxTokens: job.maxTokens } : {}),
      });
      loaded = { key, generator };
      // A file llama.cpp refuses would be refused on every retry: a permanent failure naming it (and not kept).
      generator.catch(() => (loaded = loaded?.generator === generator ? null : loaded));
    }
    const generator = await loaded.generator.catch((err: unknown) => {
      throw new TaskFailure(`The local language model ${job.model} could not be loaded: ${(err as Error).message}`);
    });
    const script = await generator.generate(job.request, ctx.signal, ctx.onProgress);
    return { script, engine: generator.id, backend: generator.backend };
  };
}
