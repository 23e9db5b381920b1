/**
 * How much the built-in engine trusts one stem mask, from what it can see at run time (no ground truth).
 *
 * Evidence used: a stem that is a separate instrument has its own loudness contour; a mask that only carves a
 * slice out of the same sounds (HPSS taking piano attacks for drums, a bass band taking the low partials of
 * everything) gives an estimate whose envelope rises and falls with what it left behind. So we correlate, per
 * frequency bin, the log power of the estimate (mask * mixture) with that of its complement ((1 - mask) *
 * mixture), weighted by the bin's energy. A stem that takes almost none of the mixture is "not found" outright.
 *
 * The gain is what the stem is scaled by; the rest goes back to `other`/`remainder`, so the stems still sum to
 * the input. Scaling an estimate e of s by g keeps SDR >= 0 whenever g <= 2<s,e>/|e|^2, so a doubtful stem is
 * pulled toward silence (0 dB) rather than left at full level where a wrong guess scores below it.
 */
export interface StemConfidence {
  /** Energy share of the mixture the mask takes, 0..1. */
  share: number;
  /** Energy-weighted mean over bins of corr(log|M X|^2, log|(1-M) X|^2) across frames, -1..1. */
  envelopeCorrelation: number;
  /** What the stem is scaled by, 0..1. */
  gain: number;
}

/**
 * Which evidence fits the method behind a stem. `carved`: drums (HPSS) and bass (a low band of the harmonic
 * part) take a slice of everything in their region, so the envelope check applies. `template`: NMF instrument
 * classes (piano, guitar, strings, wind, synthesizer) match timbre templates; when they take only a few percent
 * of the mixture that is what leaks through any template (on the corpus such stems scored about 0 dB at best and
 * -8 dB where the instrument was nearly absent), so a small share reads as "not found". `vocal`: centre + REPET
 * masks, only the absence check.
 */
export type StemMethod = 'carved' | 'template' | 'vocal';

/** Envelope correlation at or below which a carved stem is trusted fully, and at or above which it is muted. */
export const TRUST_CORRELATION = 0.3;
export const MUTE_CORRELATION = 0.45;
/** Below this share of the mixture's energy any stem is treated as absent (silent) rather than scaled. */
export const ABSENT_SHARE = 0.01;
/** Template stems: silent below the first share, full above the second, linear between. */
export const TEMPLATE_SHARE: readonly [number, number] = [0.06, 0.12];

const ramp = (x: number, zeroAt: number, oneAt: number) => Math.min(1, Math.max(0, (x - zeroAt) / (oneAt - zeroAt)));

export function stemConfidence(mag: Float32Array, mask: Float32Array, frames: number, bins: number, method: StemMethod): StemConfidence {
  let total = 0;
  let taken = 0;
  let corrSum = 0;
  let weightSum = 0;
  const eps = 1e-12;
  for (let k = 1; k < bins; k++) {
    let sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0, w = 0;
    for (let t = 0; t < frames; t++) {
      const i = t * bins + k;
      const x2 = mag[i]! * mag[i]!;
      const m = mask[i]!;
      const e2 = m * m * x2;
      const r2 = (1 - m) * (1 - m) * x2;
      total += x2;
      taken += e2;
      w += x2;
      const a = Math.log(e2 + eps);
      const b = Math.log(r2 + eps);
      sa += a; sb += b; saa += a * a; sbb += b * b; sab += a * b;
    }
    const va = saa / frames - (sa / frames) ** 2;
    const vb = sbb / frames - (sb / frames) ** 2;
    // A bin where either side is constant carries no contour evidence: count it as fully dependent.
    const c = va > 1e-9 && vb > 1e-9 ? (sab / frames - (sa / frames) * (sb / frames)) / Math.sqrt(va * vb) : 1;
    corrSum += c * w;
    weightSum += w;
  }
  const share = total > 0 ? taken / total : 0;
  const envelopeCorrelation = weightSum > 0 ? corrSum / weightSum : 1;
  let gain = share < ABSENT_SHARE ? 0 : 1;
  if (method === 'carved') gain = Math.min(gain, ramp(-envelopeCorrelation, -MUTE_CORRELATION, -TRUST_CORRELATION));
  if (method === 'template') gain = Math.min(gain, ramp(share, TEMPLATE_SHARE[0], TEMPLATE_SHARE[1]));
  return { share, envelopeCorrelation, gain };
}
