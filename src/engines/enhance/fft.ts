/**
 * Real FFT (power-of-two sizes) through a half-size complex radix-2 FFT with precomputed twiddles and
 * bit reversal. One instance per size and per user: scratch buffers are reused, so no allocation per frame.
 */
export class RealFFT {
  readonly bins: number;
  private readonly m: number;
  private readonly rev: Uint32Array;
  private readonly cosT: Float64Array;
  private readonly sinT: Float64Array;
  private readonly wr: Float64Array;
  private readonly wi: Float64Array;
  private readonly zr: Float64Array;
  private readonly zi: Float64Array;

  constructor(readonly size: number) {
    if (size < 4 || (size & (size - 1)) !== 0) throw new Error(`FFT size must be a power of two >= 4, got ${size}`);
    const m = size >> 1;
    this.m = m;
    this.bins = m + 1;
    const bits = Math.log2(m);
    this.rev = new Uint32Array(m);
    for (let i = 0; i < m; i++) {
      let r = 0;
      for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
      this.rev[i] = r;
    }
    this.cosT = new Float64Array(m >> 1 || 1);
    this.sinT = new Float64Array(m >> 1 || 1);
    for (let i = 0; i < m >> 1; i++) {
      this.cosT[i] = Math.cos((2 * Math.PI * i) / m);
      this.sinT[i] = -Math.sin((2 * Math.PI * i) / m);
    }
    this.wr = new Float64Array(m + 1);
    this.wi = new Float64Array(m + 1);
    for (let k = 0; k <= m; k++) {
      this.wr[k] = Math.cos((2 * Math.PI * k) / size);
      this.wi[k] = -Math.sin((2 * Math.PI * k) / size);
    }
    this.zr = new Float64Array(m);
    this.zi = new Float64Array(m);
  }

  /** In-place complex FFT of size m on zr/zi (sign -1 forward, +1 inverse without scaling). */
  private complex(inverse: boolean): void {
    const { m, zr, zi, rev, cosT, sinT } = this;
    for (let i = 0; i < m; i++) {
      const j = rev[i]!;
      if (j > i) {
        let t = zr[i]!; zr[i] = zr[j]!; zr[j] = t;
        t = zi[i]!; zi[i] = zi[j]!; zi[j] = t;
      }
    }
    const sgn = inverse ? -1 : 1;
    for (let len = 2; len <= m; len <<= 1) {
      const half = len >> 1;
      const step = m / len;
      for (let s = 0; s < m; s += len) {
        for (let k = 0; k < half; k++) {
          const c = cosT[k * step]!;
          const si = sgn * sinT[k * step]!;
          const a = s + k;
          const b = a + half;
          const tr = zr[b]! * c - zi[b]! * si;
          const ti = zr[b]! * si + zi[b]! * c;
          zr[b] = zr[a]! - tr;
          zi[b] = zi[a]! - ti;
          zr[a] = zr[a]! + tr;
          zi[a] = zi[a]! + ti;
        }
      }
    }
  }

  /** x (length size) -> re/im (length size/2+1). */
  forward(x: ArrayLike<number>, re: Float32Array | Float64Array, im: Float32Array | Float64Array): void {
    const { m, zr, zi, wr, wi } = this;
    for (let k = 0; k < m; k++) {
      zr[k] = x[2 * k]!;
      zi[k] = x[2 * k + 1]!;
    }
    this.complex(false);
    for (let k = 0; k <= m; k++) {
      const a = k === m ? 0 : k;
      const b = k === 0 ? 0 : m - k;
      const zkr = zr[a]!, zki = zi[a]!, zcr = zr[b]!, zci = -zi[b]!;
      const er = 0.5 * (zkr + zcr), ei = 0.5 * (zki + zci);
      // O = (Z[k] - conj(Z[m-k])) / 2i
      const dr = zkr - zcr, di = zki - zci;
      const or = 0.5 * di, oi = -0.5 * dr;
      re[k] = er + wr[k]! * or - wi[k]! * oi;
      im[k] = ei + wr[k]! * oi + wi[k]! * or;
    }
  }

  /** re/im (length size/2+1) -> x (length size), scaled so inverse(forward(x)) == x. */
  inverse(re: ArrayLike<number>, im: ArrayLike<number>, x: Float32Array | Float64Array): void {
    const { m, zr, zi, wr, wi } = this;
    for (let k = 0; k < m; k++) {
      const xr = re[k]!, xi = im[k]!;
      const cr = re[m - k]!, ci = -im[m - k]!;
      const er = 0.5 * (xr + cr), ei = 0.5 * (xi + ci);
      const dr = 0.5 * (xr - cr), di = 0.5 * (xi - ci);
      // O = D / W^k  (W^k unit modulus: multiply by its conjugate)
      const or = dr * wr[k]! + di * wi[k]!;
      const oi = di * wr[k]! - dr * wi[k]!;
      // Z = E + i O
      zr[k] = er - oi;
      zi[k] = ei + or;
    }
    this.complex(true);
    const s = 1 / m;
    for (let k = 0; k < m; k++) {
      x[2 * k] = zr[k]! * s;
      x[2 * k + 1] = zi[k]! * s;
    }
  }
}

export function hann(n: number, periodic = true): Float32Array {
  const w = new Float32Array(n);
  const d = periodic ? n : n - 1;
  for (let i = 0; i < n; i++) w[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / d);
  return w;
}

export function nextPow2(n: number): number {
  let p = 1;
  while (p < n) p <<= 1;
  return p;
}

export interface StftOptions {
  size: number;
  hop: number;
  analysis: Float32Array;
  synthesis: Float32Array;
}

/**
 * Streaming STFT / overlap-add for one channel: frames of `size` every `hop` samples, a callback edits
 * the spectrum in place. Output lags input by size - hop samples (the caller trims it).
 */
export class StftProcessor {
  readonly fft: RealFFT;
  readonly bins: number;
  readonly latency: number;
  readonly re: Float64Array;
  readonly im: Float64Array;
  private readonly inBuf: Float32Array;
  private inFill: number;
  private readonly ola: Float64Array;
  private readonly frame: Float64Array;
  private readonly norm: number;

  constructor(private readonly opts: StftOptions, private readonly onFrame: (re: Float64Array, im: Float64Array) => void) {
    const { size, hop, analysis, synthesis } = opts;
    this.fft = new RealFFT(size);
    this.bins = size / 2 + 1;
    this.latency = size - hop;
    this.re = new Float64Array(this.bins);
    this.im = new Float64Array(this.bins);
    this.inBuf = new Float32Array(size);
    this.inFill = size - hop; // leading zeros: the first frame ends at the first hop of input
    this.ola = new Float64Array(size);
    this.frame = new Float64Array(size);
    // Overlap-add gain of analysis*synthesis windows at this hop (constant for the windows used here).
    let s = 0;
    for (let i = 0; i < size; i += hop) s += analysis[i]! * synthesis[i]!;
    let s2 = 0;
    for (let i = Math.floor(hop / 2); i < size; i += hop) s2 += analysis[i]! * synthesis[i]!;
    this.norm = 1 / ((s + s2) / 2 || 1);
  }

  /** Returns the output samples completed by this input (a multiple of hop). */
  process(x: Float32Array): Float32Array {
    const out = new Float32Array(this.outLength(x.length));
    let xi = 0, o = 0;
    while ((xi = this.fill(x, xi)) >= 0) {
      this.analyze();
      this.onFrame(this.re, this.im);
      o = this.synthesize(out, o);
      if (xi >= x.length && this.inFill < this.opts.size) break;
    }
    return out.subarray(0, o);
  }

  /** Same, for frame work that is asynchronous (ONNX sessions). */
  async processAsync(x: Float32Array, onFrame: (re: Float64Array, im: Float64Array) => Promise<void>): Promise<Float32Array> {
    const out = new Float32Array(this.outLength(x.length));
    let xi = 0, o = 0;
    while ((xi = this.fill(x, xi)) >= 0) {
      this.analyze();
      await onFrame(this.re, this.im);
      o = this.synthesize(out, o);
      if (xi >= x.length && this.inFill < this.opts.size) break;
    }
    return out.subarray(0, o);
  }

  private outLength(n: number): number {
    const { size, hop } = this.opts;
    return Math.max(0, Math.floor((this.inFill + n - (size - hop)) / hop)) * hop;
  }

  /** Copies input until a frame is full; returns the new input position, or -1 when no frame is ready. */
  private fill(x: Float32Array, xi: number): number {
    const size = this.opts.size;
    const k = Math.min(size - this.inFill, x.length - xi);
    this.inBuf.set(x.subarray(xi, xi + k), this.inFill);
    this.inFill += k;
    return this.inFill < size ? -1 : xi + k;
  }

  private analyze(): void {
    const { size, analysis } = this.opts;
    const { inBuf, frame } = this;
    for (let i = 0; i < size; i++) frame[i] = inBuf[i]! * analysis[i]!;
    this.fft.forward(frame, this.re, this.im);
  }

  private synthesize(out: Float32Array, o: number): number {
    const { size, hop, synthesis } = this.opts;
    const { ola, frame, norm, inBuf } = this;
    this.fft.inverse(this.re, this.im, frame);
    for (let i = 0; i < size; i++) ola[i] = ola[i]! + frame[i]! * synthesis[i]!;
    for (let i = 0; i < hop; i++) out[o + i] = ola[i]! * norm;
    ola.copyWithin(0, hop);
    ola.fill(0, size - hop);
    inBuf.copyWithin(0, hop);
    this.inFill -= hop;
    return o + hop;
  }
}

export function sqrtHann(n: number): Float32Array {
  return hann(n).map((v) => Math.sqrt(v));
}
