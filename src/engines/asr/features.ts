/**
 * Whisper's log-mel front end, as the models were trained on it (openai/whisper audio.py and the
 * Hugging Face WhisperFeatureExtractor agree): 16 kHz, 30 s windows zero-padded, STFT with a periodic
 * Hann window of 400 samples every 160 (reflect-padded by 200 at both ends, last frame dropped),
 * power spectrum, 80 Slaney-normalised mel filters on the Slaney mel scale (librosa's defaults),
 * log10 clamped at 1e-10, floored at max - 8, then (x + 4) / 4.
 *
 * The 400-point DFT is not a power of two, so a small mixed-radix FFT (400 = 2^4 x 5^2) does it;
 * a naive DFT would cost ~240 M multiply-adds per window.
 */

export const SAMPLE_RATE = 16000;
export const N_FFT = 400;
export const HOP = 160;
export const N_MELS = 80;
export const WINDOW_SECONDS = 30;
export const WINDOW_SAMPLES = SAMPLE_RATE * WINDOW_SECONDS;
export const N_FRAMES = WINDOW_SAMPLES / HOP; // 3000
const N_BINS = N_FFT / 2 + 1; // 201

/** Slaney mel scale (librosa htk=False): linear below 1 kHz, logarithmic above. */
export function hzToMel(f: number): number {
  const fSp = 200 / 3;
  const minLogHz = 1000;
  const minLogMel = minLogHz / fSp;
  const logStep = Math.log(6.4) / 27;
  return f >= minLogHz ? minLogMel + Math.log(f / minLogHz) / logStep : f / fSp;
}

export function melToHz(m: number): number {
  const fSp = 200 / 3;
  const minLogHz = 1000;
  const minLogMel = minLogHz / fSp;
  const logStep = Math.log(6.4) / 27;
  return m >= minLogMel ? minLogHz * Math.exp(logStep * (m - minLogMel)) : fSp * m;
}

/** librosa.filters.mel(sr=16000, n_fft=400, n_mels=80): row-major [80][201], Slaney area normalisation. */
export function melFilterBank(sr = SAMPLE_RATE, nFft = N_FFT, nMels = N_MELS): Float64Array[] {
  const bins = nFft / 2 + 1;
  const fftFreqs = Array.from({ length: bins }, (_, k) => (k * sr) / nFft);
  const lo = hzToMel(0);
  const hi = hzToMel(sr / 2);
  const melF = Array.from({ length: nMels + 2 }, (_, i) => melToHz(lo + ((hi - lo) * i) / (nMels + 1)));
  const rows: Float64Array[] = [];
  for (let m = 0; m < nMels; m++) {
    const row = new Float64Array(bins);
    const dLo = melF[m + 1]! - melF[m]!;
    const dHi = melF[m + 2]! - melF[m + 1]!;
    const enorm = 2 / (melF[m + 2]! - melF[m]!);
    for (let k = 0; k < bins; k++) {
      const lower = (fftFreqs[k]! - melF[m]!) / dLo;
      const upper = (melF[m + 2]! - fftFreqs[k]!) / dHi;
      row[k] = Math.max(0, Math.min(lower, upper)) * enorm;
    }
    rows.push(row);
  }
  return rows;
}

/** Recursive mixed-radix DFT of a complex sequence (sizes with small factors). */
function fftComplex(re: Float64Array, im: Float64Array, cosT: Float64Array, sinT: Float64Array, stride: number): [Float64Array, Float64Array] {
  const n = re.length;
  if (n === 1) return [re, im];
  let p = 2;
  while (n % p !== 0) p++;
  const m = n / p;
  // Split into p decimated subsequences, transform each, then combine with twiddles W_n^(r*k).
  const subs: Array<[Float64Array, Float64Array]> = [];
  for (let r = 0; r < p; r++) {
    const sr = new Float64Array(m);
    const si = new Float64Array(m);
    for (let k = 0; k < m; k++) {
      sr[k] = re[k * p + r]!;
      si[k] = im[k * p + r]!;
    }
    subs.push(m === 1 ? [sr, si] : fftComplex(sr, si, cosT, sinT, stride * p));
  }
  const outR = new Float64Array(n);
  const outI = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    let accR = 0;
    let accI = 0;
    const km = k % m;
    for (let r = 0; r < p; r++) {
      const [yr, yi] = subs[r]!;
      // Twiddles are tabled for the top size N: W_n^j = W_N^(j * stride).
      const idx = ((r * k) % n) * stride;
      const c = cosT[idx]!;
      const s = sinT[idx]!;
      // (yr + i yi) * (c - i s): forward transform uses e^{-i...}
      accR += yr[km]! * c + yi[km]! * s;
      accI += yi[km]! * c - yr[km]! * s;
    }
    outR[k] = accR;
    outI[k] = accI;
  }
  return [outR, outI];
}

/** Computes Whisper input features for consecutive 30 s windows; holds only its tables. */
export class LogMelExtractor {
  private readonly filters = melFilterBank();
  private readonly window = new Float64Array(N_FFT);
  private readonly cosT = new Float64Array(N_FFT);
  private readonly sinT = new Float64Array(N_FFT);

  constructor() {
    // torch.hann_window(400) is periodic: 0.5 - 0.5 cos(2 pi n / N).
    for (let i = 0; i < N_FFT; i++) this.window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / N_FFT);
    for (let i = 0; i < N_FFT; i++) {
      this.cosT[i] = Math.cos((2 * Math.PI * i) / N_FFT);
      this.sinT[i] = Math.sin((2 * Math.PI * i) / N_FFT);
    }
  }

  /** Power spectrum of one windowed frame (bins 0..200). */
  powerSpectrum(frame: Float64Array): Float64Array {
    const re = new Float64Array(N_FFT);
    const im = new Float64Array(N_FFT);
    for (let i = 0; i < N_FFT; i++) re[i] = frame[i]! * this.window[i]!;
    const [xr, xi] = fftComplex(re, im, this.cosT, this.sinT, 1);
    const out = new Float64Array(N_BINS);
    for (let k = 0; k < N_BINS; k++) out[k] = xr[k]! * xr[k]! + xi[k]! * xi[k]!;
    return out;
  }

  /**
   * Features of one window: `samples` (16 kHz mono, at most 30 s) is zero-padded to 30 s.
   * Returns [80 x 3000] row-major, the layout of input_features [1, 80, 3000].
   */
  extract(samples: Float32Array): Float32Array {
    if (samples.length > WINDOW_SAMPLES) throw new Error(`a window holds at most ${WINDOW_SAMPLES} samples`);
    const pad = N_FFT / 2;
    // Reflect padding as torch.stft(center=True) does, over the zero-padded 30 s signal.
    const at = (i: number): number => {
      let j = i - pad;
      if (j < 0) j = -j;
      if (j >= WINDOW_SAMPLES) j = 2 * (WINDOW_SAMPLES - 1) - j;
      return j < samples.length ? samples[j]! : 0;
    };
    const mel = new Float64Array(N_MELS * N_FRAMES);
    const frame = new Float64Array(N_FFT);
    let max = -Infinity;
    for (let t = 0; t < N_FRAMES; t++) {
      const start = t * HOP;
      for (let i = 0; i < N_FFT; i++) frame[i] = at(start + i);
      const power = this.powerSpectrum(frame);
      for (let m = 0; m < N_MELS; m++) {
        const row = this.filters[m]!;
        let acc = 0;
        for (let k = 0; k < N_BINS; k++) acc += row[k]! * power[k]!;
        const v = Math.log10(Math.max(acc, 1e-10));
        mel[m * N_FRAMES + t] = v;
        if (v > max) max = v;
      }
    }
    const out = new Float32Array(N_MELS * N_FRAMES);
    const floor = max - 8;
    for (let i = 0; i < out.length; i++) out[i] = (Math.max(mel[i]!, floor) + 4) / 4;
    return out;
  }
}
