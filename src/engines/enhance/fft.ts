/**
 * Moved to the shared audio core (src/media/dsp/stft-stream.ts); this re-export keeps the stages that still import it
 * compiling until their import lines point there, then it goes.
 */
export { hann, nextPow2, RealFFT, sqrtHann, StftProcessor, type StftStreamOptions as StftOptions } from '../../media/dsp/stft-stream.js';
