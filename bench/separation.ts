import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import type { AudioData } from '../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { loadFftProvider, type FftProvider } from '../src/media/dsp/fft.js';
import { istft, stft } from '../src/media/dsp/stft.js';
import { BuiltinSeparationEngine } from '../src/engines/separation/builtin.js';
import { DEFAULT_TEMPLATE_SOURCE, type TemplateSource } from '../src/engines/separation/dsp/nmf.js';
import { NeuralSeparationEngine } from '../src/engines/separation/neural.js';
import { installedPresets } from '../src/engines/separation/onnx/presets.js';
import { loadCatalog } from '../src/models/catalog-file.js';
import { collectingSink, STEMS_BY_MODEL_TYPE, type AudioSource } from '../src/engines/separation/engine.js';
import { machine, root, writeResult } from './lib.js';
import { museval4Sdr, siSdr } from './separation-metrics.js';

/** Separation quality and cost of the built-in and neural engines on the shared corpus (metrics: separation-metrics.ts). */

const CORPUS = `${root}../shared/corpus/separation`;
const RATE = 44100;

function flat(a: AudioData, n: number): Float64Array[] {
  return a.channels.map((c) => Float64Array.from(c.subarray(0, n)));
}

const BANDS: Record<string, [number, number]> = {
  bass: [0, 200], vocals: [200, 4000], drums: [4000, 22050], piano: [250, 2000], guitar: [150, 5000],
  other: [200, 22050], strings: [200, 4000], wind: [250, 4000], synthesizer: [100, 8000],
};

function bandSplit(mix: AudioData, stem: string, fft: FftProvider): Float64Array[] {
  const [lo, hi] = BANDS[stem] ?? [0, 22050];
  const nFft = 4096;
  const plan = fft.create(nFft);
  const out = mix.channels.map((x) => {
    const s = stft(x, plan, { nFft, hop: 1024 });
    for (let t = 0; t < s.frames; t++) {
      for (let k = 0; k < s.bins; k++) {
        const f = (k * mix.sampleRate) / nFft;
        if (f < lo || f >= hi) {
          s.re[t * s.bins + k] = 0;
          s.im[t * s.bins + k] = 0;
        }
      }
    }
    return Float64Array.from(istft(s, plan, { nFft, hop: 1024, length: x.length }));
  });
  plan.dispose();
  return out;
}

interface Track { name: string; dir: string; stems: string[] }

function tracks(): Track[] {
  const list: Track[] = [];
  const add = (group: string, stems: string[]) => {
    const base = `${CORPUS}/${group}`;
    if (!existsSync(base)) return;
    for (const name of readdirSync(base).sort()) if (existsSync(`${base}/${name}/mixture.flac`)) list.push({ name: `${group}/${name}`, dir: `${base}/${name}`, stems });
  };
  if (existsSync(`${CORPUS}/musdb18_sample_music_delta_80s_rock/mixture.flac`)) {
    list.push({ name: 'musdb18 music_delta_80s_rock', dir: `${CORPUS}/musdb18_sample_music_delta_80s_rock`, stems: ['drums', 'bass', 'other', 'vocals'] });
  }
  add('midi_rendered_fluidr3', ['drums', 'bass', 'piano', 'guitar', 'other']);
  add('fof_guitar_real_stems', ['guitar', 'backing']);
  return list;
}

const ctx = () => ({ tmpDir: '/tmp', signal: new AbortController().signal, onProgress: () => undefined });

async function loadTrack(tr: Track): Promise<{ mixN: AudioData; refsRaw: Record<string, AudioData>; n: number }> {
  const tools = resolveMediaTools({ preferSystem: true });
  const load = (f: string) => decodeAudio(`${tr.dir}/${f}.flac`, { ffmpeg: tools.ffmpeg, sampleRate: RATE, channels: 2 });
  const mix = await load('mixture');
  const refsRaw: Record<string, AudioData> = {};
  for (const s of tr.stems) refsRaw[s] = await load(s);
  const n = Math.min(mix.channels[0]!.length, ...Object.values(refsRaw).map((r) => r.channels[0]!.length));
  return { mixN: { sampleRate: RATE, channels: mix.channels.map((c) => c.slice(0, n)) }, refsRaw, n };
}

/** Builtin SDR / SI-SDR per `track|model|stem`, kept so the template comparison reuses the default's run. */
type Scores = Map<string, [number, number]>;

async function quality(fft: FftProvider, scores: Scores): Promise<string[]> {
  const rows: string[] = [];
  for (const tr of tracks()) {
    const { mixN, refsRaw, n } = await loadTrack(tr);
    for (const [mtStr, stems] of Object.entries(STEMS_BY_MODEL_TYPE)) {
      const mt = Number(mtStr);
      // `other` means "everything else" only when every other stem of the model has a reference here.
      const otherComparable = stems.every((s) => s === 'other' || s in refsRaw);
      const evalStems = stems.filter((s) => s in refsRaw && (s !== 'other' || otherComparable));
      if (!evalStems.length) continue;
      const sink = collectingSink();
      await new BuiltinSeparationEngine({ fft }).separate(sourceOf(mixN), mt, ctx(), sink);
      const est = sink.result();
      const refs = evalStems.map((s) => flat(refsRaw[s]!, n));
      const variants: Array<[string, Float64Array[][]]> = [
        ['builtin', evalStems.map((s) => flat(est[s]!, n))],
        ['mixture', evalStems.map(() => flat(mixN, n))],
        ['band-split', evalStems.map((s) => bandSplit(mixN, s, fft))],
      ];
      const sdr = variants.map(([, e]) => museval4Sdr(refs, e, RATE));
      const si = variants.map(([, e]) => evalStems.map((_, j) => siSdr(refs[j]!, e[j]!)));
      evalStems.forEach((s, j) => {
        scores.set(`${tr.name}|${mt}|${s}`, [sdr[0]![j]!, si[0]![j]!]);
        rows.push(`| ${tr.name} | ${mt} | ${s} | ${sdr.map((v) => f(v[j]!)).join(' | ')} | ${si.map((v) => f(v[j]!)).join(' | ')} |`);
      });
      console.error(`quality: ${tr.name} model ${mt} done`);
    }
  }
  return rows;
}

const f = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

/**
 * Hand-set vs soundfont-derived NMF templates on the model types that use them (380, 390, 320 piano/guitar).
 * The default source's numbers come from `scores`; only the other source is run again. musdb has no piano or
 * guitar stem: its 390 guitar estimate is scored against its `other` stem (guitars and keys), marked proxy.
 */
async function templateComparison(fft: FftProvider, scores: Scores): Promise<string[]> {
  const rows: string[] = [];
  for (const tr of tracks()) {
    const { mixN, refsRaw, n } = await loadTrack(tr);
    const real = tr.name.startsWith('midi_rendered') ? 'FluidR3 render' : 'real';
    for (const mt of [380, 390, 320]) {
      const proxy = mt === 390 && !('guitar' in refsRaw) && 'other' in refsRaw;
      const evalStems = STEMS_BY_MODEL_TYPE[mt]!.filter((s) => (s === 'piano' || s === 'guitar') && (s in refsRaw || (proxy && s === 'guitar')));
      if (!evalStems.length) continue;
      const refs = evalStems.map((s) => flat(refsRaw[proxy ? 'other' : s]!, n));
      const run = async (templates: TemplateSource): Promise<Array<[number, number]>> => {
        if (templates === DEFAULT_TEMPLATE_SOURCE && !proxy) return evalStems.map((s) => scores.get(`${tr.name}|${mt}|${s}`)!);
        const sink = collectingSink();
        await new BuiltinSeparationEngine({ fft, templates }).separate(sourceOf(mixN), mt, ctx(), sink);
        const est = evalStems.map((s) => flat(sink.result()[s]!, n));
        const sdr = museval4Sdr(refs, est, RATE);
        return evalStems.map((_, j) => [sdr[j]!, siSdr(refs[j]!, est[j]!)]);
      };
      const hand = await run('handset');
      const sf = await run('soundfont');
      evalStems.forEach((s, j) => {
        const stem = proxy ? `${s} (proxy: vs other stem)` : s;
        rows.push(`| ${tr.name} | ${real} | ${mt} | ${stem} | ${f(hand[j]![0])} | ${f(sf[j]![0])} | ${f(hand[j]![1])} | ${f(sf[j]![1])} |`);
      });
      console.error(`templates: ${tr.name} model ${mt} done`);
    }
  }
  return rows;
}

/** Wins and mean change (soundfont minus hand-set) over the real rows, SDR and SI-SDR. */
export function templateVerdict(rows: string[]): string {
  const real = rows.map((r) => r.split('|').map((c) => c.trim())).filter((c) => c[2] === 'real').map((c) => c.slice(5, 9).map(Number));
  const stat = (a: number, b: number) => {
    const d = real.map((v) => v[b]! - v[a]!);
    return `soundfont better on ${d.filter((x) => x > 0).length} of ${d.length} rows, mean ${(d.reduce((x, y) => x + y, 0) / d.length).toFixed(2)} dB`;
  };
  return `Real rows: SDR ${stat(0, 1)}; SI-SDR ${stat(2, 3)}.`;
}

function templateSection(rows: string[]): string[] {
  return [
    '## NMF templates: hand-set priors vs soundfont-derived',
    '',
    'Same engine, only the template source differs (`BuiltinOptions.templates`; table from',
    '`node --import tsx scripts/derive-nmf-templates.ts /tmp/fluid/usr/share/sounds/sf2/FluidR3_GM.sf2`).',
    `Default: \`${DEFAULT_TEMPLATE_SOURCE}\`, chosen on the rows marked real. Rows marked "FluidR3 render" score templates measured`,
    'on the very soundfont that rendered them, so they favour the derived source and do not count for the choice.',
    'Reproduce (quality part only, keeps the Cost section): `node --import tsx bench/separation.ts --quality`',
    '',
    '| track | source | model | stem | SDR hand-set | SDR soundfont | SI-SDR hand-set | SI-SDR soundfont |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    templateVerdict(rows),
    '',
  ];
}

/** Neural models installed in MODELS_DIR (default data/models): scored on the model types they serve. */
const MODELS_DIR = process.env.MODELS_DIR ?? `${root}/data/models`;
/** Installed means verified against the catalog; stand-in models come with their own (bench/standin-models.ts). */
const CATALOG = loadCatalog(process.env.MODELS_CATALOG_FILE);

async function neuralQuality(fft: FftProvider): Promise<string[]> {
  const tools = resolveMediaTools({ preferSystem: true });
  const engine = new NeuralSeparationEngine({ modelsDir: MODELS_DIR, catalog: CATALOG, fft });
  const rows: string[] = [];
  try {
    for (const tr of tracks()) {
      const load = (f: string) => decodeAudio(`${tr.dir}/${f}.flac`, { ffmpeg: tools.ffmpeg, sampleRate: RATE, channels: 2 });
      const mix = await load('mixture');
      const refsRaw: Record<string, AudioData> = {};
      for (const st of tr.stems) refsRaw[st] = await load(st);
      const n = Math.min(mix.channels[0]!.length, ...Object.values(refsRaw).map((r) => r.channels[0]!.length));
      const mixN: AudioData = { sampleRate: RATE, channels: mix.channels.map((c) => c.slice(0, n)) };
      for (const [mtStr, stems] of Object.entries(STEMS_BY_MODEL_TYPE)) {
        const mt = Number(mtStr);
        if (!engine.supports(mt)) continue;
        const otherComparable = stems.every((st) => st === 'other' || st in refsRaw);
        const evalStems = stems.filter((st) => st in refsRaw && (st !== 'other' || otherComparable));
        if (!evalStems.length) continue;
        const sink = collectingSink();
        const run = await engine.separate(sourceOf(mixN), mt, ctx(), sink);
        const est = sink.result();
        const refs = evalStems.map((st) => flat(refsRaw[st]!, n));
        const e = evalStems.map((st) => flat(est[st]!, n));
        const sdr = museval4Sdr(refs, e, RATE);
        evalStems.forEach((st, j) => rows.push(`| ${tr.name} | ${mt} | ${st} | ${run.engine} | ${sdr[j]!.toFixed(2)} | ${siSdr(refs[j]!, e[j]!).toFixed(2)} |`));
        console.error(`neural quality: ${tr.name} model ${mt} done`);
      }
    }
  } finally {
    await engine.dispose();
  }
  return rows;
}

function sourceOf(audio: AudioData): AudioSource {
  const total = audio.channels[0]!.length;
  return {
    sampleRate: audio.sampleRate, channelCount: audio.channels.length, totalFrames: total,
    async *blocks() {
      for (let a = 0; a < total; a += RATE * 10) yield { sampleRate: audio.sampleRate, channels: audio.channels.map((c) => c.subarray(a, Math.min(total, a + RATE * 10))) };
    },
  };
}

/** Child-process run: a corpus mixture looped to `seconds` through a streaming source, output discarded. */
async function speedChild(modelType: number, seconds: number, engineName = 'builtin'): Promise<void> {
  const tools = resolveMediaTools({ preferSystem: true });
  const loop = await decodeAudio(`${CORPUS}/midi_rendered_fluidr3/openmsx_tttheme2/mixture.flac`, { ffmpeg: tools.ffmpeg, sampleRate: RATE, channels: 2 });
  const loopLen = loop.channels[0]!.length;
  const total = Math.round(seconds * RATE);
  const block = RATE * 10;
  const source: AudioSource = {
    sampleRate: RATE, channelCount: 2, totalFrames: total,
    async *blocks() {
      // Fresh 10 s blocks copied from the loop: never more than one block of input exists at a time.
      for (let a = 0; a < total; a += block) {
        const len = Math.min(block, total - a);
        const chans = loop.channels.map((c) => {
          const o = new Float32Array(len);
          for (let i = 0; i < len; i++) o[i] = c[(a + i) % loopLen]!;
          return o;
        });
        yield { sampleRate: RATE, channels: chans };
      }
    },
  };
  let frames = 0;
  const t0 = performance.now();
  const engine = engineName === 'neural' ? new NeuralSeparationEngine({ modelsDir: MODELS_DIR, catalog: CATALOG }) : new BuiltinSeparationEngine();
  await engine.separate(source, modelType, ctx(), { write: (_s, stems) => { frames += Object.values(stems)[0]!.channels[0]!.length; } });
  const wall = (performance.now() - t0) / 1000;
  if (frames !== total) throw new Error(`wrote ${frames} of ${total} frames`);
  process.stdout.write(JSON.stringify({ wall, rtf: wall / seconds, maxRssMb: process.resourceUsage().maxRSS / 1024 }) + '\n');
}

function runChild(modelType: number, seconds: number, engine = 'builtin'): Promise<{ wall: number; rtf: number; maxRssMb: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/separation.ts', '--speed', String(modelType), String(seconds), engine], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!)) : reject(new Error(`speed child exit ${code}`))));
  });
}

/** Everything before the Cost section: the quality table and the template comparison. */
function qualityDoc(rows: string[], cmp: string[]): string[] {
  return [
    '# Stem separation: built-in DSP engine',
    '',
    `Machine: ${machine()}. Date: ${new Date().toISOString().slice(0, 10)}.`,
    'Reproduce: `node --import tsx -e "import(\'./bench/separation.ts\').then(m=>m.benchSeparation()).then(console.log)"`',
    '',
    'SDR = BSS Eval v4 as museval computes it for images: 1 s windows (hop 1 s), windows where any evaluated reference',
    'or estimate is all-zero skipped, median over windows. For images the 512-tap distortion filters only split the error into',
    'ISR/SIR/SAR; SDR is sum(s^2)/sum((s_hat - s)^2) per window, which is what is computed here (no filters needed).',
    'SI-SDR over the whole excerpt (channels concatenated, no mean removal). Baselines from the same run: the mixture as the',
    'estimate of every stem, and a fixed brick-wall band of the mixture (bass <200 Hz, vocals 200-4000 Hz, drums >4 kHz,',
    'piano 250-2000 Hz, guitar 150-5000 Hz, other >200 Hz). Stems with no reference (remainder, lead/backing vocals, strings,',
    'wind, synthesizer: the corpus has no such stems) are not scored. The MIDI songs were rendered with FluidR3; the engine\'s',
    `NMF templates here are \`${DEFAULT_TEMPLATE_SOURCE}\` (see the template comparison below: the soundfont-derived ones`,
    'are measured on FluidR3 itself, so the rendered songs flatter them).',
    '',
    '| track | model | stem | SDR builtin | SDR mixture | SDR band-split | SI-SDR builtin | SI-SDR mixture | SI-SDR band-split |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    ...templateSection(cmp),
  ];
}

/** Quality only (minutes, not the hour the cost runs take): the Cost and neural sections of the file stay. */
async function qualityOnly(): Promise<void> {
  const fft = await loadFftProvider();
  const scores: Scores = new Map();
  const rows = await quality(fft, scores);
  const cmp = await templateComparison(fft, scores);
  const path = `${root}bench/results/separation.md`;
  const old = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const at = old.indexOf('## Cost');
  // The kept rows were measured in an earlier full run: say on which machine and day, as its header said.
  const when = /^Machine: .*$/m.exec(old)?.[0];
  const kept = old.slice(Math.max(0, at));
  const cost = at < 0 ? '' : kept.includes('Kept from the last full run') ? kept : kept.replace('## Cost\n', `## Cost\n\n${when ? `Kept from the last full run (${when.replace(/\.$/, '')}).\n` : ''}`);
  await writeResult('separation', [...qualityDoc(rows, cmp), cost].join('\n'));
}

export async function benchSeparation(opts: { speedModels?: number[]; longModels?: number[] } = {}): Promise<string> {
  if (!existsSync(CORPUS)) return 'separation bench skipped: no corpus at ../shared/corpus/separation';
  const fft = await loadFftProvider();
  const scores: Scores = new Map();
  const rows = await quality(fft, scores);
  const cmp = await templateComparison(fft, scores);
  const speedModels = opts.speedModels ?? (process.env.SEP_SPEED_MODELS ?? '340,350,360,490,501,380,320').split(',').map(Number);
  const longModels = opts.longModels ?? (process.env.SEP_LONG_MODELS ?? '340').split(',').map(Number);
  const speed: string[] = [];
  for (const mt of speedModels) {
    const r = await runChild(mt, 180);
    speed.push(`| ${mt} | 3 min | ${r.wall.toFixed(1)} s | ${r.rtf.toFixed(3)} | ${r.maxRssMb.toFixed(0)} MB |`);
    console.error(`speed: ${mt} 3 min ${r.rtf.toFixed(3)}`);
  }
  for (const mt of longModels) {
    const r = await runChild(mt, 3600);
    speed.push(`| ${mt} | 60 min | ${r.wall.toFixed(1)} s | ${r.rtf.toFixed(3)} | ${r.maxRssMb.toFixed(0)} MB |`);
    console.error(`speed: ${mt} 60 min ${r.rtf.toFixed(3)}`);
  }
  const neural = installedPresets(MODELS_DIR, undefined, CATALOG);
  const neuralRows = neural.length ? await neuralQuality(fft) : [];
  const neuralSpeed: string[] = [];
  if (neural.length) {
    const probe = new NeuralSeparationEngine({ modelsDir: MODELS_DIR, catalog: CATALOG });
    for (const mt of speedModels.filter((m) => probe.supports(m))) {
      const r = await runChild(mt, 180, 'neural');
      neuralSpeed.push(`| ${mt} | ${probe.route(mt)!.label} | 3 min | ${r.wall.toFixed(1)} s | ${r.rtf.toFixed(3)} | ${r.maxRssMb.toFixed(0)} MB |`);
    }
  }
  const neuralSection = neural.length
    ? ['## Neural engines', '', `Installed in ${MODELS_DIR}: ${neural.map((p) => p.name).join(', ')}.`, '',
      '| track | model | stem | engine | SDR | SI-SDR |', '|---|---|---|---|---|---|', ...neuralRows, '',
      '| model | engine | input | wall | RTF | peak RSS |', '|---|---|---|---|---|---|', ...neuralSpeed, '']
    : ['## Neural engines', '', `Not scored: no neural separation model installed in ${MODELS_DIR} (see docs/api.md, Neural separation engines).`, ''];
  const md = [
    ...qualityDoc(rows, cmp),
    '## Cost',
    '',
    'Input: a 30 s corpus mixture (openmsx_tttheme2, 44.1 kHz stereo) looped through the streaming source in 10 s blocks,',
    'output discarded; each run in its own Node process (peak RSS = process maxRSS, includes Node + tsx, ~100 MB).',
    '',
    '| model | input | wall | RTF | peak RSS |',
    '|---|---|---|---|---|',
    ...speed,
    '',
    ...neuralSection,
  ].join('\n');
  await writeResult('separation', md);
  return md;
}

if (process.argv[2] === '--quality') {
  await qualityOnly();
}
if (process.argv[2] === '--speed') {
  await speedChild(Number(process.argv[3]), Number(process.argv[4]), process.argv[5]);
}
