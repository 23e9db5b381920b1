import type { EngineContext } from '../../ports/engines.js';
import { createTtsEngines } from '../../engines/tts/setup.js';
import { synthesize, type PullVoiceModel, type TtsJob } from '../../engines/tts/synthesize.js';
import type { TtsRegistry } from '../../engines/tts/registry.js';
import { AutoPuller } from '../../models/auto-pull.js';
import { findModel, MODEL_CATALOG } from '../../models/catalog.js';
import type { ThreadEnv } from '../threads.js';

export interface TtsThreadInput extends TtsJob {
  /**
   * False: a voice whose model is not downloaded yet is not downloaded for this run, the built-in voice speaks
   * (voice samples on the public asset route must not start downloads). Default true (with MODELS_AUTO_PULL).
   */
  pull?: boolean;
}

export interface TtsThreadOutput {
  samples: Float32Array;
  sampleRate: number;
  engine: string;
  voiceKey: string;
  emotion: string;
  /** Why the voice asked for did not speak (see TtsOutput.engineNote). */
  engineNote?: string;
}

/** Thread entry: the engines are made on first use and stay warm in this thread (the first espeak synthesis is 3-4x slower). */
export function ttsThread(env: ThreadEnv) {
  let engines: TtsRegistry | null = null;
  // One per thread: a failed download is not retried by every task for a while.
  const puller = new AutoPuller();
  const catalog = env.catalog ?? MODEL_CATALOG;
  const pull: PullVoiceModel = async (model, ctx) => {
    const entry = findModel(model, catalog);
    if (!entry) return `model ${model} is not in the catalog`;
    return puller.pull([entry], {
      modelsDir: env.modelsDir, signal: ctx.signal, onProgress: ctx.onProgress, ...(env.modelsBaseUrl ? { baseUrl: env.modelsBaseUrl } : {}),
    });
  };
  return async (job: TtsThreadInput, ctx: EngineContext): Promise<TtsThreadOutput> => {
    engines ??= createTtsEngines({
      modelsDir: env.modelsDir, autoPull: env.autoPull ?? false,
      ...(env.catalog ? { catalog: env.catalog } : {}), ...(env.executionProviders ? { executionProviders: env.executionProviders } : {}),
    });
    // ctx.tmpDir is this run's own scratch folder (the thread pool makes and removes it).
    const { pull: allowPull = true, ...tts } = job;
    const out = await synthesize(tts, engines, { tmpDir: ctx.tmpDir, signal: ctx.signal, onProgress: ctx.onProgress }, env.autoPull && allowPull ? pull : undefined);
    const samples = out.audio.channels[0] ?? new Float32Array(0);
    return {
      samples, sampleRate: out.audio.sampleRate, engine: out.engine, voiceKey: out.voiceKey, emotion: out.emotion,
      ...(out.engineNote ? { engineNote: out.engineNote } : {}),
    };
  };
}
