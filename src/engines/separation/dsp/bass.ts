import { harmonicComb, trackF0 } from './pitch.js';

/**
 * Bass: sustained low partials. A low-pass prior takes nearly everything harmonic under ~150 Hz (little else
 * lives there besides kick drum, which HPSS has already moved to the percussive part); above it, only the
 * harmonics of the tracked bass f0 (35-300 Hz) are kept, so guitars and keys in the same range stay out.
 * `harmonicMag` is the magnitude after removing percussion.
 */
export function bassMask(harmonicMag: Float32Array, frames: number, bins: number, binHz: number): Float32Array {
  const track = trackF0(harmonicMag, frames, bins, binHz, { fmin: 35, fmax: 300, harmonics: 5, stepsPerSemitone: 2 });
  const comb = harmonicComb(track, frames, bins, binHz, { harmonics: 8, cents: 35, maxHz: 1200 });
  const lp = new Float32Array(bins);
  for (let k = 0; k < bins; k++) {
    const f = k * binHz;
    lp[k] = f <= 120 ? 1 : f >= 260 ? 0 : Math.cos(((f - 120) / 140) * (Math.PI / 2)) ** 2;
  }
  const mask = new Float32Array(frames * bins);
  for (let t = 0; t < frames; t++) {
    for (let k = 0; k < bins; k++) {
      const i = t * bins + k;
      mask[i] = Math.max(lp[k]!, comb[i]! * (1 - lp[k]!) * 0.9);
    }
  }
  return mask;
}
