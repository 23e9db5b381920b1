import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import { TaskFailure } from '../../domain/errors.js';
import { perMinuteCredits } from '../../domain/pricing.js';
import { AUDIO_CONTENT_TYPES, ZIP_CONTENT_TYPE } from '../../domain/vocabulary.js';
import type { BlobStore } from '../../ports/blob-store.js';
import type { MediaTools } from '../../media/ffmpeg.js';
import { openAudioInput } from '../media-input.js';
import { outputStems, STEMS_BY_MODEL_TYPE } from '../../engines/separation/engine.js';
import { unfoundStemsMessage } from '../../engines/separation/remedy.js';
import type { InputFetcher } from '../../jobs/input-fetcher.js';
import type { JobContext, JobOutcome, TaskHandler } from '../../jobs/handler.js';
import type { EngineThreads } from '../threads.js';
import { decodedFrames, limitFrames, reservePrice } from '../decoded-length.js';
import { SeparationParams, type SeparationResult } from './contract.js';
import type { SeparationThreadInput } from './thread.js';

const VOCAL_STEMS = ['vocals', 'lead_vocals', 'backing_vocals'];

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
    private readonly deps: { threads: EngineThreads; blobs: BlobStore; input: InputFetcher; media: MediaTools; maxSeconds: number; creditsPerMinute: number },
  ) {}

  async run(ctx: JobContext): Promise<JobOutcome> {
    const p = SeparationParams.parse(ctx.task.params);
    const fetched = join(ctx.tmpDir, 'input');
    await this.deps.input.fetch(p.inputUrl, fetched, ctx.signal);
    ctx.onProgress(0.05);
    const { path: inputPath, info } = await openAudioInput(fetched, { media: this.deps.media, tmpDir: ctx.tmpDir, signal: ctx.signal });
    // The header's duration is a claim: the limit applies to what the decoder yields (stopped at the limit).
    const frames = await decodedFrames(inputPath, { ffmpeg: this.deps.media.ffmpeg, sampleRate: info.sampleRate, maxSeconds: this.deps.maxSeconds, signal: ctx.signal });
    await reservePrice(ctx, frames / info.sampleRate, this.deps.creditsPerMinute);
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
      totalFrames: frames,
      format: p.format,
      ffmpeg: this.deps.media.ffmpeg,
      // Checked again while separating, so the count above is never the only guard.
      maxFrames: limitFrames(this.deps.maxSeconds, info.sampleRate),
      ...plan,
    };
    const out = await this.deps.threads.run('separation', job, {
      signal: ctx.signal,
      onProgress: (f) => ctx.onProgress(0.05 + 0.85 * f),
    });
    // A stem the built-in engine found nowhere is silence, not a result: never billed (docs/api.md, "Separation").
    const unfound = unfoundStems(out.missing, p.modelType, plan);
    if (unfound.length) {
      ctx.log?.warn({ modelType: p.modelType, unfound, remedy: out.remedy }, 'separation failed: the built-in engine found requested stems nowhere and no model served them');
      throw new TaskFailure(unfoundStemsMessage(p.modelType, unfound, out.remedy));
    }
    // Why a neural model was passed over (a failed download, a file that would not load) is the operator's to fix.
    if (out.engineNote) ctx.log?.warn({ modelType: p.modelType, engineNote: out.engineNote }, 'separation ran on the built-in engine instead of a neural model');
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
      await this.deps.blobs.putFile(stems[name]!, file, AUDIO_CONTENT_TYPES[p.format]);
    }
    const zipKey = `tasks/${ctx.task.id}/stems.zip`;
    await this.deps.blobs.putFile(zipKey, zipPath, ZIP_CONTENT_TYPE);
    const result: SeparationResult = {
      fileType: info.hasVideo ? 'video' : 'audio',
      stems,
      zipKey,
      durationSeconds: Math.round(seconds * 1000) / 1000,
      ...(out.engineNote ? { engineNote: out.engineNote } : {}),
      // Only notes on stems the task returns (an `accompaniment` task keeps none of the model's own stems).
      ...(notesFor(out.stemNotes, stems) ?? {}),
    };
    return {
      result,
      engine: out.engine,
      price: perMinuteCredits(seconds, this.deps.creditsPerMinute),
      audioSeconds: seconds,
    };
  }
}

/**
 * The stems a task's outputs depend on that were found nowhere: those it returns, and those an `accompaniment` is the
 * mixture without (a karaoke track whose vocals were not found is the input again).
 */
export function unfoundStems(missing: readonly string[] | undefined, modelType: number, plan: { keep: string[]; mixes: Record<string, string[]> }): string[] {
  if (!missing?.length) return [];
  const mixed = new Set(Object.values(plan.mixes).flat());
  const withheld = Object.keys(plan.mixes).length ? outputStems(modelType).filter((s) => !mixed.has(s)) : [];
  const depends = new Set([...plan.keep, ...withheld]);
  return (STEMS_BY_MODEL_TYPE[modelType] ?? []).filter((s) => depends.has(s) && missing.includes(s));
}

function notesFor(notes: Record<string, string> | undefined, stems: Record<string, string>): { stemNotes: Record<string, string> } | undefined {
  const kept = Object.entries(notes ?? {}).filter(([name]) => name in stems);
  return kept.length ? { stemNotes: Object.fromEntries(kept) } : undefined;
}
