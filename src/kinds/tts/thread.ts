import type { EngineContext } from '../../ports/engines.js';
import { createTtsEngines } from '../../engines/tts/setup.js';
import { synthesize, type TtsJob } from '../../engines/tts/synthesize.js';
import type { TtsRegistry } from '../../engines/tts/registry.js';
import type { ThreadEnv } from '../threads.js';

/** Downloads happen before (src/kinds/tts/voice-models.ts): a thread only speaks, with what is installed. */
export type TtsThreadInput = TtsJob;

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
  return async (job: TtsThreadInput, ctx: EngineContext): Promise<TtsThreadOutput> => {
    // With MODELS_AUTO_PULL the registry lists voices not installed yet, so a task for one resolves (and falls back).
    engines ??= createTtsEngines({
      modelsDir: env.modelsDir, autoPull: env.autoPull ?? false,
      ...(env.catalog ? { catalog: env.catalog } : {}), ...(env.executionProviders ? { executionProviders: env.executionProviders } : {}),
    });
    // ctx.tmpDir is this run's own scratch folder (the thread pool makes and removes it).
    const out = await synthesize(job, engines, { tmpDir: ctx.tmpDir, signal: ctx.signal, onProgress: ctx.onProgress });
    const samples = out.audio.channels[0] ?? new Float32Array(0);
    return {
      samples, sampleRate: out.audio.sampleRate, engine: out.engine, voiceKey: out.voiceKey, emotion: out.emotion,
      ...(out.engineNote ? { engineNote: out.engineNote } : {}),
    };
  };
}
