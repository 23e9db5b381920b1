/**
 * Dereverberation on the corpus's reverberant pairs (../shared/corpus/speech/constructed_pairs_16k/pairs.json, the
 * entries with an `rir_src`: reverberant, and reverberant + noise at 5 dB against the dry clean reference): Soundry's
 * WPE stage (streaming, as the chain runs it) beside nara_wpe, the reference implementation, offline and online
 * (harness/cases/wpe.py runs it). SI-SDR here (the better of lag 0 and 1: the references are aligned to the direct
 * path within a sample); DNSMOS (SIG/BAK/OVRL, P.835) through speechmos in harness/.venv when it exists.
 *
 *   npm run bench -- dereverb                     # every variant -> bench/results/dereverb.md
 *   npm run bench -- dereverb --variants a,b      # only those (labels below), printed, the results file untouched
 *   ... --no-dnsmos                               # SI-SDR only (DNSMOS takes most of the run)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AudioData } from '../src/media/audio.js';
import { decodeAudio, encodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { DereverbStage, type DereverbOptions } from '../src/engines/enhance/dereverb.js';
import { siSdr } from '../src/engines/enhance/metrics.js';
import { processWhole } from '../src/engines/enhance/stage.js';
import { createDereverbStage, dereverbPullPlan } from '../src/engines/enhance/learned-dereverb.js';
import { machine, root, writeResult } from './lib.js';

const CORPUS = join(root, '..', 'shared', 'corpus', 'speech', 'constructed_pairs_16k');
const PYTHON = join(root, 'harness', '.venv', 'bin', 'python');
const WPE_PY = join(root, 'harness', 'cases', 'wpe.py');

interface Variant {
  label: string;
  what: string;
  /** Soundry's stage options, or the harness command that makes the output. */
  soundry?: DereverbOptions;
  nara?: string[];
  /** The learned model through createDereverbStage (only where MODELS_DIR holds it verified). */
  learned?: true;
}

/** The options Soundry's chain used before this bench (dereverb.ts defaults as of e5e278c). */
const BEFORE: DereverbOptions = { taps: 10, delay: 3, iterations: 2, forgetting: 0.6, lateT60: 0.5, powerFloor: 'mean', loading: 1e-4 };

export const VARIANTS: readonly Variant[] = [
  { label: 'soundry-before', what: 'Soundry WPE as the chain ran it before (K 10, D 3, 2 iterations, 2 s blocks, forgetting 0.6, floor 1e-3 x mean power, loading 1e-4, late suppressor T60 0.5 s)', soundry: BEFORE },
  { label: 'soundry-before-nolate', what: 'the same without the late suppressor', soundry: { ...BEFORE, lateT60: 0 } },
  { label: 'soundry-naraReg', what: "the same with nara's regularisation (floor 1e-10 x peak, no loading), no late suppressor", soundry: { ...BEFORE, lateT60: 0, powerFloor: 'max', loading: 0 } },
  { label: 'soundry-i3', what: 'K 10, D 3, 3 iterations, nara regularisation, no late suppressor', soundry: { ...BEFORE, iterations: 3, lateT60: 0, powerFloor: 'max', loading: 0 } },
  { label: 'soundry-d2', what: 'the before settings with delay 2 (the default since this bench)', soundry: { ...BEFORE, delay: 2 } },
  { label: 'soundry-k20-d2', what: 'K 20, D 2 (2.4x the cost of K 10)', soundry: { ...BEFORE, taps: 20, delay: 2 } },
  { label: 'soundry-default', what: 'Soundry WPE with its current defaults (dereverb.ts)', soundry: {} },
  { label: 'nara-offline-i3', what: 'nara_wpe offline wpe, K 10, D 3, 3 iterations, its STFT 512/128 (whole file at once)', nara: ['nara', '--taps', '10', '--delay', '3', '--iterations', '3'] },
  { label: 'nara-offline-i5', what: 'nara_wpe offline wpe, K 10, D 3, 5 iterations', nara: ['nara', '--taps', '10', '--delay', '3', '--iterations', '5'] },
  { label: 'nara-offline-d2-i3', what: 'nara_wpe offline wpe, K 10, D 2, 3 iterations', nara: ['nara', '--taps', '10', '--delay', '2', '--iterations', '3'] },
  { label: 'nara-online', what: 'nara_wpe OnlineWPE, K 10, D 3, alpha 0.9999 (frame-recursive)', nara: ['nara-online', '--taps', '10', '--delay', '3', '--alpha', '0.9999'] },
];

interface Pair { file: string; clean: string; rir_src?: string; snr_db?: number }

const score = (y: Float32Array, r: Float32Array) => Math.max(siSdr(y, r, 0), siSdr(y, r, 1));

function python(args: string[]): string {
  const r = spawnSync(PYTHON, [WPE_PY, ...args], { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`wpe.py ${args[0]}: ${r.stderr}`);
  return r.stdout;
}

interface Row { variant: string; pair: string; sisdr: number; gain: number; seconds: number; dnsmos?: { sig: number; bak: number; ovrl: number } }

export async function benchDereverb(): Promise<string> {
  const argv = process.argv;
  const only = argv.includes('--variants') ? argv[argv.indexOf('--variants') + 1]!.split(',') : null;
  // The learned model is measured wherever it is installed: MODELS_DIR (default ./models) must hold it verified.
  const modelsDir = process.env.MODELS_DIR ?? join(root, 'models');
  const plan = dereverbPullPlan({ modelsDir });
  const learned: Variant[] = plan.length ? [] : [{ label: 'learned', what: `the learned model as the chain runs it (createDereverbStage, MODELS_DIR ${modelsDir})`, learned: true }];
  const learnedNote = plan.length ? `Learned model: not measured, ${plan.map((e) => e.name).join(', ')} is not installed in MODELS_DIR (${modelsDir}).` : '';
  const variants = [...VARIANTS, ...learned].filter((v) => !only || only.includes(v.label));
  const pairs = (JSON.parse(readFileSync(join(CORPUS, 'pairs.json'), 'utf8')) as Pair[]).filter((p) => p.rir_src);
  if (!pairs.length) throw new Error(`no reverberant pairs under ${CORPUS}`);
  const loadStart = loadavg()[0]!;
  const haveHarness = existsSync(PYTHON);
  const wantDnsmos = haveHarness && !argv.includes('--no-dnsmos');
  const tools = resolveMediaTools({ preferSystem: true });
  const dir = mkdtempSync(join(tmpdir(), 'soundry-dereverb-'));
  const rows: Row[] = [];
  const files: Array<{ path: string; row: Row }> = [];
  try {
    for (const p of pairs) {
      const x = await decodeAudio(join(CORPUS, p.file), { ffmpeg: tools.ffmpeg, sampleRate: 16000, channels: 1 });
      const ref = (await decodeAudio(join(CORPUS, p.clean), { ffmpeg: tools.ffmpeg, sampleRate: 16000, channels: 1 })).channels[0]!;
      const base = score(x.channels[0]!, ref);
      const name = p.file.split('/').pop()!.replace(/\.wav$/, '');
      const input: Row = { variant: 'input', pair: name, sisdr: base, gain: 0, seconds: 0 };
      rows.push(input);
      if (wantDnsmos) files.push({ path: join(CORPUS, p.file), row: input });
      for (const v of variants) {
        const out = join(dir, `${name}.${v.label}.wav`);
        const t0 = performance.now();
        let y: AudioData;
        if (v.soundry || v.learned) {
          const stage = v.learned ? (await createDereverbStage({ sampleRate: 16000, channels: 1, models: { modelsDir } })).stage : new DereverbStage(16000, 1, v.soundry);
          y = await processWhole([stage], x, 16000);
          if (wantDnsmos) await encodeAudio(y, out, { ffmpeg: tools.ffmpeg, format: 'wav' });
        } else {
          if (!haveHarness) continue;
          python([...v.nara!.slice(0, 1), join(CORPUS, p.file), out, ...v.nara!.slice(1)]);
          y = await decodeAudio(out, { ffmpeg: tools.ffmpeg, sampleRate: 16000, channels: 1 });
        }
        const seconds = (performance.now() - t0) / 1000;
        const s = score(y.channels[0]!, ref);
        const row: Row = { variant: v.label, pair: name, sisdr: s, gain: s - base, seconds };
        rows.push(row);
        if (wantDnsmos) files.push({ path: out, row });
        console.error(`${v.label.padEnd(24)} ${name.padEnd(44)} ${s.toFixed(2)} dB (${(s - base >= 0 ? '+' : '') + (s - base).toFixed(2)}) ${seconds.toFixed(1)} s`);
      }
    }
    if (wantDnsmos) {
      const lines = python(['dnsmos', ...files.map((f) => f.path)]).trim().split('\n');
      lines.forEach((l, i) => {
        const j = JSON.parse(l) as { sig: number; bak: number; ovrl: number };
        files[i]!.row.dnsmos = { sig: j.sig, bak: j.bak, ovrl: j.ovrl };
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const load = `load average (1 min) ${loadStart.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end`;
  const echo = only ? '' : await echoTable(tools.ffmpeg);
  const md = report(rows, variants, wantDnsmos, load, learnedNote) + echo;
  if (only) {
    console.log(md);
    return '(printed; --variants leaves bench/results/dereverb.md as it is)';
  }
  return writeResult('dereverb', md);
}

/** Clean corpus utterances with discrete echoes added (delay s, gain), for remove_echo. */
const ECHO_SETS: ReadonlyArray<ReadonlyArray<readonly [number, number]>> = [[[0.1, 0.6]], [[0.15, 0.5], [0.3, 0.25]], [[0.25, 0.5], [0.5, 0.25]]];
const ECHO_CLEAN = ['librispeech_5703-47212-0000.ogg', 'librispeech_3436-172162-0000.ogg', 'cmu_arctic_us_aew_a0001.wav'];

/** WPE with its default taps against predicting from 0.25 s (what remove_echo gets) on constructed echoes. */
async function echoTable(ffmpeg: string): Promise<string> {
  const lines = ['', '## Discrete echoes (remove_echo)', '',
    'Clean corpus utterances (speech/clean: ' + ECHO_CLEAN.join(', ') + ') at 16 kHz with echoes added (delay s x gain); SI-SDR gain over the echoed input against the clean utterance, mean of the three, and seconds per file.', '',
    '| echoes | input SI-SDR | WPE default (10 taps) | WPE predictionSeconds 0.25 (32 taps at 16 kHz) | s per file (default / 0.25 s) |', '|---|---|---|---|---|'];
  for (const set of ECHO_SETS) {
    const g = { input: [] as number[], def: [] as number[], long: [] as number[], tDef: [] as number[], tLong: [] as number[] };
    for (const f of ECHO_CLEAN) {
      const dry = (await decodeAudio(join(CORPUS, '..', 'clean', f), { ffmpeg, sampleRate: 16000, channels: 1 })).channels[0]!;
      const wet = Float32Array.from(dry);
      for (const [d, gain] of set) {
        const k = Math.round(d * 16000);
        for (let i = k; i < wet.length; i++) wet[i]! += gain * dry[i - k]!;
      }
      const base = siSdr(wet, dry);
      g.input.push(base);
      for (const [key, t, opts] of [['def', 'tDef', {}], ['long', 'tLong', { predictionSeconds: 0.25 }]] as const) {
        const t0 = performance.now();
        const y = await processWhole([new DereverbStage(16000, 1, opts)], { sampleRate: 16000, channels: [wet] }, 16000);
        g[t].push((performance.now() - t0) / 1000);
        g[key].push(siSdr(y.channels[0]!, dry) - base);
      }
    }
    const m = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    lines.push(`| ${set.map(([d, gain]) => `${d} x ${gain}`).join(', ')} | ${m(g.input).toFixed(2)} | ${m(g.def) >= 0 ? '+' : ''}${m(g.def).toFixed(2)} | +${m(g.long).toFixed(2)} | ${m(g.tDef).toFixed(1)} / ${m(g.tLong).toFixed(1)} |`);
  }
  return lines.join('\n') + '\n';
}

function report(rows: Row[], variants: readonly Variant[], dnsmos: boolean, load: string, note: string): string {
  const labels = ['input', ...variants.map((v) => v.label)];
  const pairs = [...new Set(rows.map((r) => r.pair))];
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const f = (x: number, d = 2) => (x >= 0 ? ' ' : '') + x.toFixed(d);
  const out: string[] = [];
  out.push('| variant | mean SI-SDR gain (dB) | reverberant only | reverberant + noise | DNSMOS SIG / BAK / OVRL (mean) | s per file |', '|---|---|---|---|---|---|');
  for (const l of labels) {
    const rs = rows.filter((r) => r.variant === l);
    if (!rs.length) continue;
    const clean = rs.filter((r) => !r.pair.includes('noisy'));
    const noisy = rs.filter((r) => r.pair.includes('noisy'));
    const d = rs.every((r) => r.dnsmos) ? `${mean(rs.map((r) => r.dnsmos!.sig)).toFixed(2)} / ${mean(rs.map((r) => r.dnsmos!.bak)).toFixed(2)} / ${mean(rs.map((r) => r.dnsmos!.ovrl)).toFixed(2)}` : 'n/a';
    out.push(`| ${l} | ${f(mean(rs.map((r) => r.gain)))} | ${f(mean(clean.map((r) => r.gain)))} | ${f(mean(noisy.map((r) => r.gain)))} | ${d} | ${mean(rs.map((r) => r.seconds)).toFixed(1)} |`);
  }
  out.push('', '| pair | ' + labels.join(' | ') + ' |', '|---|' + labels.map(() => '---|').join(''));
  for (const p of pairs) {
    out.push(`| ${p} | ` + labels.map((l) => {
      const r = rows.find((x) => x.variant === l && x.pair === p);
      return r ? `${r.sisdr.toFixed(2)}${r.dnsmos ? ` (${r.dnsmos.ovrl.toFixed(2)})` : ''}` : '-';
    }).join(' | ') + ' |');
  }
  const legend = variants.map((v) => `- \`${v.label}\`: ${v.what}`).join('\n');
  return [
    '# Dereverberation: Soundry WPE beside nara_wpe on the corpus reverberant pairs',
    '',
    `${machine()}; ${new Date().toISOString()}; ${load} (seconds per file are wall time on the shared cores). Reproduce: \`npm run bench -- dereverb\` (bench/dereverb.ts; nara_wpe and DNSMOS through harness/.venv).`,
    '',
    `SI-SDR against the dry clean reference (better of lag 0 and 1), gains over the input; DNSMOS ${dnsmos ? 'P.835 SIG/BAK/OVRL from speechmos 0.0.1.1' : 'not run (--no-dnsmos, or no harness/.venv)'}. Per pair: SI-SDR dB (DNSMOS OVRL).`,
    '',
    legend,
    '',
    ...(note ? [note, ''] : []),
    ...out,
    '',
  ].join('\n');
}
