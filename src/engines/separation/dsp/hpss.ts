/**
 * Median-filtering harmonic/percussive separation (FitzGerald 2010; librosa.decompose.hpss): sustained
 * partials are smooth along time, drum hits smooth along frequency. Soft Wiener masks (power 2) so the two
 * masks sum to one in every bin. Spectrogram layout: frame-major, index t*bins + k.
 */

/** Median of the first n values of `a` (partially reordered in place), by quickselect. */
function median(a: Float32Array, n: number): number {
  let lo = 0;
  let hi = n - 1;
  const k = n >> 1;
  while (hi > lo) {
    const pivot = a[(lo + hi) >> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!; a[i] = a[j]!; a[j] = t;
        i++; j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return a[k]!;
}

/** Sliding median of `src` (length n) with an odd window, edges mirrored like scipy.ndimage 'reflect'. */
function slidingMedian(src: Float32Array, n: number, width: number, out: Float32Array, scratch: Float32Array): void {
  const h = width >> 1;
  for (let i = 0; i < n; i++) {
    let m = 0;
    for (let j = i - h; j <= i + h; j++) {
      let jj = j;
      if (jj < 0) jj = -jj - 1;
      if (jj >= n) jj = 2 * n - jj - 1;
      if (jj < 0 || jj >= n) jj = Math.min(n - 1, Math.max(0, jj));
      scratch[m++] = src[jj]!;
    }
    out[i] = median(scratch, m);
  }
}

export function medianAlongTime(mag: Float32Array, frames: number, bins: number, width: number): Float32Array {
  const out = new Float32Array(frames * bins);
  const col = new Float32Array(frames);
  const res = new Float32Array(frames);
  const scratch = new Float32Array(width);
  for (let k = 0; k < bins; k++) {
    for (let t = 0; t < frames; t++) col[t] = mag[t * bins + k]!;
    slidingMedian(col, frames, width, res, scratch);
    for (let t = 0; t < frames; t++) out[t * bins + k] = res[t]!;
  }
  return out;
}

export function medianAlongFrequency(mag: Float32Array, frames: number, bins: number, width: number): Float32Array {
  const out = new Float32Array(frames * bins);
  const scratch = new Float32Array(width);
  for (let t = 0; t < frames; t++) {
    slidingMedian(mag.subarray(t * bins, (t + 1) * bins), bins, width, out.subarray(t * bins, (t + 1) * bins), scratch);
  }
  return out;
}

export interface HpssOptions {
  /** Time kernel in frames (librosa default 31; 17 at hop 1024 / 44.1 kHz is about 0.4 s). */
  kernelTime: number;
  /** Frequency kernel in bins. */
  kernelFreq: number;
  power: number;
}

/** Returns the percussive mask; the harmonic mask is exactly 1 - percussive. */
export function percussiveMask(mag: Float32Array, frames: number, bins: number, opts: HpssOptions): Float32Array {
  const h = medianAlongTime(mag, frames, bins, opts.kernelTime | 1);
  const p = medianAlongFrequency(mag, frames, bins, opts.kernelFreq | 1);
  const mask = new Float32Array(frames * bins);
  const pw = opts.power;
  for (let i = 0; i < mask.length; i++) {
    const hp = Math.pow(h[i]!, pw);
    const pp = Math.pow(p[i]!, pw);
    const den = hp + pp;
    // Silent bins: split evenly rather than leave an undefined mask.
    mask[i] = den > 1e-20 ? pp / den : 0.5;
  }
  return mask;
}
