/**
 * Separation metrics of the separation benchmark.
 * SDR: BSS Eval v4 as museval computes it (bss_eval images, 1 s windows, hop 1 s, windows where any
 * reference or estimate is all-zero are skipped, median over windows). In the images variant the 512-tap
 * distortion filters only split the error into ISR/SIR/SAR; SDR itself is sum(s^2)/sum((s_hat - s)^2) per
 * window (museval `_bss_decomp_mtifilt` + `_bss_crit`: s_true is the zero-padded reference and
 * e_spat + e_interf + e_artif = s_hat - s_true), so this SDR equals museval's without the filters.
 * SI-SDR (Le Roux et al. 2019) over the whole excerpt, channels concatenated, no mean removal.
 */

export function museval4Sdr(refs: Float64Array[][], ests: Float64Array[][], rate: number): number[] {
  const n = refs[0]![0]!.length;
  const win = rate;
  const nwin = n > win ? Math.floor((n - win + win) / win) : 1;
  const perStem: number[][] = refs.map(() => []);
  for (let w = 0; w < nwin; w++) {
    const a = w * win;
    const b = Math.min(n, a + win);
    const silent = (x: Float64Array[]) => x.every((c) => { for (let i = a; i < b; i++) if (c[i] !== 0) return false; return true; });
    if (refs.some(silent) || ests.some(silent)) continue;
    refs.forEach((ref, j) => {
      let num = 0;
      let den = 0;
      ref.forEach((c, ch) => {
        const e = ests[j]![ch]!;
        for (let i = a; i < b; i++) {
          num += c[i]! * c[i]!;
          den += (e[i]! - c[i]!) ** 2;
        }
      });
      perStem[j]!.push(den === 0 ? Infinity : 10 * Math.log10(num / den));
    });
  }
  return perStem.map((v) => {
    if (!v.length) return NaN;
    const s = v.sort((x, y) => x - y);
    return (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2;
  });
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
