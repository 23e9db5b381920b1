/**
 * `npm run bench -- enhance --scores [--quick] [--no-real] [--systems a,b [--merge]] [--doc]` (or `node --import tsx
 * bench/enhance-scores.ts` with the same options): the standard speech-quality scores of Soundry's enhancement, as
 * the literature reports them, so that Soundry's figures can stand beside published ones.
 *
 * Every output is made by Soundry's own code: each denoiser a user can choose (ENHANCE_DENOISER's values; a neural one
 * only when its model is installed in MODELS_DIR, default ../shared/corpus/models), the WPE dereverberation stage, and
 * the chains a request gets through the engine thread's runEnhance (`{}` = autoid, remove_noise, remove_reverb,
 * studio_sound, and remove_noise with autoeq and/or normalize, which is what autoid adds). The scores are computed by
 * the standard implementations through the reference harness (harness/enhance_scores.py: PESQ wideband, pystoi,
 * DNSMOS through speechmos, SI-SDR), never by Soundry; Soundry's own STOI is set against pystoi on the same pairs.
 * Inputs: the corpus' constructed pairs (noisy 0/5/10 dB, reverberant, reverberant+noisy 5 dB, each with its clean
 * reference) and, DNSMOS only, the real recordings without a reference (JFK 1961 and the others, a real reverberant
 * room). Writes the "Standard scores" section of bench/results/enhance.md and every file's scores to
 * bench/results/enhance-scores.runs.json; --doc rewrites the section from that file without running anything.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { AudioData } from '../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { decodeWav, encodeWav } from '../src/media/wav.js';
import { DENOISER_PREFERENCES, createChosenDenoiser } from '../src/engines/enhance/engine-choice.js';
import { DereverbStage } from '../src/engines/enhance/dereverb.js';
import { stoi10k } from '../src/engines/enhance/metrics.js';
import { StreamResampler } from '../src/media/dsp/resample.js';
import { processWhole, type AudioStage } from '../src/engines/enhance/stage.js';
import type { EnhanceFlag } from '../src/engines/enhance/chain.js';
import { runEnhance } from '../src/kinds/enhance/thread.js';
import { machine, root, writeResult } from './lib.js';
import { mergeRuns, pairCondition, REAL_NOISY_CONDITION, REAL_REVERB_CONDITION, replaceSection, ScoredItems, type Pair, type RunInfo, type ScoredItem } from './enhance-scores-table.js';
import { renderScores, SECTION } from './enhance-scores-doc.js';

const speech = join(root, '../shared/corpus/speech/');
const pairsDir = join(speech, 'constructed_pairs_16k/');
const modelsDir = process.env.MODELS_DIR ?? join(root, '../shared/corpus/models');
const python = join(root, 'harness/.venv/bin/python');
const runsFile = join(root, 'bench/results/enhance-scores.runs.json');
const cacheFile = join(root, 'harness/out/enhance-scores-cache.json');
const tools = resolveMediaTools({ preferSystem: true });

/** The real recordings without a reference (DNSMOS only); the first microphone of the 8-channel room recording. */
const REAL_NOISY = ['gtcrn_test_mix.wav', 'speechbrain_single-mic_example1.wav', 'speechbrain_single-mic_example2.flac', 'speechbrain_single-mic_example3.sph', 'speechbrain_single-mic_example5.wav', 'speechbrain_single-mic_example6.wav', 'whisper_jfk.flac'].map((f) => `noisy_no_reference/${f}`);
const REAL_REVERB = ['reverberant_real/nara_wpe_AMI_WSJ20-Array1-1_T10c0201.wav'];

interface Input { rel: string; condition: string; reference?: string }
type Made = { engines: string[]; stages?: string[] };
interface System { name: string; run(audio: AudioData, inputPath: string, outPath: string, tmp: string): Promise<Made> }

function stageSystem(name: string, make: (rate: number, ch: number) => Promise<AudioStage>): System {
  return {
    name,
    async run(audio, _in, outPath) {
      const stage = await make(audio.sampleRate, audio.channels.length);
      const y = await processWhole([stage], audio, audio.sampleRate);
      writeFileSync(outPath, encodeWav(y, 32));
      return { engines: [stage.name] };
    },
  };
}

function chainSystem(name: string, flags: EnhanceFlag[]): System {
  return {
    name,
    async run(audio, inputPath, outPath, tmp) {
      const out = await runEnhance(
        { inputPath, outPath, format: 'wav', pcm: 'f32', sampleRate: audio.sampleRate, channels: Math.min(2, audio.channels.length), totalFrames: audio.channels[0]!.length, flags, modelsDir, ffmpeg: tools.ffmpeg, targetLufs: -16 },
        { tmpDir: tmp, signal: new AbortController().signal, onProgress: () => undefined },
      );
      return { engines: out.engines, stages: out.stages };
    },
  };
}

/**
 * Every denoiser a user can force (ENHANCE_DENOISER), each once: a forced neural model that is not installed falls
 * back to another engine, which is then already in the list. A denoiser added to the choice (DeepFilterNet3) is
 * scored as soon as its model is in MODELS_DIR, without a change here.
 */
async function denoiserSystems(): Promise<System[]> {
  const seen = new Set<string>();
  const out: System[] = [];
  for (const pref of DENOISER_PREFERENCES) {
    if (pref === 'auto') continue;
    const probe = await createChosenDenoiser(pref, { sampleRate: 16000, channels: 1, models: modelsDir }, null, false);
    if (seen.has(probe.kind)) continue;
    seen.add(probe.kind);
    out.push(stageSystem(probe.kind, async (r, c) => (await createChosenDenoiser(pref, { sampleRate: r, channels: c, models: modelsDir }, null, false)).stage));
  }
  return out;
}

/** What autoid does when it denoises, taken apart: does its EQ or its loudness normalisation lower the scores? */
export const CHAINS: Array<[string, EnhanceFlag[]]> = [
  ['{} (autoid)', ['autoid']],
  ['remove_noise', ['remove_noise']],
  ['remove_noise+normalize', ['remove_noise', 'normalize']],
  ['remove_noise+autoeq', ['remove_noise', 'autoeq']],
  ['remove_noise+autoeq+normalize', ['remove_noise', 'autoeq', 'normalize']],
  ['remove_reverb', ['remove_reverb']],
  ['studio_sound', ['studio_sound']],
];

async function systems(filter: string[] | null): Promise<System[]> {
  const all = [...(await denoiserSystems()), stageSystem('wpe', async (r, c) => new DereverbStage(r, c)), ...CHAINS.map(([n, f]) => chainSystem(n, f))];
  return filter ? all.filter((s) => filter.includes(s.name)) : all;
}

function inputs(quick: boolean, real: boolean): Input[] {
  const pairs = JSON.parse(readFileSync(join(pairsDir, 'pairs.json'), 'utf8')) as Pair[];
  const seen = new Set<string>();
  const out: Input[] = [];
  for (const p of pairs) {
    const cond = pairCondition(p);
    if (!cond || (quick && seen.has(cond))) continue;
    seen.add(cond);
    out.push({ rel: `constructed_pairs_16k/${p.file}`, condition: cond, reference: join(pairsDir, p.clean) });
  }
  if (real) {
    for (const rel of quick ? REAL_NOISY.slice(-1) : REAL_NOISY) out.push({ rel, condition: REAL_NOISY_CONDITION });
    for (const rel of REAL_REVERB) out.push({ rel, condition: REAL_REVERB_CONDITION });
  }
  return out.filter((i) => existsSync(join(speech, i.rel)));
}

/** 16 kHz -> 10 kHz, the rate STOI works at. */
export async function to10k(x: Float32Array): Promise<Float32Array> {
  const rs = await StreamResampler.create(1, 16000, 10000);
  const a = rs.process([x])[0]!, b = rs.flush()[0]!;
  const o = new Float32Array(a.length + b.length);
  o.set(a); o.set(b, a.length);
  return o;
}

/** Soundry's STOI on a 16 kHz mono pair (as the old quality table computed it), or undefined when it does not apply. */
async function soundryStoi(outPath: string, reference: string, ref10: Map<string, Float32Array>): Promise<number | undefined> {
  const y = decodeWav(readFileSync(outPath));
  if (y.sampleRate !== 16000 || y.channels.length !== 1) return undefined;
  if (!ref10.has(reference)) ref10.set(reference, await to10k(decodeWav(readFileSync(reference)).channels[0]!));
  const v = stoi10k(ref10.get(reference)!, await to10k(y.channels[0]!));
  return Number.isFinite(v) ? v : undefined;
}

function git(args: string[]): string {
  try {
    // Not trimmed: porcelain lines start with a status column that may be a space.
    return execFileSync('git', args, { cwd: root, encoding: 'utf8' });
  } catch {
    return '?';
  }
}

function runScorer(itemsPath: string, outPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(python, [join(root, 'harness/enhance_scores.py'), itemsPath, outPath, '--cache', cacheFile], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`harness/enhance_scores.py exited ${code}`))));
  });
}

async function measure(argv: string[]): Promise<{ items: ScoredItem[]; info: RunInfo }> {
  if (!existsSync(python)) throw new Error('harness/.venv is missing: run `bash harness/setup.sh` (pesq, pystoi, speechmos are pinned there)');
  const get = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
  const quick = argv.includes('--quick');
  const t0 = performance.now();
  const started = new Date().toISOString();
  const loadBefore = loadavg();
  // The outputs are made first, from the tree as it is now (other sessions commit while the scorer runs).
  const head = git(['log', '-1', '--format=%h %s']).trim();
  const dirty = git(['status', '--porcelain', '--', 'src', 'bench', 'harness']).split('\n').filter(Boolean).map((l) => l.slice(3));
  const systemList = await systems(get('--systems')?.split(',') ?? null);
  const list = inputs(quick, !argv.includes('--no-real'));
  const tmp = mkdtempSync(join(tmpdir(), 'enh-scores-'));
  try {
    const pending: Array<Omit<ScoredItem, 'scores'>> = [];
    const ref10 = new Map<string, Float32Array>();
    let k = 0;
    for (const inp of list) {
      const src = join(speech, inp.rel);
      const audio = await decodeAudio(src, { ffmpeg: tools.ffmpeg });
      const duration = audio.channels[0]!.length / audio.sampleRate;
      // The input as decoded (any format), so the scorer reads WAV only; the channels are those the engines get.
      const base = { input: inp.rel, condition: inp.condition, ...(inp.reference ? { reference: inp.reference } : {}) };
      const unproc = join(tmp, `${k++}.wav`);
      writeFileSync(unproc, encodeWav(audio.channels.length > 2 ? { sampleRate: audio.sampleRate, channels: audio.channels.slice(0, 2) } : audio, 32));
      pending.push({ ...base, file: unproc, system: 'unprocessed' });
      if (inp.reference) pending.push({ file: inp.reference, input: inp.rel, condition: inp.condition, system: 'clean reference' });
      if (inp.rel.endsWith('gtcrn_test_mix.wav')) pending.push({ ...base, file: join(speech, 'noisy_no_reference/gtcrn_test_mix.ENHANCED_BY_GTCRN.wav'), system: "GTCRN authors' own output" });
      for (const s of systemList) {
        const out = join(tmp, `${k++}.wav`);
        const t = performance.now();
        const made = await s.run(audio, src, out, tmp);
        const rtf = (performance.now() - t) / 1000 / duration;
        const tsStoi = inp.reference ? await soundryStoi(out, inp.reference, ref10) : undefined;
        pending.push({ ...base, file: out, system: s.name, rtf, ...made, ...(tsStoi !== undefined ? { tsStoi } : {}) });
        console.error(`${inp.rel} ${s.name}: RTF ${rtf.toFixed(3)} ${made.engines.join('+')}`);
      }
    }
    const itemsPath = join(tmp, 'items.json'), scoredPath = join(tmp, 'scored.json');
    writeFileSync(itemsPath, JSON.stringify(pending));
    await runScorer(itemsPath, scoredPath);
    const scored = ScoredItems.parse(JSON.parse(readFileSync(scoredPath, 'utf8')));
    // Temporary paths mean nothing once the run is over: keep the corpus-relative ones only.
    const items = scored.map((it) => ({ ...it, file: it.file.startsWith(tmp) ? '(temporary output)' : relative(root, it.file), ...(it.reference ? { reference: relative(root, it.reference) } : {}) }));
    const info: RunInfo = {
      started, finished: new Date().toISOString(), machine: machine(), loadBefore, loadAfter: loadavg(), head,
      dirty, modelsDir: `${modelsDir} (${existsSync(modelsDir) ? readdirSync(modelsDir).filter((m) => !m.startsWith('.')).join(', ') : 'absent'})`, wallSeconds: (performance.now() - t0) / 1000, options: argv.filter((a) => a.startsWith('--')).join(' '),
    };
    return { items, info };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

export async function benchEnhanceScores(argv: string[] = process.argv.slice(2)): Promise<string> {
  if (!existsSync(join(pairsDir, 'pairs.json'))) return 'enhance scores skipped: no ../shared/corpus';
  let run: { items: ScoredItem[]; info: RunInfo };
  const partial = argv.includes('--quick') || (argv.includes('--systems') && !argv.includes('--merge'));
  if (argv.includes('--doc')) run = JSON.parse(readFileSync(runsFile, 'utf8')) as { items: ScoredItem[]; info: RunInfo };
  else {
    const fresh = await measure(argv);
    // --systems a,b --merge re-measures those systems and replaces only their rows in the full record (say, after a
    // chain changed); a partial run (--quick, --systems alone) leaves the record alone.
    run = argv.includes('--merge') ? mergeRuns(JSON.parse(readFileSync(runsFile, 'utf8')) as { items: ScoredItem[]; info: RunInfo }, fresh) : fresh;
    if (!partial) writeFileSync(runsFile, `${JSON.stringify(run, null, 1)}\n`);
  }
  const section = renderScores(run.items, run.info);
  const file = join(root, 'bench/results/enhance.md');
  const doc = existsSync(file) ? readFileSync(file, 'utf8') : '# Enhancement benchmark\n';
  if (partial) {
    console.log(section);
    return 'enhance scores: partial run printed, bench/results/enhance.md left as it was';
  }
  return writeResult('enhance', replaceSection(doc, SECTION, section));
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchEnhanceScores());
