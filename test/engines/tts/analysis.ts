/** Listening by numbers: the measurements the TTS tests judge audio with. */

export function rms(x: Float32Array, from = 0, to = x.length): number {
  let s = 0;
  for (let i = from; i < to; i++) s += x[i]! * x[i]!;
  return to > from ? Math.sqrt(s / (to - from)) : 0;
}

export function peak(x: Float32Array): number {
  let p = 0;
  for (const v of x) p = Math.max(p, Math.abs(v));
  return p;
}

/**
 * Median F0 of voiced 40 ms frames by normalized autocorrelation (60-500 Hz); frames whose
 * best correlation is under 0.5 or whose energy is low are unvoiced and skipped.
 */
export function medianF0(x: Float32Array, sampleRate: number): number {
  const frame = Math.round(sampleRate * 0.04);
  const hop = Math.round(sampleRate * 0.01);
  const minLag = Math.floor(sampleRate / 500);
  const maxLag = Math.ceil(sampleRate / 60);
  const floor = rms(x) * 0.3;
  const f0s: number[] = [];
  for (let start = 0; start + frame + maxLag < x.length; start += hop) {
    if (rms(x, start, start + frame) < floor) continue;
    let best = 0;
    let bestLag = 0;
    for (let lag = minLag; lag <= maxLag; lag++) {
      let num = 0;
      let e1 = 0;
      let e2 = 0;
      for (let i = start; i < start + frame; i++) {
        const a = x[i]!;
        const b = x[i + lag]!;
        num += a * b;
        e1 += a * a;
        e2 += b * b;
      }
      const r = num / Math.sqrt(e1 * e2 + 1e-12);
      if (r > best) {
        best = r;
        bestLag = lag;
      }
    }
    if (best > 0.5 && bestLag > 0) f0s.push(sampleRate / bestLag);
  }
  if (f0s.length === 0) return 0;
  f0s.sort((a, b) => a - b);
  return f0s[Math.floor(f0s.length / 2)]!;
}

/** Length of the longest run of near-silence (10 ms windows below `threshold` RMS), in seconds. */
export function silentRuns(x: Float32Array, sampleRate: number, threshold = 0.003): number[] {
  const win = Math.round(sampleRate * 0.01);
  const runs: number[] = [];
  let run = 0;
  for (let i = 0; i + win <= x.length; i += win) {
    if (rms(x, i, i + win) < threshold) run++;
    else {
      if (run > 0) runs.push((run * win) / sampleRate);
      run = 0;
    }
  }
  if (run > 0) runs.push((run * win) / sampleRate);
  return runs;
}
