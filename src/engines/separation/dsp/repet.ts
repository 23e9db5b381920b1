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
  // The similarity matrix is symmetric, so each pair is computed once (same products, same order) when
  // the matrix is no larger than twice the mask; otherwise (very long segments) rows are computed per frame.
  const simAll = frames <= 2 * bins ? new Float32Array(frames * frames) : null;
  if (simAll) {
    for (let j = 0; j < frames; j++) {
      for (let i = j; i < frames; i++) {
        const s = dot(feat, nb, j, i);
        simAll[j * frames + i] = s;
        simAll[i * frames + j] = s;
      }
    }
  }
  const simRow = simAll ? null : new Float32Array(frames);
  const heap = new Int32Array(frames);
  const chosen = new Int32Array(opts.maxRepeats);
  const vals = new Float32Array(opts.maxRepeats);
  const mask = new Float32Array(frames * bins);
  for (let j = 0; j < frames; j++) {
    let sim: Float32Array;
    if (simAll) sim = simAll.subarray(j * frames, (j + 1) * frames);
    else {
      sim = simRow!;
      for (let i = 0; i < frames; i++) sim[i] = dot(feat, nb, j, i);
    }
    // Frames in order of falling similarity (ties: lower index first, as a stable sort gives), drawn
    // lazily from a max-heap: only the first few dozen are ever looked at, so no full sort per frame.
    const before = (a: number, b: number) => sim[a]! > sim[b]! || (sim[a] === sim[b] && a < b);
    const siftDown = (at: number, size: number) => {
      const v = heap[at]!;
      for (;;) {
        let c = 2 * at + 1;
        if (c >= size) break;
        if (c + 1 < size && before(heap[c + 1]!, heap[c]!)) c++;
        if (!before(heap[c]!, v)) break;
        heap[at] = heap[c]!;
        at = c;
      }
      heap[at] = v;
    };
    for (let i = 0; i < frames; i++) heap[i] = i;
    for (let i = (frames >> 1) - 1; i >= 0; i--) siftDown(i, frames);
    let size = frames;
    let count = 0;
    while (size > 0 && count < opts.maxRepeats) {
      const i = heap[0]!;
      heap[0] = heap[--size]!;
      siftDown(0, size);
      if (sim[i]! <= 0) break;
      let ok = true;
      for (let q = 0; q < count; q++) if (Math.abs(chosen[q]! - i) < opts.minDistance) ok = false;
      if (ok) chosen[count++] = i;
    }
    if (count === 12) median12(mag, bins, chosen, j, mask);
    else medianAny(mag, bins, chosen, count, vals, j, mask);
  }
  return mask;
}

function dot(feat: Float32Array, nb: number, j: number, i: number): number {
  let s = 0;
  for (let b = 0; b < nb; b++) s += feat[j * nb + b]! * feat[i * nb + b]!;
  return s;
}

/** mask[j, k] = min(median over the chosen frames of mag[., k], mag[j, k]) / mag[j, k]. */
function medianAny(mag: Float32Array, bins: number, chosen: Int32Array, count: number, vals: Float32Array, j: number, mask: Float32Array): void {
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

/**
 * medianAny for the usual 12 frames, the same values: the 39-comparator sorting network for 12 inputs
 * (Knuth, TAOCP 5.3.4) cut down to what the 6th and 7th smallest depend on, branch-free with min/max;
 * the insertion sort's data-dependent branches mispredicted on most steps. Checked exhaustively on 0/1
 * inputs (which suffices for comparator networks).
 */
function median12(mag: Float32Array, bins: number, chosen: Int32Array, j: number, mask: Float32Array): void {
  const [r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11] = Array.from(chosen, (c) => c * bins);
  for (let k = 0; k < bins; k++) {
    const m = mag[j * bins + k]!;
    if (m <= 1e-10) continue;
    let v0 = mag[r0! + k]!, v1 = mag[r1! + k]!, v2 = mag[r2! + k]!, v3 = mag[r3! + k]!, v4 = mag[r4! + k]!, v5 = mag[r5! + k]!;
    let v6 = mag[r6! + k]!, v7 = mag[r7! + k]!, v8 = mag[r8! + k]!, v9 = mag[r9! + k]!, v10 = mag[r10! + k]!, v11 = mag[r11! + k]!;
    let t: number;
      t = v0; v0 = Math.min(t, v1); v1 = Math.max(t, v1);
      t = v2; v2 = Math.min(t, v3); v3 = Math.max(t, v3);
      t = v4; v4 = Math.min(t, v5); v5 = Math.max(t, v5);
      t = v6; v6 = Math.min(t, v7); v7 = Math.max(t, v7);
      t = v8; v8 = Math.min(t, v9); v9 = Math.max(t, v9);
      t = v10; v10 = Math.min(t, v11); v11 = Math.max(t, v11);
      t = v1; v1 = Math.min(t, v3); v3 = Math.max(t, v3);
      t = v5; v5 = Math.min(t, v7); v7 = Math.max(t, v7);
      t = v9; v9 = Math.min(t, v11); v11 = Math.max(t, v11);
      t = v0; v0 = Math.min(t, v2); v2 = Math.max(t, v2);
      t = v4; v4 = Math.min(t, v6); v6 = Math.max(t, v6);
      t = v8; v8 = Math.min(t, v10); v10 = Math.max(t, v10);
      t = v1; v1 = Math.min(t, v2); v2 = Math.max(t, v2);
      t = v5; v5 = Math.min(t, v6); v6 = Math.max(t, v6);
      t = v9; v9 = Math.min(t, v10); v10 = Math.max(t, v10);
      v4 = Math.max(v0, v4);
      v7 = Math.min(v7, v11);
      t = v1; v1 = Math.min(t, v5); v5 = Math.max(t, v5);
      t = v6; v6 = Math.min(t, v10); v10 = Math.max(t, v10);
      v3 = Math.min(v3, v7);
      v8 = Math.max(v4, v8);
      t = v5; v5 = Math.min(t, v9); v9 = Math.max(t, v9);
      t = v2; v2 = Math.min(t, v6); v6 = Math.max(t, v6);
      t = v3; v3 = Math.min(t, v8); v8 = Math.max(t, v8);
      v5 = Math.max(v1, v5);
      v6 = Math.min(v6, v10);
      v3 = Math.max(v2, v3);
      v8 = Math.min(v8, v9);
      v5 = Math.max(v3, v5);
      v6 = Math.min(v6, v8);
    const med = 0.5 * (v5 + v6);
    mask[j * bins + k] = Math.min(med, m) / m;
  }
}
