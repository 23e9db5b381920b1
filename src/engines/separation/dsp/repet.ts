/**
 * REPET-SIM (Rafii & Pardo 2012): the accompaniment repeats, the voice does not. For every frame, take the
 * frames most similar to it anywhere in the segment, model the repeating background as their per-bin
 * median (capped by the mixture) and return background/mixture as a soft mask in [0, 1].
 */
export interface RepetOptions {
  /** At most this many similar frames per median. */
  maxRepeats: number;
  /** Selected frames must be at least this many frames apart (avoid picking the same note twice). */
  minDistance: number;
  /** Similarity is computed on this many pooled bands to keep the frames x frames matrix cheap. */
  bands: number;
}

export function repeatingMask(mag: Float32Array, frames: number, bins: number, opts: RepetOptions): Float32Array {
  const nb = opts.bands;
  // Pooled, L2-normalised frame features for cosine similarity.
  const feat = new Float32Array(frames * nb);
  for (let t = 0; t < frames; t++) {
    let norm = 0;
    for (let b = 0; b < nb; b++) {
      // Quadratic band edges: finer resolution at low frequencies where the harmony lives.
      const k0 = Math.floor(((b / nb) ** 2) * (bins - 1));
      const k1 = Math.max(k0 + 1, Math.floor((((b + 1) / nb) ** 2) * (bins - 1)));
      let s = 0;
      for (let k = k0; k < k1; k++) s += mag[t * bins + k]!;
      s = Math.sqrt(s);
      feat[t * nb + b] = s;
      norm += s * s;
    }
    const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
    for (let b = 0; b < nb; b++) feat[t * nb + b]! *= inv;
  }
  const sim = new Float32Array(frames);
  const order = new Int32Array(frames);
  const chosen = new Int32Array(opts.maxRepeats);
  const vals = new Float32Array(opts.maxRepeats);
  const mask = new Float32Array(frames * bins);
  for (let j = 0; j < frames; j++) {
    for (let i = 0; i < frames; i++) {
      let s = 0;
      for (let b = 0; b < nb; b++) s += feat[j * nb + b]! * feat[i * nb + b]!;
      sim[i] = s;
      order[i] = i;
    }
    order.sort((a, b) => sim[b]! - sim[a]!);
    let count = 0;
    for (let r = 0; r < frames && count < opts.maxRepeats; r++) {
      const i = order[r]!;
      if (sim[i]! <= 0) break;
      let ok = true;
      for (let q = 0; q < count; q++) if (Math.abs(chosen[q]! - i) < opts.minDistance) ok = false;
      if (ok) chosen[count++] = i;
    }
    for (let k = 0; k < bins; k++) {
      const m = mag[j * bins + k]!;
      if (m <= 1e-10) continue;
      for (let q = 0; q < count; q++) vals[q] = mag[chosen[q]! * bins + k]!;
      // Median of a handful of values by insertion sort.
      for (let a = 1; a < count; a++) {
        const v = vals[a]!;
        let b = a - 1;
        while (b >= 0 && vals[b]! > v) {
          vals[b + 1] = vals[b]!;
          b--;
        }
        vals[b + 1] = v;
      }
      const med = count % 2 ? vals[count >> 1]! : 0.5 * (vals[(count >> 1) - 1]! + vals[count >> 1]!);
      mask[j * bins + k] = Math.min(med, m) / m;
    }
  }
  return mask;
}
