import { TaskFailure } from '../../domain/errors.js';
import { decodeStream } from '../../media/ffmpeg-stream.js';
import { SAMPLE_RATE, WINDOW_SAMPLES } from '../../engines/asr/features.js';
import { WhisperAsr, type WhisperFiles } from '../../engines/asr/whisper.js';
import type { EngineContext } from '../../ports/engines.js';
import type { ThreadEnv } from '../threads.js';

export interface AsrThreadInput {
  inputPath: string;
  ffmpeg: string;
  /** The catalog name of the verified model, and its files (checked on the process side, findAsrModel). */
  model: string;
  files: WhisperFiles;
  /** Probed duration, for progress; 0 when the container does not say. */
  totalSeconds: number;
  /** Enforced here too: a file whose header under-reports its length still stops at the limit. */
  maxSeconds: number;
  /** Whisper language code the caller asked for; absent = detected. */
  language?: string;
}

export interface AsrThreadOutput {
  text: string;
  /** Whisper language code, or null when nothing was heard. */
  language: string | null;
  seconds: number;
  model: string;
}

export function asrLimitMessage(maxSeconds: number, seconds?: number): string {
  const len = seconds === undefined ? `longer than ${maxSeconds} s` : `${Math.round(seconds)} s long`;
  return `The recording is ${len}: the limit is ${maxSeconds} s for audio or video sources that are transcribed`;
}

/**
 * Runs inside an engine thread: ffmpeg decodes to 16 kHz mono in 30 s blocks, which are exactly
 * Whisper's windows, so one window is in memory at a time however long the file is. The sessions
 * live for this task only: transcription is rare next to TTS, and 40-300 MB of weights should not
 * stay resident in every thread.
 */
export async function runAsr(job: AsrThreadInput, ctx: EngineContext, executionProviders?: readonly string[]): Promise<AsrThreadOutput> {
  // Verified files that onnxruntime refuses would be refused on every retry: a permanent failure naming the file.
  const asr = await WhisperAsr.load(job.files, executionProviders ? { executionProviders } : {}).catch((err: unknown) => {
    throw new TaskFailure(`The speech recognition model ${job.model} could not be loaded: ${(err as Error).message}`);
  });
  try {
    const blocks = decodeStream(job.inputPath, { ffmpeg: job.ffmpeg, sampleRate: SAMPLE_RATE, channels: 1, blockFrames: WINDOW_SAMPLES, signal: ctx.signal });
    async function* windows(): AsyncGenerator<Float32Array> {
      let seconds = 0;
      for await (const block of blocks) {
        const mono = block.channels[0]!;
        seconds += mono.length / SAMPLE_RATE;
        if (seconds > job.maxSeconds + 1) throw new TaskFailure(asrLimitMessage(job.maxSeconds));
        yield mono;
      }
    }
    const total = job.totalSeconds > 0 ? job.totalSeconds : job.maxSeconds;
    const t = await asr.transcribe(windows(), { signal: ctx.signal, onProgress: (s) => ctx.onProgress(Math.min(1, s / total)), ...(job.language ? { language: job.language } : {}) });
    return { text: t.text, language: t.language, seconds: t.seconds, model: job.model };
  } finally {
    await asr.release();
  }
}

/** Thread entry (the model is loaded per task, see runAsr). */
export function asrThread(env?: Pick<ThreadEnv, 'executionProviders'>) {
  return (job: AsrThreadInput, ctx: EngineContext): Promise<AsrThreadOutput> => runAsr(job, ctx, env?.executionProviders);
}
