import type { AudioData } from '../../media/audio.js';
import type { EngineContext } from '../../ports/engines.js';

/**
 * Streaming contract for enhancement stages: blocks of any length go in, audio comes out when it is
 * ready. A stage may delay (look-ahead), shorten (silence removal) or lengthen its output, but must
 * hold only a bounded amount of audio so that hour-long files keep memory flat.
 */
export interface AudioStage {
  readonly name: string;
  push(block: AudioData): Promise<AudioData | null>;
  /** End of input: returns whatever is still held; the stage is finished afterwards. */
  flush(): Promise<AudioData | null>;
}

/** First pass of a two-pass stage (loudness, long-term spectrum): sees every block, keeps a bounded summary. */
export interface AnalysisPass<T> {
  push(block: AudioData): void;
  result(): T;
}

export interface ChainOptions {
  /** Input length in frames when known, for progress. */
  totalFrames?: number;
}

export function frameCount(block: AudioData | null): number {
  return block?.channels[0]?.length ?? 0;
}

function checkAbort(ctx: Pick<EngineContext, 'signal'>): void {
  if (ctx.signal.aborted) {
    const reason: unknown = ctx.signal.reason;
    if (reason instanceof Error) throw reason;
    const err = new Error('aborted');
    err.name = 'AbortError';
    throw err;
  }
}

/**
 * Runs blocks through the stages in order and hands results to the sink; at the end each stage's
 * flush output still flows through the stages after it. Only one block per stage is in flight.
 */
export async function runChain(
  stages: AudioStage[],
  source: AsyncIterable<AudioData>,
  sink: (b: AudioData) => Promise<void>,
  ctx: Pick<EngineContext, 'signal' | 'onProgress'>,
  opts: ChainOptions = {},
): Promise<{ inputFrames: number; outputFrames: number }> {
  let inputFrames = 0;
  let outputFrames = 0;
  const through = async (from: number, block: AudioData | null): Promise<void> => {
    let cur = block;
    for (let i = from; i < stages.length && cur && frameCount(cur) > 0; i++) cur = await stages[i]!.push(cur);
    if (cur && frameCount(cur) > 0) {
      outputFrames += frameCount(cur);
      await sink(cur);
    }
  };
  for await (const block of source) {
    checkAbort(ctx);
    inputFrames += frameCount(block);
    await through(0, block);
    if (opts.totalFrames) ctx.onProgress(Math.min(0.99, inputFrames / opts.totalFrames));
  }
  for (let i = 0; i < stages.length; i++) {
    checkAbort(ctx);
    await through(i + 1, await stages[i]!.flush());
  }
  ctx.onProgress(1);
  return { inputFrames, outputFrames };
}

/** Feeds a source through analysis passes (the first of two passes over a file). */
export async function runAnalysis(passes: AnalysisPass<unknown>[], source: AsyncIterable<AudioData>, ctx: Pick<EngineContext, 'signal'>): Promise<void> {
  for await (const block of source) {
    checkAbort(ctx);
    for (const p of passes) p.push(block);
  }
}

/** Yields an in-memory signal as blocks (tests, benchmarks). */
export async function* blocksOf(audio: AudioData, blockFrames: number): AsyncGenerator<AudioData> {
  const n = frameCount(audio);
  for (let s = 0; s < n; s += blockFrames) {
    const e = Math.min(n, s + blockFrames);
    yield { sampleRate: audio.sampleRate, channels: audio.channels.map((c) => c.slice(s, e)) };
  }
}

export function concatAudio(parts: AudioData[], sampleRate: number, channelCount: number): AudioData {
  const total = parts.reduce((a, p) => a + frameCount(p), 0);
  const channels = Array.from({ length: channelCount }, () => new Float32Array(total));
  let off = 0;
  for (const p of parts) {
    for (let c = 0; c < channelCount; c++) channels[c]!.set(p.channels[c]!, off);
    off += frameCount(p);
  }
  return { sampleRate, channels };
}

/** Runs a whole in-memory signal through stages (tests and benchmarks only: it holds the result). */
export async function processWhole(stages: AudioStage[], audio: AudioData, blockFrames = 16000): Promise<AudioData> {
  const out: AudioData[] = [];
  let rate = audio.sampleRate;
  const ctl = new AbortController();
  await runChain(stages, blocksOf(audio, blockFrames), async (b) => {
    rate = b.sampleRate;
    out.push(b);
  }, { signal: ctl.signal, onProgress: () => undefined });
  return concatAudio(out, rate, audio.channels.length);
}

/** Per-channel FIFO of samples: stages collect input here and take fixed-size frames out. */
export class SampleFifo {
  private bufs: Float32Array[];
  private start = 0;
  private end = 0;

  constructor(readonly channelCount: number, initialCapacity = 8192) {
    this.bufs = Array.from({ length: channelCount }, () => new Float32Array(initialCapacity));
  }

  get length(): number {
    return this.end - this.start;
  }

  push(channels: Float32Array[], from = 0, to = channels[0]?.length ?? 0): void {
    const n = to - from;
    this.reserve(n);
    for (let c = 0; c < this.channelCount; c++) this.bufs[c]!.set(channels[c]!.subarray(from, to), this.end);
    this.end += n;
  }

  pushZeros(n: number): void {
    this.reserve(n);
    for (let c = 0; c < this.channelCount; c++) this.bufs[c]!.fill(0, this.end, this.end + n);
    this.end += n;
  }

  /** A view of the next n samples of channel c without consuming them (valid until the next push). */
  peek(c: number, n: number, offset = 0): Float32Array {
    return this.bufs[c]!.subarray(this.start + offset, this.start + offset + n);
  }

  discard(n: number): void {
    this.start += Math.min(n, this.length);
  }

  take(n: number): Float32Array[] {
    const k = Math.min(n, this.length);
    const out = this.bufs.map((b) => b.slice(this.start, this.start + k));
    this.start += k;
    return out;
  }

  private reserve(n: number): void {
    const cap = this.bufs[0]?.length ?? 0;
    if (this.end + n <= cap) return;
    const len = this.length;
    const newCap = Math.max(cap, (len + n) * 2);
    this.bufs = this.bufs.map((b) => {
      const nb = newCap === cap ? b : new Float32Array(newCap);
      if (nb === b) nb.copyWithin(0, this.start, this.end);
      else nb.set(b.subarray(this.start, this.end));
      return nb;
    });
    this.start = 0;
    this.end = len;
  }
}

/**
 * Removes a processing latency so a stage's output stays sample-aligned with its input: drops the
 * first `latency` output samples and caps the total at the input length.
 */
export class LatencyTrim {
  private dropped = 0;
  private emitted = 0;
  private inputFrames = 0;

  constructor(private readonly latency: number) {}

  countInput(n: number): void {
    this.inputFrames += n;
  }

  /** Frames of input still owed at flush (zeros to feed so the tail comes out). */
  get owed(): number {
    return this.latency;
  }

  apply(channels: Float32Array[]): Float32Array[] | null {
    let from = 0;
    const n = channels[0]?.length ?? 0;
    if (this.dropped < this.latency) {
      from = Math.min(n, this.latency - this.dropped);
      this.dropped += from;
    }
    const to = Math.min(n, from + Math.max(0, this.inputFrames - this.emitted));
    if (to <= from) return null;
    this.emitted += to - from;
    return channels.map((c) => c.subarray(from, to));
  }
}

/** Mean power of consecutive fixed-length frames (channels averaged), in dB, handed to `onFrame`. */
export class FrameLevels {
  private readonly frame: number;
  private acc = 0;
  private n = 0;

  constructor(sampleRate: number, frameSeconds: number, private readonly onFrame: (db: number) => void) {
    this.frame = Math.round(sampleRate * frameSeconds);
  }

  push(block: AudioData): void {
    const chs = block.channels;
    const len = chs[0]?.length ?? 0;
    for (let i = 0; i < len; i++) {
      let s = 0;
      for (const ch of chs) s += ch[i]! * ch[i]!;
      this.acc += s / chs.length;
      if (++this.n === this.frame) {
        const db = 10 * Math.log10(this.acc / this.n + 1e-12);
        this.acc = 0;
        this.n = 0;
        this.onFrame(db);
      }
    }
  }
}

/**
 * Cuts the channel mean of a stream into frames of `size` samples, one every `hop`, and hands each to `onFrame` (the
 * buffer is reused: read it before returning). The framing of the analysis passes (detect.ts, detect-hum.ts).
 */
export class MonoFrames {
  private readonly buf: Float32Array;
  private fill = 0;

  constructor(private readonly size: number, private readonly hop: number, private readonly onFrame: (frame: Float32Array) => void) {
    this.buf = new Float32Array(size);
  }

  push(block: AudioData): void {
    const chs = block.channels;
    const n = chs[0]?.length ?? 0;
    const g = 1 / chs.length;
    for (let i = 0; i < n;) {
      const take = Math.min(n - i, this.size - this.fill);
      if (chs.length === 1) this.buf.set(chs[0]!.subarray(i, i + take), this.fill);
      else {
        for (let k = 0; k < take; k++) {
          let v = 0;
          for (let c = 0; c < chs.length; c++) v += chs[c]![i + k]!;
          this.buf[this.fill + k] = v * g;
        }
      }
      this.fill += take;
      i += take;
      if (this.fill === this.size) {
        this.onFrame(this.buf);
        this.buf.copyWithin(0, this.hop);
        this.fill = this.size - this.hop;
      }
    }
  }
}

/**
 * Wall time spent inside each stage, by name (milliseconds, summed over push and flush): the per-stage profile of a
 * pass (bench/enhance-long.ts). A wrapper, so no stage knows it is measured.
 */
export class TimedStage implements AudioStage {
  readonly name: string;

  constructor(private readonly inner: AudioStage, private readonly times: Map<string, number>) {
    this.name = inner.name;
  }

  private async time(run: () => Promise<AudioData | null>): Promise<AudioData | null> {
    const t0 = performance.now();
    try {
      return await run();
    } finally {
      this.times.set(this.name, (this.times.get(this.name) ?? 0) + performance.now() - t0);
    }
  }

  push(block: AudioData): Promise<AudioData | null> {
    return this.time(() => this.inner.push(block));
  }

  flush(): Promise<AudioData | null> {
    return this.time(() => this.inner.flush());
  }
}
