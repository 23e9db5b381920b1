import type { AudioData } from '../../media/audio.js';
import { concatAudio, SampleFifo, type AudioStage } from './stage.js';
import { cepDistance, dtwSimilarity, FEATURE_RATE, frameTime, HOP, SpeechFeatureTracker, WIN, type SpeechFrame } from './speech-features.js';

/**
 * `fillers`, `hesitations`, `stutters` from the audio alone (no ASR model on this server).
 *
 * Filled pauses ("uh", "um", "er") and lengthened syllables are produced with a fixed vocal-tract
 * shape and a flat or slowly falling F0, so they show up as voiced stretches where pitch and the
 * spectral envelope (mel cepstrum) hardly move for much longer than a normal vowel (Goto, Itou &
 * Hayamizu 1999, small F0 transition + small spectral-envelope deformation; Audhkhasi et al. 2009,
 * formant stability). A stable stretch that fills most of a voiced island bounded by pauses is a
 * filler and is removed; a long stable stretch inside a word is a hesitation and is shortened to a
 * natural vowel length. Stutters (part-word repetitions, "th- th- the") are syllable-sized units
 * whose cepstral sequence matches the onset of the unit that follows (DTW, cosine); the repeats are
 * removed and the last, complete one kept.
 */
export type DisfluencyKind = 'filler' | 'hesitation' | 'stutter';

export interface DisfluencyOptions {
  fillers?: boolean;
  hesitations?: boolean;
  stutters?: boolean;
  /** Shortest stable voiced stretch that can be a filled pause. */
  minFillerSeconds?: number;
  /** Stable stretch longer than this (inside a word) is a lengthened syllable. */
  minLengthenedSeconds?: number;
  /** Length a lengthened syllable is shortened to. */
  naturalSeconds?: number;
  /** Longer stable stretches are not speech (a hum, a held note) and are left alone. */
  maxStableSeconds?: number;
  /** Pitch range (semitones) allowed within the 90 ms stability window. */
  pitchSemitones?: number;
  /** Mean frame-to-frame cepstral distance allowed within the stability window. */
  maxFlux?: number;
  /** DTW similarity above which a unit repeats the next unit's onset. */
  stutterSimilarity?: number;
  crossfadeSeconds?: number;
}

type Opts = Required<DisfluencyOptions>;
const DEFAULTS: Opts = {
  fillers: false, hesitations: false, stutters: false,
  minFillerSeconds: 0.25, minLengthenedSeconds: 0.4, naturalSeconds: 0.16, maxStableSeconds: 2.0,
  pitchSemitones: 1.5, maxFlux: 1.4, stutterSimilarity: 0.85, crossfadeSeconds: 0.012,
};

/** A frame with the stream-level decisions made when it arrived (noise floor is causal). */
export interface TaggedFrame extends SpeechFrame {
  active: boolean;
  voiced: boolean;
}

export interface Detection {
  kind: DisfluencyKind;
  /** Frame range of the event (for ownership and reports). */
  start: number;
  end: number;
  /** Frame range to remove (end exclusive). */
  cutStart: number;
  cutEnd: number;
}

const H = 4; // half-width of the stability window: 9 frames, 90 ms

/** Detections in a window of consecutive frames (frame `index` values are absolute). */
export function detectDisfluencies(f: TaggedFrame[], options: DisfluencyOptions): Detection[] {
  const o: Opts = { ...DEFAULTS, ...options };
  const n = f.length;
  if (n === 0) return [];
  const base = f[0]!.index;
  const sec = (s: number) => Math.round(s * 100);
  const st = (hz: number) => 12 * Math.log2(hz);
  const stable = new Uint8Array(n);
  for (let i = H; i + H < n; i++) {
    let ok = true, lo = Infinity, hi = -Infinity, flux = 0;
    for (let k = i - H; k <= i + H && ok; k++) {
      const fr = f[k]!;
      if (!fr.voiced) ok = false;
      else {
        lo = Math.min(lo, st(fr.f0));
        hi = Math.max(hi, st(fr.f0));
        // c1..c8 only: the envelope; higher cepstra mostly follow the noise in the frame.
        if (k > i - H) flux += cepDistance(fr.mfcc.subarray(0, 8), f[k - 1]!.mfcc.subarray(0, 8));
      }
    }
    if (ok && hi - lo <= o.pitchSemitones && flux / (2 * H) <= o.maxFlux) stable[i] = 1;
  }
  // Stable runs, widened by the window's half-width (each stable centre vouches for its window).
  const runs: Array<[number, number]> = [];
  for (let i = 0; i < n; ) {
    if (!stable[i]) { i++; continue; }
    let j = i;
    while (j < n && stable[j]) j++;
    runs.push([Math.max(0, i - H), Math.min(n, j + H)]);
    i = j;
  }
  // Voiced islands: active stretches; gaps under 60 ms (stop closures) do not split them.
  const islands: Array<[number, number]> = [];
  for (let i = 0; i < n; ) {
    if (!f[i]!.active) { i++; continue; }
    let j = i;
    for (;;) {
      while (j < n && f[j]!.active) j++;
      let g = j;
      while (g < n && !f[g]!.active && g - j < 6) g++;
      if (g < n && f[g]!.active && g - j < 6) j = g;
      else break;
    }
    islands.push([i, j]);
    i = j;
  }
  const out: Detection[] = [];
  const claimed = new Uint8Array(n);
  const claim = (s: number, e: number) => claimed.fill(1, s, e);
  for (const [is, ie] of islands) {
    const inside = runs.filter(([s, e]) => s >= is && e <= ie && e - s <= sec(o.maxStableSeconds));
    if (!inside.length) continue;
    const stableLen = inside.reduce((a, [s, e]) => a + e - s, 0);
    const longest = Math.max(...inside.map(([s, e]) => e - s));
    const len = ie - is;
    // Bounded by pauses on both sides (not by the window's edges, where the island may go on).
    const bounded = is > 0 && ie < n;
    if (o.fillers && bounded && longest >= sec(o.minFillerSeconds) && stableLen >= 0.6 * len && len <= sec(1.5)) {
      out.push({ kind: 'filler', start: base + is, end: base + ie, cutStart: base + is, cutEnd: base + ie });
      claim(is, ie);
      continue;
    }
    if (!o.hesitations) continue;
    for (const [s, e] of inside) {
      if (e - s < sec(o.minLengthenedSeconds)) continue;
      const keep = sec(o.naturalSeconds);
      const head = Math.round(keep * 0.6);
      out.push({ kind: 'hesitation', start: base + s, end: base + e, cutStart: base + s + head, cutEnd: base + e - (keep - head) });
      claim(s, e);
    }
  }
  if (o.stutters) out.push(...detectStutters(f, claimed, o));
  return out.sort((a, b) => a.cutStart - b.cutStart);
}

/** Syllable-sized units from the level contour: peaks 3 dB above the dips that separate them. */
function syllables(f: TaggedFrame[]): Array<[number, number]> {
  const n = f.length;
  const lv = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0, c = 0;
    for (let k = Math.max(0, i - 1); k <= Math.min(n - 1, i + 1); k++) { s += f[k]!.db; c++; }
    lv[i] = f[i]!.active ? s / c : -200;
  }
  const units: Array<[number, number]> = [];
  let i = 0;
  while (i < n) {
    if (lv[i]! <= -200) { i++; continue; }
    let j = i;
    while (j < n && lv[j]! > -200) j++;
    // Split the active stretch [i, j) at dips at least 3 dB under the peaks on both sides.
    let start = i, peak = lv[i]!, dipAt = -1, dip = Infinity;
    for (let k = i; k < j; k++) {
      const v = lv[k]!;
      if (dipAt < 0) {
        if (v > peak) peak = v;
        else if (v < peak - 3) { dipAt = k; dip = v; }
      } else if (v < dip) { dip = v; dipAt = k; }
      else if (v > dip + 3) {
        units.push([start, dipAt]);
        start = dipAt;
        peak = v;
        dipAt = -1;
        dip = Infinity;
      }
    }
    units.push([start, j]);
    i = j;
  }
  return units.filter(([s, e]) => e - s >= 4);
}

function detectStutters(f: TaggedFrame[], claimed: Uint8Array, o: Opts): Detection[] {
  const units = syllables(f);
  const base = f[0]!.index;
  const out: Detection[] = [];
  const cep = (s: number, e: number) => f.slice(s, e).map((x) => x.mfcc);
  const peak = (s: number, e: number) => Math.max(...f.slice(s, e).map((x) => x.db));
  for (let u = 0; u + 1 < units.length; u++) {
    const [as, ae] = units[u]!;
    const [bs, be] = units[u + 1]!;
    if (as === 0 || claimed.subarray(as, be).some((v) => v === 1)) continue;
    const lenA = ae - as;
    if (lenA > 35 || bs - ae > 15 || be - bs < lenA) continue;
    if (Math.abs(peak(as, ae) - peak(bs, be)) > 10) continue;
    const k = Math.min(lenA, 30);
    const sim = dtwSimilarity(cep(as, as + k), cep(bs, bs + k));
    if (sim >= o.stutterSimilarity) out.push({ kind: 'stutter', start: base + as, end: base + bs, cutStart: base + as, cutEnd: base + bs });
  }
  // Merge chains (A A A B): each repeat's cut ends where the next begins.
  const merged: Detection[] = [];
  for (const d of out) {
    const last = merged[merged.length - 1];
    if (last && d.cutStart <= last.cutEnd) { last.cutEnd = Math.max(last.cutEnd, d.cutEnd); last.end = Math.max(last.end, d.end); }
    else merged.push({ ...d });
  }
  return merged;
}

export interface DisfluencyReport {
  fillers: number;
  hesitations: number;
  stutters: number;
  removedSeconds: number;
  /** Detected events in input seconds (few per minute: kept for reports and remapping). */
  events: Array<{ kind: DisfluencyKind; start: number; end: number }>;
}

const CHUNK = 200; // frames decided per analysis (2 s)
const LOOK = 250; // look-ahead frames (2.5 s, longer than any event we act on)
const CONTEXT = 100; // frames kept before the decision point (1 s, for stutter comparisons)

/**
 * Streaming stage: features are computed as audio arrives; every 2 s of frames a window with 1 s of
 * context and 2.5 s of look-ahead is analysed and the events starting in its first 2 s are cut.
 * Holds at most ~6 s of audio whatever the input length.
 */
export class DisfluencyStage implements AudioStage {
  readonly name = 'disfluency';
  readonly report: DisfluencyReport = { fillers: 0, hesitations: 0, stutters: 0, removedSeconds: 0, events: [] };
  private readonly o: Opts;
  private readonly fifo: SampleFifo;
  private fifoStart = 0;
  private inputFrames = 0;
  private frames: TaggedFrame[] = [];
  private committed = 0;
  private floor = NaN;
  private cuts: Array<[number, number]> = [];
  private out: AudioData[] = [];
  private readonly xf: number;
  private readonly maxLag: number;

  private constructor(private readonly tracker: SpeechFeatureTracker, readonly sampleRate: number, readonly channelCount: number, opts: DisfluencyOptions) {
    this.o = { ...DEFAULTS, ...opts };
    this.fifo = new SampleFifo(channelCount);
    this.xf = Math.max(1, Math.round(this.o.crossfadeSeconds * sampleRate));
    this.maxLag = Math.round(0.0125 * sampleRate); // one period of an 80 Hz voice
  }

  static async create(sampleRate: number, channelCount: number, opts: DisfluencyOptions): Promise<DisfluencyStage> {
    return new DisfluencyStage(await SpeechFeatureTracker.create(sampleRate), sampleRate, channelCount, opts);
  }

  async push(block: AudioData): Promise<AudioData | null> {
    this.fifo.push(block.channels);
    this.inputFrames += block.channels[0]?.length ?? 0;
    this.tag(this.tracker.push(block));
    this.analyse(false);
    return this.drain();
  }

  async flush(): Promise<AudioData | null> {
    this.tag(this.tracker.flush());
    this.analyse(true);
    this.emitTo(this.inputFrames);
    return this.drain();
  }

  private tag(frames: SpeechFrame[]): void {
    for (const fr of frames) {
      // Causal noise floor: follows dips at once, rises 1 dB/s, so speech never becomes the floor.
      this.floor = Number.isNaN(this.floor) ? fr.db : fr.db < this.floor ? fr.db : this.floor + 0.01;
      const active = fr.db > Math.max(this.floor + 12, -65);
      this.frames.push({ ...fr, active, voiced: active && fr.f0 > 0 && fr.clarity >= 0.7 });
    }
  }

  /** Input sample at the boundary before frame k (the frame's 10 ms hop is centred in its window). */
  private sampleAt(k: number): number {
    const s16 = k * HOP + (WIN - HOP) / 2;
    return Math.min(this.inputFrames, Math.max(0, Math.round((s16 * this.sampleRate) / FEATURE_RATE)));
  }

  private analyse(final: boolean): void {
    const base = () => this.frames[0]?.index ?? this.committed;
    const last = () => base() + this.frames.length;
    while (this.frames.length && (final ? this.committed < last() : last() - this.committed >= CHUNK + LOOK)) {
      const winEnd = final ? last() : this.committed + CHUNK + LOOK;
      const decideEnd = final ? last() : this.committed + CHUNK;
      const from = Math.max(base(), this.committed - CONTEXT);
      const dets = detectDisfluencies(this.frames.slice(from - base(), winEnd - base()), this.o);
      let next = decideEnd;
      let lastCut = this.committed;
      for (const d of dets) {
        if (d.start < this.committed || d.start >= decideEnd || d.cutStart < lastCut || d.cutEnd <= d.cutStart) continue;
        if (!final && d.end > winEnd - 5) continue;
        this.accept(d);
        lastCut = d.cutEnd;
        next = Math.max(next, d.cutEnd + 5);
      }
      this.committed = final ? last() : Math.min(next, last());
      const drop = this.committed - CONTEXT - base();
      if (drop > 0) this.frames.splice(0, drop);
      this.emitTo(final ? this.inputFrames : this.sampleAt(this.committed));
    }
  }

  private accept(d: Detection): void {
    const a = this.sampleAt(d.cutStart), b = this.sampleAt(d.cutEnd);
    if (b <= a) return;
    this.cuts.push([a, b]);
    this.report[d.kind === 'filler' ? 'fillers' : d.kind === 'hesitation' ? 'hesitations' : 'stutters']++;
    this.report.events.push({ kind: d.kind, start: frameTime(d.start) - HOP / 2 / FEATURE_RATE, end: frameTime(d.end) - HOP / 2 / FEATURE_RATE });
  }

  private emitTo(pos: number): void {
    while (this.cuts.length && this.cuts[0]![0] < pos) {
      const [a, b] = this.cuts.shift()!;
      this.take(a);
      this.splice(a, b);
    }
    this.take(pos);
  }

  private take(pos: number): void {
    const n = Math.min(this.fifo.length, pos - this.fifoStart);
    if (n <= 0) return;
    this.out.push({ sampleRate: this.sampleRate, channels: this.fifo.take(n) });
    this.fifoStart += n;
  }

  /**
   * Removes [a, b): the samples after the cut are shifted by up to one pitch period to line up with
   * those before it (a splice inside a vowel keeps its phase), then cross-faded over `xf` samples.
   */
  private splice(a: number, b: number): void {
    const avail = this.fifoStart + this.fifo.length;
    const xf = Math.max(0, Math.min(this.xf, avail - b));
    const mono = (from: number, n: number) => {
      const m = new Float64Array(n);
      for (let c = 0; c < this.channelCount; c++) {
        const v = this.fifo.peek(c, n, from - this.fifoStart);
        for (let i = 0; i < n; i++) m[i] = m[i]! + v[i]!;
      }
      return m;
    };
    let lag = 0, best = -Infinity, bestCorr = 0;
    const lags = Math.max(0, Math.min(this.maxLag, avail - b - xf));
    if (xf > 0) {
      const h = mono(a, xf);
      const t = mono(b, xf + lags);
      let hh = 0;
      for (let i = 0; i < xf; i++) hh += h[i]! * h[i]!;
      for (let d = 0; d <= lags; d++) {
        let ht = 0, tt = 0;
        for (let i = 0; i < xf; i++) { ht += h[i]! * t[d + i]!; tt += t[d + i]! * t[d + i]!; }
        const corr = hh > 0 && tt > 0 ? ht / Math.sqrt(hh * tt) : 0;
        if (corr > best) { best = corr; lag = d; bestCorr = corr; }
      }
    }
    const head = Array.from({ length: this.channelCount }, (_, c) => this.fifo.peek(c, xf, 0).slice());
    this.fifo.discard(b + lag - a);
    this.fifoStart = b + lag;
    this.report.removedSeconds += (b + lag - a) / this.sampleRate;
    if (xf === 0) return;
    const tail = this.fifo.take(xf);
    this.fifoStart += xf;
    // Aligned (correlated) material: linear fade keeps the level; otherwise equal-power.
    const linear = bestCorr > 0.5;
    for (let c = 0; c < this.channelCount; c++) {
      const h = head[c]!, t = tail[c]!;
      for (let i = 0; i < xf; i++) {
        const x = (i + 0.5) / xf;
        const [go, gi] = linear ? [1 - x, x] : [Math.cos((x * Math.PI) / 2), Math.sin((x * Math.PI) / 2)];
        t[i] = h[i]! * go + t[i]! * gi;
      }
    }
    this.out.push({ sampleRate: this.sampleRate, channels: tail });
  }

  private drain(): AudioData | null {
    if (this.out.length === 0) return null;
    const a = this.out.length === 1 ? this.out[0]! : concatAudio(this.out, this.sampleRate, this.channelCount);
    this.out = [];
    return a;
  }
}
