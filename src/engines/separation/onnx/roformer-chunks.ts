/**
 * python-audio-separator's chunking for RoFormer models (MDXCSeparator.demix, 0.47.1), streamed:
 * chunks of `chunk` samples start every `step` (= chunk // num_overlap) while a chunk ends before the input does;
 * then one last chunk ends exactly at the input's end (starting at max(n - chunk, 0), so an input shorter than a
 * chunk is one short chunk). No padding and no fades: each chunk's output is weighted by a symmetric Hamming
 * window of `chunk` samples (scipy.signal.windows.hamming, in float32), summed, and divided by the summed windows
 * (at least 1e-10, so a position no output reached is 0).
 *
 * Whether a chunk is the last is only known at the end, so a position is emitted once no later chunk can reach it:
 * before the next grid chunk and more than a chunk before the input received so far (the end-aligned last chunk
 * starts at n - chunk or later). Input and accumulators are held from the first position not yet emitted, about
 * two chunks whatever the song's length.
 */
export type Stereo = [Float32Array, Float32Array];

/** Runs the network on a chunk; each stem's output may be shorter than the chunk (an iSTFT of whole hops). */
export type ChunkModel = (part: Stereo) => Promise<Record<string, Stereo>>;

export interface ChunkBlock {
  /** The mixture over the block's positions (for residual stems). */
  mix: Stereo;
  stems: Record<string, Stereo>;
}

/** scipy.signal.windows.hamming(n) (symmetric), cast to float32 as the reference does. */
export function hammingSymmetric(n: number): Float32Array {
  const w = new Float32Array(n);
  if (n === 1) w[0] = 1;
  for (let i = 0; i < n && n > 1; i++) w[i] = 0.54 - 0.46 * Math.cos((2 * Math.PI * i) / (n - 1));
  return w;
}

/** The reference's chunk starts for an input of n samples (for tests and planning). */
export function chunkStarts(n: number, chunk: number, step: number): number[] {
  const starts: number[] = [];
  for (let s = 0; s < n; s += step) {
    if (s + chunk >= n) {
      const tail = Math.max(n - chunk, 0);
      if (starts[starts.length - 1] !== tail) starts.push(tail);
      break;
    }
    starts.push(s);
  }
  return starts;
}

export class MdxcChunker {
  private input: Stereo = [new Float32Array(0), new Float32Array(0)];
  /** Input samples held: positions [emitted, received). */
  private held = 0;
  private received = 0;
  private emitted = 0;
  private next = 0;
  private lastStart = -1;
  private acc: Record<string, [Float64Array, Float64Array]> = {};
  private wsum = new Float64Array(0);
  private readonly window: Float32Array;
  private ended = false;

  constructor(
    private readonly chunk: number,
    private readonly step: number,
    private readonly stems: readonly string[],
    private readonly model: ChunkModel,
  ) {
    if (!(step > 0 && step <= chunk)) throw new Error(`chunking: need 0 < step (${step}) <= chunk (${chunk})`);
    this.window = hammingSymmetric(chunk);
  }

  async push(x: Stereo): Promise<ChunkBlock[]> {
    if (this.ended) throw new Error('chunking: push after end');
    this.append(x);
    while (this.next + this.chunk < this.received) {
      await this.runAt(this.next, this.chunk);
      this.next += this.step;
    }
    return this.emitTo(Math.min(this.next, this.received - this.chunk));
  }

  async end(): Promise<ChunkBlock[]> {
    if (this.ended) return [];
    this.ended = true;
    const n = this.received;
    if (n === 0) return [];
    const tail = Math.max(n - this.chunk, 0);
    if (this.lastStart !== tail) await this.runAt(tail, Math.min(this.chunk, n - tail));
    return this.emitTo(n);
  }

  private append(x: Stereo): void {
    const len = x[0].length;
    if (this.held + len > this.input[0].length) {
      const cap = Math.max(this.held + len, 2 * this.input[0].length, 2 * this.chunk);
      this.input = this.input.map((c) => {
        const grown = new Float32Array(cap);
        grown.set(c.subarray(0, this.held));
        return grown;
      }) as Stereo;
    }
    for (let c = 0; c < 2; c++) this.input[c]!.set(x[c]!, this.held);
    this.held += len;
    this.received += len;
  }

  /** Accumulator slots for positions [emitted, upTo). */
  private reserve(upTo: number): void {
    const need = upTo - this.emitted;
    if (need <= this.wsum.length) return;
    const cap = Math.max(need, 2 * this.wsum.length);
    const grow = (a: Float64Array) => {
      const b = new Float64Array(cap);
      b.set(a);
      return b;
    };
    this.wsum = grow(this.wsum);
    for (const s of this.stems) this.acc[s] = (this.acc[s] ?? [new Float64Array(0), new Float64Array(0)]).map(grow) as [Float64Array, Float64Array];
  }

  private async runAt(start: number, length: number): Promise<void> {
    const from = start - this.emitted;
    if (from < 0) throw new Error(`chunking: position ${start} was already emitted`);
    const part = this.input.map((c) => c.slice(from, from + length)) as Stereo;
    const out = await this.model(part);
    this.lastStart = start;
    this.reserve(start + length);
    let safe = length;
    for (const s of this.stems) {
      const y = out[s];
      if (!y) throw new Error(`chunking: the model gave no stem ${s}`);
      safe = Math.min(safe, y[0].length, y[1].length);
    }
    const w = this.window;
    for (const s of this.stems) {
      const y = out[s]!;
      const acc = this.acc[s]!;
      for (let c = 0; c < 2; c++) {
        const a = acc[c]!;
        const src = y[c]!;
        for (let u = 0; u < safe; u++) a[from + u]! += Math.fround(src[u]! * w[u]!);
      }
    }
    for (let u = 0; u < safe; u++) this.wsum[from + u]! += w[u]!;
  }

  private emitTo(position: number): ChunkBlock[] {
    const count = position - this.emitted;
    if (count <= 0) return [];
    this.reserve(position);
    const stems: Record<string, Stereo> = {};
    for (const s of this.stems) {
      const acc = this.acc[s]!;
      stems[s] = acc.map((a) => {
        const o = new Float32Array(count);
        for (let u = 0; u < count; u++) o[u] = a[u]! / Math.max(this.wsum[u]!, 1e-10);
        a.copyWithin(0, count);
        a.fill(0, a.length - count);
        return o;
      }) as Stereo;
    }
    this.wsum.copyWithin(0, count);
    this.wsum.fill(0, this.wsum.length - count);
    const mix = this.input.map((c) => c.slice(0, count)) as Stereo;
    for (const c of this.input) c.copyWithin(0, count, this.held);
    this.held -= count;
    this.emitted = position;
    return [{ mix, stems }];
  }
}
