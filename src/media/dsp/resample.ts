/**
 * The project's one resampling kernel: band-limited interpolation with a Kaiser-windowed sinc (beta 8.6), its cutoff
 * relative to the lower of the two Nyquists so downsampling does not alias. Output sample n sits at input position
 * n*inRate/outRate, computed exactly as a fraction, so the taps repeat with the rate ratio's period and are computed
 * once per phase. Input before the start and after the end counts as silence; output is time-aligned with input (the
 * kernel is centred, no delay to remove). Two settings of the same kernel (RESAMPLE_QUALITY):
 * - `fast` (resample(), 16 zero crossings, cutoff at the Nyquist): in-band error about -95 dB, but the transition band
 *   straddles the Nyquist, so a tone at 1.1x the output Nyquist comes through at about -28 dB. Joins voices and feeds
 *   separation models, whose streaming context (engines/separation/onnx/stream.ts) is sized for this width.
 * - `high` (StreamResampler.create, the enhancement stages: 36 zero crossings, cutoff at 0.92 of the Nyquist, close
 *   to the Speex quality-5 filter the stages used before): flat to about 0.85 of the Nyquist; a tone at 1.1x the
 *   Nyquist is rejected by about 110 dB, as Speex did (bench/results/dsp-core.md).
 *
 * StreamResampler takes any number of frames per call and gives every output sample as soon as the input it needs
 * has arrived; flush() gives the rest, for a total of round(inputFrames * outRate / inRate). Whatever the block
 * sizes, the output is bit-identical to resampleOnce() on the whole signal (the same taps, summed in the same order).
 */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  for (let k = 1; k < 30; k++) {
    term *= (x / (2 * k)) ** 2;
    sum += term;
    if (term < 1e-12 * sum) break;
  }
  return sum;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

export const RESAMPLE_QUALITY = {
  fast: { zeroCrossings: 16, cutoff: 1 },
  high: { zeroCrossings: 36, cutoff: 0.92 },
} as const;
export type ResampleQuality = keyof typeof RESAMPLE_QUALITY;

const BETA = 8.6;
/** Kernel samples per input sample of distance, linearly interpolated. */
const TABLE_STEPS = 512;
/** Above this many phases (rates with a tiny common divisor) taps are computed per output sample instead of cached. */
const MAX_CACHED_PHASES = 4096;

export class StreamResampler {
  /** The rates divided by their common divisor: output n sits at input position n*from/to. */
  private readonly from: number;
  private readonly to: number;
  /** Half the kernel's width, in input samples. */
  private readonly halfWidth: number;
  private readonly kernel: Float32Array;
  private readonly phases: Array<Float64Array | undefined>;
  /** Input kept per channel: absolute frames histStart .. histStart + histLen - 1. */
  private hist: Float32Array[];
  private histStart = 0;
  private histLen = 0;
  private inFrames = 0;
  private outFrames = 0;
  private closed = false;

  constructor(readonly channelCount: number, readonly inRate: number, readonly outRate: number, quality: ResampleQuality = 'fast') {
    if (!(Number.isInteger(inRate) && inRate > 0 && Number.isInteger(outRate) && outRate > 0)) {
      throw new Error(`resampler: rates must be positive integers (${inRate} -> ${outRate})`);
    }
    const g = gcd(inRate, outRate);
    this.from = inRate / g;
    this.to = outRate / g;
    const { zeroCrossings, cutoff: relative } = RESAMPLE_QUALITY[quality];
    const cutoff = relative * Math.min(1, outRate / inRate); // relative to the input Nyquist
    this.halfWidth = zeroCrossings / cutoff;
    // The Bessel window is far too costly per tap: tabulated once, interpolated.
    const size = Math.ceil(this.halfWidth * TABLE_STEPS) + 2;
    this.kernel = new Float32Array(size);
    const i0Beta = besselI0(BETA);
    for (let j = 0; j < size; j++) {
      const d = j / TABLE_STEPS;
      const x = d * cutoff;
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
      const w = d / this.halfWidth;
      this.kernel[j] = w >= 1 ? 0 : ((sinc * besselI0(BETA * Math.sqrt(1 - w * w))) / i0Beta) * cutoff;
    }
    this.phases = new Array<Float64Array | undefined>(this.to <= MAX_CACHED_PHASES ? this.to : 0);
    this.hist = Array.from({ length: channelCount }, () => new Float32Array(0));
  }

  /**
   * The enhancement stages' resampler (`high`). Asynchronous only because the stages were written for the former WASM
   * resampler; there is nothing to load.
   */
  static async create(channelCount: number, inRate: number, outRate: number, quality: ResampleQuality = 'high'): Promise<StreamResampler> {
    return new StreamResampler(channelCount, inRate, outRate, quality);
  }

  /** First tap (relative to the output's integer input position) of phase `rem`. */
  private lo(rem: number): number {
    return Math.ceil(rem / this.to - this.halfWidth);
  }

  private hi(rem: number): number {
    return Math.floor(rem / this.to + this.halfWidth);
  }

  /** The taps of phase `rem` (output position base + rem/to), for offsets lo(rem)..hi(rem). */
  private taps(rem: number): Float64Array {
    const cached = this.phases[rem];
    if (cached) return cached;
    const frac = rem / this.to;
    const lo = this.lo(rem);
    const w = new Float64Array(this.hi(rem) - lo + 1);
    const kernel = this.kernel;
    for (let i = 0; i < w.length; i++) {
      const pos = Math.abs(lo + i - frac) * TABLE_STEPS;
      const j = pos | 0;
      const f = pos - j;
      w[i] = j + 1 < kernel.length ? kernel[j]! + (kernel[j + 1]! - kernel[j]!) * f : 0;
    }
    if (rem < this.phases.length) this.phases[rem] = w;
    return w;
  }

  process(channels: Float32Array[]): Float32Array[] {
    if (this.inRate === this.outRate) return channels;
    if (this.closed) throw new Error('resampler: process after flush');
    const n = channels[0]?.length ?? 0;
    for (let c = 0; c < this.channelCount; c++) {
      const grown = new Float32Array(this.histLen + n);
      grown.set(this.hist[c]!.subarray(0, this.histLen));
      grown.set(channels[c]!.subarray(0, n), this.histLen);
      this.hist[c] = grown;
    }
    this.histLen += n;
    this.inFrames += n;
    // Outputs whose last tap has arrived: base(n) + hi <= inFrames - 1.
    let end = this.outFrames;
    for (;;) {
      const q = end * this.from;
      const base = Math.floor(q / this.to);
      if (base + this.hi(q - base * this.to) > this.inFrames - 1) break;
      end++;
    }
    return this.emit(end);
  }

  /** The output still owed: input after the end counts as silence. */
  flush(): Float32Array[] {
    if (this.inRate === this.outRate || this.closed) return Array.from({ length: this.channelCount }, () => new Float32Array(0));
    const total = Math.round((this.inFrames * this.outRate) / this.inRate);
    const out = this.emit(Math.max(this.outFrames, total));
    this.closed = true;
    this.hist = this.hist.map(() => new Float32Array(0));
    this.histLen = 0;
    return out;
  }

  /** Nothing native to free; kept so callers written for the WASM resampler need no change. */
  destroy(): void {}

  /** Output samples outFrames .. end - 1 per channel, then drops the input no later output needs. */
  private emit(end: number): Float32Array[] {
    const count = end - this.outFrames;
    const out = Array.from({ length: this.channelCount }, () => new Float32Array(count));
    const last = this.inFrames - 1;
    for (let i = 0; i < count; i++) {
      const q = (this.outFrames + i) * this.from;
      const base = Math.floor(q / this.to);
      const rem = q - base * this.to;
      const w = this.taps(rem);
      const first = base + this.lo(rem);
      const k0 = Math.max(0, first);
      const taps = Math.min(last, base + this.hi(rem)) - k0 + 1;
      const hOff = k0 - this.histStart;
      const wOff = k0 - first;
      for (let c = 0; c < this.channelCount; c++) {
        const h = this.hist[c]!;
        let acc = 0;
        for (let j = 0; j < taps; j++) acc += h[hOff + j]! * w[wOff + j]!;
        out[c]![i] = acc;
      }
    }
    this.outFrames = end;
    // The next output's first tap; everything before it is no longer needed.
    const q = this.outFrames * this.from;
    const base = Math.floor(q / this.to);
    const keepFrom = Math.min(this.inFrames, Math.max(this.histStart, base + this.lo(q - base * this.to)));
    const drop = keepFrom - this.histStart;
    if (drop > 0) {
      for (let c = 0; c < this.channelCount; c++) this.hist[c] = this.hist[c]!.slice(drop, this.histLen);
      this.histLen -= drop;
      this.histStart = keepFrom;
    }
    return out;
  }
}

/** One whole signal through the kernel (the same samples StreamResampler gives block by block). */
export function resampleOnce(input: Float32Array, fromRate: number, toRate: number, quality: ResampleQuality = 'fast'): Float32Array {
  if (fromRate === toRate) return input.slice();
  const rs = new StreamResampler(1, fromRate, toRate, quality);
  const a = rs.process([input])[0]!;
  const b = rs.flush()[0]!;
  const out = new Float32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
