import type { Spectrogram } from '../../../media/dsp/stft.js';

/**
 * Center-channel extraction (Avendano & Jot 2004, with phase): lead vocals are mixed to the center, i.e.
 * equal level and phase in both channels. 2*Re(L conj R)/(|L|^2+|R|^2) is 1 exactly there and falls for
 * panned or decorrelated (reverberant, wide-stereo) content. Mono input carries no spatial cue: mask 1.
 */
export function centerMask(left: Spectrogram, right: Spectrogram | undefined, sharpness = 2): Float32Array {
  const n = left.re.length;
  const mask = new Float32Array(n);
  if (!right) return mask.fill(1);
  const { re: lr, im: li } = left;
  const { re: rr, im: ri } = right;
  for (let i = 0; i < n; i++) {
    const a = lr[i]!;
    const b = li[i]!;
    const c = rr[i]!;
    const d = ri[i]!;
    const den = a * a + b * b + c * c + d * d;
    if (den < 1e-20) {
      mask[i] = 0;
      continue;
    }
    const sim = (2 * (a * c + b * d)) / den;
    mask[i] = sim > 0 ? Math.pow(sim, sharpness) : 0;
  }
  return mask;
}
