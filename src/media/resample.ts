import { resampleOnce } from './dsp/resample.js';

/**
 * Band-limited resampling of a whole signal (joining voices of different rates, model input rates): the shared
 * kernel of dsp/resample.ts, whose StreamResampler gives the same samples block by block.
 */
export function resample(input: Float32Array, fromRate: number, toRate: number): Float32Array {
  return resampleOnce(input, fromRate, toRate);
}
