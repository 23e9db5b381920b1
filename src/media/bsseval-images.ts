/**
 * ISR, SIR and SAR beside SDR: BSS Eval v4's full images decomposition as museval computes it for MUSDB18
 * (`metrics.bss_eval`, compute_permutation=False, framewise_filters=False, bsseval_sources_version=False).
 *
 * The distortion filters are least-squares projections of each estimate onto delayed copies (lags 0..L-1, L = 512 in
 * museval) of the references, computed ONCE on the whole signals (v4's time-invariant filters): C_j onto every
 * reference's channels, Cj_j onto source j's own. Each window then projects the window's references through them:
 * P_all = sum C_j * r, P_j = Cj_j * r_j, and with s = r_j (zero-padded by L-1):
 *   ISR = |s|^2 / |P_j - s|^2,  SIR = |P_j|^2 / |P_all - P_j|^2,  SAR = |P_all|^2 / |est - P_all|^2,
 *   SDR = |s|^2 / |est - s|^2 (as in bsseval.ts: the filters never enter it).
 * Cost: the normal equations have (sources x channels x L) unknowns (4096 for four stereo stems): a Cholesky of that
 * size takes tens of seconds here, which is why the bench asks for these metrics only with --all-metrics.
 */
import { BssEvalError, checkInputs, framing, silent, type BssEvalOptions, type SourceAudio } from './bsseval.js';
import { complexFft64, type ComplexFft64 } from './dsp/fft64.js';

export interface BssEvalMetrics {
  /** Per source, per window; NaN where the window was skipped. */
  sdr: Float64Array[];
  isr: Float64Array[];
  sir: Float64Array[];
  sar: Float64Array[];
  windows: number;
}

const EPS = 2.220446049250313e-16; // numpy's finfo(float).eps, which museval adds to the Gram matrix's diagonal

const nextPow2 = (x: number) => 2 ** Math.ceil(Math.log2(Math.max(2, x)));
const db = (num: number, den: number) => (den === 0 ? Infinity : 10 * Math.log10(num / den));

/**
 * Whole-signal cross-correlations at lags -(L-1)..L-1, in float64, summed block by block in the frequency domain:
 * corr(x, y)(k) = sum_t x(t) y(t + k). Block b contributes conj(F[x over the block, placed at L-1]) * F[y over the
 * block widened by L-1 each side]; the spectra of all blocks add up, and one inverse FFT per pair ends it.
 */
function correlations(xs: readonly ArrayLike<number>[], ys: readonly ArrayLike<number>[], pairs: Array<[number, number]>, n: number, L: number): (k: number, p: number) => number {
  const size = Math.min(Math.max(16384, nextPow2(4 * L)), nextPow2(n + 2 * L - 2));
  const fft = complexFft64(size);
  const block = size - 2 * (L - 1);
  const accRe = pairs.map(() => new Float64Array(size));
  const accIm = pairs.map(() => new Float64Array(size));
  const spec = (src: ArrayLike<number>, from: number, to: number, at: number) => {
    const re = new Float64Array(size);
    const im = new Float64Array(size);
    for (let t = Math.max(0, from); t < Math.min(n, to); t++) re[t - from + at] = src[t]!;
    fft.forward(re, im);
    return { re, im };
  };
  for (let t0 = 0; t0 < n; t0 += block) {
    const X = xs.map((x) => spec(x, t0, t0 + block, L - 1));
    const Y = ys.map((y) => spec(y, t0 - (L - 1), t0 + block + L - 1, 0));
    pairs.forEach(([a, b], p) => {
      const { re: xr, im: xi } = X[a]!;
      const { re: yr, im: yi } = Y[b]!;
      const ar = accRe[p]!;
      const ai = accIm[p]!;
      for (let k = 0; k < size; k++) {
        ar[k]! += xr[k]! * yr[k]! + xi[k]! * yi[k]!;
        ai[k]! += xr[k]! * yi[k]! - xi[k]! * yr[k]!;
      }
    });
  }
  pairs.forEach((_, p) => fft.inverse(accRe[p]!, accIm[p]!));
  return (k, p) => accRe[p]![(k + size) % size]!;
}

/** Solves A X = B for symmetric positive definite A (m x m, overwritten by its Cholesky factor); B is m x r, in place. */
function choleskySolve(A: Float64Array, m: number, B: Float64Array, r: number): void {
  for (let j = 0; j < m; j++) {
    const rowJ = j * m;
    let d = A[rowJ + j]!;
    for (let k = 0; k < j; k++) d -= A[rowJ + k]! * A[rowJ + k]!;
    if (!(d > 0)) throw new BssEvalError('BSS Eval: the references\' correlation matrix is singular (a reference is a delayed copy of another?)');
    const l = Math.sqrt(d);
    A[rowJ + j] = l;
    for (let i = j + 1; i < m; i++) {
      const rowI = i * m;
      let s = A[rowI + j]!;
      for (let k = 0; k < j; k++) s -= A[rowI + k]! * A[rowJ + k]!;
      A[rowI + j] = s / l;
    }
  }
  for (let c = 0; c < r; c++) {
    for (let i = 0; i < m; i++) {
      let s = B[i * r + c]!;
      for (let k = 0; k < i; k++) s -= A[i * m + k]! * B[k * r + c]!;
      B[i * r + c] = s / A[i * m + i]!;
    }
    for (let i = m - 1; i >= 0; i--) {
      let s = B[i * r + c]!;
      for (let k = i + 1; k < m; k++) s -= A[k * m + i]! * B[k * r + c]!;
      B[i * r + c] = s / A[i * m + i]!;
    }
  }
}

/**
 * Every window's SDR, ISR, SIR and SAR of every source, as museval's bss_eval (v4, images, no permutation) gives
 * them. `filtersLen` defaults to museval's 512.
 */
export function bssEvalImages(refs: readonly SourceAudio[], ests: readonly SourceAudio[], opts: BssEvalOptions & { filtersLen?: number }): BssEvalMetrics {
  const { n, nchan, est } = checkInputs(refs, ests);
  const L = opts.filtersLen ?? 512;
  const nsrc = refs.length;
  const S = nsrc * nchan; // reference channels, index s = j * nchan + c (museval's row order: source, channel, lag)
  const M = S * L;
  const refCh = refs.flatMap((r) => r);
  const estCh = est.flatMap((e) => e);
  const pairs: Array<[number, number]> = [];
  for (let a = 0; a < S; a++) for (let b = a; b < S; b++) pairs.push([a, b]);
  const gPairs = pairs.length;
  for (let a = 0; a < S; a++) for (let e = 0; e < S; e++) pairs.push([a, S + e]);
  const corr = correlations(refCh, [...refCh, ...estCh], pairs, n, L);
  const gIndex = (a: number, b: number) => a * S - (a * (a - 1)) / 2 + (b - a);
  // G[(a, p), (b, q)] = sum_t r_a(t - p) r_b(t - q) = corr(r_a, r_b)(p - q).
  const gram = (rows: number[]): Float64Array => {
    const m = rows.length * L;
    const G = new Float64Array(m * m);
    rows.forEach((a, ia) => rows.forEach((b, ib) => {
      for (let p = 0; p < L; p++) {
        for (let q = 0; q < L; q++) {
          const v = a <= b ? corr(p - q, gIndex(a, b)) : corr(q - p, gIndex(b, a));
          G[(ia * L + p) * m + ib * L + q] = v;
        }
      }
    }));
    for (let i = 0; i < m; i++) G[i * m + i]! += EPS;
    return G;
  };
  // D[(a, m), c] = sum_t r_a(t - m) est_c(t) = corr(r_a, est_c)(m); the filters solve G C = D.
  const filters = (rows: number[], j: number): Float64Array => {
    const m = rows.length * L;
    const D = new Float64Array(m * nchan);
    rows.forEach((a, ia) => {
      for (let c = 0; c < nchan; c++) for (let lag = 0; lag < L; lag++) D[(ia * L + lag) * nchan + c] = corr(lag, gPairs + a * S + j * nchan + c);
    });
    choleskySolve(gram(rows), m, D, nchan);
    return D;
  };
  const all = Array.from({ length: S }, (_, a) => a);
  const C = Array.from({ length: nsrc }, (_, j) => {
    const D = new Float64Array(M * nchan);
    all.forEach((a) => {
      for (let c = 0; c < nchan; c++) for (let lag = 0; lag < L; lag++) D[(a * L + lag) * nchan + c] = corr(lag, gPairs + a * S + j * nchan + c);
    });
    return D;
  });
  const G = gram(all);
  // One factorisation of the full Gram matrix serves every estimate: stack their right-hand sides.
  const rhs = new Float64Array(M * nchan * nsrc);
  C.forEach((D, j) => { for (let i = 0; i < M; i++) for (let c = 0; c < nchan; c++) rhs[i * nchan * nsrc + j * nchan + c] = D[i * nchan + c]!; });
  choleskySolve(G, M, rhs, nchan * nsrc);
  C.forEach((D, j) => { for (let i = 0; i < M; i++) for (let c = 0; c < nchan; c++) D[i * nchan + c] = rhs[i * nchan * nsrc + j * nchan + c]!; });
  const own = Array.from({ length: nsrc }, (_, j) => filters(Array.from({ length: nchan }, (_, c) => j * nchan + c), j));

  const frames = framing(n, opts.window, opts.hop);
  const out = { sdr: [] as Float64Array[], isr: [] as Float64Array[], sir: [] as Float64Array[], sar: [] as Float64Array[] };
  for (const k of ['sdr', 'isr', 'sir', 'sar'] as const) out[k] = refs.map(() => new Float64Array(frames.length).fill(NaN));
  const ffts = new Map<number, { fft: ComplexFft64; spectra: Map<string, { re: Float64Array; im: Float64Array }> }>();
  frames.forEach(([a, b], t) => {
    if (refs.some((r) => silent(r, a, b)) || est.some((e) => silent(e, a, b))) return;
    const w = b - a;
    const len = w + L - 1;
    const size = nextPow2(len);
    let cache = ffts.get(size);
    if (!cache) ffts.set(size, (cache = { fft: complexFft64(size), spectra: new Map() }));
    const { fft, spectra } = cache;
    // A filter's spectrum at this FFT size, computed once (every window but a short last one shares the size).
    const filterSpec = (key: string, taps: Float64Array, row0: number, c: number) => {
      let s = spectra.get(key);
      if (!s) {
        const re = new Float64Array(size);
        for (let lag = 0; lag < L; lag++) re[lag] = taps[(row0 + lag) * nchan + c]!;
        s = { re, im: new Float64Array(size) };
        fft.forward(s.re, s.im);
        spectra.set(key, s);
      }
      return s;
    };
    const R = refCh.map((x) => {
      const re = new Float64Array(size);
      for (let i = 0; i < w; i++) re[i] = x[a + i]!;
      const im = new Float64Array(size);
      fft.forward(re, im);
      return { re, im };
    });
    const project = (terms: Array<{ f: { re: Float64Array; im: Float64Array }; x: { re: Float64Array; im: Float64Array } }>) => {
      const re = new Float64Array(size);
      const im = new Float64Array(size);
      for (const { f, x } of terms) {
        for (let k = 0; k < size; k++) {
          re[k]! += f.re[k]! * x.re[k]! - f.im[k]! * x.im[k]!;
          im[k]! += f.re[k]! * x.im[k]! + f.im[k]! * x.re[k]!;
        }
      }
      fft.inverse(re, im);
      return re;
    };
    for (let j = 0; j < nsrc; j++) {
      let sTrue = 0, eSpat = 0, pj2 = 0, eInterf = 0, pAll2 = 0, eArtif = 0, eTotal = 0;
      for (let c = 0; c < nchan; c++) {
        const pAll = project(all.map((s) => ({ f: filterSpec(`C${j}.${s}.${c}`, C[j]!, s * L, c), x: R[s]! })));
        const pj = project(Array.from({ length: nchan }, (_, cj) => ({ f: filterSpec(`O${j}.${cj}.${c}`, own[j]!, cj * L, c), x: R[j * nchan + cj]! })));
        const ref = refs[j]![c]!;
        const e = est[j]![c]!;
        for (let i = 0; i < len; i++) {
          const s = i < w ? ref[a + i]! : 0;
          const x = i < w ? e[a + i]! : 0;
          sTrue += s * s;
          eSpat += (pj[i]! - s) ** 2;
          pj2 += pj[i]! ** 2;
          eInterf += (pAll[i]! - pj[i]!) ** 2;
          pAll2 += pAll[i]! ** 2;
          eArtif += (x - pAll[i]!) ** 2;
          eTotal += (x - s) ** 2;
        }
      }
      out.sdr[j]![t] = db(sTrue, eTotal);
      out.isr[j]![t] = db(sTrue, eSpat);
      out.sir[j]![t] = db(pj2, eInterf);
      out.sar[j]![t] = db(pAll2, eArtif);
    }
  });
  return { ...out, windows: frames.length };
}
