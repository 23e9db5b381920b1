/**
 * Streaming sample-rate conversion through the Speex resampler (WASM), so stages with a fixed model
 * rate (RNNoise 48 kHz, DTLN/GTCRN/VAD 16 kHz) work at any input rate. Output is time-aligned with
 * input (skip_zeros removes the filter delay) and totals round(inputFrames * out/in) after flush.
 */
interface SpeexModule {
  _speex_resampler_init(ch: number, inRate: number, outRate: number, quality: number, errPtr: number): number;
  _speex_resampler_process_float(st: number, ch: number, inPtr: number, inLenPtr: number, outPtr: number, outLenPtr: number): number;
  _speex_resampler_skip_zeros(st: number): number;
  _speex_resampler_get_input_latency(st: number): number;
  _speex_resampler_destroy(st: number): void;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAPF32: Float32Array;
  HEAPU32: Uint32Array;
}

const CHUNK = 4096;

export class StreamResampler {
  private st: number;
  private readonly inPtr: number;
  private readonly outPtr: number;
  private readonly lenPtr: number;
  private readonly outCap: number;
  private inFrames = 0;
  private outFrames = 0;
  private closed = false;

  private constructor(private readonly m: SpeexModule, readonly channelCount: number, readonly inRate: number, readonly outRate: number, quality: number) {
    const err = m._malloc(4);
    this.st = m._speex_resampler_init(channelCount, inRate, outRate, quality, err);
    m._free(err);
    if (!this.st) throw new Error(`speex resampler init failed (${inRate} -> ${outRate})`);
    m._speex_resampler_skip_zeros(this.st);
    this.outCap = Math.ceil((CHUNK * outRate) / inRate) + 64;
    this.inPtr = m._malloc(CHUNK * 4);
    this.outPtr = m._malloc(this.outCap * 4);
    this.lenPtr = m._malloc(8);
  }

  static async create(channelCount: number, inRate: number, outRate: number, quality = 5): Promise<StreamResampler> {
    // A variable specifier: the package ships no type declarations.
    const spec = '@echogarden/speex-resampler-wasm';
    const mod = (await import(spec)) as { default: () => Promise<SpeexModule> };
    return new StreamResampler(await mod.default(), channelCount, inRate, outRate, quality);
  }

  private run(channels: Float32Array[]): Float32Array[] {
    const m = this.m;
    const n = channels[0]?.length ?? 0;
    const parts: Float32Array[][] = channels.map(() => []);
    for (let c = 0; c < this.channelCount; c++) {
      const x = channels[c]!;
      for (let s = 0; s < n; s += CHUNK) {
        const k = Math.min(CHUNK, n - s);
        m.HEAPF32.set(x.subarray(s, s + k), this.inPtr >> 2);
        let consumed = 0;
        while (consumed < k) {
          m.HEAPU32[this.lenPtr >> 2] = k - consumed;
          m.HEAPU32[(this.lenPtr >> 2) + 1] = this.outCap;
          m._speex_resampler_process_float(this.st, c, this.inPtr + consumed * 4, this.lenPtr, this.outPtr, this.lenPtr + 4);
          const used = m.HEAPU32[this.lenPtr >> 2]!;
          const made = m.HEAPU32[(this.lenPtr >> 2) + 1]!;
          parts[c]!.push(m.HEAPF32.slice(this.outPtr >> 2, (this.outPtr >> 2) + made));
          consumed += used;
          if (used === 0 && made === 0) break;
        }
      }
    }
    return parts.map((p) => {
      const total = p.reduce((a, b) => a + b.length, 0);
      const out = new Float32Array(total);
      let o = 0;
      for (const b of p) { out.set(b, o); o += b.length; }
      return out;
    });
  }

  process(channels: Float32Array[]): Float32Array[] {
    if (this.inRate === this.outRate) return channels;
    this.inFrames += channels[0]?.length ?? 0;
    const out = this.run(channels);
    this.outFrames += out[0]?.length ?? 0;
    return out;
  }

  /** Pushes the filter tail out (zeros in) and cuts the total to the exact converted length. */
  flush(): Float32Array[] {
    if (this.inRate === this.outRate || this.closed) return Array.from({ length: this.channelCount }, () => new Float32Array(0));
    this.closed = true;
    const pad = this.m._speex_resampler_get_input_latency(this.st) + 8;
    const out = this.run(Array.from({ length: this.channelCount }, () => new Float32Array(pad)));
    const want = Math.max(0, Math.round((this.inFrames * this.outRate) / this.inRate) - this.outFrames);
    this.destroy();
    return out.map((c) => c.subarray(0, Math.min(want, c.length)));
  }

  destroy(): void {
    const m = this.m;
    if (!this.st) return;
    m._speex_resampler_destroy(this.st);
    m._free(this.inPtr);
    m._free(this.outPtr);
    m._free(this.lenPtr);
    this.st = 0;
  }
}
