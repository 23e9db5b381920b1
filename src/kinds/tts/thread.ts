import type { EngineContext } from '../../ports/engines.js';
import { createTtsEngines } from '../../engines/tts/setup.js';
import { provisionVoice, type PullModels } from '../../engines/tts/provision.js';
import { synthesize, type TtsJob } from '../../engines/tts/synthesize.js';
import type { TtsRegistry } from '../../engines/tts/registry.js';
import { AutoPuller } from '../../models/auto-pull.js';
import type { ThreadEnv } from '../threads.js';

export type TtsThreadInput = TtsJob;

export interface TtsThreadOutput {
  samples: Float32Array;
  sampleRate: number;
  engine: string;
  voiceKey: string;
  emotion: string;
  /** Why `engine` is the built-in one although a neural voice was asked for (shown as `engine_note`). */
  engineNote?: string;
}

/** Thread entry: the engines are made on first use and stay warm in this thread (the first espeak synthesis is 3-4x slower). */
export function ttsThread(env: ThreadEnv) {
  let engines: TtsRegistry | null = null;
  // One per thread: a failed download is not retried by every task for a while.
  const puller = new AutoPuller();
  return async (job: TtsThreadInput, ctx: EngineContext): Promise<TtsThreadOutput> => {
    engines ??= createTtsEngines({
      modelsDir: env.modelsDir, ...(env.catalog ? { catalog: env.catalog } : {}), ...(env.executionProviders ? { executionProviders: env.executionProviders } : {}),
      autoPull: env.autoPull ?? false,
    });
    // A neural voice's first use downloads its models (the first half of the progress); a failed download hands
    // the task to a built-in voice and says why.
    let pulled = false;
    const pull: PullModels | undefined = env.autoPull
      ? (entries) => {
          pulled = true;
          return puller.pull(entries, {
            modelsDir: env.modelsDir, signal: ctx.signal, onProgress: (f) => ctx.onProgress(0.5 * f),
            ...(env.modelsBaseUrl ? { baseUrl: env.modelsBaseUrl } : {}),
          });
        }
      : undefined;
    const voice = await provisionVoice(engines, job.voiceId, pull);
    const onProgress = (f: number) => ctx.onProgress(pulled ? 0.5 + 0.5 * f : f);
    // ctx.tmpDir is this run's own scratch folder (the thread pool makes and removes it).
    const out = await synthesize({ ...job, voiceId: voice.voiceId }, engines, { tmpDir: ctx.tmpDir, signal: ctx.signal, onProgress });
    const samples = out.audio.channels[0] ?? new Float32Array(0);
    return {
      samples, sampleRate: out.audio.sampleRate, engine: out.engine, voiceKey: out.voiceKey, emotion: out.emotion,
      ...(voice.note ? { engineNote: voice.note } : {}),
    };
  };
}
