import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { relative, resolve } from 'node:path';
import type { AudioData } from '../src/media/audio.js';
import { BssEvalError, bssEvalSdr, trackMedian, type SourceAudio } from '../src/media/bsseval.js';
import { bssEvalImages } from '../src/media/bsseval-images.js';
import { collectingSink, outputStems, sourceFromAudio, STEMS_BY_MODEL_TYPE } from '../src/engines/separation/engine.js';
import { createSeparationEngine, isSeparationEngineChoice } from '../src/engines/separation/select.js';
import { loadCatalog } from '../src/models/catalog-file.js';
import { machine, root, writeResult } from './lib.js';
import { findSongs, loadAudio, scorableStems, sumOf, type Song } from './separation-quality-songs.js';

/**
 * `npm run bench -- separation-quality [--dir D] [--engine auto|builtin|<model>] [--model-types 350,501] [--seconds S]
 * [--out NAME] [--all-metrics] [--dump DIR]`: scores a separation engine on a folder of MUSDB-like songs (<song>/mixture.wav + <song>/<stem>.wav)
 * with SDR as museval computes it for MUSDB18 (src/media/bsseval.ts: BSS Eval v4, 1 s windows, median over windows),
 * per stem per song, beside trivial estimates scored the same way. The engine is chosen per model type as a task
 * chooses it (SEPARATION_ENGINE semantics: `auto` takes the best model installed in MODELS_DIR, else the built-in
 * engine; a model name forces that model). Default folder: the corpus' separation set. --all-metrics adds the
 * engine's ISR, SIR and SAR (src/media/bsseval-images.ts: museval's 512-tap filters; tens of seconds per 4-stem song).
 * --dump DIR writes every scored group's references, estimates and figures, so that museval itself can score the very
 * same arrays (`harness/.venv/bin/python harness/bsseval_dump_check.py DIR`).
 * With real weights: MUSDB18-HQ's test set has exactly this layout (test/<track>/{mixture,vocals,drums,bass,other}.wav;
 * MUSDB18's stems.mp4 convert to it with musdb's `musdbconvert`), so `MODELS_DIR=... npm run bench -- separation-quality
 * --dir musdb18hq/test --model-types 501,350` gives per-track medians whose median over tracks is the published figure.
 */

const RATE = 44100;
const DEFAULT_DIR = `${root}../shared/corpus/separation`;

interface Options { dir: string; engine: string; modelTypes: number[]; seconds?: number; out: string; allMetrics: boolean; dump?: string }

function options(argv: string[]): Options {
  const get = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const engine = get('--engine') ?? get('--model') ?? process.env.SEPARATION_ENGINE ?? 'auto';
  if (!isSeparationEngineChoice(engine)) throw new Error(`--engine ${engine}: not auto, builtin or a known model name`);
  const types = get('--model-types')?.split(',').map(Number) ?? Object.keys(STEMS_BY_MODEL_TYPE).map(Number);
  for (const t of types) if (!STEMS_BY_MODEL_TYPE[t]) throw new Error(`--model-types: ${t} is not a separation model type`);
  const seconds = get('--seconds');
  return { dir: resolve(get('--dir') ?? DEFAULT_DIR), engine, modelTypes: types, ...(seconds ? { seconds: Number(seconds) } : {}), out: get('--out') ?? 'separation-quality', allMetrics: argv.includes('--all-metrics'), ...(get('--dump') ? { dump: resolve(get('--dump')!) } : {}) };
}

export interface Row {
  song: string; modelType: number; stem: string; engine: string;
  /** Track SDR (median over windows) of the engine's stem; NaN when museval would score nothing. */
  sdr: number; windows: number;
  /** The same for the trivial estimates: mixture / number of the model's stems, and the mixture itself. */
  mixN: number; mix: number;
  /** With --all-metrics: the engine's stem's ISR, SIR and SAR medians. */
  isr?: number; sir?: number; sar?: number;
  note?: string;
}

type Group = { stems: string[]; refs: SourceAudio[]; ests: SourceAudio[] };

/**
 * museval scores MUSDB's vocals/accompaniment pair on its own and the other stems together (vocals among them, but
 * reported from the pair); a window where any of a group's references or estimates is silent is skipped for the
 * whole group. Soundry's `remainder` beside `vocals` is MUSDB's accompaniment.
 */
function groups(stems: string[]): Array<{ evaluate: string[]; report: string[] }> {
  if (!(stems.includes('vocals') && stems.includes('remainder'))) return [{ evaluate: stems, report: stems }];
  const rest = stems.filter((s) => s !== 'remainder');
  const pair = { evaluate: ['vocals', 'remainder'], report: ['vocals', 'remainder'] };
  return rest.length > 1 ? [{ evaluate: rest, report: rest.filter((s) => s !== 'vocals') }, pair] : [pair];
}

function score(g: Group, all = false): { sdr: number[]; windows: number[]; isr?: number[]; sir?: number[]; sar?: number[] } {
  const opts = { window: RATE, hop: RATE };
  const med = (rows: Float64Array[]) => rows.map((w) => trackMedian(w));
  const r = all ? bssEvalImages(g.refs, g.ests, opts) : null;
  const sdr = r ?? bssEvalSdr(g.refs, g.ests, opts);
  const extra = r ? { isr: med(r.isr), sir: med(r.sir), sar: med(r.sar) } : {};
  return { sdr: med(sdr.sdr), windows: sdr.sdr.map((w) => w.filter(Number.isFinite).length), ...extra };
}

/** museval's layout [sources, samples, channels], float32 little-endian, and the figures Soundry gave them. */
function dump(dir: string, name: string, g: Group, got: ReturnType<typeof score>): void {
  mkdirSync(dir, { recursive: true });
  const base = `${dir}/${name.replace(/[^\w.+-]+/g, '_')}`;
  const n = g.refs[0]![0]!.length;
  const nchan = g.refs[0]!.length;
  const pack = (xs: SourceAudio[]) => {
    const out = new Float32Array(xs.length * n * nchan);
    xs.forEach((src, j) => src.forEach((c, ch) => { for (let i = 0; i < Math.min(n, c.length); i++) out[(j * n + i) * nchan + ch] = c[i]!; }));
    return Buffer.from(out.buffer);
  };
  writeFileSync(`${base}.ref.f32`, pack(g.refs));
  writeFileSync(`${base}.est.f32`, pack(g.ests));
  writeFileSync(`${base}.json`, JSON.stringify({ stems: g.stems, samples: n, channels: nchan, window: RATE, hop: RATE, ...got }));
}

const isSilent = (a: SourceAudio) => a.every((c) => { for (let i = 0; i < c.length; i++) if (c[i] !== 0) return false; return true; });

async function scoreSong(song: Song, o: Options, engine: ReturnType<typeof createSeparationEngine>): Promise<Row[]> {
  const mixture = await loadAudio(song.mixture, RATE, o.seconds);
  const files = new Map<string, AudioData>();
  for (const [stem, path] of song.stems) files.set(stem, await loadAudio(path, RATE, o.seconds));
  const n = Math.min(mixture.channels[0]!.length, ...[...files.values()].map((a) => a.channels[0]!.length));
  const mix: AudioData = { sampleRate: RATE, channels: mixture.channels.map((c) => c.slice(0, n)) };
  const rows: Row[] = [];
  for (const mt of o.modelTypes) {
    const scorable = scorableStems(song, mt);
    if (scorable.size === 0) continue;
    const sink = collectingSink();
    const ctx = { tmpDir: '/tmp', signal: new AbortController().signal, onProgress: () => undefined };
    const run = await engine.separate(sourceFromAudio(mix), mt, ctx, sink);
    const est = sink.result();
    const refs = new Map([...scorable].map(([stem, parts]) => [stem, sumOf(parts.map((p) => files.get(p)!), n)]));
    const nStems = outputStems(mt).length;
    const mixN = mix.channels.map((c) => c.map((v) => v / nStems));
    // museval refuses an all-zero estimate (and would refuse the whole group): such a stem is reported, not scored.
    const silent = [...scorable.keys()].filter((s) => isSilent(est[s]!.channels));
    const scored = [...scorable.keys()].filter((s) => !silent.includes(s));
    for (const stem of silent) rows.push({ song: song.name, modelType: mt, stem, engine: run.engine, sdr: NaN, windows: 0, mixN: NaN, mix: NaN, note: 'silent estimate: BSS Eval refuses it' });
    for (const { evaluate: g, report } of groups(scored)) {
      const of = (e: (s: string) => SourceAudio): Group => ({ stems: g, refs: g.map((s) => refs.get(s)!), ests: g.map(e) });
      try {
        const got = score(of((s) => est[s]!.channels), o.allMetrics);
        if (o.dump) dump(o.dump, `${song.name}.${mt}.${g.join('+')}`, of((s) => est[s]!.channels), got);
        const bN = score(of(() => mixN));
        const bM = score(of(() => mix.channels));
        g.forEach((stem, j) => {
          if (!report.includes(stem)) return;
          const note = [run.note, run.stems?.[stem]].filter(Boolean).join('; ');
          rows.push({ song: song.name, modelType: mt, stem, engine: run.engine, sdr: got.sdr[j]!, windows: got.windows[j]!, mixN: bN.sdr[j]!, mix: bM.sdr[j]!, ...(got.isr ? { isr: got.isr[j]!, sir: got.sir![j]!, sar: got.sar![j]! } : {}), ...(note ? { note } : {}) });
        });
      } catch (err) {
        if (!(err instanceof BssEvalError)) throw err;
        for (const stem of report) rows.push({ song: song.name, modelType: mt, stem, engine: run.engine, sdr: NaN, windows: 0, mixN: NaN, mix: NaN, note: err.message });
      }
    }
    console.error(`separation-quality: ${song.name} ${mt} (${run.engine}) done`);
  }
  // In the model's stem order, whichever way each stem was scored (silent stems are settled first above).
  const order = (r: Row) => o.modelTypes.indexOf(r.modelType) * 100 + outputStems(r.modelType).indexOf(r.stem);
  return rows.sort((a, b) => order(a) - order(b));
}

const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');
const median = (xs: number[]) => trackMedian(xs);

function partial(rows: Row[]): string[] {
  const most = new Map<string, number>();
  for (const r of rows) most.set(r.song, Math.max(most.get(r.song) ?? 0, r.windows));
  return rows.filter((r) => Number.isFinite(r.sdr) && r.windows < most.get(r.song)!).map((r) => `${r.song} ${r.modelType} ${r.stem} (${r.windows} of ${most.get(r.song)})`);
}

function summary(rows: Row[]): string[] {
  const order = (r: Row) => Object.keys(STEMS_BY_MODEL_TYPE).indexOf(String(r.modelType)) * 100 + outputStems(r.modelType).indexOf(r.stem);
  const keys = [...new Set([...rows].sort((a, b) => order(a) - order(b)).map((r) => `${r.modelType}|${r.stem}`))];
  return keys.map((k) => {
    const rs = rows.filter((r) => `${r.modelType}|${r.stem}` === k && Number.isFinite(r.sdr));
    const [mt, stem] = k.split('|');
    const gain = rs.map((r) => r.sdr - Math.max(0, r.mix, r.mixN));
    return `| ${mt} | ${stem} | ${rs.length} | ${f2(median(rs.map((r) => r.sdr)))} | ${f2(median(rs.map((r) => r.mixN)))} | ${f2(median(rs.map((r) => r.mix)))} | ${f2(median(gain))} |`;
  });
}

export async function benchSeparationQuality(argv: string[] = process.argv.slice(2)): Promise<string> {
  const o = options(argv);
  const songs = findSongs(o.dir);
  if (songs.length === 0) return `separation-quality skipped: no <song>/mixture.wav|flac with stems under ${o.dir}`;
  const modelsDir = process.env.MODELS_DIR ?? `${root}data/models`;
  const engine = createSeparationEngine({ modelsDir, choice: o.engine, catalog: loadCatalog(process.env.MODELS_CATALOG_FILE), autoPull: false });
  const load0 = loadavg();
  const t0 = Date.now();
  const rows: Row[] = [];
  for (const song of songs) rows.push(...(await scoreSong(song, o, engine)));
  const load1 = loadavg();
  const scored = rows.filter((r) => Number.isFinite(r.sdr));
  const below = scored.filter((r) => r.sdr < Math.max(0, r.mix, r.mixN));
  const md = [
    '# Separation quality: SDR as BSS Eval v4 (museval) computes it for MUSDB18',
    '',
    `Machine: ${machine()}. Date: ${new Date().toISOString().slice(0, 16)}Z. Load average (1/5/15 min) ${load0.map((x) => x.toFixed(2)).join('/')} at the start, ${load1.map((x) => x.toFixed(2)).join('/')} at the end; ${((Date.now() - t0) / 1000).toFixed(0)} s.`,
    `Command: \`npm run bench -- separation-quality ${argv.filter((a) => a !== '--' && a !== 'separation-quality').join(' ')}\`. Folder: \`${relative(root, o.dir)}\` (${songs.length} songs). Engine choice: \`${o.engine}\`; MODELS_DIR ${modelsDir.replace(root, '')}.`,
    '',
    'SDR: `museval.evaluate` as `eval_mus_track` runs it (BSS Eval v4 images, 512-tap time-invariant filters, 1 s windows at',
    '44.1 kHz, hop 1 s), the stem\'s median over windows, windows where any of the group\'s references or estimates is silent',
    'skipped (src/media/bsseval.ts, matched per window against museval 0.4.1 by test/engines/reference/bsseval.test.ts).',
    'Groups as MUSDB: vocals with `remainder` (accompaniment) scored as a pair, the other stems of a model type together',
    '(a group of one stem, where eval_mus_track would warn and score nothing, is scored as `museval.evaluate` scores it).',
    'References: a stem\'s own file; `other`/`remainder` = the sum of the song\'s stem files the model does not name (scored',
    'only when every stem the model names has a file). Trivial estimates, scored the same way: the mixture divided by the',
    'model\'s number of stems (mix/N), and the mixture itself. Silence scores 0 dB in every window by the formula',
    '(10 log10 |s|^2/|s - 0|^2); museval itself refuses an all-zero estimate, so an engine\'s silent stem is reported, not',
    'scored. Gain = SDR minus the best of silence (0), mix/N and mixture.',
    '',
    `| song | model | stem | engine | SDR | ${o.allMetrics ? 'ISR | SIR | SAR | ' : ''}windows | silence | mix/N | mixture | gain over best trivial | note |`,
    `|---|---|---|---|---|${o.allMetrics ? '---|---|---|' : ''}---|---|---|---|---|---|`,
    ...rows.map((r) => `| ${r.song} | ${r.modelType} | ${r.stem} | ${r.engine} | ${f2(r.sdr)} | ${o.allMetrics ? `${f2(r.isr ?? NaN)} | ${f2(r.sir ?? NaN)} | ${f2(r.sar ?? NaN)} | ` : ''}${r.windows} | 0.00 | ${f2(r.mixN)} | ${f2(r.mix)} | ${f2(r.sdr - Math.max(0, r.mix, r.mixN))} | ${r.note ?? ''} |`),
    '',
    '## Per model type and stem: median over songs (MUSDB\'s convention: median of the per-song medians)',
    '',
    '| model | stem | songs scored | SDR | mix/N | mixture | gain over best trivial |',
    '|---|---|---|---|---|---|---|',
    ...summary(rows),
    '',
    `Stems scored: ${scored.length} of ${rows.length}; not scored (silent estimate or refused): ${rows.length - scored.length}.`,
    // BSS Eval skips a window where any of the group's estimates is silent: an engine that mutes a stem where unsure
    // is judged only where it spoke, while the trivial estimates are judged everywhere. Say where that happened.
    `Scored on fewer windows than the song's most (BSS Eval skipped windows where an estimate or reference was silent, so these figures cover only part of the song): ${partial(rows).join('; ') || 'none'}.`,
    `Below the best trivial estimate: ${below.length}; below 0 dB (worse than silence): ${scored.filter((r) => r.sdr < 0).length}; worst ${f2(Math.min(...scored.map((r) => r.sdr)))} dB.`,
    ...(o.dump ? [`Dumped to ${o.dump}: \`harness/.venv/bin/python harness/bsseval_dump_check.py ${o.dump}\` scores the same arrays with museval.`] : []),
    `Mean SDR ${f2(scored.reduce((a, r) => a + r.sdr, 0) / Math.max(1, scored.length))} dB; mean gain over the best trivial estimate ${f2(scored.reduce((a, r) => a + r.sdr - Math.max(0, r.mix, r.mixN), 0) / Math.max(1, scored.length))} dB.`,
    '',
  ].join('\n');
  // An absolute `--out /x/y.md` writes there (tests); a plain name goes to bench/results/<name>.md.
  if (o.out.startsWith('/') && o.out.endsWith('.md')) {
    writeFileSync(o.out, md);
    return o.out;
  }
  return writeResult(o.out, md);
}

if (process.argv[1]?.endsWith('separation-quality.ts')) console.log(await benchSeparationQuality());
