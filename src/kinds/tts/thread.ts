import type { EngineContext } from '../../ports/engines.js';
import { createTtsEngines } from '../../engines/tts/setup.js';
import { synthesize, type TtsJob } from '../../engines/tts/synthesize.js';
import type { TtsRegistry } from '../../engines/tts/registry.js';
import type { ThreadEnv } from '../threads.js';
import { encodeAudio } from '../../media/ffmpeg.js';

/** Downloads happen before (src/kinds/tts/voice-models.ts): a thread only speaks, with what is installed. */
export type TtsThreadInput = TtsJob & {
  /**
   * Also encode the speech to this file, here. ffmpeg started from the event loop's thread cost that thread a
   * fork of the whole process (clone: 3.5 ms per task, strace), which under a backlog of TTS tasks left the API
   * little of its loop; started here it costs this thread, and runs at its priority (ENGINE_NICE).
   */
  encodeTo?: { path: string; format: 'mp3' | 'wav' | 'flac'; ffmpeg: string };
};

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
    if (job.encodeTo) await encodeAudio(out.audio, job.encodeTo.path, { ffmpeg: job.encodeTo.ffmpeg, format: job.encodeTo.format, signal: ctx.signal });
    return {
      samples, sampleRate: out.audio.sampleRate, engine: out.engine, voiceKey: out.voiceKey, emotion: out.emotion,
      ...(out.engineNote ? { engineNote: out.engineNote } : {}),
    };
  };
}
