import { createRequire } from 'node:module';

/** Sample and spectrum buffers: float32 for masks and models, float64 where a stage accumulates statistics. */
export type FloatArray = Float32Array | Float64Array;

/**
 * Real FFT of one fixed size. Spectra are split re/im arrays of size/2+1 bins (numpy rfft layout,
 * forward sign exp(-2*pi*i*n*k/N), unnormalised); `inverse` divides by N so inverse(forward(x)) == x.
 * The JS backend computes in float64 whatever the buffers; pffft computes in float32.
 */
export interface RealFft {
  readonly size: number;
  readonly backend: 'pffft-wasm' | 'js';
  forward(input: FloatArray, re: FloatArray, im: FloatArray): void;
  inverse(re: FloatArray, im: FloatArray, out: FloatArray): void;
  /** Frees WASM memory; the JS backend has nothing to free. */
  dispose(): void;
}

export interface FftProvider {
  create(size: number): RealFft;
}

interface PffftModule {
  HEAPF32: Float32Array;
  _pffft_new_setup(n: number, transform: number): number;
  _pffft_destroy_setup(setup: number): void;
  _pffft_aligned_malloc(bytes: number): number;
  _pffft_aligned_free(ptr: number): void;
  _pffft_transform_ordered(setup: number, input: number, output: number, work: number, direction: number): void;
}

const PFFFT_REAL = 0;
const PFFFT_FORWARD = 0;
const PFFFT_BACKWARD = 1;

/** pffft (SIMD build) handles N = 2^a 3^b 5^c with N a multiple of 32 for real transforms. */
export function pffftSupports(n: number): boolean {
  if (n < 32 || n % 32 !== 0) return false;
  let m = n;
  for (const p of [2, 3, 5]) while (m % p === 0) m /= p;
  return m === 1;
}

/**
 * Loads one private pffft WASM instance (no module-level cache: each engine owns its instance).
 * Perf floors: pffft-wasm STFT is 4.5x faster than fft.js. Sizes pffft cannot do fall back to JS.
 */
export async function loadFftProvider(opts: { wasm?: boolean } = {}): Promise<FftProvider> {
  if (opts.wasm === false) return jsFftProvider();
  let mod: PffftModule;
  try {
    // The package ships no type declarations; import through a resolved path so tsc does not look for them.
    const require = createRequire(import.meta.url);
    const entry = require.resolve('@echogarden/pffft-wasm/simd');
    const factory = ((await import(entry)) as { default: () => Promise<PffftModule> }).default;
    mod = await factory();
  } catch {
    return jsFftProvider();
  }
  const js = jsFftProvider();
  return { create: (n) => (pffftSupports(n) ? pffftReal(mod, n) : js.create(n)) };
}

export function jsFftProvider(): FftProvider {
  return { create: (n) => jsReal(n) };
}

function pffftReal(mod: PffftModule, n: number): RealFft {
  const setup = mod._pffft_new_setup(n, PFFFT_REAL);
  if (!setup) throw new Error(`pffft: cannot set up size ${n}`);
  const inPtr = mod._pffft_aligned_malloc(n * 4);
  const outPtr = mod._pffft_aligned_malloc(n * 4);
  const workPtr = mod._pffft_aligned_malloc(n * 4);
  const half = n >> 1;
  let disposed = false;
  return {
    size: n,
    backend: 'pffft-wasm',
    forward(input, re, im) {
      // HEAPF32 is re-read per call: a memory growth elsewhere in the instance replaces the view.
      const heap = mod.HEAPF32;
      heap.set(input.subarray(0, n), inPtr >> 2);
      mod._pffft_transform_ordered(setup, inPtr, outPtr, workPtr, PFFFT_FORWARD);
      const o = outPtr >> 2;
      re[0] = heap[o]!;
      im[0] = 0;
      re[half] = heap[o + 1]!;
      im[half] = 0;
      for (let k = 1; k < half; k++) {
        re[k] = heap[o + 2 * k]!;
        im[k] = heap[o + 2 * k + 1]!;
      }
    },
    inverse(re, im, out) {
      const heap = mod.HEAPF32;
      const p = inPtr >> 2;
      heap[p] = re[0]!;
      heap[p + 1] = re[half]!;
      for (let k = 1; k < half; k++) {
        heap[p + 2 * k] = re[k]!;
        heap[p + 2 * k + 1] = im[k]!;
      }
      mod._pffft_transform_ordered(setup, inPtr, outPtr, workPtr, PFFFT_BACKWARD);
      const o = outPtr >> 2;
      const scale = 1 / n;
      for (let i = 0; i < n; i++) out[i] = heap[o + i]! * scale;
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      mod._pffft_aligned_free(inPtr);
      mod._pffft_aligned_free(outPtr);
      mod._pffft_aligned_free(workPtr);
      mod._pffft_destroy_setup(setup);
    },
  };
}

/**
 * In-place iterative radix-2 complex FFT (sign -1 forward, unscaled both ways); n must be a power of two.
 * The one radix-2 kernel of the project: the packed real FFT, Bluestein and the float64 FFT of fft64.ts run on it.
 */
export function makeRadix2(n: number): (re: Float64Array, im: Float64Array, inverse: boolean) => void {
  const bits = Math.log2(n);
  const rev = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    let r = 0;
    for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
    rev[i] = r;
  }
  const cos = new Float64Array(n >> 1);
  const sin = new Float64Array(n >> 1);
  for (let i = 0; i < n >> 1; i++) {
    cos[i] = Math.cos((2 * Math.PI * i) / n);
    sin[i] = Math.sin((2 * Math.PI * i) / n);
  }
  return (re, im, inverse) => {
    for (let i = 0; i < n; i++) {
      const j = rev[i]!;
      if (j > i) {
        let t = re[i]!; re[i] = re[j]!; re[j] = t;
        t = im[i]!; im[i] = im[j]!; im[j] = t;
      }
    }
    const sgn = inverse ? 1 : -1;
    for (let size = 2; size <= n; size <<= 1) {
      const halfSize = size >> 1;
      const step = n / size;
      for (let start = 0; start < n; start += size) {
        for (let k = 0; k < halfSize; k++) {
          const wr = cos[k * step]!;
          const wi = sgn * sin[k * step]!;
          const a = start + k;
          const b = a + halfSize;
          const xr = re[b]! * wr - im[b]! * wi;
          const xi = re[b]! * wi + im[b]! * wr;
          re[b] = re[a]! - xr;
          im[b] = im[a]! - xi;
          re[a]! += xr;
          im[a]! += xi;
        }
      }
    }
  };
}

/** Complex DFT of any length: radix-2 when possible, Bluestein's chirp-z otherwise. */
function makeComplexDft(n: number): (re: Float64Array, im: Float64Array, inverse: boolean) => void {
  if ((n & (n - 1)) === 0) return makeRadix2(n);
  let m = 1;
  while (m < 2 * n - 1) m <<= 1;
  const fft = makeRadix2(m);
  const wr = new Float64Array(n);
  const wi = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    // k*k mod 2n keeps the chirp angle exact for large k.
    const a = (Math.PI * ((k * k) % (2 * n))) / n;
    wr[k] = Math.cos(a);
    wi[k] = Math.sin(a);
  }
  const ar = new Float64Array(m);
  const ai = new Float64Array(m);
  const br = new Float64Array(m);
  const bi = new Float64Array(m);
  return (re, im, inverse) => {
    const s = inverse ? -1 : 1;
    ar.fill(0); ai.fill(0); br.fill(0); bi.fill(0);
    for (let k = 0; k < n; k++) {
      // x[k] * exp(-+i*pi*k^2/n)
      const cr = wr[k]!;
      const ci = -s * wi[k]!;
      ar[k] = re[k]! * cr - im[k]! * ci;
      ai[k] = re[k]! * ci + im[k]! * cr;
    }
    br[0] = wr[0]!; bi[0] = s * wi[0]!;
    for (let k = 1; k < n; k++) {
      br[k] = br[m - k] = wr[k]!;
      bi[k] = bi[m - k] = s * wi[k]!;
    }
    fft(ar, ai, false);
    fft(br, bi, false);
    for (let i = 0; i < m; i++) {
      const r = ar[i]! * br[i]! - ai[i]! * bi[i]!;
      ai[i] = ar[i]! * bi[i]! + ai[i]! * br[i]!;
      ar[i] = r;
    }
    fft(ar, ai, true);
    for (let k = 0; k < n; k++) {
      const xr = ar[k]! / m;
      const xi = ai[k]! / m;
      const cr = wr[k]!;
      const ci = -s * wi[k]!;
      re[k] = xr * cr - xi * ci;
      im[k] = xr * ci + xi * cr;
    }
  };
}

function jsReal(n: number): RealFft {
  if (n >= 4 && (n & (n - 1)) === 0) return new RealFFT(n);
  const dft = makeComplexDft(n);
  const re = new Float64Array(n);
  const im = new Float64Array(n);
  const half = n >> 1;
  return {
    size: n,
    backend: 'js',
    forward(input, outRe, outIm) {
      for (let i = 0; i < n; i++) re[i] = input[i]!;
      im.fill(0);
      dft(re, im, false);
      for (let k = 0; k <= half; k++) {
        outRe[k] = re[k]!;
        outIm[k] = im[k]!;
      }
    },
    inverse(inRe, inIm, out) {
      // Hermitian extension of the half spectrum; DC and Nyquist imaginary parts are ignored as numpy does.
      re[0] = inRe[0]!;
      im[0] = 0;
      for (let k = 1; k <= half; k++) {
        re[k] = inRe[k]!;
        im[k] = inIm[k]!;
        if (n - k !== k) {
          re[n - k] = inRe[k]!;
          im[n - k] = -inIm[k]!;
        }
      }
      if (n % 2 === 0) im[half] = 0;
      dft(re, im, true);
      for (let i = 0; i < n; i++) out[i] = re[i]! / n;
    },
    dispose() {},
  };
}

/**
 * The JS real FFT for power-of-two sizes, synchronous so a stage can build it in its constructor: the signal is packed
 * as a half-size complex sequence (even samples real, odd imaginary), transformed by the radix-2 kernel and split into
 * the N/2+1 bins with one twiddle pass; half the work of a full complex transform. Float64 scratch, no allocation per
 * frame; one instance per size and per user (the scratch is shared between calls).
 */
export class RealFFT implements RealFft {
  readonly backend = 'js' as const;
  readonly bins: number;
  private readonly m: number;
  private readonly complex: (re: Float64Array, im: Float64Array, inverse: boolean) => void;
  private readonly wr: Float64Array;
  private readonly wi: Float64Array;
  private readonly zr: Float64Array;
  private readonly zi: Float64Array;

  constructor(readonly size: number) {
    if (size < 4 || (size & (size - 1)) !== 0) throw new Error(`FFT size must be a power of two >= 4, got ${size}`);
    const m = size >> 1;
    this.m = m;
    this.bins = m + 1;
    this.complex = makeRadix2(m);
    this.wr = new Float64Array(m + 1);
    this.wi = new Float64Array(m + 1);
    for (let k = 0; k <= m; k++) {
      this.wr[k] = Math.cos((2 * Math.PI * k) / size);
      this.wi[k] = -Math.sin((2 * Math.PI * k) / size);
    }
    this.zr = new Float64Array(m);
    this.zi = new Float64Array(m);
  }

  forward(x: FloatArray, re: FloatArray, im: FloatArray): void {
    const { m, zr, zi, wr, wi } = this;
    for (let k = 0; k < m; k++) {
      zr[k] = x[2 * k]!;
      zi[k] = x[2 * k + 1]!;
    }
    this.complex(zr, zi, false);
    for (let k = 0; k <= m; k++) {
      const a = k === m ? 0 : k;
      const b = k === 0 ? 0 : m - k;
      const zkr = zr[a]!, zki = zi[a]!, zcr = zr[b]!, zci = -zi[b]!;
      // E = (Z[k] + conj(Z[m-k])) / 2 is the even samples' spectrum, O = (Z[k] - conj(Z[m-k])) / 2i the odd ones'.
      const er = 0.5 * (zkr + zcr), ei = 0.5 * (zki + zci);
      const dr = zkr - zcr, di = zki - zci;
      const or = 0.5 * di, oi = -0.5 * dr;
      re[k] = er + wr[k]! * or - wi[k]! * oi;
      im[k] = ei + wr[k]! * oi + wi[k]! * or;
    }
  }

  inverse(re: FloatArray, im: FloatArray, x: FloatArray): void {
    const { m, zr, zi, wr, wi } = this;
    for (let k = 0; k < m; k++) {
      const xr = re[k]!, xi = im[k]!;
      const cr = re[m - k]!, ci = -im[m - k]!;
      const er = 0.5 * (xr + cr), ei = 0.5 * (xi + ci);
      const dr = 0.5 * (xr - cr), di = 0.5 * (xi - ci);
      // O = D / W^k (W^k has unit modulus: multiply by its conjugate), then Z = E + i O.
      const or = dr * wr[k]! + di * wi[k]!;
      const oi = di * wr[k]! - dr * wi[k]!;
      zr[k] = er - oi;
      zi[k] = ei + or;
    }
    this.complex(zr, zi, true);
    const s = 1 / m;
    for (let k = 0; k < m; k++) {
      x[2 * k] = zr[k]! * s;
      x[2 * k + 1] = zi[k]! * s;
    }
  }

  dispose(): void {}
}
