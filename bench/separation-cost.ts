/**
 * What the checkpoint-driven separation models cost on this machine, through Soundry's own engine path
 * (NeuralSeparationEngine: route, graph build beside the checkpoint, session, resampling, input scaling, the
 * streaming stage, stems composed and written), each run in a fresh Node process:
 *   npm run bench -- separation-cost
 * The models are real-size random-weight files in the authors' formats, written by the harness
 * (`harness/.venv/bin/python harness/generate.py --size full --case htdemucs htdemucs_6s roformer_bs roformer_mel`),
 * and the Kim_Vocal_2-size MDX-Net stand-in of bench/standin-real.ts. They are hard-linked into a models folder under
 * the catalog's file names, with a catalog that pins them (one model per run, so the route is that model's; the 490
 * chain pins its two).
 * SEPARATION_COST_PLAN overrides the runs: comma-separated `model:seconds`. Runs accumulate in
 * bench/results/separation-cost.runs.json (a later run of the same model and length replaces the earlier one).
 */
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { NeuralSeparationEngine } from '../src/engines/separation/neural.js';
import type { AudioSource } from '../src/engines/separation/engine.js';
import { ort } from '../src/engines/separation/onnx/session.js';
import { loadCatalog } from '../src/models/catalog-file.js';
import type { ModelEntry } from '../src/models/catalog.js';
import { machine, peakRssMb, root, writeSection } from './lib.js';
import { writeRealStandins } from './standin-real.js';

const RATE = 44100;
const THREADS = 2;
const SONG = 'separation/mixture_only_real_songs/demucs_test.mp3';
const SONG_PATH = join(root, '..', 'shared', 'corpus', SONG);
const DIR = process.env.SEPARATION_COST_DIR ?? '/tmp/soundry-separation-cost';
const OUT = join(root, 'harness', 'out');
const RUNS_FILE = join(root, 'bench', 'results', 'separation-cost.runs.json');
/** Hand-written sections of the results file that a bench run keeps. */
export const SEPARATION_COST_SECTIONS = ['## Kim_Vocal_2', '## Models pulled by default', '## HTDemucs peak memory'] as const;

interface ModelSpec {
  /** Catalog entry name (the preset the engine routes to). */
  name: string;
  modelType: number;
  what: string;
  /** Files of the entry: its catalog path <- where the real-size file is. */
  files: Array<[path: string, from: string]>;
  standin?: boolean;
  /** Other models the run's catalog also pins (a chain: 490's karaoke model runs on a vocal model's vocals). */
  with?: readonly string[];
}

const HT = join(OUT, 'htdemucs', 'htdemucs-a31ce05e.th');
const MODELS: readonly ModelSpec[] = [
  { name: 'htdemucs-th', modelType: 501, what: 'HTDemucs 4 sources, .th (harness/out/htdemucs)', files: [['955717e8-8726e21a.th', HT]] },
  { name: 'htdemucs_6s-th', modelType: 320, what: 'HTDemucs 6 sources, .th (harness/out/htdemucs_6s)', files: [['5c90dfd2-34c22ccb.th', join(OUT, 'htdemucs_6s', 'htdemucs_6s-40aff799.th')]] },
  {
    name: 'htdemucs_ft-th', modelType: 501, what: 'bag of 4 HTDemucs .th (the htdemucs file under the 4 names)',
    files: ['f7e0c4bc-ba3fe64a.th', 'd12395a8-e57c48e6.th', '92cfc3b6-ef3bcb9c.th', '04573f0d-f3cf25b2.th'].map((f) => [f, HT] as [string, string]),
  },
  {
    name: 'bs-roformer-viperx-1297', modelType: 350, what: 'BS-RoFormer viperx ep_317 size, .ckpt (harness/out/roformer_bs)',
    files: [['model_bs_roformer_ep_317_sdr_12.9755.ckpt', join(OUT, 'roformer_bs', 'model.ckpt')], ['model_bs_roformer_ep_317_sdr_12.9755.yaml', join(OUT, 'roformer_bs', 'config.yaml')]],
  },
  {
    name: 'mel-band-roformer-kim', modelType: 350, what: 'Mel-Band RoFormer Kim size, .ckpt (harness/out/roformer_mel)',
    files: [['MelBandRoformer.ckpt', join(OUT, 'roformer_mel', 'model.ckpt')], ['config_vocals_mel_band_roformer_kj.yaml', join(OUT, 'roformer_mel', 'config.yaml')]],
  },
  { name: 'Kim_Vocal_2', modelType: 350, what: 'MDX-Net Kim_Vocal_2 size stand-in (bench/standin-real.ts)', files: [], standin: true },
  { name: 'UVR_MDXNET_KARA_2', modelType: 490, what: 'MDX-Net UVR_MDXNET_KARA_2 size stand-in, chained after the Kim_Vocal_2 stand-in (route 490)', files: [], standin: true, with: ['Kim_Vocal_2'] },
];

const DEFAULT_PLAN = 'htdemucs-th:180,htdemucs_6s-th:180,bs-roformer-viperx-1297:180,mel-band-roformer-kim:180,Kim_Vocal_2:180,Kim_Vocal_2:600,htdemucs-th:600';

interface ChildResult {
  label: string;
  wall: number;
  rtf: number;
  vmHwmMb: number;
  /** VmHWM when the first session.run began: models loaded and graphs built, no activations yet. */
  hwmAtFirstRunMb: number;
  runSeconds: number;
  runs: number;
  createSeconds: number;
  buildSeconds: number;
  /** Time the bench's own audio source spent making blocks (not Soundry's; taken out of the outside time). */
  sourceSeconds: number;
  /** CPU seconds (user + system, all threads) the process spent in separate(): less swayed by others' load than wall. */
  cpuSeconds?: number;
}

interface Run extends ChildResult {
  model: string;
  modelType: number;
  seconds: number;
  loadBefore: string;
  loadAfter: string;
  date: string;
}

/** The corpus song decoded once and looped to `seconds`, handed out in fresh 10 s blocks (as a decoder would). */
async function loopedSong(seconds: number, timer: { ms: number }): Promise<AudioSource> {
  const tools = resolveMediaTools({ preferSystem: true });
  const loop = await decodeAudio(SONG_PATH, { ffmpeg: tools.ffmpeg, sampleRate: RATE, channels: 2 });
  const loopLen = loop.channels[0]!.length;
  const total = Math.round(seconds * RATE);
  const block = RATE * 10;
  return {
    sampleRate: RATE, channelCount: 2, totalFrames: total,
    async *blocks() {
      for (let a = 0; a < total; a += block) {
        const t0 = performance.now();
        const len = Math.min(block, total - a);
        const chans = loop.channels.map((c) => {
          const out = new Float32Array(len);
          for (let i = 0; i < len; ) {
            const at = (a + i) % loopLen;
            const n = Math.min(len - i, loopLen - at);
            out.set(c.subarray(at, at + n), i);
            i += n;
          }
          return out;
        });
        timer.ms += performance.now() - t0;
        yield { sampleRate: RATE, channels: chans };
      }
    },
  };
}

/** Child process: one separation through the engine, the ONNX sessions timed, output discarded, one JSON line. */
async function child(model: string, seconds: number): Promise<void> {
  const spec = MODELS.find((m) => m.name === model);
  if (!spec) throw new Error(`unknown model ${model}`);
  const timing = { run: 0, runs: 0, create: 0, hwmAtFirstRun: 0 };
  // Every session the engine opens goes through these two functions: their time is the sessions' own.
  const create = ort.InferenceSession.create.bind(ort.InferenceSession) as (...a: unknown[]) => Promise<ort.InferenceSession>;
  (ort.InferenceSession as unknown as { create: (...a: unknown[]) => Promise<ort.InferenceSession> }).create = async (...a: unknown[]) => {
    const t0 = performance.now();
    const s = await create(...a);
    timing.create += performance.now() - t0;
    const run = s.run.bind(s);
    s.run = (async (...r: Parameters<typeof run>) => {
      if (timing.runs === 0) timing.hwmAtFirstRun = peakRssMb();
      const t1 = performance.now();
      const out = await run(...r);
      timing.run += performance.now() - t1;
      timing.runs++;
      return out;
    }) as typeof s.run;
    return s;
  };
  const sourceTimer = { ms: 0 };
  const source = await loopedSong(seconds, sourceTimer);
  const engine = new NeuralSeparationEngine({ modelsDir: DIR, catalog: loadCatalog(join(DIR, `${model}.catalog.json`)), threads: THREADS });
  // The first route() verifies the files' checksums (once per install in production, with a marker); not timed.
  if (!engine.route(spec.modelType)) throw new Error(`${model}: no route for model_type ${spec.modelType}`);
  let frames = 0;
  const ctx = { tmpDir: '/tmp', signal: new AbortController().signal, onProgress: () => undefined };
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const run = await engine.separate(source, spec.modelType, ctx, { write: (_s, stems) => { frames += Object.values(stems)[0]!.channels[0]!.length; } });
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (frames !== source.totalFrames) throw new Error(`wrote ${frames} of ${source.totalFrames} frames`);
  // The loaders' own graph-build times (bracket access: the bench reads the engine's private caches, nothing else does).
  let buildMs = 0;
  for (const l of engine['demucsLoads'].values()) buildMs += (await l).ms.build;
  for (const l of engine['roformerLoads'].values()) buildMs += (await l).timings.graphMs;
  const result: ChildResult = {
    label: run.engine ?? engine.id, wall, rtf: wall / seconds, vmHwmMb: peakRssMb(), hwmAtFirstRunMb: timing.hwmAtFirstRun,
    runSeconds: timing.run / 1000, runs: timing.runs, createSeconds: timing.create / 1000, buildSeconds: buildMs / 1000,
    sourceSeconds: sourceTimer.ms / 1000, cpuSeconds: (cpu.user + cpu.system) / 1e6,
  };
  process.stdout.write(JSON.stringify(result) + '\n');
  await engine.dispose();
}

/** Links the harness files under the catalog's names and writes one catalog per model pinning them. */
async function prepare(asked: ReadonlySet<string>): Promise<void> {
  mkdirSync(DIR, { recursive: true });
  const names = new Set([...asked, ...MODELS.filter((m) => asked.has(m.name)).flatMap((m) => m.with ?? [])]);
  const entries = new Map<string, ModelEntry>();
  for (const spec of MODELS.filter((m) => names.has(m.name))) {
    const folder = join(DIR, spec.name);
    if (spec.standin) {
      if (!existsSync(join(folder, `${spec.name}.onnx`))) await writeRealStandins(DIR, [spec.name]);
      spec.files.splice(0, spec.files.length, [`${spec.name}.onnx`, join(folder, `${spec.name}.onnx`)]);
    }
    mkdirSync(folder, { recursive: true });
    const files = spec.files.map(([path, from]) => {
      if (!existsSync(from)) throw new Error(`${from} missing: run harness/generate.py --size full (see the header)`);
      const to = join(folder, path);
      if (to !== from && (!existsSync(to) || statSync(to).ino !== statSync(from).ino)) {
        rmSync(to, { force: true });
        linkSync(from, to);
      }
      return { path, url: `http://127.0.0.1/unused/${path}`, sizeBytes: statSync(to).size, sha256: sha256(to) };
    });
    entries.set(spec.name, { name: spec.name, kind: 'separation', description: 'real-size random weights', license: 'test', files });
  }
  for (const spec of MODELS.filter((m) => names.has(m.name))) {
    const models = [spec.name, ...(spec.with ?? [])].map((n) => entries.get(n)!);
    writeFileSync(join(DIR, `${spec.name}.catalog.json`), JSON.stringify({ models }));
  }
}

function sha256(path: string): string {
  const h = createHash('sha256');
  h.update(readFileSync(path));
  return h.digest('hex');
}

/** Removes graphs built by earlier runs, so every run's graph build is measured. */
function dropGraphs(model: string): void {
  const folder = join(DIR, model);
  for (const f of readdirSync(folder)) if (/\.graph\.(onnx|json)$|\.soundry\.onnx$/.test(f)) rmSync(join(folder, f));
}

function runChild(model: string, seconds: number): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--import', 'tsx', 'bench/separation-cost.ts', '--child', model, String(seconds)], { cwd: root, env: { ...process.env, SEPARATION_COST_DIR: DIR }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${model} ${seconds}s: child exit ${code}`));
      resolve(JSON.parse(out.trim().split('\n').pop()!) as ChildResult);
    });
  });
}

export function cpuModel(): string {
  try {
    const text = execFileSync('lscpu', { encoding: 'utf8' });
    const field = (k: string) => text.split('\n').find((l) => l.startsWith(k))?.split(':')[1]?.trim();
    return `${field('Model name') ?? 'unknown'}, ${field('CPU(s)') ?? '?'} CPUs (${field('Thread(s) per core') ?? '?'} threads per core), flags ${/avx512f/.test(text) ? 'AVX-512' : /avx2/.test(text) ? 'AVX2' : 'no AVX2'}`;
  } catch {
    return 'unknown (no lscpu)';
  }
}

const load = () => loadavg().map((v) => v.toFixed(2)).join(' / ');
const dur = (s: number) => (s >= 60 ? `${s / 60} min` : `${s} s`);
const pct = (r: Run) => (r.wall - r.runSeconds - r.createSeconds - r.buildSeconds - r.sourceSeconds) / r.runSeconds;

function doc(runs: Run[]): string {
  const byModel = MODELS.filter((m) => runs.some((r) => r.model === m.name));
  return [
    '# Separation cost: the authors\' checkpoint formats at real size, through Soundry\'s engine',
    '',
    `Machine: ${machine()}; lscpu: ${cpuModel()}. No GPU in this session (the device tool said: not drawn), so`,
    'every figure is CPU (onnxruntime-node CPU provider); `ONNX_EXECUTION_PROVIDER=cuda` was not measured.',
    'The machine is shared with other sessions: the 1-minute load average before and after each run is in the table.',
    '',
    'Command: `npm run bench -- separation-cost` (runs accumulate in `bench/results/separation-cost.runs.json`;',
    '`SEPARATION_COST_PLAN=model:seconds,...` picks runs). Each run is a fresh Node process (`node --import tsx',
    'bench/separation-cost.ts --child <model> <seconds>`).',
    '',
    `Input: \`../shared/corpus/${SONG}\` (a real song, 44.1 kHz stereo) looped to the length shown and handed to the engine`,
    'in fresh 10 s blocks, as a decoder would; stems counted and discarded. Path: NeuralSeparationEngine.separate with a',
    'catalog pinning only the model measured (so its route is that model\'s): graph build beside the checkpoint, session',
    `create, the input pass for scaling (mean/std or peak), resampling, the model's stage, stems composed. onnxruntime`,
    `intra-op threads ${THREADS}, the engine's session options (arena and memory patterns off).`,
    '',
    'Columns: wall = separate() (graph build and session create included); RTF = wall / input length; VmHWM = the child\'s',
    'peak RSS (/proc/self/status, Node + tsx included); "at 1st run" = VmHWM when the first session.run began (weights',
    'loaded, graph built, no activations yet); sessions = time inside session.run (every call wrapped) and the number of',
    'calls; CPU = user + system seconds of the process during separate() (2 threads: at most 2x wall); outside = wall - sessions - session create - graph build - the bench\'s own block making, as a share of the',
    'sessions\' time (Soundry\'s STFT/iSTFT, overlap-add, resampling, scaling, stems; the goal is at most 10%).',
    '',
    '## Models',
    '',
    '| model (catalog entry) | model_type | file measured |',
    '|---|---|---|',
    ...byModel.map((m) => `| ${m.name} | ${m.modelType} | ${m.what} |`),
    '',
    '## Runs',
    '',
    '| model | input | wall | RTF | CPU | VmHWM | at 1st run | sessions (calls) | outside / sessions | graph build | session create | load 1/5/15 min before -> after | ended (UTC) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...runs.map((r) => `| ${r.model} | ${dur(r.seconds)} | ${r.wall.toFixed(1)} s | ${r.rtf.toFixed(3)} | ${r.cpuSeconds === undefined ? 'n/a' : `${r.cpuSeconds.toFixed(0)} s`} | ${r.vmHwmMb.toFixed(0)} MB | ${r.hwmAtFirstRunMb.toFixed(0)} MB | ${r.runSeconds.toFixed(1)} s (${r.runs}) | ${(100 * pct(r)).toFixed(1)}% | ${r.buildSeconds.toFixed(2)} s | ${r.createSeconds.toFixed(2)} s | ${r.loadBefore.replaceAll(' / ', ' ')} -> ${r.loadAfter.replaceAll(' / ', ' ')} | ${r.date.slice(11, 16)} |`),
    '',
  ].join('\n');
}

function readRuns(): Run[] {
  return existsSync(RUNS_FILE) ? (JSON.parse(readFileSync(RUNS_FILE, 'utf8')) as Run[]) : [];
}

export async function benchSeparationCost(): Promise<string> {
  const plan = (process.env.SEPARATION_COST_PLAN ?? DEFAULT_PLAN).split(',').map((s) => {
    const [model, secs] = s.split(':');
    return { model: model!, seconds: Number(secs) };
  });
  await prepare(new Set(plan.map((p) => p.model)));
  let path = '';
  for (const { model, seconds } of plan) {
    dropGraphs(model);
    const loadBefore = load();
    const r = await runChild(model, seconds);
    const run: Run = { model, modelType: MODELS.find((m) => m.name === model)!.modelType, seconds, loadBefore, loadAfter: load(), date: new Date().toISOString(), ...r };
    console.error(`${model} ${seconds}s: wall ${r.wall.toFixed(1)} s, RTF ${r.rtf.toFixed(3)}, VmHWM ${r.vmHwmMb.toFixed(0)} MB, outside ${(100 * pct(run)).toFixed(1)}% (load ${run.loadBefore} -> ${run.loadAfter})`);
    // Written after every run, so a bench cut short still leaves what it measured.
    const runs = [...readRuns().filter((x) => !(x.model === model && x.seconds === seconds)), run];
    const order = (x: Run) => MODELS.findIndex((m) => m.name === x.model) * 1e6 + x.seconds;
    runs.sort((a, b) => order(a) - order(b));
    writeFileSync(RUNS_FILE, JSON.stringify(runs, null, 1) + '\n');
    path = await writeSection('separation-cost', SEPARATION_COST_SECTIONS, null, doc(runs));
  }
  return path;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--child') {
  await child(process.argv[3]!, Number(process.argv[4]));
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--doc') {
  // Rewrites the results file from the recorded runs (after a bench run was cut short, or the table changed).
  console.log(await writeSection('separation-cost', SEPARATION_COST_SECTIONS, null, doc(readRuns())));
}
