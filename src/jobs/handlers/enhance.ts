import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { TaskFailure } from '../../domain/errors.js';
import { perMinuteCredits } from '../../domain/pricing.js';
import type { PcmFormat } from '../../media/ffmpeg-stream.js';
import type { BlobStore } from '../../ports/blob-store.js';
import { probeMedia, type MediaTools } from '../../media/ffmpeg.js';
import type { EnhanceParams, EnhanceResult } from '../../services/kinds/enhance.js';
import type { InputFetcher } from '../input-fetcher.js';
import type { EngineThreadPool } from '../threads/pool.js';
import type { EnhanceThreadInput, EnhanceThreadOutput } from '../threads/enhance-task.js';
import type { DenoiserPreference } from '../../engines/enhance/engine-choice.js';
import type { JobContext, JobOutcome, TaskHandler } from '../handler.js';

// Every PCM variant (pcm_u8, pcm_s24be, pcm_f64le, pcm_alaw...) is the WAV/AIFF family; these are the other lossless codecs.
const LOSSLESS = new Set(['flac', 'alac', 'wavpack', 'tta', 'ape', 'truehd', 'mlp']);
const CONTENT_TYPES = { mp3: 'audio/mpeg', wav: 'audio/wav', flac: 'audio/flac' } as const;

/** Output in the input's family: FLAC stays FLAC, other lossless becomes WAV, everything else MP3. */
export function outputFormatFor(codec: string): 'mp3' | 'wav' | 'flac' {
  if (codec === 'flac') return 'flac';
  return codec.startsWith('pcm_') || LOSSLESS.has(codec) ? 'wav' : 'mp3';
}

/** WAV sample format that keeps the input's depth: 24/32-bit integer as 24-bit, float as float, the rest 16-bit. */
export function wavDepthFor(codec: string): PcmFormat {
  if (/^pcm_f(32|64)/.test(codec)) return 'f32';
  if (/^pcm_s(24|32)/.test(codec)) return 's24';
  return 's16';
}

export class EnhanceHandler implements TaskHandler {
  readonly kind = 'enhance' as const;

  constructor(
    private readonly deps: {
      pool: EngineThreadPool;
      blobs: BlobStore;
      input: InputFetcher;
      media: MediaTools;
      modelsDir: string;
      maxSeconds: number;
      maxBytes: number;
      creditsPerMinute: number;
      targetLufs: number;
      denoiser?: DenoiserPreference;
    },
  ) {}

  async run(ctx: JobContext): Promise<JobOutcome> {
    const p = ctx.task.params as unknown as EnhanceParams;
    const inputPath = join(ctx.tmpDir, 'input');
    await this.deps.input.fetch(p.inputUrl, inputPath, ctx.signal, { maxBytes: this.deps.maxBytes });
    const info = await probeMedia(inputPath, { ffprobe: this.deps.media.ffprobe, signal: ctx.signal }).catch(() => null);
    if (!info || !info.hasAudio) throw new TaskFailure('The input is not an audio or video file with an audio track');
    if (!(info.durationSeconds > 0)) throw new TaskFailure('The input has no measurable duration');
    if (info.durationSeconds > this.deps.maxSeconds) {
      throw new TaskFailure(`The input is ${Math.round(info.durationSeconds)} s long; the limit is ${this.deps.maxSeconds} s`);
    }
    ctx.onProgress(0.03);
    const format = outputFormatFor(info.codec);
    const outPath = join(ctx.tmpDir, `enhanced.${format}`);
    const job: EnhanceThreadInput = {
      inputPath,
      outPath,
      format,
      ...(format === 'wav' ? { pcm: wavDepthFor(info.codec) } : {}),
      sampleRate: info.sampleRate,
      channels: Math.min(2, Math.max(1, info.channels)),
      totalFrames: Math.round(info.durationSeconds * info.sampleRate),
      flags: p.flags,
      modelsDir: this.deps.modelsDir,
      ffmpeg: this.deps.media.ffmpeg,
      targetLufs: this.deps.targetLufs,
      denoiser: this.deps.denoiser ?? 'auto',
    };
    const out = await this.deps.pool.run<EnhanceThreadOutput>('enhance', job, { signal: ctx.signal, onProgress: (f) => ctx.onProgress(0.03 + 0.95 * f) });
    const outputKey = `tasks/${ctx.task.id}/enhanced.${format}`;
    const size = (await stat(outPath)).size;
    await this.deps.blobs.putFile(outputKey, outPath, CONTENT_TYPES[format]);
    const result: EnhanceResult = {
      outputKey,
      fileSize: size,
      durationSeconds: Math.round(out.outputSeconds * 1000) / 1000,
      inputSeconds: Math.round(info.durationSeconds * 1000) / 1000,
      stages: out.stages,
      reasons: out.reasons,
    };
    return {
      result: { ...result },
      engine: out.engines.length ? out.engines.join('+') : 'passthrough',
      price: perMinuteCredits(info.durationSeconds, this.deps.creditsPerMinute),
      audioSeconds: info.durationSeconds,
    };
  }
}
