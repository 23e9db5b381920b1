import { makeRadix2 } from './fft.js';

/**
 * Double-precision complex FFT (radix 2, in place, split re/im arrays). The FftProvider's pffft backend (fft.ts) is float32,
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
  // The shared radix-2 kernel (fft.ts) already works in float64 on split arrays.
  const run = makeRadix2(size);
  return {
    size,
    forward: (re, im) => run(re, im, false),
    inverse: (re, im) => {
      run(re, im, true);
      for (let i = 0; i < size; i++) {
        re[i] = re[i]! / size;
        im[i] = im[i]! / size;
      }
    },
  };
}
