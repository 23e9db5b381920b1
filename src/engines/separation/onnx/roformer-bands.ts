/**
 * How a RoFormer splits the spectrum into bands. BS-RoFormer: contiguous bands of `freqs_per_bands` bins.
 * Mel-Band RoFormer: overlapping bands, band b holding every bin where librosa's Slaney mel filter b
 * (librosa.filters.mel(sr, n_fft, n_mels=num_bands), fmin 0, fmax sr/2) is positive, with bin 0 forced into the
 * first band and the top bin into the last. The Mel model keeps these as non-persistent buffers (never in the
 * checkpoint), so they are computed here the way librosa does, in float64 (a filter weight is positive exactly when
 * the bin lies strictly between the band's outer mel points).
 *
 * Indices are over the model's "(f s)" axis: bin f of channel s is f * channels + s.
 */
export interface RoformerBands {
  /** Index into the (f s) axis of each feature the band split reads, band after band. */
  freqIndices: Int32Array;
  /** (f s) entries per band: the band's input is 2 * this many floats (re, im). */
  perBand: number[];
  /** For each (f s) entry, how many bands hold it (the Mel model averages their masks). */
  bandsPerEntry: Int32Array;
}

/** librosa.hz_to_mel / mel_to_hz with htk=False (Slaney: linear below 1 kHz, logarithmic above). */
const F_SP = 200.0 / 3;
const MIN_LOG_HZ = 1000.0;
const MIN_LOG_MEL = MIN_LOG_HZ / F_SP;
const LOGSTEP = Math.log(6.4) / 27.0;

function hzToMel(f: number): number {
  return f >= MIN_LOG_HZ ? MIN_LOG_MEL + Math.log(f / MIN_LOG_HZ) / LOGSTEP : f / F_SP;
}

function melToHz(m: number): number {
  return m >= MIN_LOG_MEL ? MIN_LOG_HZ * Math.exp(LOGSTEP * (m - MIN_LOG_MEL)) : F_SP * m;
}

/** librosa.mel_frequencies(n, fmin, fmax): np.linspace over the mel scale (last point exactly fmax's mel). */
function melFrequencies(n: number, fmin: number, fmax: number): Float64Array {
  const lo = hzToMel(fmin);
  const hi = hzToMel(fmax);
  const step = (hi - lo) / (n - 1);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = melToHz(i === n - 1 ? hi : i * step + lo);
  return out;
}

/** Which bins each mel band covers: covered[b][f]. */
export function melBandCoverage(sampleRate: number, nFft: number, numBands: number): boolean[][] {
  const bins = Math.floor(nFft / 2) + 1;
  // np.fft.rfftfreq(n, d=1/sr): k * (1 / (n * d)).
  const val = 1.0 / (nFft * (1.0 / sampleRate));
  const melF = melFrequencies(numBands + 2, 0, sampleRate / 2);
  const covered: boolean[][] = [];
  for (let b = 0; b < numBands; b++) {
    const row: boolean[] = [];
    const lowerDiff = melF[b + 1]! - melF[b]!;
    const upperDiff = melF[b + 2]! - melF[b + 1]!;
    for (let k = 0; k < bins; k++) {
      const f = k * val;
      const lower = -(melF[b]! - f) / lowerDiff;
      const upper = (melF[b + 2]! - f) / upperDiff;
      row.push(Math.min(lower, upper) > 0);
    }
    covered.push(row);
  }
  covered[0]![0] = true;
  covered[numBands - 1]![bins - 1] = true;
  return covered;
}

export function bsBands(freqsPerBands: readonly number[], channels: number): RoformerBands {
  const total = freqsPerBands.reduce((a, b) => a + b, 0) * channels;
  const freqIndices = Int32Array.from({ length: total }, (_, i) => i);
  return { freqIndices, perBand: freqsPerBands.map((f) => f * channels), bandsPerEntry: new Int32Array(total).fill(1) };
}

export function melBands(sampleRate: number, nFft: number, numBands: number, channels: number): RoformerBands {
  const covered = melBandCoverage(sampleRate, nFft, numBands);
  const bins = covered[0]!.length;
  const idx: number[] = [];
  const perBand: number[] = [];
  const bandsPerEntry = new Int32Array(bins * channels);
  for (const row of covered) {
    let n = 0;
    row.forEach((on, f) => {
      if (!on) return;
      for (let s = 0; s < channels; s++) {
        idx.push(f * channels + s);
        bandsPerEntry[f * channels + s]! += 1;
      }
      n += channels;
    });
    perBand.push(n);
  }
  // The reference asserts this too: a bin no band reads would get no mask.
  const uncovered = bandsPerEntry.findIndex((c) => c === 0);
  if (uncovered >= 0) throw new Error(`mel bands (${numBands} for n_fft ${nFft}) leave bin ${Math.floor(uncovered / channels)} uncovered`);
  return { freqIndices: Int32Array.from(idx), perBand, bandsPerEntry };
}
