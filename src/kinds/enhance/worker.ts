import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { TaskFailure } from '../../domain/errors.js';
import { perMinuteCredits } from '../../domain/pricing.js';
import type { PcmFormat } from '../../media/ffmpeg-stream.js';
import { AUDIO_CONTENT_TYPES } from '../../domain/vocabulary.js';
import type { BlobStore } from '../../ports/blob-store.js';
import type { MediaTools } from '../../media/ffmpeg.js';
import { openAudioInput } from '../media-input.js';
import type { InputFetcher } from '../../jobs/input-fetcher.js';
import type { EngineThreads } from '../threads.js';
import { decodedFrames, limitFrames, reservePrice } from '../decoded-length.js';
import { ENHANCE_OVER_LIMIT_HINT, EnhanceParams, type EnhanceResult } from './contract.js';
import type { EnhanceThreadInput } from './thread.js';
import type { DenoiserPreference } from '../../engines/enhance/engine-choice.js';
import type { DereverbPreference } from '../../engines/enhance/learned-dereverb.js';
import type { JobContext, JobOutcome, TaskHandler } from '../../jobs/handler.js';

// Every PCM variant (pcm_u8, pcm_s24be, pcm_f64le, pcm_alaw...) is the WAV/AIFF family; these are the other lossless codecs.
// shorten: NIST SPHERE's lossless compression (TIMIT, Switchboard): a Shorten .sph comes back as WAV, not MP3.
const LOSSLESS = new Set(['flac', 'alac', 'wavpack', 'tta', 'ape', 'truehd', 'mlp', 'shorten']);

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
      threads: EngineThreads;
      blobs: BlobStore;
      input: InputFetcher;
      media: MediaTools;
      modelsDir: string;
      maxSeconds: number;
      maxBytes: number;
      creditsPerMinute: number;
      targetLufs: number;
      denoiser?: DenoiserPreference;
      dereverb?: DereverbPreference;
      dereverbCpuMaxSeconds?: number;
    },
  ) {}

  async run(ctx: JobContext): Promise<JobOutcome> {
    const p = EnhanceParams.parse(ctx.task.params);
    const fetched = join(ctx.tmpDir, 'input');
    await this.deps.input.fetch(p.inputUrl, fetched, ctx.signal, {
      maxBytes: this.deps.maxBytes,
      overLimitHint: ENHANCE_OVER_LIMIT_HINT,
    });
    const { path: inputPath, info } = await openAudioInput(fetched, { media: this.deps.media, tmpDir: ctx.tmpDir, signal: ctx.signal });
    // The header's duration is a claim: length, limit and price are what the decoder yields (stopped at the limit).
    const frames = await decodedFrames(inputPath, { ffmpeg: this.deps.media.ffmpeg, sampleRate: info.sampleRate, maxSeconds: this.deps.maxSeconds, signal: ctx.signal });
    await reservePrice(ctx, frames / info.sampleRate, this.deps.creditsPerMinute);
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
      totalFrames: frames,
      flags: p.flags,
      modelsDir: this.deps.modelsDir,
      ffmpeg: this.deps.media.ffmpeg,
      targetLufs: this.deps.targetLufs,
      denoiser: this.deps.denoiser ?? 'auto',
      ...(this.deps.dereverb ? { dereverb: this.deps.dereverb } : {}),
      ...(this.deps.dereverbCpuMaxSeconds !== undefined ? { dereverbCpuMaxSeconds: this.deps.dereverbCpuMaxSeconds } : {}),
      // Checked again in every pass, so the count above is never the only guard.
      maxFrames: limitFrames(this.deps.maxSeconds, info.sampleRate),
      maxSeconds: this.deps.maxSeconds,
    };
    const out = await this.deps.threads.run('enhance', job, { signal: ctx.signal, onProgress: (f) => ctx.onProgress(0.03 + 0.95 * f) });
    const outputKey = `tasks/${ctx.task.id}/enhanced.${format}`;
    const size = (await stat(outPath)).size;
    await this.deps.blobs.putFile(outputKey, outPath, AUDIO_CONTENT_TYPES[format]);
    const result: EnhanceResult = {
      outputKey,
      fileSize: size,
      durationSeconds: Math.round(out.outputSeconds * 1000) / 1000,
      inputSeconds: Math.round(out.inputSeconds * 1000) / 1000,
      stages: out.stages,
      reasons: out.reasons,
    };
    return {
      result,
      engine: out.engines.length ? out.engines.join('+') : 'passthrough',
      // Billed for the audio the last pass decoded, not for the length a header announced.
      price: perMinuteCredits(out.inputSeconds, this.deps.creditsPerMinute),
      audioSeconds: out.inputSeconds,
    };
  }
}
