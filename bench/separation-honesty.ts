import { existsSync, readdirSync } from 'node:fs';
import type { AudioData } from '../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { loadFftProvider } from '../src/media/dsp/fft.js';
import { BuiltinSeparationEngine, type BuiltinOptions } from '../src/engines/separation/builtin.js';
import { collectingSink, sourceFromAudio, type SeparationRun } from '../src/engines/separation/engine.js';
import { planOutputs, unfoundStems } from '../src/kinds/separation/worker.js';
import { machine, root, writeResult } from './lib.js';

/**
 * Is every built-in stem at least as good as silence? Plain SDR over the whole clip,
 * SDR(s, ŝ) = 10 log10(|s|^2 / |s - ŝ|^2), so silence scores exactly 0 dB and the mixture SDR(s, mix).
 * Each song's model types are those whose stems the song's ground truth can score; `other`/`remainder` is scored
 * only where the song's references cover everything else the model lists (or the song is known to lack it).
 * Songs run one at a time (shared machine).
 */

const CORPUS = `${root}../shared/corpus/separation`;
const RATE = 44100;

export interface Song {
  name: string;
  dir: string;
  /** Reference files present. */
  refs: string[];
  /** Stems the song is known not to contain (their reference is silence). */
  absent: string[];
  /** model type -> the stems to score, mapped to how the reference is built: a file, or the mixture minus files. */
  jobs: Record<number, Record<string, { file?: string; minus?: string[] }>>;
}

export function corpusSongs(corpus = CORPUS): Song[] {
  const songs: Song[] = [];
  const musdb = `${corpus}/musdb18_sample_music_delta_80s_rock`;
  if (existsSync(`${musdb}/mixture.flac`)) {
    songs.push({
      name: 'musdb18 music_delta_80s_rock', dir: musdb, refs: ['drums', 'bass', 'other', 'vocals'], absent: [],
      jobs: {
        350: { vocals: { file: 'vocals' }, remainder: { minus: ['vocals'] } },
        340: { drums: { file: 'drums' } },
        360: { bass: { file: 'bass' } },
        501: { bass: { file: 'bass' }, drums: { file: 'drums' }, vocals: { file: 'vocals' }, other: { file: 'other' } },
      },
    });
  }
  const group = (g: string, make: (dir: string) => Song['jobs']) => {
    const base = `${corpus}/${g}`;
    if (!existsSync(base)) return;
    for (const n of readdirSync(base).sort()) {
      const dir = `${base}/${n}`;
      if (existsSync(`${dir}/mixture.flac`)) songs.push({ name: `${g}/${n}`, dir, refs: [], absent: [], jobs: make(dir) });
    }
  };
  // FluidR3 renders have no vocals: 501's `other` is everything but bass and drums.
  group('midi_rendered_fluidr3', () => ({
    340: { drums: { file: 'drums' } },
    360: { bass: { file: 'bass' } },
    380: { piano: { file: 'piano' } },
    390: { guitar: { file: 'guitar' } },
    501: { bass: { file: 'bass' }, drums: { file: 'drums' }, other: { minus: ['bass', 'drums'] } },
    320: { bass: { file: 'bass' }, drums: { file: 'drums' }, piano: { file: 'piano' }, guitar: { file: 'guitar' }, other: { file: 'other' } },
  }));
  group('fof_guitar_real_stems', () => ({ 390: { guitar: { file: 'guitar' }, remainder: { file: 'backing' } } }));
  return songs;
}

/** Plain SDR over the whole clip, all channels; silence scores exactly 0 dB. */
export function plainSdr(ref: ArrayLike<number>[], est: ArrayLike<number>[] | null): number {
  let num = 0;
  let den = 0;
  ref.forEach((c, ch) => {
    const e = est?.[ch];
    for (let i = 0; i < c.length; i++) {
      num += c[i]! * c[i]!;
      den += (c[i]! - (e ? e[i]! : 0)) ** 2;
    }
  });
  return 10 * Math.log10(num / den);
}

export interface StemScore {
  song: string; modelType: number; stem: string; builtin: number; mixture: number; note?: string;
  /** SDR of the raw masks, before the confidence scaling (only when asked: `withRaw`). */
  raw?: number;
  /** Ground-truth diagnostics: the gain g minimising |s - g·ŝ| (SDR >= 0 needs g <= 2·this), and |ŝ|²/|mix|². */
  bestGain: number; share: number;
  /**
   * Whether a task of this model type would deliver (and bill) the stem: false where the engine found one of the
   * stems the task depends on nowhere, and the task fails uncharged instead (docs/api.md, "Separation").
   */
  billed: boolean;
}

const load = async (dir: string, f: string, seconds?: number): Promise<AudioData> => {
  const tools = resolveMediaTools({ preferSystem: true });
  const a = await decodeAudio(`${dir}/${f}.flac`, { ffmpeg: tools.ffmpeg, sampleRate: RATE, channels: 2 });
  const n = seconds ? Math.min(a.channels[0]!.length, Math.round(seconds * RATE)) : a.channels[0]!.length;
  return { sampleRate: RATE, channels: a.channels.map((c) => c.slice(0, n)) };
};

/** Scores one song on every model type it can judge; `seconds` trims the clip (the corpus test keeps it short). */
export async function scoreSong(song: Song, opts: BuiltinOptions = {}, seconds?: number, withRaw = false): Promise<StemScore[]> {
  const mix = await load(song.dir, 'mixture', seconds);
  const files = new Set(Object.values(song.jobs).flatMap((j) => Object.values(j).flatMap((r) => (r.file ? [r.file] : r.minus ?? []))));
  const raw: Record<string, AudioData> = {};
  for (const f of files) raw[f] = await load(song.dir, f, seconds);
  const n = Math.min(mix.channels[0]!.length, ...Object.values(raw).map((r) => r.channels[0]!.length));
  const cut = (a: AudioData) => a.channels.map((c) => c.subarray(0, n));
  const mixN: AudioData = { sampleRate: RATE, channels: cut(mix) };
  const fft = opts.fft ?? (await loadFftProvider());
  const out: StemScore[] = [];
  for (const [mt, stems] of Object.entries(song.jobs)) {
    const sink = collectingSink();
    const ctx = { tmpDir: '/tmp', signal: new AbortController().signal, onProgress: () => undefined };
    const run = (await new BuiltinSeparationEngine({ ...opts, fft }).separate(sourceFromAudio(mixN), Number(mt), ctx, sink)) as SeparationRun | void;
    const est = sink.result();
    // A stems task fails on any of its stems found nowhere; an accompaniment (remainder) task on its target's.
    const billed = unfoundStems(run?.missing, Number(mt), planOutputs(Number(mt), 'stems')).length === 0;
    let rawEst: Record<string, AudioData> | undefined;
    if (withRaw) {
      const rawSink = collectingSink();
      await new BuiltinSeparationEngine({ ...opts, fft, honest: false }).separate(sourceFromAudio(mixN), Number(mt), ctx, rawSink);
      rawEst = rawSink.result();
    }
    for (const [stem, how] of Object.entries(stems)) {
      const ref = how.file ? cut(raw[how.file]!) : mixN.channels.map((c, ch) => {
        const r = Float32Array.from(c);
        for (const f of how.minus ?? []) { const s = raw[f]!.channels[ch]!; for (let i = 0; i < n; i++) r[i]! -= s[i]!; }
        return r;
      });
      const e = est[stem]!.channels.map((c) => c.subarray(0, n));
      const note = run?.stems?.[stem];
      let se = 0; let ee = 0; let mm = 0;
      ref.forEach((c, ch) => { for (let i = 0; i < n; i++) { se += c[i]! * e[ch]![i]!; ee += e[ch]![i]! ** 2; mm += mixN.channels[ch]![i]! ** 2; } });
      out.push({ song: song.name, modelType: Number(mt), stem, builtin: plainSdr(ref, e), mixture: plainSdr(ref, mixN.channels), bestGain: ee ? se / ee : 0, share: ee / mm, billed, ...(note ? { note } : {}),
        ...(rawEst ? { raw: plainSdr(ref, rawEst[stem]!.channels.map((c) => c.subarray(0, n))) } : {}) });
    }
  }
  return out;
}

const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

export async function benchSeparationHonesty(): Promise<string> {
  const rows: StemScore[] = [];
  const t0 = Date.now();
  for (const song of corpusSongs()) {
    rows.push(...(await scoreSong(song, {}, undefined, true)));
    console.error(`separation-honesty: ${song.name} done`);
  }
  const gain = (r: StemScore) => r.builtin - Math.max(0, r.mixture);
  const billed = rows.filter((r) => r.billed);
  const failed = [...new Set(rows.filter((r) => !r.billed).map((r) => `${r.song} ${r.modelType}`))];
  const md = [
    '# Built-in separation: is every stem at least as good as silence?',
    '',
    `Machine: ${machine()}. Run: \`npm run bench -- separation-honesty\` (${((Date.now() - t0) / 1000).toFixed(0)} s, songs one at a time).`,
    '',
    'Plain SDR over the whole clip, all channels: SDR(s, ŝ) = 10·log10(|s|² / |s − ŝ|²). Silence scores exactly 0 dB;',
    'the mixture scores SDR(s, mixture). Gain = built-in minus the better of the two trivial estimates.',
    'A stem the engine gave up on in part (quiet there, note in the result) scores about 0 dB.',
    '',
    '"task": `billed` where a task of that model type succeeds and is charged; `fails, uncharged` where the engine found',
    'one of the stems the task returns nowhere in the input, so the task fails with a message naming the model that would',
    'serve it and nothing is charged (docs/api.md, "Separation"). Such stems are scored all the same (they are silence).',
    '',
    '"raw masks" is the same engine without the confidence scaling (`honest: false`): what the scaling gave up or saved.',
    '',
    '| song | model | stem | task | built-in | raw masks | silence | mixture | gain over best trivial | raw gain over best trivial | engine note |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.song} | ${r.modelType} | ${r.stem} | ${r.billed ? 'billed' : 'fails, uncharged'} | ${f2(r.builtin)} | ${f2(r.raw ?? NaN)} | 0.00 | ${f2(r.mixture)} | ${f2(gain(r))} | ${f2((r.raw ?? NaN) - Math.max(0, r.mixture))} | ${r.note ?? ''} |`),
    '',
    `Stems: ${rows.length}; below 0 dB: ${rows.filter((r) => r.builtin < 0).length}; worst ${f2(Math.min(...rows.map((r) => r.builtin)))} dB.`,
    `Mean built-in SDR ${f2(mean(rows.map((r) => r.builtin)))} dB; mean gain over the better trivial estimate ${f2(mean(rows.map(gain)))} dB;`,
    `Raw masks: below 0 dB: ${rows.filter((r) => (r.raw ?? 0) < 0).length}; mean SDR ${f2(mean(rows.map((r) => r.raw ?? NaN)))} dB; mean gain over the better trivial estimate ${f2(mean(rows.map((r) => (r.raw ?? NaN) - Math.max(0, r.mixture))))} dB.`,
    `Stems the engine doubted (note in the result): ${rows.filter((r) => r.note).length}.`,
    '',
    `Billed stems (tasks that succeed): ${billed.length}; below 0 dB: ${billed.filter((r) => r.builtin < 0).length}; worst ${f2(Math.min(...billed.map((r) => r.builtin)))} dB;`,
    `mean SDR ${f2(mean(billed.map((r) => r.builtin)))} dB; mean gain over the better trivial estimate ${f2(mean(billed.map(gain)))} dB.`,
    `Tasks that fail uncharged (a stem found nowhere): ${failed.length} of ${new Set(rows.map((r) => `${r.song} ${r.modelType}`)).size}: ${failed.join('; ') || 'none'}.`,
    '',
  ].join('\n');
  if (process.argv.includes('--json')) console.log(JSON.stringify(rows));
  return writeResult('separation-honesty', md);
}
