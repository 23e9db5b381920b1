/**
 * Double-precision complex FFT (radix 2, in place, split re/im arrays). The project's FftProvider (fft.ts) is float32,
 * which is right for STFT masks but not for metrics: BSS Eval's correlations sum millions of products, and float32
 * spectra would move ISR/SIR/SAR by more than the 1e-3 dB museval reports to. Forward sign exp(-2 pi i n k / N),
 * unnormalised; `inverse` divides by N.
 */
export interface ComplexFft64 {
  readonly size: number;
  forward(re: Float64Array, im: Float64Array): void;
  inverse(re: Float64Array, im: Float64Array): void;
}

export function complexFft64(size: number): ComplexFft64 {
  if (size < 1 || (size & (size - 1)) !== 0) throw new Error(`complexFft64: size ${size} is not a power of two`);
  const half = size >> 1;
  const cos = new Float64Array(half);
  const sin = new Float64Array(half);
  for (let k = 0; k < half; k++) {
    cos[k] = Math.cos((2 * Math.PI * k) / size);
    sin[k] = Math.sin((2 * Math.PI * k) / size);
  }
  const rev = new Uint32Array(size);
  const bits = Math.log2(size);
  for (let i = 0; i < size; i++) {
    let r = 0;
    for (let b = 0, x = i; b < bits; b++, x >>= 1) r = (r << 1) | (x & 1);
    rev[i] = r;
  }
  const run = (re: Float64Array, im: Float64Array, sign: number) => {
    for (let i = 0; i < size; i++) {
      const j = rev[i]!;
      if (j > i) {
        let t = re[i]!; re[i] = re[j]!; re[j] = t;
        t = im[i]!; im[i] = im[j]!; im[j] = t;
      }
    }
    for (let len = 2; len <= size; len <<= 1) {
      const h = len >> 1;
      const step = size / len;
      for (let start = 0; start < size; start += len) {
        for (let k = 0; k < h; k++) {
          const wr = cos[k * step]!;
          const wi = sign * sin[k * step]!;
          const a = start + k;
          const b = a + h;
          const xr = re[b]! * wr - im[b]! * wi;
          const xi = re[b]! * wi + im[b]! * wr;
          re[b] = re[a]! - xr;
          im[b] = im[a]! - xi;
          re[a] = re[a]! + xr;
          im[a] = im[a]! + xi;
        }
      }
    }
  };
  return {
    size,
    forward: (re, im) => run(re, im, -1),
    inverse: (re, im) => {
      run(re, im, 1);
      for (let i = 0; i < size; i++) {
        re[i] = re[i]! / size;
        im[i] = im[i]! / size;
      }
    },
  };
}
