import type { AudioData } from '../../../media/audio.js';
import { abortError } from '../../../media/ffmpeg.js';
import type { AudioSource, StemSink } from '../engine.js';

/**
 * Overlapping segments with weighted overlap-add, so any input length runs in constant memory.
 * Segment i covers [i*hop, i*hop + hop + overlap). In each overlap the earlier segment's weight falls and the
 * later one's rises (they sum to 1, so per-segment stems that sum to the mixture still do), and the first and
 * last `margin` frames of every overlap get weight 0: the segment edges, where the STFT reflect-pads and the
 * filters lack context, never reach the output. A method whose context is shorter than `margin` therefore gives
 * the same result segment-wise as on the whole input.
 */
export interface SegmentPlan {
  hop: number;
  overlap: number;
  margin: number;
}

export type SegmentProcessor = (segment: Float32Array[], sampleRate: number) => Promise<Record<string, Float32Array[]>> | Record<string, Float32Array[]>;

/** Rising weight at position u of an overlap of length `overlap` (raised cosine between the margins). */
function rise(u: number, plan: SegmentPlan): number {
  const ramp = plan.overlap - 2 * plan.margin;
  if (u < plan.margin) return 0;
  if (u >= plan.overlap - plan.margin) return 1;
  const x = (u - plan.margin + 0.5) / ramp;
  return Math.sin((Math.PI / 2) * x) ** 2;
}

function weightSegment(stems: Record<string, Float32Array[]>, plan: SegmentPlan, head: boolean, tailAt: number): void {
  const { overlap, hop } = plan;
  for (const chans of Object.values(stems)) {
    for (const ch of chans) {
      if (head) for (let u = 0; u < overlap && u < ch.length; u++) ch[u]! *= rise(u, plan);
      if (tailAt >= 0) for (let u = 0; u < overlap && hop + u < ch.length; u++) ch[hop + u]! *= 1 - rise(u, plan);
    }
  }
}

/**
 * Pulls blocks from `source`, runs `process` on each segment and writes finished frames to `sink` in order.
 * Memory: one segment of input plus one overlap of weighted output per stem.
 */
export async function runSegmented(
  source: AudioSource,
  plan: SegmentPlan,
  process: SegmentProcessor,
  sink: StemSink,
  opts: { signal?: AbortSignal; onProgress?: (fraction: number) => void } = {},
): Promise<void> {
  const { hop, overlap } = plan;
  if (overlap < 2 * plan.margin || hop < overlap) throw new Error('segment plan: need hop >= overlap >= 2*margin');
  const segLen = hop + overlap;
  const nch = source.channelCount;
  const rate = source.sampleRate;
  // `buf` holds input frames [bufStart, bufStart + filled); `carry` holds weighted output for the next overlap.
  let buf = Array.from({ length: nch }, () => new Float32Array(segLen));
  let filled = 0;
  let bufStart = 0;
  let carry: Record<string, Float32Array[]> | null = null;
  let index = 0;
  const flush = async (final: boolean) => {
    if (opts.signal?.aborted) throw abortError(opts.signal);
    const len = filled;
    const segment = buf.map((c) => c.subarray(0, len));
    const stems = await process(segment, rate);
    const isLast = final;
    weightSegment(stems, plan, index > 0, isLast ? -1 : hop);
    if (carry) {
      for (const [name, chans] of Object.entries(stems)) {
        const prev = carry[name]!;
        chans.forEach((ch, c) => {
          const p = prev[c]!;
          for (let u = 0; u < p.length && u < ch.length; u++) ch[u]! += p[u]!;
        });
      }
    }
    const emit = isLast ? len : hop;
    const out: Record<string, AudioData> = {};
    for (const [name, chans] of Object.entries(stems)) out[name] = { sampleRate: rate, channels: chans.map((ch) => ch.slice(0, emit)) };
    await sink.write(bufStart, out);
    if (!isLast) {
      carry = {};
      for (const [name, chans] of Object.entries(stems)) carry[name] = chans.map((ch) => ch.slice(hop, hop + overlap));
      const next = Array.from({ length: nch }, () => new Float32Array(segLen));
      buf.forEach((c, i) => next[i]!.set(c.subarray(hop, len)));
      buf = next;
      filled = len - hop;
      bufStart += hop;
      index++;
    }
    if (source.totalFrames) opts.onProgress?.(Math.min(1, (bufStart + (isLast ? len : 0)) / source.totalFrames));
  };
  for await (const block of source.blocks(opts.signal)) {
    const frames = block.channels[0]?.length ?? 0;
    let at = 0;
    while (at < frames) {
      // A full segment is processed only once more input exists, so the last segment knows it is last.
      if (filled === segLen) await flush(false);
      const take = Math.min(frames - at, segLen - filled);
      for (let c = 0; c < nch; c++) buf[c]!.set(block.channels[c]!.subarray(at, at + take), filled);
      filled += take;
      at += take;
    }
  }
  if (filled === 0 && bufStart === 0) {
    await sink.end?.();
    return;
  }
  // Drain: the buffer may hold a full segment whose successor never came, or a shorter final one.
  if (filled > 0) await flush(true);
  await sink.end?.();
}
