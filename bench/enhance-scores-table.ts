/**
 * The pure part of the standard-scores bench (bench/enhance-scores.ts): what the Python scorer returns (checked with
 * zod, as it crosses a process boundary), which condition a corpus pair belongs to, the means per condition and
 * system, and the markdown. No audio, no Python: test/bench/enhance-scores.test.ts runs it on made-up scores.
 */
import { z } from 'zod';

/** harness/enhance_scores.py's scores; the intrusive ones are absent without a reference, null when not computable. */
export const Scores = z.object({
  dnsmos_sig: z.number(),
  dnsmos_bak: z.number(),
  dnsmos_ovrl: z.number(),
  dnsmos_p808: z.number(),
  pesq_wb: z.number().nullable().optional(),
  stoi: z.number().nullable().optional(),
  estoi: z.number().nullable().optional(),
  si_sdr: z.number().nullable().optional(),
});
export type Scores = z.infer<typeof Scores>;

/** One scored output: what the bench sent (input, condition, system...) and what the scorer added. */
export const ScoredItem = z.object({
  file: z.string(),
  reference: z.string().optional(),
  /** The corpus file the output was made from (relative to speech/). */
  input: z.string(),
  condition: z.string(),
  system: z.string(),
  /** Processing seconds over audio seconds (absent for the unprocessed input and for outputs not made here). */
  rtf: z.number().optional(),
  /** The engines Soundry reported running (chains), or the one stage's name (engines). */
  engines: z.array(z.string()).optional(),
  stages: z.array(z.string()).optional(),
  /** Soundry's own STOI (src/engines/enhance/metrics.ts) on the same pair, for the cross-check against pystoi. */
  tsStoi: z.number().optional(),
  scores: Scores,
  note: z.string().optional(),
  resampled_from: z.number().optional(),
});
export type ScoredItem = z.infer<typeof ScoredItem>;

export const ScoredItems = z.array(ScoredItem);

export const REAL_NOISY_CONDITION = 'real noisy, no reference';
export const REAL_REVERB_CONDITION = 'real reverberant room, no reference';

/** When and where a run was measured (the machine is shared and the tree changes under it: both are recorded). */
export interface RunInfo {
  started: string; finished: string; machine: string; loadBefore: number[]; loadAfter: number[];
  /** HEAD's short hash and subject, and the paths under src/, bench/, harness/ that differed from it. */
  head: string; dirty: string[];
  modelsDir: string; wallSeconds: number; options: string;
  /** Systems measured again later (--systems ... --merge), each with its own when and where. */
  reruns?: Array<Omit<RunInfo, 'reruns'> & { systems: string[] }>;
}

/**
 * A full record with some systems measured again: their rows (on every input the fresh run covered) are replaced,
 * every other row stays, and the fresh run's circumstances are kept beside the first run's.
 */
export function mergeRuns(old: { items: ScoredItem[]; info: RunInfo }, fresh: { items: ScoredItem[]; info: RunInfo }): { items: ScoredItem[]; info: RunInfo } {
  const fixed = new Set(['unprocessed', 'clean reference', "GTCRN authors' own output"]);
  const systems = [...new Set(fresh.items.map((i) => i.system))].filter((s) => !fixed.has(s));
  const key = (i: ScoredItem) => `${i.input}\u0000${i.system}`;
  const replaced = new Map(fresh.items.filter((i) => systems.includes(i.system)).map((i) => [key(i), i]));
  const items = old.items.map((i) => replaced.get(key(i)) ?? i);
  const known = new Set(old.items.map(key));
  for (const [k, i] of replaced) if (!known.has(k)) items.push(i);
  const { reruns: _ignored, ...freshInfo } = fresh.info;
  return { items, info: { ...old.info, reruns: [...(old.info.reruns ?? []), { ...freshInfo, systems }] } };
}

/** A constructed pair as pairs.json lists it. */
export interface Pair { file: string; clean: string; snr_db?: number; rir_src?: string; noise_src?: string; speech_segments_s?: unknown }

/** The condition a pair is reported under; null for the long-silence files (their references have gaps cut later). */
export function pairCondition(p: Pair): string | null {
  if (p.file.startsWith('noisy/')) return `noisy ${p.snr_db} dB`;
  if (p.file.startsWith('reverb/')) return p.noise_src ? `reverberant+noisy ${p.snr_db} dB` : 'reverberant';
  return null;
}

/** Conditions in reading order: noisy by falling SNR, then reverberant, then reverberant+noisy, then anything else. */
export function conditionOrder(a: string, b: string): number {
  const rank = (c: string) => {
    const m = /^noisy (-?\d+) dB$/.exec(c);
    if (m) return -100 - Number(m[1]);
    if (c === 'reverberant') return 0;
    if (c.startsWith('reverberant+noisy')) return 1;
    return 2;
  };
  return rank(a) - rank(b) || a.localeCompare(b);
}

export type Metric = 'pesq_wb' | 'stoi' | 'estoi' | 'si_sdr' | 'dnsmos_sig' | 'dnsmos_bak' | 'dnsmos_ovrl' | 'dnsmos_p808';
export const METRICS: readonly Metric[] = ['pesq_wb', 'stoi', 'estoi', 'si_sdr', 'dnsmos_sig', 'dnsmos_bak', 'dnsmos_ovrl', 'dnsmos_p808'];

export interface Aggregate {
  condition: string;
  system: string;
  files: number;
  /** Mean per metric over the files where it is a finite number; NaN where none is. */
  mean: Record<Metric, number>;
  /** How many files each mean is over (the intrusive scores are skipped where the chain cut audio). */
  count: Record<Metric, number>;
  rtf: number;
  engines: string[];
  notes: string[];
}

function meanOf(values: number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

/**
 * Means per (condition, system), systems in the order first met, conditions in conditionOrder. `allLabel` adds one
 * more condition holding every item of the conditions it is given (the over-all means).
 */
export function aggregate(items: readonly ScoredItem[], opts: { allLabel?: string; conditions?: (c: string) => boolean } = {}): Aggregate[] {
  const chosen = items.filter((i) => !opts.conditions || opts.conditions(i.condition));
  const keyed = new Map<string, ScoredItem[]>();
  const push = (cond: string, it: ScoredItem) => {
    const k = `${cond}\u0000${it.system}`;
    keyed.set(k, [...(keyed.get(k) ?? []), it]);
  };
  for (const it of chosen) push(it.condition, it);
  if (opts.allLabel) for (const it of chosen) push(opts.allLabel, it);
  const systems = [...new Set(chosen.map((i) => i.system))];
  const out: Aggregate[] = [];
  for (const [k, group] of keyed) {
    const [condition, system] = k.split('\u0000') as [string, string];
    const mean = {} as Record<Metric, number>;
    const count = {} as Record<Metric, number>;
    for (const m of METRICS) {
      const v = group.map((g) => g.scores[m]).filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
      mean[m] = meanOf(v);
      count[m] = v.length;
    }
    const rtfs = group.map((g) => g.rtf).filter((x): x is number => x !== undefined);
    out.push({
      condition, system, files: group.length, mean, count, rtf: meanOf(rtfs),
      engines: [...new Set(group.flatMap((g) => g.engines ?? []))],
      notes: [...new Set(group.map((g) => g.note).filter((n): n is string => !!n))],
    });
  }
  const all = opts.allLabel;
  return out.sort((a, b) => (a.condition === all ? 1 : 0) - (b.condition === all ? 1 : 0) || conditionOrder(a.condition, b.condition) || systems.indexOf(a.system) - systems.indexOf(b.system));
}

const f = (x: number, d: number) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const delta = (x: number, base: number | undefined, d: number) => (base === undefined || !Number.isFinite(x) || !Number.isFinite(base) ? '' : `${x - base >= 0 ? '+' : ''}${(x - base).toFixed(d)}`);
/** A mean over fewer files than the row has is marked n/N. */
const partial = (a: Aggregate, m: Metric) => (a.count[m] < a.files && a.count[m] > 0 ? ` (${a.count[m]}/${a.files})` : '');

/** The table of the pairs with references: every score, and the change against the unprocessed input of its condition. */
export function pairsTable(aggs: readonly Aggregate[], baseline = 'unprocessed'): string {
  const base = new Map(aggs.filter((a) => a.system === baseline).map((a) => [a.condition, a]));
  const lines = [
    '| condition | system | engines run | files | PESQ-WB | ΔPESQ | STOI | ΔSTOI | SI-SDR dB | ΔSI-SDR | DNSMOS SIG | BAK | OVRL | ΔOVRL | RTF |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const a of aggs) {
    const b = a.system === baseline ? undefined : base.get(a.condition)?.mean;
    const m = a.mean;
    lines.push(`| ${a.condition} | ${a.system} | ${a.engines.join(' + ')} | ${a.files} | ${f(m.pesq_wb, 2)}${partial(a, 'pesq_wb')} | ${delta(m.pesq_wb, b?.pesq_wb, 2)} | ${f(m.stoi, 3)}${partial(a, 'stoi')} | ${delta(m.stoi, b?.stoi, 3)} | ${f(m.si_sdr, 2)}${partial(a, 'si_sdr')} | ${delta(m.si_sdr, b?.si_sdr, 2)} | ${f(m.dnsmos_sig, 2)} | ${f(m.dnsmos_bak, 2)} | ${f(m.dnsmos_ovrl, 2)} | ${delta(m.dnsmos_ovrl, b?.dnsmos_ovrl, 2)} | ${a.system === baseline ? '' : f(a.rtf, 3)} |`);
  }
  return lines.join('\n');
}

/** DNSMOS only (recordings without a reference): means per system, and OVRL per recording. */
export function dnsmosTable(items: readonly ScoredItem[], label: (input: string) => string): string {
  const inputs = [...new Set(items.map((i) => i.input))];
  const systems = [...new Set(items.map((i) => i.system))];
  const lines = [
    `| system | SIG | BAK | OVRL | P.808 | ${inputs.map((i) => `OVRL ${label(i)}`).join(' | ')} |`,
    `|---|---|---|---|---|${inputs.map(() => '---|').join('')}`,
  ];
  for (const s of systems) {
    const mine = items.filter((i) => i.system === s);
    const avg = (m: Metric) => meanOf(mine.map((i) => i.scores[m]).filter((x): x is number => typeof x === 'number'));
    const per = inputs.map((inp) => {
      const it = mine.find((i) => i.input === inp);
      return it ? f(it.scores.dnsmos_ovrl, 2) : '';
    });
    lines.push(`| ${s} | ${f(avg('dnsmos_sig'), 2)} | ${f(avg('dnsmos_bak'), 2)} | ${f(avg('dnsmos_ovrl'), 2)} | ${f(avg('dnsmos_p808'), 2)} | ${per.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** Soundry's TS STOI against pystoi on the same pairs. */
export function stoiCrossCheck(items: readonly ScoredItem[]): { n: number; meanAbs: number; maxAbs: number; meanSigned: number; worst?: ScoredItem } {
  const both = items.filter((i) => typeof i.tsStoi === 'number' && Number.isFinite(i.tsStoi) && typeof i.scores.stoi === 'number');
  const d = both.map((i) => i.tsStoi! - i.scores.stoi!);
  let worst: ScoredItem | undefined;
  let maxAbs = 0;
  both.forEach((it, k) => {
    if (Math.abs(d[k]!) >= maxAbs) { maxAbs = Math.abs(d[k]!); worst = it; }
  });
  return { n: both.length, meanAbs: meanOf(d.map(Math.abs)), maxAbs, meanSigned: meanOf(d), ...(worst ? { worst } : {}) };
}

/**
 * Replaces the section starting with `heading` (up to the next heading of the same level) in `doc`, or inserts it
 * before the first `## ` heading after the title when absent, so the newest scores come first.
 */
export function replaceSection(doc: string, heading: string, section: string): string {
  const body = section.endsWith('\n') ? section : `${section}\n`;
  const at = doc.indexOf(`${heading}\n`);
  if (at >= 0) {
    const next = doc.indexOf('\n## ', at + heading.length);
    return `${doc.slice(0, at)}${body}${next >= 0 ? doc.slice(next) : ''}`;
  }
  const first = doc.indexOf('\n## ');
  if (first < 0) return `${doc.trimEnd()}\n\n${body}`;
  return `${doc.slice(0, first + 1)}${body}\n${doc.slice(first + 1)}`;
}
