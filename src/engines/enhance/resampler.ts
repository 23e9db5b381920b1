/**
 * Moved to the shared audio core (src/media/dsp/resample.ts, the project's one resampling kernel); this re-export keeps
 * the stages that still import it compiling until their import lines point there, then it goes.
 */
export { StreamResampler } from '../../media/dsp/resample.js';
