/**
 * What the neural separation engines cost, with real-size stand-ins (bench/standin-real.ts: the real layers and
 * tensor shapes, random weights, so onnxruntime does the real amount of work), against the built-in engine in the
 * same run: wall time, real-time factor and peak RSS, each run in its own Node process, 2 onnxruntime intra-op threads.
 *   npm run bench -- neural-cost
 * NEURAL_COST_PLAN overrides the runs: comma-separated `engine:modelType:seconds` (engine builtin | neural).
 */
import { spawn, execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { BuiltinSeparationEngine } from '../src/engines/separation/builtin.js';
import { NeuralSeparationEngine } from '../src/engines/separation/neural.js';
import type { AudioSource } from '../src/engines/separation/engine.js';
import { loadCatalog } from '../src/models/catalog-file.js';
import { machine, NEURAL_COST_SECTIONS, peakRssMb, root, writeSection } from './lib.js';
import { writeRealStandins, type StandinFile } from './standin-real.js';

const RATE = 44100;
const THREADS = 2;
const SONG = 'separation/mixture_only_real_songs/demucs_test.mp3';
const SONG_PATH = join(root, '..', 'shared', 'corpus', SONG);
const MODELS_DIR = process.env.NEURAL_COST_DIR ?? '/tmp/soundry-standin-real';
// 10 s neural runs first: their peak RSS against the 3-minute runs' shows whether memory grows with length.
const DEFAULT_PLAN = 'neural:350:10,neural:501:10,builtin:350:180,neural:350:180,builtin:501:180,neural:501:180,builtin:350:3600';

interface Run { engine: string; label: string; modelType: number; seconds: number; wall: number; rtf: number; maxRssMb: number }

/** The corpus song looped to `seconds`, handed out in fresh 10 s blocks (never the whole input in memory). */
async function loopedSong(seconds: number): Promise<AudioSource> {
  const tools = resolveMediaTools({ preferSystem: true });
  const loop = await decodeAudio(SONG_PATH, { ffmpeg: tools.ffmpeg, sampleRate: RATE, channels: 2 });
  const loopLen = loop.channels[0]!.length;
  const total = Math.round(seconds * RATE);
  const block = RATE * 10;
  return {
    sampleRate: RATE, channelCount: 2, totalFrames: total,
    async *blocks() {
      for (let a = 0; a < total; a += block) {
        const len = Math.min(block, total - a);
        yield { sampleRate: RATE, channels: loop.channels.map((c) => Float32Array.from({ length: len }, (_, i) => c[(a + i) % loopLen]!)) };
      }
    },
  };
}

/** Child process: one separation, output discarded, one JSON line on stdout. */
async function child(engineName: string, modelType: number, seconds: number): Promise<void> {
  const source = await loopedSong(seconds);
  const engine = engineName === 'neural'
    ? new NeuralSeparationEngine({ modelsDir: MODELS_DIR, catalog: loadCatalog(join(MODELS_DIR, 'catalog.json')), threads: THREADS })
    : new BuiltinSeparationEngine();
  let frames = 0;
  const ctx = { tmpDir: '/tmp', signal: new AbortController().signal, onProgress: () => undefined };
  const t0 = performance.now();
  const run = await engine.separate(source, modelType, ctx, { write: (_s, stems) => { frames += Object.values(stems)[0]!.channels[0]!.length; } });
  const wall = (performance.now() - t0) / 1000;
  if (frames !== source.totalFrames) throw new Error(`wrote ${frames} of ${source.totalFrames} frames`);
  const label = (run && 'engine' in run ? run.engine : undefined) ?? engine.id;
  process.stdout.write(JSON.stringify({ label, wall, rtf: wall / seconds, maxRssMb: peakRssMb() }) + '\n');
}

function runChild(engine: string, modelType: number, seconds: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--import', 'tsx', 'bench/neural-cost.ts', '--child', engine, String(modelType), String(seconds)], { cwd: root, env: { ...process.env, NEURAL_COST_DIR: MODELS_DIR }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${engine} ${modelType} ${seconds}s: child exit ${code}`));
      const r = JSON.parse(out.trim().split('\n').pop()!) as Omit<Run, 'engine' | 'modelType' | 'seconds'>;
      resolve({ engine, modelType, seconds, ...r });
    });
  });
}

function cpuModel(): string {
  try {
    const line = execFileSync('lscpu', { encoding: 'utf8' }).split('\n').find((l) => l.startsWith('Model name'));
    return line?.split(':')[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown (no lscpu)';
  }
}

const load = () => loadavg().map((v) => v.toFixed(2)).join(' / ');
const dur = (s: number) => (s >= 60 ? `${s / 60} min` : `${s} s`);

function doc(files: StandinFile[], runs: Run[], plan: string, startLoad: string, done: boolean): string {
  return [
    '# Neural separation cost, real-size stand-in models',
    '',
    `Machine: ${machine()}; lscpu model: ${cpuModel()}. Load average (1/5/15 min) at the start: ${startLoad}; at the ${done ? 'end' : 'last completed run'}: ${load()}.`,
    'The machine is shared: other engineers ran builds and tests on the same 2 cores during the whole run, so every wall time',
    'here is an upper bound on an idle 2-core machine and the runs are not exactly comparable with each other.',
    `Date: ${new Date().toISOString()}. Command: \`npm run bench -- neural-cost\` (plan \`${plan}\`).`,
    '',
    `Input: \`../shared/corpus/${SONG}\` decoded to 44.1 kHz stereo and looped to the length shown, handed to the engine in`,
    'fresh 10 s blocks; stems discarded. Each run is its own Node process; peak RSS is its VmHWM (Node + tsx ~100 MB included).',
    `Neural engines: onnxruntime-node CPU, intra-op threads = ${THREADS}, inter-op 1, the engine's own session options (arena off).`,
    'Built-in engine: the DSP engine of this repository (JavaScript, one thread).',
    '',
    '## Stand-in models (written by `bench/standin-real.ts`, not committed)',
    '',
    'Real layers and tensor shapes with seeded random weights (layouts in `test/fixtures/standin-real.ts`); onnxruntime does',
    'the same arithmetic whatever the weights, so speed and memory are the real model\'s; the stems are noise.',
    '',
    '| model | stand-in file | parameters | real file |',
    '|---|---|---|---|',
    ...files.map((f) => `| ${f.name} | ${f.bytes.toLocaleString('en')} B | ${(f.params / 1e6).toFixed(2)} M | ${f.realBytes ? `${f.realBytes.toLocaleString('en')} B (catalog)` : 'no published file to compare (see notes)'} |`),
    '',
    '## Runs',
    '',
    '| model type | engine | input | wall | RTF | peak RSS |',
    '|---|---|---|---|---|---|',
    ...runs.map((r) => `| ${r.modelType} | ${r.label}${r.engine === 'neural' ? ' (real-size stand-in)' : ''} | ${dur(r.seconds)} | ${r.wall.toFixed(1)} s | ${r.rtf.toFixed(3)} | ${r.maxRssMb.toFixed(0)} MB |`),
    '',
    ...notes(runs),
  ].join('\n');
}

/** What the runs say beyond the table: memory against length, and the hours a 60-minute song would take. */
function notes(runs: Run[]): string[] {
  const out = ['## Notes', ''];
  for (const label of new Set(runs.filter((r) => r.engine === 'neural').map((r) => r.label))) {
    const rs = runs.filter((r) => r.label === label).sort((a, b) => a.seconds - b.seconds);
    const long = rs.at(-1)!;
    if (rs.length > 1) out.push(`- ${label}: peak RSS ${rs.map((r) => `${r.maxRssMb.toFixed(0)} MB at ${dur(r.seconds)}`).join(', ')}: memory is one segment's activations, not the song.`);
    if (!runs.some((r) => r.label === label && r.seconds >= 3600)) out.push(`- ${label}: not run on 60 minutes; at the ${dur(long.seconds)} RTF (${long.rtf.toFixed(2)}) it would take ${(long.rtf).toFixed(1)} hours here.`);
  }
  out.push('- Stand-in fidelity: the MDX-Net layout has the UVR files\' parameter count (file size within the graph metadata,',
    '  checked in test/engines/separation/standin-real.test.ts); the HTDemucs layout follows demucs\' HTDemucs with the pretrained',
    '  config; its approximations are listed at the top of test/fixtures/standin-real.ts.', '');
  return out;
}

export async function benchNeuralCost(): Promise<string> {
  const plan = process.env.NEURAL_COST_PLAN ?? DEFAULT_PLAN;
  const startLoad = load();
  const files = await writeRealStandins(MODELS_DIR, ['Kim_Vocal_2', 'htdemucs']);
  const runs: Run[] = [];
  let path = '';
  for (const step of plan.split(',')) {
    const [engine, mt, secs] = step.split(':');
    const r = await runChild(engine!, Number(mt), Number(secs));
    runs.push(r);
    console.error(`${step}: ${r.label} wall ${r.wall.toFixed(1)} s, RTF ${r.rtf.toFixed(3)}, peak ${r.maxRssMb.toFixed(0)} MB (load ${load()})`);
    // written after every run, so a run cut short still leaves what it measured
    path = await writeSection('neural-cost', NEURAL_COST_SECTIONS, null, doc(files, runs, plan, startLoad, false));
  }
  return writeSection('neural-cost', NEURAL_COST_SECTIONS, null, doc(files, runs, plan, startLoad, true)) ?? path;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--child') {
  await child(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]));
}
