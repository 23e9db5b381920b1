import { join } from 'node:path';
import type { AudioData } from '../../media/audio.js';
import { decodeStream, StreamEncoder } from '../../media/ffmpeg-stream.js';
import { outputStems, type SeparationEngine, type SeparationRun } from '../../engines/separation/engine.js';
import { createSeparationEngine } from '../../engines/separation/select.js';
import type { SeparationRemedy } from '../../engines/separation/remedy.js';
import type { EngineContext } from '../../ports/engines.js';
import { TaskFailure } from '../../domain/errors.js';
import type { ThreadEnv } from '../threads.js';
import { overLimitMessage } from '../decoded-length.js';

export interface SeparationThreadInput {
  inputPath: string;
  outDir: string;
  modelType: number;
  sampleRate: number;
  channels: number;
  totalFrames: number;
  format: 'mp3' | 'wav' | 'flac';
  ffmpeg: string;
  /** Extra mix of stems to write: name -> the engine stems it sums (e.g. accompaniment). */
  mixes: Record<string, string[]>;
  /** Engine stems to write as files. */
  keep: string[];
  /** Refuse once the decoder yields more than this many frames (a header can understate the length). */
  maxFrames?: number;
}

export interface SeparationThreadOutput {
  engine: string;
  /** Why the task did not get the neural engine it would normally get (download or load failure). */
  engineNote?: string;
  /** Stem -> why the engine returned it quiet (built-in engine, SeparationRun.stems). */
  stemNotes?: Record<string, string>;
  /** Stems the built-in engine found nowhere in the input (SeparationRun.missing), and what would serve them. */
  missing?: string[];
  remedy?: SeparationRemedy;
  /** stem name -> file path */
  files: Record<string, string>;
  /** Frames actually decoded and written: the billable length (a truncated file's header overstates it). */
  frames: number;
}

const EXT = { mp3: 'mp3', wav: 'wav', flac: 'flac' } as const;

/**
 * Runs inside an engine thread: decoder -> engine -> one encoder per output, all streaming, so a
 * long input never sits in memory whole.
 */
export async function runSeparation(engine: SeparationEngine, job: SeparationThreadInput, ctx: EngineContext): Promise<SeparationThreadOutput> {
  const stems = outputStems(job.modelType);
  const names = [...job.keep, ...Object.keys(job.mixes)];
  const files: Record<string, string> = {};
  const encoders = new Map<string, StreamEncoder>();
  for (const name of names) {
    files[name] = join(job.outDir, `${name}.${EXT[job.format]}`);
    encoders.set(name, new StreamEncoder(files[name]!, { ffmpeg: job.ffmpeg, format: job.format, sampleRate: job.sampleRate, channels: job.channels, signal: ctx.signal }));
  }
  let run: void | SeparationRun;
  let written = 0;
  // Each pass over the input (a neural engine may make two) is checked against the limit on its own.
  async function* limited(signal?: AbortSignal): AsyncGenerator<AudioData> {
    let seen = 0;
    for await (const block of decodeStream(job.inputPath, { ffmpeg: job.ffmpeg, sampleRate: job.sampleRate, channels: job.channels, blockFrames: job.sampleRate * 10, signal })) {
      seen += block.channels[0]?.length ?? 0;
      if (job.maxFrames !== undefined && seen > job.maxFrames) {
        throw new TaskFailure(overLimitMessage(Math.floor(job.maxFrames / job.sampleRate)));
      }
      yield block;
    }
  }
  try {
    run = await engine.separate(
      {
        sampleRate: job.sampleRate,
        channelCount: job.channels,
        totalFrames: job.totalFrames,
        blocks: limited,
      },
      job.modelType,
      ctx,
      {
        async write(_start, block) {
          written += block[stems[0]!]?.channels[0]?.length ?? 0;
          for (const name of job.keep) await encoders.get(name)!.write(block[name]!);
          for (const [name, parts] of Object.entries(job.mixes)) {
            const first = block[parts[0] ?? stems[0]!]!;
            const mix: AudioData = { sampleRate: first.sampleRate, channels: first.channels.map((c) => new Float32Array(c.length)) };
            for (const part of parts) block[part]!.channels.forEach((c, i) => {
              const out = mix.channels[i]!;
              for (let k = 0; k < c.length; k++) out[k]! += c[k]!;
            });
            await encoders.get(name)!.write(mix);
          }
        },
      },
    );
    for (const enc of encoders.values()) await enc.end();
  } catch (err) {
    for (const enc of encoders.values()) enc.abort();
    throw err;
  }
  return { engine: run?.engine ?? engine.id, ...(run?.note ? { engineNote: run.note } : {}), ...(run?.stems ? { stemNotes: run.stems } : {}),
    ...(run?.missing?.length ? { missing: run.missing } : {}), ...(run?.remedy ? { remedy: run.remedy } : {}), files, frames: written };
}

/** Thread entry: the selecting engine (neural where a model is installed, else built-in) stays warm in this thread. */
export function separationThread(env: ThreadEnv) {
  let engine: SeparationEngine | null = null;
  return (job: SeparationThreadInput, ctx: EngineContext): Promise<SeparationThreadOutput> => {
    engine ??= createSeparationEngine({
      modelsDir: env.modelsDir,
      choice: env.separationEngine,
      ...(env.catalog ? { catalog: env.catalog } : {}),
      ...(env.executionProviders ? { executionProviders: env.executionProviders } : {}),
      autoPull: env.autoPull ?? false,
      ...(env.modelsBaseUrl ? { baseUrl: env.modelsBaseUrl } : {}),
    });
    return runSeparation(engine, job, ctx);
  };
}
