/**
 * Part of the composition root (container.ts): the podcast script engines, chosen from the configuration.
 */
import { ConfigError, type Config } from '../config/config.js';
import { BuiltinScriptGenerator } from '../engines/podcast/builtin-generator.js';
import { LlmScriptGenerator } from '../engines/podcast/llm-generator.js';
import type { ScriptGenerator } from '../engines/podcast/script.js';
import { LocalLlmScripts } from '../kinds/podcast-script/local-llm.js';
import type { EngineThreads } from '../kinds/threads.js';
import type { ModelEntry } from '../models/catalog.js';

/**
 * Who writes podcast scripts (LLM_ENGINE, docs/api.md): the OpenAI-compatible endpoint when LLM_BASE_URL is set
 * (auto) or asked for; else the local GGUF model, which falls back to the built-in generator per task when it
 * cannot be used; or the built-in generator alone.
 */
export function scriptEngines(config: Config, catalog: readonly ModelEntry[], threads: EngineThreads): { generator: ScriptGenerator; localLlm?: LocalLlmScripts } {
  const choice = config.LLM_ENGINE === 'auto' ? (config.LLM_BASE_URL ? 'openai' : 'llama') : config.LLM_ENGINE;
  if (choice === 'openai' && config.LLM_BASE_URL) {
    return { generator: new LlmScriptGenerator({ baseUrl: config.LLM_BASE_URL, model: config.LLM_MODEL, apiKey: config.LLM_API_KEY }) };
  }
  const builtin = new BuiltinScriptGenerator();
  if (choice !== 'llama') return { generator: builtin };
  const entry = catalog.find((e) => e.name === config.LLM_LOCAL_MODEL);
  if (!entry || entry.kind !== 'llm') {
    throw new ConfigError(`Invalid configuration:\n  LLM_LOCAL_MODEL: ${config.LLM_LOCAL_MODEL} is not a model of kind llm in the catalog (soundry models list --kind llm)`);
  }
  const localLlm = new LocalLlmScripts(
    {
      threads, modelsDir: config.MODELS_DIR, catalog, model: entry.name, required: config.LLM_ENGINE === 'llama',
      autoPull: config.MODELS_AUTO_PULL, ...(config.MODELS_BASE_URL ? { baseUrl: config.MODELS_BASE_URL } : {}),
      llamaThreads: config.LLM_THREADS, maxContext: config.LLM_CONTEXT_TOKENS, gpu: config.LLM_GPU === 'off' ? false : 'auto',
      ...(config.LLM_MAX_TOKENS ? { maxTokens: config.LLM_MAX_TOKENS } : {}),
    },
    builtin,
  );
  return { generator: builtin, localLlm };
}
