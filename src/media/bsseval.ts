/**
 * SDR as BSS Eval v4 computes it for MUSDB18 (museval 0.4.1, `museval.evaluate` as `eval_mus_track` calls it), so
 * a separation model scored here can be set beside published figures.
 *
 * museval runs `metrics.bss_eval` with `compute_permutation=False`, time-invariant 512-tap distortion filters
 * (computed once on the whole signals) and `bsseval_sources_version=False`: the images variant SiSEC uses. There the
 * decomposition est = s_true + e_spat + e_interf + e_artif has s_true = the reference itself (zero-padded by the
 * filter length), so e_spat + e_interf + e_artif = est - ref whatever the filters are, and a window's SDR is
 * 10 log10(sum ref^2 / sum (est - ref)^2) over the window's samples and channels. The filters only split that error
 * into ISR, SIR and SAR (src/media/bsseval-images.ts). test/engines/reference/bsseval.test.ts checks every window
 * against museval itself (harness/cases/bsseval.py), a source delayed by 40 samples included.
 *
 * What museval does around it, and is done here the same way:
 * - estimates longer than the references are cut, shorter ones padded with zeros (`pad_or_truncate`);
 * - a wholly silent reference or estimate (channel sum zero at every sample) is refused (`validate`);
 * - windows of `window` samples every `hop` (`Framing`: floor((n - window + hop) / hop) windows, the last partial
 *   one dropped; one window of everything when window >= n);
 * - a window in which ANY evaluated reference or estimate is silent (channel sum all zero) is NaN for EVERY source:
 *   which stems are evaluated together changes which windows count (MUSDB: vocals, drums, bass, other together;
 *   vocals and accompaniment as a separate pair);
 * - the track's figure per source is the median over windows with infinite values stored as NaN, values quantised
 *   to 1e-5, NaN skipped (`TrackStore`, `np.nanmedian`).
 */

/** One source's audio: one array per channel, all the same length. */
export type SourceAudio = readonly ArrayLike<number>[];

export class BssEvalError extends Error {}

export interface BssEvalOptions {
  /** Window and hop in samples (museval: 1 s each, `int(1.0 * rate)`). */
  window: number;
  hop: number;
}

export interface BssEvalSdr {
  /** Per source, per window; NaN where the window was skipped, Infinity where est == ref. */
  sdr: Float64Array[];
  windows: number;
}

/** museval.metrics.Framing: [start, stop) of each window. */
export function framing(length: number, window: number, hop: number): Array<[number, number]> {
  const nwin = window < length ? Math.floor((length - window + hop) / hop) : 1;
  const out: Array<[number, number]> = [];
  for (let t = 0; t < nwin; t++) {
    const start = Number.isFinite(t * hop) ? Math.floor(t * hop) : 0;
    out.push([start, Math.floor(Math.min(t * hop + window, length))]);
  }
  return out;
}

/** museval's `_any_source_silent` for one source over [a, b): the channel sum is zero at every sample. */
export function silent(src: SourceAudio, a: number, b: number): boolean {
  for (let i = a; i < b; i++) {
    let sum = 0;
    for (const c of src) sum += c[i]!;
    if (sum !== 0) return false;
  }
  return true;
}

/** Estimates cut or zero-padded to the references' length (museval `pad_or_truncate`). */
function fitLength(est: SourceAudio, n: number): SourceAudio {
  return est.map((c) => {
    if (c.length === n) return c;
    const out = new Float64Array(n);
    for (let i = 0; i < Math.min(n, c.length); i++) out[i] = c[i]!;
    return out;
  });
}

/**
 * Per-window SDR of every source, as `museval.evaluate(refs, ests, win, hop, mode='v4')` returns it. `refs[j]` and
 * `ests[j]` are the j-th source's reference and estimate; every reference must have the same length and channel count.
 */
export function bssEvalSdr(refs: readonly SourceAudio[], ests: readonly SourceAudio[], opts: BssEvalOptions): BssEvalSdr {
  const { n, est } = checkInputs(refs, ests);
  const frames = framing(n, opts.window, opts.hop);
  const sdr = refs.map(() => new Float64Array(frames.length));
  frames.forEach(([a, b], t) => {
    if (refs.some((r) => silent(r, a, b)) || est.some((e) => silent(e, a, b))) {
      for (const s of sdr) s[t] = NaN;
      return;
    }
    refs.forEach((ref, j) => {
      let num = 0;
      let den = 0;
      ref.forEach((c, ch) => {
        const e = est[j]![ch]!;
        for (let i = a; i < b; i++) {
          const r = c[i]!;
          num += r * r;
          const d = e[i]! - r;
          den += d * d;
        }
      });
      sdr[j]![t] = den === 0 ? Infinity : 10 * Math.log10(num / den);
    });
  });
  return { sdr, windows: frames.length };
}

/**
 * museval's `validate` and `pad_or_truncate`: one estimate per reference, references of one shape, no wholly silent
 * source. Returns the estimates cut or padded to the references' length n.
 */
export function checkInputs(refs: readonly SourceAudio[], ests: readonly SourceAudio[]): { n: number; nchan: number; est: SourceAudio[] } {
  if (refs.length === 0 || refs.length !== ests.length) throw new BssEvalError(`BSS Eval needs as many estimates as references (got ${ests.length} and ${refs.length})`);
  const n = refs[0]![0]?.length ?? 0;
  const nchan = refs[0]!.length;
  for (const [j, r] of refs.entries()) {
    if (r.length !== nchan || r.some((c) => c.length !== n)) throw new BssEvalError(`reference ${j} does not have ${nchan} channels of ${n} samples like reference 0`);
    if (ests[j]!.length !== nchan) throw new BssEvalError(`estimate ${j} has ${ests[j]!.length} channels, its reference ${nchan}`);
  }
  if (n === 0) throw new BssEvalError('BSS Eval needs non-empty references');
  const est = ests.map((e) => fitLength(e, n));
  // museval refuses these: a silent source leaves the projection underdetermined.
  const silentRef = refs.findIndex((r) => silent(r, 0, n));
  if (silentRef >= 0) throw new BssEvalError(`reference ${silentRef} is silent (all zeros): BSS Eval (museval) refuses silent references`);
  const silentEst = est.findIndex((e) => silent(e, 0, n));
  if (silentEst >= 0) throw new BssEvalError(`estimate ${silentEst} is silent (all zeros): BSS Eval (museval) refuses silent estimates`);
  return { n, nchan, est };
}

/**
 * A source's figure for the track as museval's TrackStore gives it: each window's value quantised to 1e-5 (infinite
 * ones become NaN), then the median of the rest; NaN when no window counts.
 */
export function trackMedian(perWindow: ArrayLike<number>): number {
  const kept: number[] = [];
  for (let i = 0; i < perWindow.length; i++) {
    const v = perWindow[i]!;
    if (Number.isFinite(v)) kept.push(quantize(v));
  }
  if (kept.length === 0) return NaN;
  kept.sort((x, y) => x - y);
  const m = kept.length >> 1;
  return kept.length % 2 ? kept[m]! : (kept[m - 1]! + kept[m]!) / 2;
}

/** Decimal quantize to 5 places, half-even (Python's Decimal default, ROUND_HALF_EVEN, on the float's exact value). */
function quantize(v: number): number {
  const scaled = v * 1e5;
  const floor = Math.floor(scaled);
  const frac = scaled - floor;
  // Exact halves are rare for measured values; the tie rule only matters there.
  const r = frac > 0.5 ? floor + 1 : frac < 0.5 ? floor : floor % 2 === 0 ? floor : floor + 1;
  return r / 1e5;
}
