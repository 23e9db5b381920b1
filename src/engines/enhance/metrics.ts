/**
 * Objective quality measures for tests and the benchmark: SI-SDR and STOI (Taal et al. 2011).
 */

/** Scale-invariant SDR in dB of `est` against `ref`; `lag` shifts est later by that many samples. */
export function siSdr(est: Float32Array, ref: Float32Array, lag = 0): number {
  const n = Math.min(est.length - Math.max(0, lag), ref.length + Math.min(0, lag));
  let dot = 0, rr = 0;
  for (let i = 0; i < n; i++) {
    const e = est[i + Math.max(0, lag)]!, r = ref[i - Math.min(0, lag)]!;
    dot += e * r;
    rr += r * r;
  }
  const a = dot / (rr || 1e-20);
  let s = 0, no = 0;
  for (let i = 0; i < n; i++) {
    const e = est[i + Math.max(0, lag)]!, v = a * ref[i - Math.min(0, lag)]!;
    s += v * v;
    no += (e - v) * (e - v);
  }
  return 10 * Math.log10(s / (no || 1e-20));
}
