import type { AudioData } from '../../media/audio.js';
import { SampleFifo, frameCount } from './stage.js';
import type { EnhancePlan, StageName } from './chain.js';

/**
 * Long files on every core: the input is cut into time chunks that worker threads run through the chain at the
 * same time, and the processed chunks are joined back in order with a short crossfade.
 *
 * - Only length-preserving stages run per chunk (their output is sample-aligned with their input: LatencyTrim),
 *   so chunk k's output covers exactly its input range and the seams are known. Stages that cut audio
 *   (disfluency, long_silences) and everything after them in STAGE_ORDER run once, in order, on the joined
 *   stream: a cut can then never straddle a seam, and the result is the sequential chain's.
 * - Every stage is stateful (recurrent denoisers, WPE statistics, compressor envelopes, AR click models): each chunk
 *   starts `warm` frames early, that lead-in only warms the state up and is thrown away, and it ends `tail` frames
 *   late so look-ahead stages never see the chunk's end inside the part that is kept. The last `fade` frames of the
 *   lead-in are kept and crossfaded (equal gain, raised cosine) with the previous chunk's last frames, so what
 *   little state difference is left never shows as a step.
 * - The chain is built per chunk through the same buildStages as the sequential chain, so every stage (new
 *   denoisers and dereverberators included) runs in chunks without knowing it.
 * - Memory is bounded by the chunks in flight (`inFlight`, each `frames + warm + tail` long, input and output), never
 *   the file: the input is decoded once, in order, and each chunk is handed over whole.
 */

/** Stages whose output has exactly as many frames as their input (what a seam needs). */
const LENGTH_PRESERVING: ReadonlySet<StageName> = new Set(['declick', 'separate', 'denoise', 'dereverb', 'autoeq', 'deesser', 'compressor']);

export interface ChunkGeometry {
  /** Nominal chunk length: the frames each chunk contributes to the output. */
  frames: number;
  /** Lead-in processed before the chunk to warm the stages' state up (discarded but for the fade). */
  warm: number;
  /** Frames processed after the chunk's end so look-ahead stages are not cut short (discarded). */
  tail: number;
  /** Crossfade length at each seam (at most `warm`). */
  fade: number;
}

/**
 * Defaults, and why (measured on 60 s of real speech in 10 s chunks, against the sequential chain; test/engines/
 * enhance/parallel.test.ts keeps the bounds): stages with finite memory (declick, EQ, de-esser, compressor) match
 * to float rounding after any lead-in of a second. Recurrent denoisers and WPE never forget their start exactly:
 * GTCRN's output differs from the sequential chain's at 26 dB under the signal with 4 s of lead-in, 31 dB with
 * 8 s; WPE (statistics over 2 s blocks, forgetting 0.6 a block) 28, 33.5 and 39.6 dB with 4, 8 and 20 s. Neither
 * is a step at the seam: the difference is spread over the whole chunk (two runs of a recurrent model from
 * different starts), so 8 s of lead-in and a 0.5 s crossfade. Chunks are 180 s (the lead-in and tail are 5% of the
 * work, which the sequential chain does not do) but at most 8.64 M samples (90 s of 48 kHz stereo), because each
 * chunk in flight is held whole, input and output.
 */
export function chunkGeometry(sampleRate: number, channels: number, chunkSeconds?: number): ChunkGeometry {
  const seconds = chunkSeconds ?? Math.min(180, 8_640_000 / (sampleRate * channels));
  return {
    frames: Math.round(seconds * sampleRate),
    warm: Math.round(8 * sampleRate),
    tail: Math.round(1 * sampleRate),
    fade: Math.round(Math.min(0.5, seconds / 4) * sampleRate),
  };
}

/**
 * Splits a plan into the part that runs per chunk (the length-preserving stages before the first cut) and the
 * part that runs on the joined stream. `separate` runs per chunk only with the built-in separator: a neural vocal
 * model takes gigabytes and its own threads, so one instance runs it on the whole stream.
 */
export function splitPlan(plan: EnhancePlan, neuralSeparation: boolean, learnedDereverb = false): { chunked: EnhancePlan; joined: EnhancePlan } {
  // The learned dereverberation is a 913 MB network needing 2.3 GB per instance: like a neural vocal model, it runs
  // once, on the joined stream, not once per chunk thread.
  let cut = plan.stages.findIndex((s) => s === 'normalize' || !LENGTH_PRESERVING.has(s) || (s === 'separate' && neuralSeparation)
    || (s === 'dereverb' && learnedDereverb));
  if (cut < 0) cut = plan.stages.length;
  return { chunked: { ...plan, stages: plan.stages.slice(0, cut) }, joined: { ...plan, stages: plan.stages.slice(cut) } };
}

/** One chunk handed to a runner: its input (with lead-in and tail) and where its kept part starts. */
export interface ChunkJob {
  index: number;
  /** Absolute frame where `input` starts. */
  start: number;
  input: AudioData;
}

/** Runs the chunked stages over one chunk; must answer exactly as many frames as it was given. */
export type ChunkRunner = (job: ChunkJob) => Promise<AudioData>;

/** Joins processed chunks in order, crossfading `fade` frames at each seam. */
export class SeamJoiner {
  private held: Float32Array[] | null = null;
  private readonly ramp: Float32Array;

  constructor(private readonly sampleRate: number, fade: number) {
    this.ramp = new Float32Array(fade);
    for (let i = 0; i < fade; i++) this.ramp[i] = 0.5 - 0.5 * Math.cos((Math.PI * (i + 0.5)) / fade);
  }

  /** The kept part of the next chunk; its first `fade` frames overlap the previous chunk's last ones (none on the first). */
  push(kept: Float32Array[]): AudioData | null {
    const f = this.ramp.length;
    const n = kept[0]?.length ?? 0;
    let out = kept;
    if (this.held) {
      const prev = this.held;
      out = kept.map((ch, c) => {
        const mixed = ch.slice();
        for (let i = 0; i < f; i++) mixed[i] = prev[c]![i]! * (1 - this.ramp[i]!) + ch[i]! * this.ramp[i]!;
        return mixed;
      });
    }
    // The last `fade` frames wait for the next chunk (or the end); a lone chunk shorter than that waits whole.
    const cut = Math.max(0, n - f);
    this.held = out.map((ch) => ch.subarray(cut));
    return cut > 0 ? { sampleRate: this.sampleRate, channels: out.map((ch) => ch.subarray(0, cut)) } : null;
  }

  end(): AudioData | null {
    const held = this.held;
    this.held = null;
    return held && (held[0]?.length ?? 0) > 0 ? { sampleRate: this.sampleRate, channels: held } : null;
  }
}

export interface ChunkedOptions {
  geometry: ChunkGeometry;
  /** Chunks handed out and not yet joined (the runner queues them for its threads): bounds memory. */
  inFlight: number;
  /** Size of the joined blocks handed on. */
  blockFrames: number;
}

/**
 * The source cut into chunks, run by `run` (several at once), joined back in order: yields the joined stream, as
 * long as the source, in blocks. The source is pulled only as chunks are handed out, so decoding never runs more
 * than `inFlight` chunks ahead.
 */
export async function* chunkedStream(source: AsyncIterable<AudioData>, run: ChunkRunner, opts: ChunkedOptions): AsyncGenerator<AudioData> {
  const { frames: C, warm: W, tail: L, fade: X } = opts.geometry;
  if (X > W || X >= C || C <= 0) throw new Error('chunk geometry: the fade must fit in the lead-in and the chunk');
  let fifo: SampleFifo | null = null;
  let joiner: SeamJoiner | null = null;
  let rate = 0;
  /** Absolute frame of the fifo's first sample; frames seen so far; the next chunk's index. */
  let fifoStart = 0;
  let seen = 0;
  let next = 0;
  const pending: Array<{ index: number; start: number; end: number; done: Promise<AudioData> }> = [];

  const dispatch = (end: number) => {
    const a = Math.max(0, next * C - W);
    const channels = Array.from({ length: fifo!.channelCount }, (_, c) => fifo!.peek(c, end - a, a - fifoStart).slice());
    const done = run({ index: next, start: a, input: { sampleRate: rate, channels } });
    // Observed when its turn comes; a rejection before then must not count as unhandled.
    done.catch(() => undefined);
    pending.push({ index: next, start: a, end, done });
    next++;
    // The next chunk's input starts W before its nominal start: older frames are no longer needed.
    const keepFrom = Math.max(0, next * C - W);
    fifo!.discard(keepFrom - fifoStart);
    fifoStart = keepFrom;
  };

  async function* joinOne(): AsyncGenerator<AudioData> {
    const job = pending.shift()!;
    const out = await job.done;
    if (frameCount(out) !== job.end - job.start) {
      throw new Error(`chunk ${job.index}: the chunked stages answered ${frameCount(out)} frames for ${job.end - job.start} (a stage that is not length-preserving ran per chunk)`);
    }
    const s = job.index * C;
    // Kept: from the fade before the nominal start (the very start on the first chunk) to the nominal end, or the
    // input's end on the last chunk (whose input stops short of s + C + L).
    const from = job.index === 0 ? 0 : s - X - job.start;
    const to = Math.min(s + C, job.end) - job.start;
    const kept = joiner!.push(out.channels.map((ch) => ch.subarray(from, to)));
    if (kept) yield* reblock(kept, opts.blockFrames);
  }

  for await (const block of source) {
    const n = frameCount(block);
    if (n === 0) continue;
    if (!fifo) {
      rate = block.sampleRate;
      fifo = new SampleFifo(block.channels.length, C + W + L + n);
      joiner = new SeamJoiner(rate, X);
    }
    fifo.push(block.channels);
    seen += n;
    while (seen >= (next + 1) * C + L) {
      dispatch((next + 1) * C + L);
      while (pending.length > opts.inFlight) yield* joinOne();
    }
  }
  // The end of the input: what is left makes one or two last chunks, each with the tail it can have.
  while (seen > next * C) {
    dispatch(Math.min(seen, (next + 1) * C + L));
    while (pending.length > opts.inFlight) yield* joinOne();
  }
  while (pending.length) yield* joinOne();
  const rest = joiner?.end();
  if (rest) yield rest;
}

function* reblock(audio: AudioData, blockFrames: number): Generator<AudioData> {
  const n = frameCount(audio);
  for (let s = 0; s < n; s += blockFrames) yield { sampleRate: audio.sampleRate, channels: audio.channels.map((c) => c.subarray(s, Math.min(n, s + blockFrames))) };
}
