import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import { TaskFailure } from '../../domain/errors.js';
import { perMinuteCredits } from '../../domain/pricing.js';
import type { BlobStore } from '../../ports/blob-store.js';
import { probeMedia, type MediaTools } from '../../media/ffmpeg.js';
import { outputStems, STEMS_BY_MODEL_TYPE } from '../../engines/separation/engine.js';
import type { SeparationParams, SeparationResult } from '../../services/kinds/separation.js';
import type { InputFetcher } from '../input-fetcher.js';
import type { EngineThreadPool } from '../threads/pool.js';
import type { SeparationThreadInput, SeparationThreadOutput } from '../threads/separation-task.js';
import type { JobContext, JobOutcome, TaskHandler } from '../handler.js';

const VOCAL_STEMS = ['vocals', 'lead_vocals', 'backing_vocals'];
const CONTENT_TYPES = { mp3: 'audio/mpeg', wav: 'audio/wav', flac: 'audio/flac' } as const;

/**
 * What to write for a separation_type. `accompaniment` is the mixture minus the vocal stems when the
 * model separates vocals (karaoke), otherwise minus the model's target stems (e.g. a drumless track).
 */
export function planOutputs(modelType: number, type: SeparationParams['separationType']): { keep: string[]; mixes: Record<string, string[]> } {
  const stems = [...(STEMS_BY_MODEL_TYPE[modelType] ?? [])];
  const all = outputStems(modelType);
  const hasVocals = stems.some((s) => VOCAL_STEMS.includes(s));
  const accompaniment = all.filter((s) => (hasVocals ? !VOCAL_STEMS.includes(s) : !stems.includes(s)));
  if (type === 'accompaniment') return { keep: [], mixes: { accompaniment } };
  if (type === 'vocals_accompaniment') return { keep: stems, mixes: { accompaniment } };
  return { keep: stems, mixes: {} };
}

export class SeparationHandler implements TaskHandler {
  readonly kind = 'separation' as const;

  constructor(
    private readonly deps: { pool: EngineThreadPool; blobs: BlobStore; input: InputFetcher; media: MediaTools; maxSeconds: number; creditsPerMinute: number },
  ) {}

  async run(ctx: JobContext): Promise<JobOutcome> {
    const p = ctx.task.params as unknown as SeparationParams;
    const inputPath = join(ctx.tmpDir, 'input');
    await this.deps.input.fetch(p.inputUrl, inputPath, ctx.signal);
    ctx.onProgress(0.05);
    const info = await probeMedia(inputPath, { ffprobe: this.deps.media.ffprobe, signal: ctx.signal }).catch(() => null);
    if (!info || !info.hasAudio) throw new TaskFailure('The input is not an audio or video file with an audio track');
    if (!(info.durationSeconds > 0)) throw new TaskFailure('The input has no measurable duration');
    if (info.durationSeconds > this.deps.maxSeconds) {
      throw new TaskFailure(`The input is ${Math.round(info.durationSeconds)} s long; the limit is ${this.deps.maxSeconds} s`);
    }
    const outDir = join(ctx.tmpDir, 'stems');
    await mkdir(outDir);
    const plan = planOutputs(p.modelType, p.separationType);
    const job: SeparationThreadInput = {
      inputPath,
      outDir,
      modelType: p.modelType,
      sampleRate: info.sampleRate,
      // Stems keep the input's layout; more than stereo is folded to stereo (the engines are stereo-aware at most).
      channels: Math.min(2, Math.max(1, info.channels)),
      totalFrames: Math.round(info.durationSeconds * info.sampleRate),
      format: p.format,
      ffmpeg: this.deps.media.ffmpeg,
      // A second of slack over the header check: decoders and headers disagree by a few frames.
      maxFrames: Math.ceil((this.deps.maxSeconds + 1) * info.sampleRate),
      ...plan,
    };
    const out = await this.deps.pool.run<SeparationThreadOutput>('separation', job, {
      signal: ctx.signal,
      onProgress: (f) => ctx.onProgress(0.05 + 0.85 * f),
    });
    // Bill what was decoded, not what the header claims (a truncated MP3 keeps its full-length header).
    const seconds = out.frames / info.sampleRate;
    if (!(seconds > 0)) throw new TaskFailure('The input has no decodable audio');
    const stems: Record<string, string> = {};
    const zip = new yazl.ZipFile();
    for (const [name, file] of Object.entries(out.files)) {
      zip.addFile(file, `${name}.${p.format}`, { compress: p.format === 'wav' });
    }
    zip.end();
    const zipPath = join(ctx.tmpDir, 'stems.zip');
    await pipeline(zip.outputStream, createWriteStream(zipPath));
    for (const [name, file] of Object.entries(out.files)) {
      stems[name] = `tasks/${ctx.task.id}/${name}.${p.format}`;
      await this.deps.blobs.putFile(stems[name]!, file, CONTENT_TYPES[p.format]);
    }
    const zipKey = `tasks/${ctx.task.id}/stems.zip`;
    await this.deps.blobs.putFile(zipKey, zipPath, 'application/zip');
    const result: SeparationResult = {
      fileType: info.hasVideo ? 'video' : 'audio',
      stems,
      zipKey,
      durationSeconds: Math.round(seconds * 1000) / 1000,
    };
    return {
      result: { ...result },
      engine: out.engine,
      price: perMinuteCredits(seconds, this.deps.creditsPerMinute),
      audioSeconds: seconds,
    };
  }
}
