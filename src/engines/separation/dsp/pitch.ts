/**
 * Predominant-f0 tracking by harmonic summation (Klapuri 2006, simplified): a candidate f0 scores the
 * weighted magnitudes found at its first harmonics. Used to follow the bass line and the lead voice, then
 * to draw a soft harmonic comb mask along the tracked f0.
 */
export interface F0Track {
  f0: Float32Array;
  /** 0..1: how much the best candidate stands out from the frame's average salience. */
  confidence: Float32Array;
}

export function trackF0(
  mag: Float32Array, frames: number, bins: number, binHz: number,
  opts: { fmin: number; fmax: number; harmonics: number; stepsPerSemitone: number },
): F0Track {
  const steps = Math.floor(12 * opts.stepsPerSemitone * Math.log2(opts.fmax / opts.fmin)) + 1;
  const cand = new Float32Array(steps);
  for (let s = 0; s < steps; s++) cand[s] = opts.fmin * 2 ** (s / (12 * opts.stepsPerSemitone));
  const f0 = new Float32Array(frames);
  const confidence = new Float32Array(frames);
  const raw = new Float32Array(frames);
  for (let t = 0; t < frames; t++) {
    const row = t * bins;
    let best = 0;
    let bestF = 0;
    let sum = 0;
    for (let s = 0; s < steps; s++) {
      let sal = 0;
      for (let h = 1; h <= opts.harmonics; h++) {
        const pos = (cand[s]! * h) / binHz;
        const k = Math.floor(pos);
        if (k + 1 >= bins) break;
        // Peak-picking within +-1 bin tolerates tuning and window smearing.
        const m = Math.max(mag[row + k]!, mag[row + k + 1]!, k > 0 ? mag[row + k - 1]! : 0);
        sal += m / Math.sqrt(h);
      }
      sum += sal;
      if (sal > best) {
        best = sal;
        bestF = cand[s]!;
      }
    }
    raw[t] = bestF;
    const mean = sum / steps;
    confidence[t] = mean > 1e-9 ? Math.min(1, Math.max(0, (best / mean - 1.3) / 1.5)) : 0;
  }
  // A 5-frame median on the track removes octave flips that last a frame or two.
  const w = new Float32Array(5);
  for (let t = 0; t < frames; t++) {
    let n = 0;
    for (let j = t - 2; j <= t + 2; j++) if (j >= 0 && j < frames) w[n++] = raw[j]!;
    const v = Array.from(w.subarray(0, n)).sort((a, b) => a - b);
    f0[t] = v[n >> 1]!;
  }
  return { f0, confidence };
}

/** Soft comb around the tracked harmonics: Gaussian lobes of max(1.2 bins, cents) width, scaled by confidence. */
export function harmonicComb(
  track: F0Track, frames: number, bins: number, binHz: number,
  opts: { harmonics: number; cents: number; maxHz: number },
): Float32Array {
  const mask = new Float32Array(frames * bins);
  const rel = 2 ** (opts.cents / 1200) - 1;
  for (let t = 0; t < frames; t++) {
    const f = track.f0[t]!;
    const c = track.confidence[t]!;
    if (f <= 0 || c <= 0) continue;
    for (let h = 1; h <= opts.harmonics; h++) {
      const fh = f * h;
      if (fh > opts.maxHz) break;
      const center = fh / binHz;
      const sigma = Math.max(1.2, (fh * rel) / binHz);
      const k0 = Math.max(0, Math.floor(center - 3 * sigma));
      const k1 = Math.min(bins - 1, Math.ceil(center + 3 * sigma));
      for (let k = k0; k <= k1; k++) {
        const d = (k - center) / sigma;
        const v = c * Math.exp(-0.5 * d * d);
        const i = t * bins + k;
        if (v > mask[i]!) mask[i] = v;
      }
    }
  }
  return mask;
}
