import type { AudioData } from '../../media/audio.js';
import { LatencyTrim, SampleFifo, type AudioStage } from './stage.js';

/**
 * mouth_sounds: clicks, lip smacks and pops are impulsive, so they stand out in the residual of a
 * short-term linear-prediction model, where voiced speech and fricatives are whitened to a steady
 * level. Runs of outliers short enough to be clicks (<= maxClickMs) are replaced by least-squares AR
 * interpolation from both sides; longer runs (plosive bursts, consonants) are left alone.
 */
export interface DeclickOptions {
  order?: number;
  /** Outlier threshold in robust residual scales (MAD-based sigma). */
  threshold?: number;
  maxClickMs?: number;
}

export class DeclickStage implements AudioStage {
  readonly name = 'declick';
  private readonly fifos: SampleFifo;
  private readonly trim: LatencyTrim;
  private readonly chunk: number;
  private readonly margin: number;
  private readonly p: number;
  private readonly thr: number;
  private readonly maxLen: number;
  private readonly frame: number;
  /** LPC analysis window (Hann over 2 frames) and scratch, computed once instead of per frame. */
  private readonly lpcWin: Float64Array;
  private readonly lpcWork: LpcWork;
  /** Clicks repaired so far. */
  repaired = 0;

  constructor(readonly sampleRate: number, readonly channelCount: number, opts: DeclickOptions = {}) {
    this.p = opts.order ?? 16;
    this.thr = opts.threshold ?? 9;
    this.maxLen = Math.max(2, Math.round(((opts.maxClickMs ?? 2) / 1000) * sampleRate));
    // Even, so the analysis window (frame centred, s - frame / 2) starts on a whole sample: an odd frame
    // (441 at 22.05 kHz) indexed x[fractional], every LPC fit failed and no click was ever repaired.
    this.frame = 2 * Math.round(0.01 * sampleRate);
    this.chunk = this.frame * 20;
    this.margin = this.frame * 2;
    const n = 2 * this.frame;
    this.lpcWin = new Float64Array(n);
    for (let i = 0; i < n; i++) this.lpcWin[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1));
    this.lpcWork = { r: new Float64Array(this.p + 1), w: new Float64Array(n), tmp: new Float64Array(this.p + 1), abs: new Float64Array(this.frame) };
    this.fifos = new SampleFifo(channelCount);
    this.fifos.pushZeros(this.margin); // left context for the first chunk
    this.trim = new LatencyTrim(0);
  }

  async push(block: AudioData): Promise<AudioData | null> {
    this.trim.countInput(block.channels[0]?.length ?? 0);
    this.fifos.push(block.channels);
    return this.drain();
  }

  async flush(): Promise<AudioData | null> {
    this.fifos.pushZeros(this.chunk + this.margin);
    return this.drain();
  }

  /** Each step: [margin | chunk | margin] is analysed, the chunk is repaired and emitted. */
  private drain(): AudioData | null {
    const { chunk, margin } = this;
    const outs: Float32Array[][] = [];
    while (this.fifos.length >= chunk + 2 * margin) {
      const parts: Float32Array[] = [];
      for (let c = 0; c < this.channelCount; c++) {
        const win = this.fifos.peek(c, chunk + 2 * margin).slice();
        this.repairWindow(win);
        parts.push(win.subarray(margin, margin + chunk));
      }
      // Repaired samples are written back so the next window's left context is clean.
      this.fifos.discard(chunk);
      for (let c = 0; c < this.channelCount; c++) this.fifos.peek(c, margin).set(parts[c]!.subarray(chunk - margin));
      outs.push(parts);
    }
    if (!outs.length) return null;
    const joined = Array.from({ length: this.channelCount }, (_, c) => {
      const o = new Float32Array(outs.length * chunk);
      outs.forEach((p, i) => o.set(p[c]!, i * chunk));
      return o;
    });
    const t = this.trim.apply(joined);
    return t ? { sampleRate: this.sampleRate, channels: t } : null;
  }

  private repairWindow(x: Float32Array): void {
    const { frame, margin, chunk, p } = this;
    const n = x.length;
    // Residual over the whole window with per-frame LPC, so neighbours across frames can be compared.
    const res = new Float64Array(n);
    const sig = new Float64Array(n);
    const coefs: Float64Array[] = [];
    for (let s = 0, f = 0; s < n; s += frame, f++) {
      const a = new Float64Array(p + 1);
      const ok = lpc(x, s - frame / 2, this.lpcWin, p, a, this.lpcWork);
      coefs.push(ok ? a : new Float64Array(0));
      const e = Math.min(n, s + frame);
      for (let i = Math.max(s, p); i < e; i++) {
        let v = x[i]!;
        if (ok) for (let k = 1; k <= p; k++) v += a[k]! * x[i - k]!;
        res[i] = v;
      }
      const abs = this.lpcWork.abs.subarray(0, e - s);
      for (let i = s; i < e; i++) abs[i - s] = Math.abs(res[i]!);
      const sigma = 1.4826 * medianInPlace(abs) + 1e-9;
      sig.fill(sigma, s, e);
    }
    const pmin = Math.round(0.0025 * this.sampleRate), pmax = Math.round(0.0125 * this.sampleRate);
    let i = margin;
    while (i < margin + chunk) {
      const a = coefs[Math.floor(i / frame)]!;
      if (a.length === 0 || Math.abs(res[i]!) <= this.thr * sig[i]!) { i++; continue; }
      // Extend the run while outliers continue (allowing 1-2 sample dips inside a click).
      const t = this.thr * sig[i]!;
      let j = i + 1;
      while (j < n && (Math.abs(res[j]!) > 0.5 * t || (j + 1 < n && Math.abs(res[j + 1]!) > t))) j++;
      const peak = Math.abs(res[i]!);
      // Glottal pulses are impulsive too but recur one pitch period apart; clicks are isolated.
      let periodic = false;
      for (let d = pmin; d <= pmax && !periodic; d++) {
        if (i - d >= 0 && Math.abs(res[i - d]!) > 0.4 * peak) periodic = true;
        if (i + d < n && d > j - i && Math.abs(res[i + d]!) > 0.4 * peak) periodic = true;
      }
      if (j - i <= this.maxLen && !periodic) {
        // The residual of a click trails by the filter order: repair from a little before to after.
        const g0 = i - 2, g1 = Math.min(n - p - 1, j + Math.min(p, 8));
        if (g0 - p >= 0 && lsarInterpolate(x, g0, g1, a, p)) this.repaired++;
      }
      i = j + p;
    }
  }
}

/** Sorts v (scratch) and returns its upper median. */
function medianInPlace(v: Float64Array): number {
  v.sort();
  return v[v.length >> 1]!;
}

interface LpcWork { r: Float64Array; w: Float64Array; tmp: Float64Array; abs: Float64Array }

/** Prediction-error filter a[0..p] (a[0] = 1) of x[start, start+win.length) under win; false when the frame is silent. */
function lpc(x: Float32Array, start: number, win: Float64Array, p: number, a: Float64Array, work: LpcWork): boolean {
  const n = win.length;
  const { r, w, tmp } = work;
  for (let i = 0; i < n; i++) {
    const idx = start + i;
    w[i] = idx >= 0 && idx < x.length ? x[idx]! * win[i]! : 0;
  }
  for (let k = 0; k <= p; k++) { let s = 0; for (let i = k; i < n; i++) s += w[i]! * w[i - k]!; r[k] = s; }
  if (r[0]! < 1e-10) return false;
  r[0] = r[0]! * 1.0001; // light regularisation
  a.fill(0);
  a[0] = 1;
  let err = r[0]!;
  for (let i = 1; i <= p; i++) {
    let acc = r[i]!;
    for (let j = 1; j < i; j++) acc += a[j]! * r[i - j]!;
    const k = -acc / err;
    tmp.set(a);
    for (let j = 1; j < i; j++) a[j] = tmp[j]! + k * tmp[i - j]!;
    a[i] = k;
    err *= 1 - k * k;
    if (err <= 0) return false;
  }
  return true;
}

/**
 * Least-squares AR interpolation of x[g0, g1): minimises the prediction error energy of every
 * residual sample that depends on a missing one (Vaseghi & Rayner / Janssen et al.).
 */
function lsarInterpolate(x: Float32Array, g0: number, g1: number, a: Float64Array, p: number): boolean {
  const L = g1 - g0;
  if (L <= 0 || L > 400) return false;
  const M = new Float64Array(L * L);
  const rhs = new Float64Array(L);
  // Rows t = g0 .. g1-1+p: e_t = sum_k a_k x_{t-k}; split into unknown (in gap) and known parts.
  for (let t = g0; t < g1 + p; t++) {
    let known = 0;
    for (let k = 0; k <= p; k++) {
      const idx = t - k;
      if (idx < g0 || idx >= g1) known += a[k]! * x[idx]!;
    }
    for (let k1 = 0; k1 <= p; k1++) {
      const u1 = t - k1 - g0;
      if (u1 < 0 || u1 >= L) continue;
      rhs[u1] = rhs[u1]! - a[k1]! * known;
      for (let k2 = 0; k2 <= p; k2++) {
        const u2 = t - k2 - g0;
        if (u2 < 0 || u2 >= L) continue;
        M[u1 * L + u2] = M[u1 * L + u2]! + a[k1]! * a[k2]!;
      }
    }
  }
  // Cholesky-free Gaussian elimination (M is symmetric positive definite).
  for (let c = 0; c < L; c++) {
    const d = M[c * L + c]!;
    if (!(Math.abs(d) > 1e-12)) return false;
    for (let r = c + 1; r < L; r++) {
      const m = M[r * L + c]! / d;
      if (m === 0) continue;
      for (let k = c; k < L; k++) M[r * L + k] = M[r * L + k]! - m * M[c * L + k]!;
      rhs[r] = rhs[r]! - m * rhs[c]!;
    }
  }
  const sol = new Float64Array(L);
  for (let r = L - 1; r >= 0; r--) {
    let s = rhs[r]!;
    for (let k = r + 1; k < L; k++) s -= M[r * L + k]! * sol[k]!;
    sol[r] = s / M[r * L + r]!;
  }
  for (let i = 0; i < L; i++) x[g0 + i] = Math.max(-1, Math.min(1, sol[i]!));
  return true;
}
