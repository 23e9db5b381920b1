import type { EngineContext } from '../../ports/engines.js';
import { createTtsEngines } from '../../engines/tts/setup.js';
import { synthesize, type TtsJob } from '../../engines/tts/synthesize.js';
import type { TtsRegistry } from '../../engines/tts/registry.js';
import type { ThreadEnv } from '../threads.js';
import { writeFile } from 'node:fs/promises';
import { encodeAudio } from '../../media/ffmpeg.js';
import { Mp3Encoder } from '../../media/mp3.js';
import { encodeWav } from '../../media/wav.js';
import type { AudioData } from '../../media/audio.js';

/** Downloads happen before (src/kinds/tts/voice-models.ts): a thread only speaks, with what is installed. */
export type TtsThreadInput = TtsJob & {
  /**
   * Also encode the speech to this file, here, and in process where we can (mp3: LAME in WebAssembly, wav:
   * written directly; flac: ffmpeg). ffmpeg started from the event loop's thread cost that thread a fork of
   * the whole process per task (clone: 3.5 ms, strace) and left copy-on-write faults for the loop after it.
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
  const mp3 = new Mp3Encoder();
  return async (job: TtsThreadInput, ctx: EngineContext): Promise<TtsThreadOutput> => {
    // With MODELS_AUTO_PULL the registry lists voices not installed yet, so a task for one resolves (and falls back).
    engines ??= createTtsEngines({
      modelsDir: env.modelsDir, autoPull: env.autoPull ?? false,
      ...(env.catalog ? { catalog: env.catalog } : {}), ...(env.executionProviders ? { executionProviders: env.executionProviders } : {}),
    });
    // ctx.tmpDir is this run's own scratch folder (the thread pool makes and removes it).
    const out = await synthesize(job, engines, { tmpDir: ctx.tmpDir, signal: ctx.signal, onProgress: ctx.onProgress });
    const samples = out.audio.channels[0] ?? new Float32Array(0);
    if (job.encodeTo) await encodeTo(out.audio, job.encodeTo, mp3, ctx.signal);
    return {
      samples, sampleRate: out.audio.sampleRate, engine: out.engine, voiceKey: out.voiceKey, emotion: out.emotion,
      ...(out.engineNote ? { engineNote: out.engineNote } : {}),
    };
  };
}

/** The speech as the task's file: as ffmpeg wrote it before (mp3 CBR 128 kb/s, wav 16-bit PCM), ffmpeg only for flac. */
async function encodeTo(audio: AudioData, to: NonNullable<TtsThreadInput['encodeTo']>, mp3: Mp3Encoder, signal: AbortSignal): Promise<void> {
  switch (to.format) {
    case 'mp3':
      return writeFile(to.path, await mp3.encode(audio, 128), { signal });
    case 'wav':
      return writeFile(to.path, encodeWav(audio, 16), { signal });
    case 'flac':
      return encodeAudio(audio, to.path, { ffmpeg: to.ffmpeg, format: 'flac', signal });
  }
}
