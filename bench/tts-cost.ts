/**
 * What the neural TTS engines cost, with real-size stand-ins (test/fixtures/standin-tts.ts: the real layers and tensor
 * shapes, random weights, so onnxruntime does the real amount of work), against eSpeak NG in the same run: a 200-word
 * English text through the worker's own path (createTtsEngines + synthesizeText: sentence split, phonemizer, engine,
 * joins), wall time, real-time factor and peak RSS, each engine in its own Node process, 2 onnxruntime intra-op threads.
 *   npm run bench -- tts-cost
 * The stand-in files (63 MB + 325 MB) go to TTS_COST_DIR (default /tmp/soundry-standin-tts) and are never committed.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as ort from 'onnxruntime-node';
import { createTtsEngines } from '../src/engines/tts/setup.js';
import { synthesizeText } from '../src/engines/tts/pipeline.js';
import { durationSeconds } from '../src/media/audio.js';
import { loadCatalog } from '../src/models/catalog-file.js';
import { MODEL_CATALOG, type ModelEntry } from '../src/models/catalog.js';
import { buildStandinKokoro, buildStandinPiper, kokoroParams, piperParams } from '../test/fixtures/standin-tts.js';
import { kokoroStandIns } from '../test/fixtures/kokoro-fixture.js';
import { pinToBytes, writeCatalogFile } from '../test/fixtures/pinned-catalog.js';
import { machine, NEURAL_COST_SECTIONS, peakRssMb, root, writeSection } from './lib.js';

const THREADS = 2;
const DIR = process.env.TTS_COST_DIR ?? '/tmp/soundry-standin-tts';
const CORPUS = join(root, '..', 'shared', 'corpus');
const TEXT_FILE = 'tts_text/piper_rainbow/en.txt';
// The real lessac-medium config (phoneme_id_map, sample rate, espeak voice) from the shared corpus: real input ids.
const PIPER_CONFIG = 'models/piper-en_US-lessac-medium/en_US-lessac-medium.onnx.json';
const PIPER_VOICE = 'piper-en_US-lessac-medium';
const WORDS = 200;

/** The corpus paragraph (120 words) repeated and cut at 200 words, ending the last sentence with a full stop. */
export function text200(): string {
  const words = readFileSync(join(CORPUS, TEXT_FILE), 'utf8').trim().split(/\s+/);
  const out: string[] = [];
  while (out.length < WORDS) out.push(...words);
  return out.slice(0, WORDS).join(' ').replace(/[,;:]?$/, '.');
}

interface StandinInfo { name: string; bytes: number; params: number; realBytes: number }

/** Writes both stand-ins and a MODELS_CATALOG_FILE pinning them (as a site would pin its own files). */
async function writeStandins(): Promise<StandinInfo[]> {
  const piper = MODEL_CATALOG.find((m) => m.name === PIPER_VOICE)!;
  const piperFiles: Record<string, Uint8Array> = {
    [piper.files.find((f) => f.path.endsWith('.onnx'))!.path]: buildStandinPiper(),
    [piper.files.find((f) => f.path.endsWith('.onnx.json'))!.path]: readFileSync(join(CORPUS, PIPER_CONFIG)),
  };
  const k = kokoroStandIns(['af_heart']);
  const kFiles = k.files.get(k.model.name)!;
  kFiles[k.model.kokoro.modelFile] = buildStandinKokoro();
  const entries: ModelEntry[] = [pinToBytes(piper, piperFiles), pinToBytes(k.model, kFiles), ...k.voices];
  const all = new Map<string, Record<string, Uint8Array>>([...k.files, [piper.name, piperFiles]]);
  for (const [name, files] of all) {
    for (const [path, bytes] of Object.entries(files)) {
      const dest = join(DIR, name, path);
      await mkdir(dirname(dest), { recursive: true });
      await writeFile(dest, bytes);
    }
  }
  await writeCatalogFile(join(DIR, 'catalog.json'), entries);
  const real = (m: ModelEntry, suffix: string) => m.files.find((f) => f.path.endsWith(suffix))!.sizeBytes;
  const kReal = MODEL_CATALOG.find((m) => m.name === k.model.name)!;
  return [
    { name: PIPER_VOICE, bytes: statSync(join(DIR, piper.name, piper.files.find((f) => f.path.endsWith('.onnx'))!.path)).size, params: piperParams(), realBytes: real(piper, '.onnx') },
    { name: k.model.name, bytes: statSync(join(DIR, k.model.name, k.model.kokoro.modelFile)).size, params: kokoroParams(), realBytes: real(kReal, k.model.kokoro.modelFile) },
  ];
}

interface Run { engine: string; voice: string; wall: number; firstCall: number; audio: number; rtf: number; maxRssMb: number }

/** Child process: one warm-up sentence (session load, reported apart), then the 200-word text through the pipeline. */
async function child(engineId: string): Promise<void> {
  const catalog = loadCatalog(join(DIR, 'catalog.json'));
  const registry = createTtsEngines({ modelsDir: DIR, onnxThreads: THREADS, catalog });
  const voices = await registry.listVoices();
  const v = voices.find((x) => x.language === 'en' && x.name.split(':')[0] === engineId);
  if (!v) throw new Error(`no English ${engineId} voice among ${voices.map((x) => x.name).join(', ')}`);
  const resolved = (await registry.resolveVoice(v.id))!;
  const ctx = { tmpDir: '/tmp', signal: new AbortController().signal, onProgress: () => undefined };
  const input = (text: string) => ({ text, language: 'en', voice: resolved.voice, emotionId: 0, speed: 1 });
  const opts = { sonic: registry.sonic, japanese: registry.japanese };
  let t = performance.now();
  await synthesizeText({ ...input('Warm up.'), emotionId: 0 }, resolved.engine, ctx, opts);
  const firstCall = (performance.now() - t) / 1000;
  t = performance.now();
  const audio = await synthesizeText(input(text200()), resolved.engine, ctx, opts);
  const wall = (performance.now() - t) / 1000;
  const seconds = durationSeconds(audio);
  process.stdout.write(JSON.stringify({ engine: engineId, voice: v.name, wall, firstCall, audio: seconds, rtf: wall / seconds, maxRssMb: peakRssMb() }) + '\n');
}

function runChild(engine: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--import', 'tsx', 'bench/tts-cost.ts', '--child', engine], { cwd: root, env: { ...process.env, TTS_COST_DIR: DIR }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!) as Run) : reject(new Error(`${engine}: child exit ${code}`))));
  });
}

const TTS_NOTES = [
  'Notes:',
  '',
  '- The stand-ins\' layouts and what they approximate are listed at the top of `test/fixtures/standin-tts.ts`; their parameter',
  '  counts are checked against the catalogued file sizes in `test/engines/tts/standin-tts.test.ts`. Piper medium is',
  '  piper_train\'s "medium" VITS (HiFi-GAN resblock 2, upsample 8,8,4 from 256 channels); the "high" decoder (8,8,2,2',
  '  from 512) alone holds 13.9 M parameters and does not fit a 63.2 MB file.',
  '- Durations are a fixed expansion (2.75 frames per Piper id, 4.5 per Kokoro token) chosen for a speaking rate of',
  '  145-185 words a minute (Piper 83 s, Kokoro 65 s for the 200 words, measured 04:46 UTC), so the audio lengths above are the',
  '  stand-ins\', not a voice\'s; RTF is per second of audio produced, and the decoders',
  '  (most of the time) run on that many frames. The Piper ids come from the real lessac-medium config; the Kokoro',
  '  tokens from the test vocabulary in misaki\'s symbol set (test/fixtures/kokoro-fixture.ts) and a stand-in voice table.',
  '- The audio is noise; no quality is measured. eSpeak NG runs the same text through the same pipeline.',
  '',
];

const load = () => loadavg().map((v) => v.toFixed(2)).join(' / ');

function doc(files: StandinInfo[], runs: Run[], plan: string, startLoad: string): string {
  return [
    '## TTS: Piper medium and Kokoro-82M, real-size stand-ins (`npm run bench -- tts-cost`)',
    '',
    `Machine: ${machine()}. Load average (1/5/15 min) at the start: ${startLoad}; at the end: ${load()} (shared machine: upper bounds).`,
    `Date: ${new Date().toISOString()}. Command: \`npm run bench -- tts-cost\` (engines \`${plan}\`).`,
    '',
    `Text: \`../shared/corpus/${TEXT_FILE}\` (120 words) repeated and cut at ${WORDS} words (${text200().length} characters), English,`,
    'through the worker\'s path: createTtsEngines + synthesizeText (sentence split, auto emotion, eSpeak NG phonemizer, the engine,',
    'joins), after one warm-up sentence in the same process (its time, session load included, is the "first call" column).',
    `Each engine in its own Node process; peak RSS is its VmHWM (Node + tsx + eSpeak NG WASM included). onnxruntime-node CPU, intra-op threads = ${THREADS}.`,
    '',
    '| stand-in | file | parameters | real file (catalog) |',
    '|---|---|---|---|',
    ...files.map((f) => `| ${f.name} | ${f.bytes.toLocaleString('en')} B | ${(f.params / 1e6).toFixed(2)} M | ${f.realBytes.toLocaleString('en')} B |`),
    '',
    '| engine (voice) | audio | wall | RTF | first call | peak RSS |',
    '|---|---|---|---|---|---|',
    ...runs.map((r) => `| ${r.engine} (${r.voice})${r.engine === 'espeak' ? '' : ', real-size stand-in'} | ${r.audio.toFixed(1)} s | ${r.wall.toFixed(1)} s | ${r.rtf.toFixed(3)} | ${r.firstCall.toFixed(1)} s | ${r.maxRssMb.toFixed(0)} MB |`),
    '',
    ...TTS_NOTES,
  ].join('\n');
}

export async function benchTtsCost(): Promise<string> {
  const plan = process.env.TTS_COST_PLAN ?? 'espeak,piper,kokoro';
  const startLoad = load();
  const files = await writeStandins();
  const runs: Run[] = [];
  for (const engine of plan.split(',')) {
    const r = await runChild(engine);
    runs.push(r);
    console.error(`${engine}: ${r.audio.toFixed(1)} s audio, wall ${r.wall.toFixed(1)} s, RTF ${r.rtf.toFixed(3)}, peak ${r.maxRssMb.toFixed(0)} MB (load ${load()})`);
  }
  // bench/results/neural-cost.md holds the separation and ASR runs too: replace only the TTS section
  return writeSection('neural-cost', NEURAL_COST_SECTIONS, '## TTS:', doc(files, runs, plan, startLoad));
}

/**
 * Where a stand-in's time goes: one session run on `n` ids with onnxruntime's profiler, kernel time summed per op type.
 *   node --import tsx bench/tts-cost.ts --profile kokoro|piper [n]   (after a tts-cost run wrote the stand-ins)
 */
async function profile(engine: string, n: number): Promise<void> {
  const kokoro = engine === 'kokoro';
  const path = kokoro ? join(DIR, 'kokoro-82m-v1.0', 'onnx', 'model.onnx') : join(DIR, PIPER_VOICE, 'en_US-lessac-medium.onnx');
  const session = await ort.InferenceSession.create(path, { intraOpNumThreads: THREADS, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all', enableProfiling: true, profileFilePrefix: join(DIR, `profile-${engine}`) });
  const ids = new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt(1 + (i % 170))), [1, n]);
  const feeds: Record<string, ort.Tensor> = kokoro
    ? { input_ids: ids, style: new ort.Tensor('float32', new Float32Array(256).fill(0.1), [1, 256]), speed: new ort.Tensor('float32', Float32Array.of(1), [1]) }
    : { input: ids, input_lengths: new ort.Tensor('int64', BigInt64Array.of(BigInt(n)), [1]), scales: new ort.Tensor('float32', Float32Array.of(0.667, 1, 0.8), [3]) };
  const t = performance.now();
  const out = Object.values(await session.run(feeds))[0]!;
  const wall = (performance.now() - t) / 1000;
  session.endProfiling(); // writes <prefix>_<date>.json (the node binding does not return its name)
  const file = readdirSync(DIR).filter((f) => f.startsWith(`profile-${engine}_`)).map((f) => join(DIR, f)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]!;
  const byOp = new Map<string, number>();
  for (const e of JSON.parse(readFileSync(file, 'utf8')) as Array<{ cat?: string; name: string; dur: number; args?: { op_name?: string } }>) {
    if (e.cat === 'Node' && e.name.endsWith('_kernel_time')) byOp.set(e.args?.op_name ?? '?', (byOp.get(e.args?.op_name ?? '?') ?? 0) + e.dur);
  }
  const total = [...byOp.values()].reduce((a, b) => a + b, 0);
  const audio = out.dims.at(-1)! / (kokoro ? 24000 : 22050);
  console.log(`${engine}: ${n} ids, ${audio.toFixed(1)} s audio, wall ${wall.toFixed(1)} s (RTF ${(wall / audio).toFixed(2)}); kernel time by op: ${[...byOp].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([op, us]) => `${op} ${((100 * us) / total).toFixed(1)}%`).join(', ')}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--child') await child(process.argv[3]!);
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--profile') await profile(process.argv[3]!, Number(process.argv[4] ?? 150));
