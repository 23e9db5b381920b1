/**
 * What Whisper transcription costs, with a real-size stand-in of the catalogued whisper-tiny (test/fixtures/standin-whisper.ts:
 * the real layers and tensor shapes, random weights, 8-bit as the catalogued files or fp32): real speech from the shared
 * corpus, 60 s and 5 min, through the engine's own path (findAsrModel on a catalog pinning the stand-in, WhisperAsr.load,
 * ffmpeg's 30 s blocks from decodeStream as the ASR thread reads them, transcribe), each run in its own Node process:
 * wall time, real-time factor, tokens decoded per window, peak RSS (VmHWM).
 *   npm run bench -- asr-cost
 * ASR_COST_PLAN overrides the runs: comma-separated `variant:seconds:tokens per window:threads` (variant int8 | fp32).
 * The stand-in files (41 MB int8, 152 MB fp32) and the speech files go to ASR_COST_DIR (default /tmp/soundry-standin-asr),
 * never committed.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SAMPLE_RATE, WINDOW_SAMPLES } from '../src/engines/asr/features.js';
import { findAsrModel, WhisperAsr } from '../src/engines/asr/whisper.js';
import { decodeStream } from '../src/media/ffmpeg-stream.js';
import { resolveMediaTools } from '../src/media/ffmpeg.js';
import { loadCatalog } from '../src/models/catalog-file.js';
import { ASR_MODELS } from '../src/models/catalog-asr.js';
import { pinFolder, writeCatalogFile } from '../test/fixtures/pinned-catalog.js';
import { standinWhisperFiles } from '../test/fixtures/standin-whisper.js';
import { machine, median, NEURAL_COST_SECTIONS, peakRssMb, root, writeSection } from './lib.js';

const DIR = process.env.ASR_COST_DIR ?? '/tmp/soundry-standin-asr';
const CORPUS = join(root, '..', 'shared', 'corpus');
// Real conversational speech, 30 s each at 16 kHz: a telephone call and three AMI meeting clips, played in turn and looped.
const SPEECH = ['speech/conversational/pyannote_sample_telephone.wav', 'speech/conversational/pyannote_ami_dev00.wav', 'speech/conversational/pyannote_ami_trn01.wav', 'speech/conversational/pyannote_ami_tst00.wav'];
/**
 * Tokens forced per 30 s window: English speech at ~150 words a minute is ~75 words a window, ~100 Whisper tokens. A
 * random-weight decoder never emits <|endoftext|> on its own (the stand-in picks a new token each step), so the cap is
 * what it decodes; 224 (the engine's default cap) is what a window that a hallucinating model fills costs.
 */
const DEFAULT_PLAN = 'int8:60:100:2,int8:300:100:2,int8:300:224:2,fp32:60:100:2,int8:300:100:1';

interface Run { variant: string; seconds: number; cap: number; threads: number; audio: number; load: number; wall: number; rtf: number; windowSeconds: number[]; windows: number; tokens: number[]; language: string | null; maxRssMb: number }
interface StandinInfo { variant: string; files: Array<{ path: string; bytes: number; realBytes?: number }>; params: { encoder: number; decoder: number } }

const modelsDir = (variant: string) => join(DIR, variant);

/** Writes one variant's model folder and a MODELS_CATALOG_FILE pinning it (as a site pins its own files). */
async function writeStandin(variant: string): Promise<StandinInfo> {
  const out = standinWhisperFiles({ quantized: variant === 'int8' });
  const name = ASR_MODELS[0]!.name;
  for (const [path, bytes] of Object.entries(out.files)) {
    const dest = join(modelsDir(variant), name, path);
    await mkdir(dirname(dest), { recursive: true });
    await writeFile(dest, bytes);
  }
  await writeCatalogFile(join(modelsDir(variant), 'catalog.json'), [pinFolder(modelsDir(variant), name, 'asr')]);
  const real = (p: string) => ASR_MODELS[0]!.files.find((f) => f.path === p)?.sizeBytes;
  const files = Object.entries(out.files).filter(([p]) => p.endsWith('.onnx')).map(([path, b]) => ({ path, bytes: b.length, ...(real(path) ? { realBytes: real(path)! } : {}) }));
  return { variant, files, params: out.params };
}

/** The corpus speech concatenated and looped to `seconds`, 16 kHz mono WAV (what an uploaded recording decodes to). */
function speechFile(seconds: number): string {
  const path = join(DIR, `speech-${seconds}s.wav`);
  if (existsSync(path)) return path;
  const ffmpeg = resolveMediaTools({ preferSystem: true }).ffmpeg;
  const loops = Math.ceil(seconds / (30 * SPEECH.length));
  const inputs = Array.from({ length: loops }, () => SPEECH).flat();
  const filter = `${inputs.map((_, i) => `[${i}:a]aresample=${SAMPLE_RATE},aformat=channel_layouts=mono[a${i}]`).join(';')};${inputs.map((_, i) => `[a${i}]`).join('')}concat=n=${inputs.length}:v=0:a=1[out]`;
  execFileSync(ffmpeg, ['-nostdin', '-v', 'error', ...inputs.flatMap((f) => ['-i', join(CORPUS, f)]), '-filter_complex', filter, '-map', '[out]', '-t', String(seconds), '-c:a', 'pcm_s16le', '-y', path]);
  return path;
}

/** Child process: the worker's lookup and the ASR thread's decode loop, with `threads` intra-op threads; one JSON line. */
async function child(variant: string, seconds: number, cap: number, threads: number): Promise<void> {
  const found = await findAsrModel({ modelsDir: modelsDir(variant), catalog: loadCatalog(join(modelsDir(variant), 'catalog.json')) });
  if (found.name === null) throw new Error(`stand-in not verified: ${found.reason}`);
  let t = performance.now();
  const asr = await WhisperAsr.load(found.files, { threads });
  const load = (performance.now() - t) / 1000;
  const ffmpeg = resolveMediaTools({ preferSystem: true }).ffmpeg;
  const blocks = decodeStream(join(DIR, `speech-${seconds}s.wav`), { ffmpeg, sampleRate: SAMPLE_RATE, channels: 1, blockFrames: WINDOW_SAMPLES });
  async function* windows(): AsyncGenerator<Float32Array> {
    for await (const b of blocks) yield b.channels[0]!;
  }
  t = performance.now();
  // each window's wall time: on a shared machine a burst of load hits some windows, and the median stays put
  const marks = [t];
  const tr = await asr.transcribe(windows(), { maxTokensPerWindow: cap, onProgress: () => marks.push(performance.now()) });
  const wall = (performance.now() - t) / 1000;
  const windowSeconds = marks.slice(1).map((m, i) => (m - marks[i]!) / 1000);
  await asr.release();
  const out: Omit<Run, 'variant' | 'seconds' | 'cap' | 'threads'> = { audio: tr.seconds, load, wall, rtf: wall / tr.seconds, windowSeconds, windows: tr.windows, tokens: tr.tokens, language: tr.language, maxRssMb: peakRssMb() };
  process.stdout.write(JSON.stringify(out) + '\n');
}

function runChild(variant: string, seconds: number, cap: number, threads: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--import', 'tsx', 'bench/asr-cost.ts', '--child', variant, String(seconds), String(cap), String(threads)], { cwd: root, env: { ...process.env, ASR_COST_DIR: DIR }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${variant} ${seconds}s: child exit ${code}`));
      resolve({ variant, seconds, cap, threads, ...(JSON.parse(out.trim().split('\n').pop()!) as Omit<Run, 'variant' | 'seconds' | 'cap' | 'threads'>) });
    });
  });
}

const load = () => loadavg().map((v) => v.toFixed(2)).join(' / ');
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const dur = (s: number) => (s >= 60 ? `${s / 60} min` : `${s} s`);
/** 100 x 2, 37: counts of equal neighbours folded. */
function perWindow(tokens: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < tokens.length;) {
    let j = i;
    while (j < tokens.length && tokens[j] === tokens[i]) j++;
    out.push(j - i > 1 ? `${tokens[i]} x ${j - i}` : String(tokens[i]));
    i = j;
  }
  return out.join(', ');
}

/**
 * Per-token decoder cost and the rest of a window, from the median window times of two runs of the same input and threads
 * that differ only in the cap (every window decodes exactly its cap): medians, so a burst of others' load in one window does not count.
 */
function split(runs: Run[]): string[] {
  const out: string[] = [];
  for (const a of runs) {
    const b = runs.find((r) => r !== a && r.variant === a.variant && r.seconds === a.seconds && r.threads === a.threads && r.cap > a.cap);
    if (!b || !a.tokens.every((n) => n === a.cap) || !b.tokens.every((n) => n === b.cap)) continue;
    const [ma, mb] = [median(a.windowSeconds), median(b.windowSeconds)];
    const perToken = (mb - ma) / (b.cap - a.cap);
    const head = `- ${a.variant}, ${dur(a.seconds)}, ${a.threads} threads: a median window took ${ma.toFixed(2)} s at ${a.cap} tokens and ${mb.toFixed(2)} s at ${b.cap}`;
    if (perToken <= 0) out.push(`${head}: the load's noise is larger than the decoding difference, no split.`);
    else out.push(`${head}, so one decoder step costs ~${(perToken * 1000).toFixed(0)} ms and the rest of a window (log-mel, encoder, the`,
      `  first step that projects the encoder states) ~${(ma - perToken * a.cap).toFixed(1)} s (an estimate from two runs on a shared machine, not a profile).`);
  }
  return out;
}

function doc(files: StandinInfo[], runs: Run[], plan: string, startLoad: string): string {
  const p = files[0]!.params;
  return [
    '## ASR: Whisper tiny, real-size stand-in (`npm run bench -- asr-cost`)',
    '',
    `Machine: ${machine()}. Load average (1/5/15 min) at the start: ${startLoad}; at the end: ${load()} (shared machine: upper bounds).`,
    `Date: ${new Date().toISOString()}. Command: \`nice -n 10 npm run bench -- asr-cost\` (plan \`${plan}\`: variant:seconds:tokens per window:threads).`,
    '',
    `Input: real conversational speech from \`../shared/corpus/\` (${SPEECH.map((s) => s.split('/').pop()).join(', ')}; 30 s each),`,
    'concatenated in turn and looped to the length shown, 16 kHz mono WAV. Path: findAsrModel on a catalog pinning the stand-in (checksums',
    'verified as the worker does), WhisperAsr.load with the intra-op threads shown, decodeStream\'s 30 s blocks (as asr-thread.ts reads them),',
    'transcribe (log-mel, encoder, language detection on the first window, greedy decoding with the cache). Wall excludes the session load',
    '(its own column). Each run is its own Node process; peak RSS is its VmHWM (Node + tsx included).',
    '',
    `Stand-in (test/fixtures/standin-whisper.ts): ${((p.encoder + p.decoder) / 1e6).toFixed(2)} M parameters (encoder ${p.encoder.toLocaleString('en')}, decoder ${p.decoder.toLocaleString('en')};`,
    'openai/whisper-tiny is quoted as 39 M; this count holds the tied embedding once and the positional tables).',
    '',
    '| variant | file | stand-in | real file (catalog) |',
    '|---|---|---|---|',
    ...files.flatMap((f) => f.files.map((x) => `| ${f.variant} | ${x.path} | ${x.bytes.toLocaleString('en')} B | ${x.realBytes ? `${x.realBytes.toLocaleString('en')} B` : '(not catalogued)'} |`)),
    '',
    '| variant | input | cap (tokens / window) | threads | windows | tokens decoded per window | session load | wall | RTF | window: median (min-max) | peak RSS |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...runs.map((r) => `| ${r.variant} | ${dur(r.seconds)} (${r.audio.toFixed(1)} s decoded) | ${r.cap} | ${r.threads} | ${r.windows} | ${perWindow(r.tokens)} | ${r.load.toFixed(2)} s | ${r.wall.toFixed(1)} s | ${r.rtf.toFixed(3)} | ${median(r.windowSeconds).toFixed(1)} s (${Math.min(...r.windowSeconds).toFixed(1)}-${Math.max(...r.windowSeconds).toFixed(1)}) | ${r.maxRssMb.toFixed(0)} MB |`),
    '',
    'Notes:',
    '',
    '- Tokens: random weights never choose <|endoftext|> here, so every window with sound decodes up to the cap. The cap is set to 100 tokens',
    '  a window (~75 English words at ~150 words a minute) for the realistic figure, and to 224 (the engine\'s default) for the worst case a',
    '  window that a model fills with text costs; the transcript is noise and its language a random one of the 99.',
    ...split(runs),
    '- The int8 variant runs the weights as onnxruntime\'s dynamic quantization does (MatMulInteger/ConvInteger on activations quantized per',
    '  call), as the catalogued files do; fp32 is the same graph in full precision (an upper bound). Attention products are fp32 in both.',
    '- The podcast worker\'s ASR thread (src/kinds/podcast-script/asr-thread.ts) loads the model with the engine\'s default of 1 intra-op',
    '  thread: the 1-thread row is what a task costs there today.',
    '',
  ].join('\n');
}

export async function benchAsrCost(): Promise<string> {
  const plan = process.env.ASR_COST_PLAN ?? DEFAULT_PLAN;
  const startLoad = load();
  const steps = plan.split(',').map((s) => s.split(':'));
  const files: StandinInfo[] = [];
  for (const variant of new Set(steps.map((s) => s[0]!))) {
    const info = await writeStandin(variant);
    files.push(info);
    console.error(`${variant}: ${((info.params.encoder + info.params.decoder) / 1e6).toFixed(2)} M parameters; ${info.files.map((f) => `${f.path} ${f.bytes} B${f.realBytes ? ` (real ${f.realBytes} B)` : ''}`).join(', ')}`);
  }
  const runs: Run[] = [];
  for (const [variant, secs, cap, threads] of steps) {
    speechFile(Number(secs));
    const r = await runChild(variant!, Number(secs), Number(cap), Number(threads ?? 2));
    runs.push(r);
    console.error(`${variant} ${secs}s cap ${cap} ${r.threads}t: wall ${r.wall.toFixed(1)} s, RTF ${r.rtf.toFixed(3)}, tokens ${perWindow(r.tokens)}, peak ${r.maxRssMb.toFixed(0)} MB (load ${load()})`);
  }
  return writeSection('neural-cost', NEURAL_COST_SECTIONS, '## ASR:', doc(files, runs, plan, startLoad));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--child') {
  await child(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]), Number(process.argv[6]));
}
