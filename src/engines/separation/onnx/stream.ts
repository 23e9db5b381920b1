import { resample } from '../../../media/resample.js';

/**
 * Streaming helpers for the neural engines: a resampler that gives exactly what `resample` gives on the whole signal
 * (blocks aligned to the rate ratio's period, with enough context for the kernel), and a FIFO of aligned planar
 * blocks for delaying one stream until another catches up.
 */
function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

export class StreamResampler {
  private readonly ratio: number;
  private readonly block: number;
  private readonly ctx: number;
  private pending = new Float32Array(0);
  /** Samples of context kept before `pending` (zeros at the start). */
  private history: Float32Array;
  private inCount = 0;
  private outCount = 0;

  constructor(private readonly from: number, private readonly to: number) {
    this.ratio = to / from;
    const period = from / gcd(from, to);
    // resample()'s kernel reaches 16 zero crossings at the lower of the two Nyquists.
    const reach = Math.ceil(16 / Math.min(1, this.ratio)) + 2;
    this.ctx = period * Math.ceil(reach / period);
    this.block = period * Math.max(1, Math.ceil(16384 / period));
    this.history = new Float32Array(this.ctx);
  }

  get identity(): boolean {
    return this.from === this.to;
  }

  push(x: Float32Array): Float32Array {
    if (this.identity) return x.slice();
    this.inCount += x.length;
    const all = new Float32Array(this.pending.length + x.length);
    all.set(this.pending);
    all.set(x, this.pending.length);
    // A block can be resampled once `ctx` samples after it exist.
    const usable = Math.max(0, Math.floor((all.length - this.ctx) / this.block) * this.block);
    if (usable === 0) {
      this.pending = all;
      return new Float32Array(0);
    }
    const out = this.run(all.subarray(0, usable + this.ctx), usable, Math.round(usable * this.ratio));
    this.history = all.slice(usable - this.ctx, usable);
    this.pending = all.slice(usable);
    return out;
  }

  end(): Float32Array {
    if (this.identity) return new Float32Array(0);
    const want = Math.round(this.inCount * this.ratio) - this.outCount;
    const rest = this.pending;
    this.pending = new Float32Array(0);
    if (want <= 0) return new Float32Array(0);
    const tail = new Float32Array(rest.length + this.ctx);
    tail.set(rest);
    return this.run(tail, rest.length, want);
  }

  /** Resamples history + body (body's first `len` samples are the new ones) and keeps `count` outputs. */
  private run(body: Float32Array, len: number, count: number): Float32Array {
    const sub = new Float32Array(this.ctx + body.length);
    sub.set(this.history);
    sub.set(body, this.ctx);
    const y = resample(sub, this.from, this.to);
    const first = Math.round(this.ctx * this.ratio);
    void len;
    this.outCount += count;
    return y.slice(first, first + count);
  }
}

/** Planar multi-stream FIFO: push blocks of equal length per key, take the oldest n frames of all keys. */
export class PlanarFifo {
  private parts: Array<Record<string, Float32Array[]>> = [];
  private frames = 0;
  private head = 0;

  get length(): number {
    return this.frames;
  }

  push(block: Record<string, Float32Array[]>): void {
    const n = Object.values(block)[0]?.[0]?.length ?? 0;
    if (n === 0) return;
    this.parts.push(block);
    this.frames += n;
  }

  take(n: number): Record<string, Float32Array[]> {
    if (n > this.frames) throw new Error(`fifo: want ${n}, have ${this.frames}`);
    const out: Record<string, Float32Array[]> = {};
    let at = 0;
    while (at < n) {
      const part = this.parts[0]!;
      const plen = Object.values(part)[0]![0]!.length;
      const take = Math.min(n - at, plen - this.head);
      for (const [k, chans] of Object.entries(part)) {
        out[k] ??= chans.map(() => new Float32Array(n));
        chans.forEach((c, i) => out[k]![i]!.set(c.subarray(this.head, this.head + take), at));
      }
      at += take;
      this.head += take;
      if (this.head === plen) {
        this.parts.shift();
        this.head = 0;
      }
    }
    this.frames -= n;
    return out;
  }
}
