import { harmonicComb, trackF0 } from './pitch.js';

/**
 * Vocals as the product of three soft cues, each in [0, 1]: centered in the stereo image (center.ts), not part
 * of the repeating accompaniment (repet.ts), and inside the voice's band. Products of masks stay in [0, 1].
 */
export function vocalMask(center: Float32Array, repeating: Float32Array, frames: number, bins: number, binHz: number): Float32Array {
  const band = new Float32Array(bins);
  for (let k = 0; k < bins; k++) {
    const f = k * binHz;
    // Below ~90 Hz there is no voice; above ~12 kHz mostly cymbals and air.
    const lo = f < 90 ? 0 : f < 220 ? Math.sin(((f - 90) / 130) * (Math.PI / 2)) ** 2 : 1;
    const hi = f > 12000 ? 0.4 : 1;
    band[k] = lo * hi;
  }
  const mask = new Float32Array(frames * bins);
  for (let t = 0; t < frames; t++) {
    for (let k = 0; k < bins; k++) {
      const i = t * bins + k;
      // Square root: each cue alone is unreliable, so the product should not punish agreement of two.
      mask[i] = band[k]! * Math.sqrt(center[i]! * (1 - repeating[i]!));
    }
  }
  return mask;
}

/**
 * Lead vs backing: the lead is the predominant melodic voice, dead center; backing vocals are quieter,
 * often several voices, panned or wide. Returns the lead share of the vocal estimate (0..1); the backing
 * share is 1 - lead. `vocalMag` is the magnitude of the vocal estimate, `center` the center mask.
 */
export function leadShare(vocalMag: Float32Array, center: Float32Array, frames: number, bins: number, binHz: number): Float32Array {
  const track = trackF0(vocalMag, frames, bins, binHz, { fmin: 90, fmax: 1000, harmonics: 6, stepsPerSemitone: 3 });
  const comb = harmonicComb(track, frames, bins, binHz, { harmonics: 30, cents: 30, maxHz: 9000 });
  const share = new Float32Array(frames * bins);
  for (let i = 0; i < share.length; i++) share[i] = Math.min(1, comb[i]! * (0.5 + 0.5 * center[i]!) * 1.1);
  return share;
}
