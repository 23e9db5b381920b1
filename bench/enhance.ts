import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AudioData } from '../src/media/audio.js';
import { decodeAudio, encodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { StreamEncoder } from '../src/media/ffmpeg-stream.js';
import { DeclickStage } from '../src/engines/enhance/declick.js';
import { RnnoiseStage, SpectralGateStage } from '../src/engines/enhance/denoise.js';
import { DereverbStage } from '../src/engines/enhance/dereverb.js';
import { BiquadStage, CompressorStage, DeEsserStage, designAutoEq, SpectrumAnalysis } from '../src/engines/enhance/eq.js';
import { LoudnessMeter, parseEbur128Summary } from '../src/engines/enhance/loudness.js';
import { NormalizeStage } from '../src/engines/enhance/normalize.js';
import { aimedNormalize, LimiterAimPass } from '../src/engines/enhance/loudness-aim.js';
import { siSdr, stoi10k } from '../src/engines/enhance/metrics.js';
import { OnnxDenoiseStage, onnxDenoiserAvailable } from '../src/engines/enhance/onnx-denoise.js';
import { LongSilenceStage } from '../src/engines/enhance/silences.js';
import { blocksOf, processWhole, runAnalysis, runChain, type AudioStage } from '../src/engines/enhance/stage.js';
import { SileroVad, sileroModelPath, VadTracker, WebRtcVad } from '../src/engines/enhance/vad.js';
import { machine, root, writeResult } from './lib.js';
import { benchEnhanceScores, to10k } from './enhance-scores.js';
import { replaceSection } from './enhance-scores-table.js';

/**
 * Enhancement benchmark: quality (SI-SDR, STOI) per condition of the constructed pairs for every
 * denoise/dereverb engine next to the unprocessed input, loudness accuracy, silence shortening
 * accuracy, and real-time factor / peak RSS of the streaming chain on 3-minute and 3-hour inputs.
 */
const corpus = join(root, '../shared/corpus/speech/');
const pairsDir = join(corpus, 'constructed_pairs_16k/');
const modelsDir = join(root, '../shared/corpus/models');
const tools = resolveMediaTools({ preferSystem: true });

interface Pair { file: string; clean: string; snr_db?: number; rir_src?: string; noise_src?: string; speech_segments_s?: Array<[number, number, string]> }

type Maker = (rate: number, ch: number) => Promise<AudioStage>;
function engines(): Array<[string, Maker]> {
  const list: Array<[string, Maker]> = [
    ['rnnoise', (r, c) => RnnoiseStage.create(r, c)],
    ['spectral-gate', async (r, c) => new SpectralGateStage(r, c)],
    ['wpe', async (r, c) => new DereverbStage(r, c, { lateT60: 0 })],
    ['wpe+late', async (r, c) => new DereverbStage(r, c, { lateT60: 0.5 })],
  ];
  for (const kind of ['dtln', 'gtcrn'] as const) {
    if (onnxDenoiserAvailable(modelsDir, kind)) list.push([kind, (r, c) => OnnxDenoiseStage.create(r, c, { modelsDir, kind })]);
  }
  if (onnxDenoiserAvailable(modelsDir, 'gtcrn')) {
    list.push(['gtcrn→wpe', async (r, c) => chainStage([await OnnxDenoiseStage.create(r, c, { modelsDir, kind: 'gtcrn' }), new DereverbStage(r, c, { lateT60: 0 })])]);
  }
  return list;
}

/** Several stages as one (for chained engines in the quality table). */
function chainStage(stages: AudioStage[]): AudioStage {
  return {
    name: stages.map((s) => s.name).join('+'),
    async push(b) { let cur: AudioData | null = b; for (const s of stages) { if (!cur) break; cur = await s.push(cur); } return cur; },
    async flush() {
      const parts: AudioData[] = [];
      for (let i = 0; i < stages.length; i++) {
        let cur = await stages[i]!.flush();
        for (let k = i + 1; k < stages.length && cur; k++) cur = await stages[k]!.push(cur);
        if (cur) parts.push(cur);
      }
      if (!parts.length) return null;
      const n = parts.reduce((a, p) => a + p.channels[0]!.length, 0);
      const out = new Float32Array(n);
      let o = 0;
      for (const p of parts) { out.set(p.channels[0]!, o); o += p.channels[0]!.length; }
      return { sampleRate: parts[0]!.sampleRate, channels: [out] };
    },
  };
}

function condition(p: Pair): string | null {
  if (p.file.startsWith('noisy/')) return `noisy ${p.snr_db} dB`;
  if (p.file.startsWith('reverb/')) return p.noise_src ? `reverberant+noisy ${p.snr_db} dB` : 'reverberant';
  return null;
}

// The references are aligned within a sample (reverb pairs: to the direct path): take the better of lags 0/1.
const sdr = (y: Float32Array, r: Float32Array) => Math.max(siSdr(y, r, 0), siSdr(y, r, 1));

async function qualitySection(pairs: Pair[]): Promise<string> {
  const rows = new Map<string, Map<string, { sdr: number[]; stoi: number[]; rtf: number[] }>>();
  const add = (cond: string, eng: string, s: number, st: number, rtf: number) => {
    const m = rows.get(cond) ?? new Map();
    rows.set(cond, m);
    const e = m.get(eng) ?? { sdr: [], stoi: [], rtf: [] };
    m.set(eng, e);
    e.sdr.push(s); e.stoi.push(st); e.rtf.push(rtf);
  };
  const engs = engines();
  for (const p of pairs) {
    const cond = condition(p);
    if (!cond) continue;
    const x = (await decodeAudio(pairsDir + p.file, { ffmpeg: tools.ffmpeg })).channels[0]!;
    const ref = (await decodeAudio(pairsDir + p.clean, { ffmpeg: tools.ffmpeg })).channels[0]!;
    const ref10 = await to10k(ref);
    add(cond, 'unprocessed', sdr(x, ref), stoi10k(ref10, await to10k(x)), 0);
    for (const [name, make] of engs) {
      const stage = await make(16000, 1);
      const t0 = performance.now();
      const y = (await processWhole([stage], { sampleRate: 16000, channels: [x] }, 16000)).channels[0]!;
      const rtf = (performance.now() - t0) / 1000 / (x.length / 16000);
      add(cond, name, sdr(y, ref), stoi10k(ref10, await to10k(y)), rtf);
    }
  }
  const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
  let md = '## Quality per condition (constructed_pairs_16k, 16 kHz mono)\n\nSI-SDR in dB (improvement over unprocessed in parentheses), STOI 0..1, RTF = processing time / duration (first call includes model load). Mean over the files of each condition.\n\n';
  md += '| condition | files | engine | SI-SDR dB | ΔSI-SDR | STOI | ΔSTOI | RTF |\n|---|---|---|---|---|---|---|---|\n';
  for (const [cond, m] of [...rows].sort()) {
    const base = m.get('unprocessed')!;
    for (const [eng, v] of m) {
      md += `| ${cond} | ${v.sdr.length} | ${eng} | ${mean(v.sdr).toFixed(2)} | ${eng === 'unprocessed' ? '' : (mean(v.sdr) - mean(base.sdr)).toFixed(2)} | ${mean(v.stoi).toFixed(3)} | ${eng === 'unprocessed' ? '' : (mean(v.stoi) - mean(base.stoi)).toFixed(3)} | ${eng === 'unprocessed' ? '' : mean(v.rtf).toFixed(3)} |\n`;
    }
  }
  return md;
}

function ffmpegLoudness(path: string): { integratedLufs: number; truePeakDbtp: number | null } {
  const r = spawnSync(tools.ffmpeg, ['-nostdin', '-hide_banner', '-nostats', '-i', path, '-filter_complex', 'ebur128=peak=true', '-f', 'null', '-'], { encoding: 'utf8' });
  return parseEbur128Summary(r.stderr);
}

async function loudnessSection(): Promise<string> {
  const files = ['clean/cmu_arctic_a0010.wav', 'clean/librispeech_5703-47212-0000.ogg', 'conversational/pyannote_sample_telephone.wav', 'conversational/pyannote_ami_dev00.wav', 'constructed_pairs_16k/noisy/libri3436__bike_snr00.wav', 'constructed_pairs_16k/reverb/arctic_aew_a0001__sbrir3_rev.wav', 'noisy_no_reference/speechbrain_single-mic_example2.flac'].filter((f) => existsSync(corpus + f));
  const dir = mkdtempSync(join(tmpdir(), 'bench-loud-'));
  let md = '## Loudness (BS.1770-4) and normalize to -16 LUFS / -1 dBTP\n\n| file | ours LUFS | ffmpeg LUFS | diff LU | after normalize (ffmpeg) LUFS | error LU | true peak after (ffmpeg) dBTP | limiter |\n|---|---|---|---|---|---|---|---|\n';
  try {
    for (const f of files) {
      const a = await decodeAudio(corpus + f, { ffmpeg: tools.ffmpeg });
      const m = new LoudnessMeter(a.sampleRate, a.channels.length);
      for await (const b of blocksOf(a, 16384)) m.push(b);
      const r = m.result();
      const src = join(dir, 'src.flac');
      await encodeAudio(a, src, { ffmpeg: tools.ffmpeg, format: 'flac' });
      const ref = ffmpegLoudness(src);
      // As production (enhance-task.ts): when the limiter engages, one pass tries several compensations.
      const opts = { targetLufs: -16, ceilingDbtp: -1 };
      const stage = new NormalizeStage(r, a.sampleRate, a.channels.length, opts);
      let aim = null;
      if (stage.limiting) {
        const pass = new LimiterAimPass(r, a.sampleRate, a.channels.length, opts);
        for await (const b of blocksOf(a, 16384)) pass.push(b);
        aim = pass.result();
      }
      const out = await processWhole([aimedNormalize(r, aim, a.sampleRate, a.channels.length, opts)], a, 16384);
      const dst = join(dir, 'out.flac');
      await encodeAudio(out, dst, { ffmpeg: tools.ffmpeg, format: 'flac' });
      const after = ffmpegLoudness(dst);
      md += `| ${f} | ${r.integratedLufs.toFixed(2)} | ${ref.integratedLufs.toFixed(2)} | ${(r.integratedLufs - ref.integratedLufs).toFixed(2)} | ${after.integratedLufs.toFixed(2)} | ${(after.integratedLufs + 16).toFixed(2)} | ${after.truePeakDbtp?.toFixed(2)} | ${aim ? `yes, +${aim.compensationDb.toFixed(2)} dB` : 'no'} |\n`;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return md + '\nWhen the limiter engages it removes peak energy that counted in the measurement; one extra pass runs the limited normalize at compensations of 0-9 dB side by side and interpolates the one that lands on -16 LUFS (loudness-aim.ts; the limiter column gives the compensation). Gains are capped at 45 dB (30 dB before, which left the -52.8 LUFS reverberant file 6.9 LU short).\n';
}

/** Only the long_silences table: `node --import tsx -e "import('./bench/enhance.ts').then(m=>m.benchEnhanceSilences()).then(console.log)"`. */
export async function benchEnhanceSilences(): Promise<string> {
  return silenceSection(JSON.parse(readFileSync(`${pairsDir}pairs.json`, 'utf8')) as Pair[]);
}

/** Only the loudness table: `node --import tsx -e "import('./bench/enhance.ts').then(m=>m.benchEnhanceLoudness()).then(console.log)"`. */
export function benchEnhanceLoudness(): Promise<string> {
  return loudnessSection();
}

async function silenceSection(pairs: Pair[]): Promise<string> {
  let md = '## long_silences (pauses > 1.0 s shortened to 0.6 s)\n\nThe long-silence files join four utterances with 3, 6 and 10 s gaps: at least (3-0.6)+(6-0.6)+(10-0.6) = 17.2 s should go (more where the utterances carry their own leading/trailing silence). "speech energy lost" is the clean reference energy inside the removed ranges.\n\n| file | VAD | pauses shortened | removed s | kept per gap s | speech energy lost | RTF |\n|---|---|---|---|---|---|---|\n';
  const silero = sileroModelPath(modelsDir);
  for (const p of pairs.filter((q) => q.speech_segments_s)) {
    const a = await decodeAudio(pairsDir + p.file, { ffmpeg: tools.ffmpeg });
    const clean = (await decodeAudio(pairsDir + p.clean, { ffmpeg: tools.ffmpeg })).channels[0]!;
    const vads: Array<[string, () => Promise<WebRtcVad | SileroVad>, boolean?]> = [
      ['webrtc mode 2', () => WebRtcVad.create(2)], ['webrtc mode 3', () => WebRtcVad.create(3)],
      // What production runs without Silero: WebRTC on an RNNoise-cleaned copy (chain.ts).
      ['webrtc mode 2 on input AND on rnnoise-cleaned copy (built-in default)', () => WebRtcVad.create(2), true],
    ];
    if (silero) vads.push(['silero', () => SileroVad.create(silero)]);
    for (const [vname, mk, cleaned] of vads) {
      const st = new LongSilenceStage(await VadTracker.create(await mk(), 16000, cleaned ? { stage: await RnnoiseStage.create(16000, 1), vad: await WebRtcVad.create(2) } : null), 16000, 1);
      const t0 = performance.now();
      await processWhole([st], a, 16000);
      const rtf = (performance.now() - t0) / 1000 / (clean.length / 16000);
      let total = 0, lost = 0;
      for (const v of clean) total += v * v;
      for (const [s, e] of st.cuts) for (let i = Math.round(s * 16000); i < Math.round(e * 16000); i++) lost += clean[i]! ** 2;
      const segs = p.speech_segments_s!;
      const kept = segs.slice(1).map((seg, i) => {
        const g0 = segs[i]![1], g1 = seg[0];
        return (g1 - g0 - st.cuts.reduce((acc, [s, e]) => acc + Math.max(0, Math.min(e, g1) - Math.max(s, g0)), 0)).toFixed(2);
      });
      md += `| ${p.file.split('/').pop()} | ${vname} | ${st.shortened} | ${st.removedSeconds.toFixed(2)} | ${kept.join(' / ')} | ${((lost / total) * 100).toFixed(3)} % | ${rtf.toFixed(3)} |\n`;
    }
  }
  return md;
}

/** Child-process entry: streams `seconds` of looped corpus speech through a chain; prints RTF and peak RSS. */
export async function streamingRun(chain: string, seconds: number): Promise<void> {
  const rate = 16000;
  const pool: Float32Array[] = [];
  for (const f of ['clean/librispeech_5703-47212-0000.ogg', 'constructed_pairs_16k/noisy/libri3436__bike_snr00.wav', 'constructed_pairs_16k/reverb/libri5703__sbrir3_rev.wav', 'conversational/pyannote_sample_telephone.wav']) {
    if (existsSync(corpus + f)) pool.push((await decodeAudio(corpus + f, { ffmpeg: tools.ffmpeg, sampleRate: rate, channels: 1 })).channels[0]!);
  }
  const total = Math.round(seconds * rate);
  async function* looped(): AsyncGenerator<AudioData> {
    let made = 0, k = 0, off = 0;
    while (made < total) {
      const src = pool[k % pool.length]!;
      const n = Math.min(rate, src.length - off, total - made);
      yield { sampleRate: rate, channels: [src.slice(off, off + n)] };
      made += n; off += n;
      if (off >= src.length) { off = 0; k++; }
    }
  }
  const ctl = new AbortController();
  const ctx = { signal: ctl.signal, onProgress: () => undefined };
  const t0 = performance.now();
  // Pass 1: loudness and long-term spectrum (normalize and autoeq need the whole file).
  const meter = new LoudnessMeter(rate, 1);
  const ltas = new SpectrumAnalysis(rate);
  await runAnalysis([meter, ltas], looped(), ctx);
  const stages: AudioStage[] = [];
  if (chain === 'heavy') stages.push(await OnnxDenoiseStage.create(rate, 1, { modelsDir, kind: 'gtcrn' }), new DereverbStage(rate, 1));
  else stages.push(new SpectralGateStage(rate, 1));
  stages.push(new DeclickStage(rate, 1), new LongSilenceStage(await VadTracker.create(await WebRtcVad.create(2), rate), rate, 1));
  stages.push(new BiquadStage('autoeq', designAutoEq(ltas.result(), rate), 1), new CompressorStage(rate), new DeEsserStage(rate, 1));
  stages.push(new NormalizeStage(meter.result(), rate, 1));
  const dir = mkdtempSync(join(tmpdir(), 'bench-stream-'));
  const enc = new StreamEncoder(join(dir, 'out.flac'), { ffmpeg: tools.ffmpeg, format: 'flac', sampleRate: rate, channels: 1 });
  const r = await runChain(stages, looped(), (b) => enc.write(b), ctx, { totalFrames: total });
  await enc.end();
  rmSync(dir, { recursive: true, force: true });
  const wall = (performance.now() - t0) / 1000;
  process.stdout.write(JSON.stringify({ chain, seconds, wall, rtf: wall / seconds, maxRssMb: process.resourceUsage().maxRSS / 1024, outSeconds: r.outputFrames / rate }) + '\n');
}

function child(chain: string, seconds: number): Promise<{ wall: number; rtf: number; maxRssMb: number; outSeconds: number }> {
  return new Promise((resolve, reject) => {
    const code = `import('./bench/enhance.ts').then(m=>m.streamingRun(${JSON.stringify(chain)}, ${seconds}))`;
    const p = spawn(process.execPath, ['--import', 'tsx', '-e', code], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('close', (c) => (c === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!)) : reject(new Error(`streaming child exited ${c}`))));
  });
}

async function throughputSection(): Promise<string> {
  const hours = Number(process.env.ENHANCE_BENCH_HOURS ?? 3);
  let md = `## Streaming chain: real-time factor and peak RSS (separate process each)\n\nInput: corpus speech looped to the length (16 kHz mono), never held whole. Two passes as in production: analysis (loudness + long-term spectrum), then the chain into a streaming FLAC encoder.\n- light: spectral-gate → declick → long_silences (WebRTC) → autoeq → compressor → de-esser → normalize\n- heavy: GTCRN → WPE dereverb (+late suppression) → declick → long_silences → autoeq → compressor → de-esser → normalize\n\n| chain | input | wall s | RTF | peak RSS MB | output s |\n|---|---|---|---|---|---|\n`;
  const runs: Array<[string, number]> = [['light', 180], ['heavy', 180], ['light', hours * 3600]];
  for (const [chain, secs] of runs) {
    if (chain === 'heavy' && !onnxDenoiserAvailable(modelsDir, 'gtcrn')) continue;
    const r = await child(chain, secs);
    md += `| ${chain} | ${secs >= 3600 ? `${secs / 3600} h` : `${secs / 60} min`} | ${r.wall.toFixed(1)} | ${r.rtf.toFixed(4)} | ${r.maxRssMb.toFixed(0)} | ${r.outSeconds.toFixed(0)} |\n`;
  }
  return md;
}

/**
 * `npm run bench -- enhance`: every section below (the 3-hour streaming run included). `npm run bench -- enhance
 * --scores [...]`: only the standard scores (PESQ, STOI, DNSMOS, SI-SDR; bench/enhance-scores.ts), which replace
 * their own section of the results and leave the others as they are.
 */
export async function benchEnhance(): Promise<string> {
  const argv = process.argv.slice(2);
  if (argv.includes('--scores')) return benchEnhanceScores(argv);
  const pairs = JSON.parse(readFileSync(pairsDir + 'pairs.json', 'utf8')) as Pair[];
  const started = new Date().toISOString();
  const parts = [
    (await qualitySection(pairs)).replace('\n\n', `\n\n${machine()}; started ${started}.\n\n`),
    await loudnessSection(),
    await silenceSection(pairs),
    await throughputSection(),
  ];
  // Each section replaces its own and leaves the others (the standard scores, fillers, production path, music
  // presence are written by their own benches); this once rewrote the whole file, dropping theirs.
  const file = join(root, 'bench/results/enhance.md');
  let doc = existsSync(file) ? readFileSync(file, 'utf8') : '# Enhancement DSP benchmark\n';
  for (const part of parts) doc = replaceSection(doc, part.slice(0, part.indexOf('\n')), part);
  return writeResult('enhance', doc);
}
