import { STEMS_BY_MODEL_TYPE as SPEC_STEMS } from '../../domain/vocabulary.js';
import type { AudioData } from '../../media/audio.js';
import type { EngineContext } from '../../ports/engines.js';
import type { SeparationRemedy } from './remedy.js';

/**
 * Stem separation engines behind one streaming interface: input arrives as sequential blocks (never the
 * whole file), stems leave as contiguous, in-order blocks, so a 60-minute input keeps memory flat.
 */

/** model_type -> stems, exactly as the product issue "Stem separation" lists them. */
/** The spec's stems per model type (domain/vocabulary.ts), indexable by any number the engines get. */
export const STEMS_BY_MODEL_TYPE: Readonly<Record<number, readonly string[]>> = SPEC_STEMS;

/**
 * Models whose stems do not include `other` also emit this stem: everything the listed stems miss,
 * so the output always sums back to the mixture.
 */
export const REMAINDER_STEM = 'remainder';

export function isModelType(modelType: number): boolean {
  return Object.prototype.hasOwnProperty.call(STEMS_BY_MODEL_TYPE, modelType);
}

/** The stems an engine writes for a model: the list, plus `remainder` when that list has no `other`. */
export function outputStems(modelType: number): string[] {
  const stems = STEMS_BY_MODEL_TYPE[modelType];
  if (!stems) throw new Error(`unknown separation model_type ${modelType}`);
  return stems.includes('other') ? [...stems] : [...stems, REMAINDER_STEM];
}

/** Sequential input: blocks of any size, in order, all with the same rate and channel count. */
export interface AudioSource {
  sampleRate: number;
  channelCount: number;
  /** Known length (for progress); undefined for live/unknown-length streams. */
  totalFrames?: number;
  blocks(signal?: AbortSignal): AsyncIterable<AudioData>;
}

/** Receives each stem's audio for frames [startFrame, startFrame + frames), blocks contiguous and in order. */
export interface StemSink {
  write(startFrame: number, stems: Readonly<Record<string, AudioData>>): Promise<void> | void;
  end?(): Promise<void> | void;
}

/** What a run reports about itself when the engine id alone does not say it (a selecting engine, a model). */
export interface SeparationRun {
  /** Engine and model that produced the stems, e.g. `builtin-dsp` or `onnx-mdx:Kim_Vocal_2`. */
  engine: string;
  /** Why the engine is not the one the task would normally get (a model that could not be installed or loaded). */
  note?: string;
  /** Per stem, why it came back quiet: the engine could not find that instrument with enough confidence. */
  stems?: Record<string, string>;
  /**
   * Stems the built-in engine found nowhere in the input (silent in every segment). Such a stem is silence, not a
   * result: the task fails uncharged where it returns one (src/kinds/separation/worker.ts).
   */
  missing?: string[];
  /** With `missing`: why no neural model served the model type and which would (set by the selecting engine). */
  remedy?: SeparationRemedy;
}

export interface SeparationEngine {
  readonly id: string;
  supports(modelType: number): boolean;
  separate(input: AudioSource, modelType: number, ctx: EngineContext, sink: StemSink): Promise<void | SeparationRun>;
}

/** A source over audio already in memory (tests, short inputs), yielded in blocks to exercise streaming. */
export function sourceFromAudio(audio: AudioData, blockFrames = 65536): AudioSource {
  const total = audio.channels[0]?.length ?? 0;
  return {
    sampleRate: audio.sampleRate,
    channelCount: audio.channels.length,
    totalFrames: total,
    async *blocks() {
      for (let start = 0; start < total; start += blockFrames) {
        const end = Math.min(total, start + blockFrames);
        yield { sampleRate: audio.sampleRate, channels: audio.channels.map((c) => c.subarray(start, end)) };
      }
    },
  };
}

/** A sink that concatenates everything in memory: only for short inputs (tests, benchmarks on 30 s clips). */
export function collectingSink(): StemSink & { result(): Record<string, AudioData> } {
  const parts: Record<string, AudioData[]> = {};
  let expected = 0;
  return {
    write(startFrame, stems) {
      if (startFrame !== expected) throw new Error(`stem block at ${startFrame}, expected ${expected}`);
      let frames = -1;
      for (const [name, block] of Object.entries(stems)) {
        (parts[name] ??= []).push({ sampleRate: block.sampleRate, channels: block.channels.map((c) => c.slice()) });
        frames = block.channels[0]?.length ?? 0;
      }
      expected += Math.max(0, frames);
    },
    result() {
      const out: Record<string, AudioData> = {};
      for (const [name, blocks] of Object.entries(parts)) {
        const channelCount = blocks[0]?.channels.length ?? 0;
        const total = blocks.reduce((n, b) => n + (b.channels[0]?.length ?? 0), 0);
        const channels = Array.from({ length: channelCount }, () => new Float32Array(total));
        let at = 0;
        for (const b of blocks) {
          b.channels.forEach((c, i) => channels[i]!.set(c, at));
          at += b.channels[0]?.length ?? 0;
        }
        out[name] = { sampleRate: blocks[0]?.sampleRate ?? 0, channels };
      }
      return out;
    },
  };
}
