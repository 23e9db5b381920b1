/**
 * An independent float64 port of the signal maths the reference Python pipelines get from numpy/torch, written for
 * the differential tests only: it shares no code with src/media/dsp so a mistake there cannot hide in both.
 * Slow on purpose (plain recursive mixed-radix DFT): clarity over speed.
 */

/** Complex spectrum as separate real/imaginary float64 arrays. */
export interface Complex {
  re: Float64Array;
  im: Float64Array;
}

/** cos/sin of -2 pi k / N for k < N: every sub-transform of an N-point DFT reads its twiddles from here with a stride. */
export interface Twiddles {
  n: number;
  cos: Float64Array;
  sin: Float64Array;
}

export function twiddles(n: number): Twiddles {
  return {
    n,
    cos: Float64Array.from({ length: n }, (_, k) => Math.cos((-2 * Math.PI * k) / n)),
    sin: Float64Array.from({ length: n }, (_, k) => Math.sin((-2 * Math.PI * k) / n)),
  };
}

/** Forward DFT (sign exp(-2 pi i n k / N)) of any length, by recursive decimation in time on the smallest prime factor. */
export function dft(x: Complex, tw: Twiddles = twiddles(x.re.length)): Complex {
  const n = x.re.length;
  const stride = tw.n / n;
  if (n === 1) return { re: Float64Array.of(x.re[0]!), im: Float64Array.of(x.im[0]!) };
  let p = 2;
  while (n % p !== 0 && p * p <= n) p++;
  if (n % p !== 0) p = n;
  const out: Complex = { re: new Float64Array(n), im: new Float64Array(n) };
  if (p === n) {
    // Prime length: direct sum.
    for (let k = 0; k < n; k++) {
      let sr = 0;
      let si = 0;
      for (let j = 0; j < n; j++) {
        const a = ((j * k) % n) * stride;
        const c = tw.cos[a]!;
        const sn = tw.sin[a]!;
        sr += x.re[j]! * c - x.im[j]! * sn;
        si += x.re[j]! * sn + x.im[j]! * c;
      }
      out.re[k] = sr;
      out.im[k] = si;
    }
    return out;
  }
  const m = n / p;
  const subs: Complex[] = [];
  for (let r = 0; r < p; r++) {
    const s: Complex = { re: new Float64Array(m), im: new Float64Array(m) };
    for (let j = 0; j < m; j++) {
      s.re[j] = x.re[j * p + r]!;
      s.im[j] = x.im[j * p + r]!;
    }
    subs.push(dft(s, tw));
  }
  for (let k = 0; k < n; k++) {
    let sr = 0;
    let si = 0;
    for (let r = 0; r < p; r++) {
      const a = ((r * k) % n) * stride;
      const c = tw.cos[a]!;
      const sn = tw.sin[a]!;
      const yr = subs[r]!.re[k % m]!;
      const yi = subs[r]!.im[k % m]!;
      sr += yr * c - yi * sn;
      si += yr * sn + yi * c;
    }
    out.re[k] = sr;
    out.im[k] = si;
  }
  return out;
}

/** numpy.fft.rfft: bins 0..n/2. */
export function rfft(x: ArrayLike<number>, tw: Twiddles = twiddles(x.length)): Complex {
  const n = x.length;
  const full = dft({ re: Float64Array.from(x), im: new Float64Array(n) }, tw);
  return { re: full.re.slice(0, n / 2 + 1), im: full.im.slice(0, n / 2 + 1) };
}

/** numpy.fft.irfft / torch onesided C2R of length n: Hermitian extension; DC and Nyquist imaginary parts are ignored. */
export function irfft(spec: Complex, n: number, tw: Twiddles = twiddles(n)): Float64Array {
  const re = new Float64Array(n);
  const im = new Float64Array(n);
  const half = n / 2;
  for (let k = 0; k <= half; k++) {
    re[k] = spec.re[k] ?? 0;
    im[k] = k === 0 || k === half ? 0 : -(spec.im[k] ?? 0); // conjugate for the inverse-by-forward trick
  }
  for (let k = half + 1; k < n; k++) {
    re[k] = re[n - k]!;
    im[k] = -im[n - k]!;
  }
  const y = dft({ re, im }, tw);
  return y.re.map((v) => v / n);
}

/** torch.hann_window(n, periodic=True). */
export function periodicHann(n: number): Float64Array {
  return Float64Array.from({ length: n }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n));
}

/** numpy.hanning(n) (symmetric). */
export function npHanning(n: number): Float64Array {
  if (n === 1) return Float64Array.of(1);
  return Float64Array.from({ length: n }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1)));
}

/** numpy pad mode 'reflect' (edge sample not repeated). */
function reflectPad(x: ArrayLike<number>, pad: number): Float64Array {
  const n = x.length;
  const out = new Float64Array(n + 2 * pad);
  for (let i = 0; i < out.length; i++) {
    let j = i - pad;
    while (j < 0 || j >= n) j = j < 0 ? -j : 2 * (n - 1) - j;
    out[i] = x[j]!;
  }
  return out;
}

/** torch.stft(x, n_fft, hop, window=periodic Hann, center=True, pad_mode='reflect', onesided): frames of rfft bins. */
export function torchStft(x: ArrayLike<number>, nFft: number, hop: number): Complex[] {
  const w = periodicHann(nFft);
  const padded = reflectPad(x, nFft / 2);
  const frames = 1 + Math.floor((padded.length - nFft) / hop);
  const tw = twiddles(nFft);
  const out: Complex[] = [];
  for (let t = 0; t < frames; t++) {
    const frame = new Float64Array(nFft);
    for (let i = 0; i < nFft; i++) frame[i] = padded[t * hop + i]! * w[i]!;
    out.push(rfft(frame, tw));
  }
  return out;
}

/**
 * torch.istft(center=True, periodic Hann): overlap-add of windowed irfft frames divided by the summed squared
 * window, n_fft/2 dropped in front; `length` defaults to hop * (frames - 1) as torch does without one.
 */
export function torchIstft(frames: Complex[], nFft: number, hop: number, length = hop * (frames.length - 1)): Float64Array {
  const w = periodicHann(nFft);
  const total = nFft + hop * (frames.length - 1);
  const y = new Float64Array(total);
  const env = new Float64Array(total);
  const tw = twiddles(nFft);
  frames.forEach((f, t) => {
    const x = irfft(f, nFft, tw);
    for (let i = 0; i < nFft; i++) {
      y[t * hop + i]! += x[i]! * w[i]!;
      env[t * hop + i]! += w[i]! * w[i]!;
    }
  });
  const out = new Float64Array(length);
  for (let i = 0; i < length; i++) {
    const j = i + nFft / 2;
    if (j < total) out[i] = env[j]! > 1e-11 ? y[j]! / env[j]! : y[j]!;
  }
  return out;
}
