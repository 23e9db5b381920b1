/**
 * Streaming form of the reference implementations' segment loops (UVR/audio-separator `demix`, demucs
 * `apply_model(split=True)`): chunks of `chunk` samples every `step` over a "mixture" that is `lead` zeros, the
 * input, then zeros up to `mixtureLength(n)`; each chunk's output is multiplied by a window, summed, and divided by
 * the summed windows. A position is final once the next chunk starts after it, so only one chunk of input and one
 * chunk of accumulators are held whatever the input length, and the result equals the whole-file loop's.
 */
export type Stereo = [Float32Array, Float32Array];

/** A streaming separation stage at the model rate in stereo: what every route builds (routes.ts). */
export interface StereoStage {
  readonly stems: readonly string[];
  push(x: Stereo): Promise<Array<Record<string, Stereo>>>;
  end(): Promise<Array<Record<string, Stereo>>>;
}

export interface ChunkPlan {
  chunk: number;
  step: number;
  /** Zeros in front of the input (MDX: n_fft/2 trim; demucs: its shift). Output drops them again. */
  lead: number;
  /** Mixture length for an input of n samples (lead + n + any tail padding). */
  mixtureLength(n: number): number;
  /** Window for a chunk of `length` real samples (the last chunks can be shorter); at least `length` long. */
  window(length: number): Float64Array;
}

export interface ChunkRequest {
  /** Mixture position of the chunk and its real length (<= chunk). */
  start: number;
  length: number;
  /** Mixture samples [from, to), zero outside the input. */
  read(from: number, to: number): Stereo;
}

/** Returns, per stem, the chunk's output for mixture positions [start, start + length) (longer arrays are cut). */
export type ChunkRunner = (req: ChunkRequest) => Promise<Record<string, Stereo>>;

export class OverlapAddStream {
  private buf: Stereo;
  /** Mixture position of buf[0]; buffered samples end at `bufEnd`. */
  private bufStart = 0;
  private bufEnd: number;
  private received = 0;
  private next = 0;
  private acc: Record<string, [Float64Array, Float64Array]> = {};
  private readonly wsum: Float64Array;
  private ended = false;

  constructor(
    private readonly plan: ChunkPlan,
    private readonly stems: readonly string[],
    private readonly run: ChunkRunner,
  ) {
    if (!(plan.step > 0 && plan.step <= plan.chunk)) throw new Error('overlap-add: need 0 < step <= chunk');
    const cap = 2 * plan.chunk + plan.lead;
    this.buf = [new Float32Array(cap), new Float32Array(cap)];
    this.bufEnd = plan.lead; // the lead zeros are already "buffered" (the array starts zeroed)
    for (const s of stems) this.acc[s] = [new Float64Array(plan.chunk), new Float64Array(plan.chunk)];
    this.wsum = new Float64Array(plan.chunk);
  }

  /** Input samples consumed so far. */
  get inputFrames(): number {
    return this.received;
  }

  async push(x: Stereo): Promise<Array<Record<string, Stereo>>> {
    if (this.ended) throw new Error('overlap-add: push after end');
    const out: Array<Record<string, Stereo>> = [];
    let at = 0;
    while (at < x[0].length) {
      this.makeRoom();
      const room = this.buf[0].length - (this.bufEnd - this.bufStart);
      const take = Math.min(room, x[0].length - at);
      for (let c = 0; c < 2; c++) this.buf[c]!.set(x[c]!.subarray(at, at + take), this.bufEnd - this.bufStart);
      this.bufEnd += take;
      this.received += take;
      at += take;
      // A chunk runs once all its samples are here: before the end it is always full-length.
      while (this.next + this.plan.chunk <= this.bufEnd) out.push(await this.runChunk(this.plan.chunk, false));
    }
    return out;
  }

  async end(): Promise<Array<Record<string, Stereo>>> {
    this.ended = true;
    const out: Array<Record<string, Stereo>> = [];
    const n = this.received;
    if (n === 0) return out;
    const total = this.plan.mixtureLength(n);
    while (this.next < total) {
      const length = Math.min(this.plan.chunk, total - this.next);
      out.push(await this.runChunk(length, this.next + this.plan.step >= total, total));
    }
    return out;
  }

  /** Drops input older than one chunk before the next chunk start (demucs pads short chunks from there). */
  private makeRoom(): void {
    const keepFrom = Math.max(this.bufStart, this.next - this.plan.chunk);
    const drop = keepFrom - this.bufStart;
    if (drop <= 0) return;
    for (const ch of this.buf) ch.copyWithin(0, drop, this.bufEnd - this.bufStart);
    this.bufStart = keepFrom;
    for (const ch of this.buf) ch.fill(0, this.bufEnd - this.bufStart);
  }

  private read = (from: number, to: number): Stereo => {
    const out: Stereo = [new Float32Array(to - from), new Float32Array(to - from)];
    const lo = Math.max(from, this.bufStart, this.plan.lead);
    const hi = Math.min(to, this.bufEnd);
    if (Math.min(to, this.bufStart) > Math.max(from, this.plan.lead)) throw new Error(`overlap-add: position ${from} no longer buffered`);
    if (hi > lo) for (let c = 0; c < 2; c++) out[c]!.set(this.buf[c]!.subarray(lo - this.bufStart, hi - this.bufStart), lo - from);
    return out;
  };

  private async runChunk(length: number, last: boolean, total = Infinity): Promise<Record<string, Stereo>> {
    const { chunk, step, lead } = this.plan;
    const start = this.next;
    const stems = await this.run({ start, length, read: this.read });
    const w = this.plan.window(length);
    for (const name of this.stems) {
      const y = stems[name];
      if (!y) throw new Error(`overlap-add: runner gave no stem ${name}`);
      const acc = this.acc[name]!;
      for (let c = 0; c < 2; c++) {
        const a = acc[c]!;
        const src = y[c]!;
        for (let u = 0; u < length; u++) a[u]! += w[u]! * src[u]!;
      }
    }
    for (let u = 0; u < length; u++) this.wsum[u]! += w[u]!;
    // Final positions: everything before the next chunk, or all that is left after the last one.
    const done = last ? Math.min(length, total - start) : step;
    this.next = start + step;
    // Output index = mixture position - lead; positions past lead + n are tail padding, never emitted.
    const from = Math.max(start, lead);
    const to = Math.min(start + done, lead + this.received);
    const count = Math.max(0, to - from);
    const emitted: Record<string, Stereo> = {};
    for (const name of this.stems) {
      const acc = this.acc[name]!;
      const pair = [0, 1].map((c) => {
        const o = new Float32Array(count);
        const a = acc[c]!;
        for (let k = 0; k < count; k++) {
          const u = from - start + k;
          const s = this.wsum[u]!;
          o[k] = s > 0 ? a[u]! / s : 0;
        }
        return o;
      }) as Stereo;
      emitted[name] = pair;
      for (const a of acc) {
        a.copyWithin(0, done);
        a.fill(0, chunk - done);
      }
    }
    this.wsum.copyWithin(0, done);
    this.wsum.fill(0, chunk - done);
    return emitted;
  }
}

/** numpy.hanning(n): the symmetric Hann window UVR weights MDX chunks with. */
export function symmetricHann(n: number): Float64Array {
  const w = new Float64Array(n);
  if (n === 1) w[0] = 1;
  for (let i = 0; i < n && n > 1; i++) w[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1));
  return w;
}

/** demucs apply_model's transition weight: a triangle peaking mid-segment, over its max, to the power `power`. */
export function demucsTriangle(n: number, power = 1): Float64Array {
  const w = new Float64Array(n);
  const half = Math.floor(n / 2);
  for (let i = 0; i < half; i++) w[i] = i + 1;
  for (let i = half; i < n; i++) w[i] = n - i;
  let max = 0;
  for (const v of w) max = Math.max(max, v);
  for (let i = 0; i < n; i++) w[i] = (w[i]! / max) ** power;
  return w;
}
