import { RealFFT, type RealFft } from './fft.js';
import { hannWindow } from './stft.js';

/*
 * Frame-by-frame spectral work for streaming stages (denoisers, dereverberation, analysis passes): the streaming
 * STFT below, and the window, size and FFT helpers such stages need, importable from this one module.
 */
export { RealFFT } from './fft.js';
export { hannWindow as hann } from './stft.js';

export function nextPow2(n: number): number {
  let p = 1;
  while (p < n) p <<= 1;
  return p;
}

/** Square-root periodic Hann: as analysis and synthesis window, the product is a Hann that overlap-adds to 1 at hop N/2. */
export function sqrtHann(n: number): Float32Array {
  return hannWindow(n).map((v) => Math.sqrt(v));
}

export interface StftStreamOptions {
  size: number;
  hop: number;
  analysis: Float32Array;
  synthesis: Float32Array;
  /**
   * The transform of `size` (e.g. a pffft instance from loadFftProvider); by default the synchronous JS RealFFT.
   * The caller keeps ownership (and disposes it).
   */
  fft?: RealFft;
}

/**
 * Streaming STFT / overlap-add for one channel: frames of `size` every `hop` samples, a callback edits the spectrum
 * (float64, size/2+1 bins) in place. Output lags input by size - hop samples (the caller trims it). Unlike stft()/istft()
 * in stft.ts (whole signals, centred frames, torch's layout), this takes any number of samples per call and holds only
 * one frame.
 */
export class StftProcessor {
  readonly fft: RealFft;
  readonly bins: number;
  readonly latency: number;
  readonly re: Float64Array;
  readonly im: Float64Array;
  private readonly inBuf: Float32Array;
  private inFill: number;
  private readonly ola: Float64Array;
  private readonly frame: Float64Array;
  private readonly norm: number;

  constructor(private readonly opts: StftStreamOptions, private readonly onFrame: (re: Float64Array, im: Float64Array) => void) {
    const { size, hop, analysis, synthesis } = opts;
    if (opts.fft && opts.fft.size !== size) throw new Error(`StftProcessor: FFT size ${opts.fft.size} != frame size ${size}`);
    this.fft = opts.fft ?? new RealFFT(size);
    this.bins = size / 2 + 1;
    this.latency = size - hop;
    this.re = new Float64Array(this.bins);
    this.im = new Float64Array(this.bins);
    this.inBuf = new Float32Array(size);
    this.inFill = size - hop; // leading zeros: the first frame ends at the first hop of input
    this.ola = new Float64Array(size);
    this.frame = new Float64Array(size);
    // Overlap-add gain of analysis*synthesis windows at this hop, averaged over two phases (constant for the
    // windows used here: Hann at 50/75%, sqrt-Hann at 50%).
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
