/**
 * Separation metrics of the separation benchmark.
 * SDR: BSS Eval v4 as museval computes it (bss_eval images, 1 s windows, hop 1 s, windows where any
 * reference or estimate is all-zero are skipped, median over windows). In the images variant the 512-tap
 * distortion filters only split the error into ISR/SIR/SAR; SDR itself is sum(s^2)/sum((s_hat - s)^2) per
 * window (museval `_bss_decomp_mtifilt` + `_bss_crit`: s_true is the zero-padded reference and
 * e_spat + e_interf + e_artif = s_hat - s_true), so this SDR equals museval's without the filters.
 * SI-SDR (Le Roux et al. 2019) over the whole excerpt, channels concatenated, no mean removal.
 */
import { bssEvalSdr, silent, trackMedian } from '../src/media/bsseval.js';

export function museval4Sdr(refs: Float64Array[][], ests: Float64Array[][], rate: number): number[] {
  // The one BSS Eval v4 (src/media/bsseval.ts, proved against museval); museval refuses wholly silent sources, where
  // this bench wants NaN for every source (every window would be skipped).
  const n = refs[0]![0]!.length;
  if ([...refs, ...ests].some((s) => silent(s, 0, Math.min(n, s[0]?.length ?? 0)))) return refs.map(() => NaN);
  return bssEvalSdr(refs, ests, { window: rate, hop: rate }).sdr.map(trackMedian);
}

export function siSdr(ref: Float64Array[], est: Float64Array[]): number {
  let dot = 0;
  let rr = 0;
  ref.forEach((c, ch) => { for (let i = 0; i < c.length; i++) { dot += c[i]! * est[ch]![i]!; rr += c[i]! * c[i]!; } });
  const alpha = dot / rr;
  let num = 0;
  let den = 0;
  ref.forEach((c, ch) => {
    for (let i = 0; i < c.length; i++) {
      const t = alpha * c[i]!;
      num += t * t;
      den += (t - est[ch]![i]!) ** 2;
    }
  });
  return 10 * Math.log10(num / den);
}

/** Naive baseline: a fixed band of the mixture per stem (ideal brick-wall masks on a 4096-point STFT). */
