/**
 * Smart enhancement (`autoid`, what `{}` asks for) measured through the production path (runEnhance, as the engine
 * thread runs it) on the corpus: per file the stages autoid picks and why, the noise floor before and after (detect.ts,
 * A-weighted, and its distance under the speech), SI-SDR where a reference exists; the denoise-only plans beside it
 * on the noisy pairs (does autoeq/normalize cost SI-SDR?); long_silences under noise at 0, 5 and 10 dB SNR with the
 * built-in VAD and with Silero.
 *   node --import tsx bench/enhance-autoid.ts [--only autoid|eq|silences] [--label before]   (writes bench/results/enhance-autoid.md)
 * No models are installed for the autoid runs (MODELS_DIR empty): what a user gets out of the box without downloads.
 */
import { execSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AudioData } from '../src/media/audio.js';
import { decodeAudio, encodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { runEnhance } from '../src/kinds/enhance/thread.js';
import { buildStages, planEnhancement, type EnhanceFlag } from '../src/engines/enhance/chain.js';
import { NoiseFloorAnalysis, type NoiseProfile } from '../src/engines/enhance/detect.js';
import { LoudnessMeter } from '../src/engines/enhance/loudness.js';
import { siSdr } from '../src/engines/enhance/metrics.js';
import { LongSilenceStage } from '../src/engines/enhance/silences.js';
import { blocksOf, processWhole } from '../src/engines/enhance/stage.js';
import { machine, root } from './lib.js';

const corpus = join(root, '../shared/corpus/speech/');
const pairsDir = join(corpus, 'constructed_pairs_16k/');
const corpusModels = join(root, '../shared/corpus/models');
const tools = resolveMediaTools({ preferSystem: true });
const RESULT = join(root, 'bench/results/enhance-autoid.md');

interface Pair { file: string; clean: string; snr_db?: number; noise_src?: string; rir_src?: string; speech_segments_s?: Array<[number, number, string]> }
interface Case { name: string; path: string; ref?: string; condition: string }

const mono = (a: AudioData): Float32Array => {
  if (a.channels.length === 1) return a.channels[0]!;
  const n = a.channels[0]!.length, out = new Float32Array(n);
  for (const ch of a.channels) for (let i = 0; i < n; i++) out[i] = out[i]! + ch[i]! / a.channels.length;
  return out;
};

async function profile(a: AudioData): Promise<NoiseProfile & { lufs: number }> {
  const p = new NoiseFloorAnalysis(a.sampleRate), m = new LoudnessMeter(a.sampleRate, a.channels.length);
  for await (const b of blocksOf(a, a.sampleRate)) { p.push(b); m.push(b); }
  return { ...p.result(), lufs: m.result().integratedLufs };
}

// References are aligned within a sample or two (reverb pairs: to the direct path): the best of small lags.
const sdr = (y: Float32Array, r: Float32Array) => Math.max(...[-2, -1, 0, 1, 2].map((l) => siSdr(y, r, l)));

async function enhance(input: string, flags: EnhanceFlag[], dir: string, modelsDir: string): Promise<{ out: AudioData; stages: string[]; engines: string[]; reasons: Record<string, string> }> {
  const a = await decodeAudio(input, { ffmpeg: tools.ffmpeg });
  const outPath = join(dir, `out-${Math.random().toString(36).slice(2)}.wav`);
  const r = await runEnhance(
    { inputPath: input, outPath, format: 'wav', pcm: 'f32', sampleRate: a.sampleRate, channels: a.channels.length, totalFrames: a.channels[0]!.length, flags, modelsDir, ffmpeg: tools.ffmpeg, targetLufs: -16 },
    { tmpDir: dir, signal: new AbortController().signal, onProgress: () => undefined },
  );
  const out = await decodeAudio(outPath, { ffmpeg: tools.ffmpeg });
  rmSync(outPath, { force: true });
  return { out, stages: r.stages, engines: r.engines, reasons: r.reasons };
}

/** Inputs the corpus lacks, made from its clean speech and noise: hiss 30 dB under clean speech, clipped speech. */
async function constructed(dir: string): Promise<Case[]> {
  const cases: Case[] = [];
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  for (const f of ['clean/cmu_arctic_a0010.wav', 'clean/librispeech_3436-172162-0000.ogg']) {
    const a = await decodeAudio(corpus + f, { ffmpeg: tools.ffmpeg, sampleRate: 16000, channels: 1 });
    const x = a.channels[0]!;
    const ps = x.reduce((s, v) => s + v * v, 0) / x.length;
    const g = Math.sqrt(ps / 10 ** (30 / 10) / (1 / 3)); // uniform noise in [-1,1) has power 1/3
    const y = x.map((v) => v + g * rand());
    const base = f.split('/').pop()!.replace(/\.\w+$/, '');
    const ref = join(dir, `${base}.ref.wav`), hiss = join(dir, `${base}__white_hiss_snr30.wav`);
    await encodeAudio({ sampleRate: 16000, channels: [x] }, ref, { ffmpeg: tools.ffmpeg, format: 'wav' });
    await encodeAudio({ sampleRate: 16000, channels: [y] }, hiss, { ffmpeg: tools.ffmpeg, format: 'wav' });
    cases.push({ name: `${base} + white hiss 30 dB under (made here)`, path: hiss, ref, condition: 'clean + hiss 30 dB' });
    if (f.includes('arctic')) {
      // 12 dB of gain into a hard clip at full scale (16-bit PCM keeps the flat tops).
      let peak = 0;
      for (const v of x) peak = Math.max(peak, Math.abs(v));
      const c = x.map((v) => Math.max(-1, Math.min(32767 / 32768, (v / peak) * 10 ** (12 / 20))));
      const clip = join(dir, `${base}__clipped12dB.wav`);
      await encodeAudio({ sampleRate: 16000, channels: [c] }, clip, { ffmpeg: tools.ffmpeg, format: 'wav' });
      cases.push({ name: `${base} clipped (+12 dB into full scale, made here)`, path: clip, ref, condition: 'clipped' });
    }
  }
  return cases;
}

function corpusCases(pairs: Pair[]): Case[] {
  const cases: Case[] = [];
  for (const p of pairs) {
    if (p.speech_segments_s) continue;
    const cond = p.file.startsWith('noisy/') ? `noisy ${p.snr_db} dB` : p.noise_src ? `reverberant+noisy ${p.snr_db} dB` : 'reverberant';
    cases.push({ name: p.file, path: pairsDir + p.file, ref: pairsDir + p.clean, condition: cond });
  }
  for (const f of ['clean/cmu_arctic_a0010.wav', 'clean/cmu_arctic_us_axb_a0004.wav', 'clean/librispeech_3436-172162-0000.ogg', 'conversational/pyannote_sample_telephone.wav']) {
    cases.push({ name: f, path: corpus + f, condition: 'clean (no reference)' });
  }
  for (const f of ['noisy_no_reference/whisper_jfk.flac', 'noisy_no_reference/speechbrain_single-mic_example2.flac', 'noisy_no_reference/speechbrain_single-mic_example5.wav', 'noisy_no_reference/gtcrn_test_mix.wav', 'reverberant_real/nara_wpe_AMI_WSJ20-Array1-1_T10c0201.wav']) {
    cases.push({ name: f, path: corpus + f, condition: f.startsWith('reverberant') ? 'real reverberant, no reference' : 'real noisy, no reference' });
  }
  return cases.filter((c) => existsSync(c.path));
}

const fmt = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : String(v));

async function autoidSection(cases: Case[], dir: string, label: string): Promise<string> {
  const empty = join(dir, 'no-models');
  let md = `## autoid per file (${label})\n\nflags \`autoid\` only, no models installed (built-in engines). Floor: detect.ts noise floor, A-weighted, dBFS; "gap": speech level (90th percentile of 32 ms frames) minus the unweighted floor, dB: how far the noise sits under the voice. SI-SDR against the clean reference where there is one (best of lags -2..2).\n\n| file | condition | stages | floor dB(A) in → out | gap dB in → out | SI-SDR in → out dB |\n|---|---|---|---|---|---|\n`;
  const why: string[] = [];
  for (const c of cases) {
    const a = await decodeAudio(c.path, { ffmpeg: tools.ffmpeg });
    const pin = await profile(a);
    const r = await enhance(c.path, ['autoid'], dir, empty);
    const pout = await profile(r.out);
    let sd = '';
    if (c.ref) {
      const ref = mono(await decodeAudio(c.ref, { ffmpeg: tools.ffmpeg, sampleRate: a.sampleRate, channels: 1 }));
      const y = mono(r.out);
      sd = y.length === ref.length || Math.abs(y.length - ref.length) < 10 ? `${fmt(sdr(mono(a), ref), 2)} → ${fmt(sdr(y, ref), 2)}` : `length changed (${(y.length / a.sampleRate).toFixed(1)} s)`;
    }
    md += `| ${c.name} | ${c.condition} | ${r.stages.join(', ')} | ${fmt(pin.floorDbA)} → ${fmt(pout.floorDbA)} | ${fmt(pin.snrDb)} → ${fmt(pout.snrDb)} | ${sd} |\n`;
    why.push(`- ${c.name}: ${Object.entries(r.reasons).map(([k, v]) => `**${k}**: ${v}`).join('; ')}`);
    console.error(md.trim().split('\n').pop());
  }
  return `${md}\nReasons (as returned to the user):\n\n${why.join('\n')}\n`;
}

const PY = join(root, 'harness/.venv/bin/python');

/**
 * PESQ (wideband, ITU-T P.862.2 via the pesq package) against the reference where there is one, and DNSMOS P.835
 * (speechmos) without one: the harness's standard implementations, in one Python process per batch.
 */
function pyScores(items: Array<{ deg: string; ref?: string }>): Array<{ pesq: number | null; ovrl: number; sig: number; bak: number }> {
  const code = [
    'import json,sys,numpy as np,soundfile as sf',
    'from scipy.signal import resample_poly',
    'from pesq import pesq',
    'from speechmos import dnsmos',
    'def rd(p):',
    '  x,sr=sf.read(p,dtype="float32")',
    '  x=x.mean(axis=1) if x.ndim>1 else x',
    '  return (resample_poly(x,16000,sr).astype(np.float32) if sr!=16000 else x)',
    'out=[]',
    'for it in json.load(sys.stdin):',
    '  d=rd(it["deg"]); r=None',
    '  if it.get("ref"):',
    '    ref=rd(it["ref"]); n=min(len(ref),len(d)); r=float(pesq(16000,ref[:n],d[:n],"wb"))',
    '  m=dnsmos.run(np.clip(d,-1,1),16000)',
    '  out.append({"pesq":r,"ovrl":float(m["ovrl_mos"]),"sig":float(m["sig_mos"]),"bak":float(m["bak_mos"])})',
    'print(json.dumps(out))',
  ].join('\n');
  const r = execSync(`${PY} -c '${code}'`, { input: JSON.stringify(items), maxBuffer: 1 << 24, cwd: root }).toString();
  return JSON.parse(r.trim().split('\n').pop()!) as Array<{ pesq: number | null; ovrl: number; sig: number; bak: number }>;
}

/**
 * Does autoeq (or normalize) cost what a listener hears on noisy input? Every plan on the noisy pairs and the
 * constructed hiss cases, and normalize with and without autoeq on clean speech: SI-SDR, PESQ-WB, DNSMOS OVRL.
 */
async function eqSection(pairs: Pair[], extra: Case[], dir: string): Promise<string> {
  const empty = join(dir, 'no-models');
  const noisyPlans: EnhanceFlag[][] = [['remove_noise'], ['remove_noise', 'normalize'], ['remove_noise', 'autoeq'], ['remove_noise', 'autoeq', 'normalize'], ['autoid']];
  const cleanPlans: EnhanceFlag[][] = [['normalize'], ['autoeq', 'normalize'], ['autoid']];
  const groups: Array<{ title: string; plans: EnhanceFlag[][]; cases: Case[] }> = [
    { title: 'noisy pairs and constructed hiss', plans: noisyPlans, cases: [...pairs.filter((q) => q.file.startsWith('noisy/')).map((q) => ({ name: q.file, path: pairsDir + q.file, ref: pairsDir + q.clean, condition: `noisy ${q.snr_db} dB` })), ...extra.filter((c) => c.condition.includes('hiss'))] },
    { title: 'clean speech (reference = the input itself)', plans: cleanPlans, cases: ['clean/cmu_arctic_a0010.wav', 'clean/cmu_arctic_us_axb_a0004.wav', 'clean/librispeech_3436-172162-0000.ogg', 'conversational/pyannote_sample_telephone.wav'].map((f) => ({ name: f, path: corpus + f, ref: corpus + f, condition: 'clean' })) },
  ];
  let md = '## Does autoeq / normalize cost quality? (no models: RNNoise)\n\nEach cell: SI-SDR dB / PESQ-WB / DNSMOS OVRL (P.835; SIG, BAK in the means). PESQ and DNSMOS from the harness venv (pesq 0.0.4, speechmos 0.0.1.1), on 16 kHz mono.\n';
  for (const g of groups) {
    md += `\n### ${g.title}\n\n| file | input | ${g.plans.map((p) => p.join('+')).join(' | ')} |\n|---|---|${g.plans.map(() => '---|').join('')}\n`;
    const acc = [null, ...g.plans].map(() => ({ sdr: 0, pesq: 0, ovrl: 0, sig: 0, bak: 0 }));
    for (const c of g.cases) {
      const a = await decodeAudio(c.path, { ffmpeg: tools.ffmpeg });
      const refA = await decodeAudio(c.ref!, { ffmpeg: tools.ffmpeg, sampleRate: a.sampleRate, channels: 1 });
      const ref = mono(refA);
      const refPath = join(dir, 'ref.wav');
      await encodeAudio({ sampleRate: a.sampleRate, channels: [ref] }, refPath, { ffmpeg: tools.ffmpeg, format: 'wav' });
      const outs: AudioData[] = [a];
      for (const flags of g.plans) outs.push((await enhance(c.path, flags, dir, empty)).out);
      const paths = await Promise.all(outs.map(async (o, i) => {
        const pth = join(dir, `plan${i}.wav`);
        await encodeAudio({ sampleRate: o.sampleRate, channels: [mono(o)] }, pth, { ffmpeg: tools.ffmpeg, format: 'wav' });
        return pth;
      }));
      const sc = existsSync(PY) ? pyScores(paths.map((deg) => ({ deg, ref: refPath }))) : paths.map(() => ({ pesq: NaN, ovrl: NaN, sig: NaN, bak: NaN }));
      const cells = outs.map((o, i) => {
        const v = sdr(mono(o), ref);
        const s = sc[i]!;
        Object.assign(acc[i]!, { sdr: acc[i]!.sdr + v, pesq: acc[i]!.pesq + (s.pesq ?? NaN), ovrl: acc[i]!.ovrl + s.ovrl, sig: acc[i]!.sig + s.sig, bak: acc[i]!.bak + s.bak });
        return `${fmt(v, 2)} / ${fmt(s.pesq ?? NaN, 2)} / ${fmt(s.ovrl, 2)}`;
      });
      md += `| ${c.name} | ${cells.join(' | ')} |\n`;
      console.error(md.trim().split('\n').pop());
    }
    const n = g.cases.length;
    md += `| **mean** (SI-SDR / PESQ / OVRL; SIG, BAK) | ${acc.map((x) => `${fmt(x.sdr / n, 2)} / ${fmt(x.pesq / n, 2)} / ${fmt(x.ovrl / n, 2)}; ${fmt(x.sig / n, 2)}, ${fmt(x.bak / n, 2)}`).join(' | ')} |\n`;
  }
  return md;
}

/** The long-silence pair at another SNR: the corpus bike noise looped under the clean file (power over the whole file). */
function mixAt(clean: Float32Array, noise: Float32Array, snrDb: number): Float32Array {
  const pc = clean.reduce((s, v) => s + v * v, 0) / clean.length;
  const nz = Float32Array.from({ length: clean.length }, (_, i) => noise[i % noise.length]!);
  const pn = nz.reduce((s, v) => s + v * v, 0) / nz.length;
  const g = Math.sqrt(pc / pn / 10 ** (snrDb / 10));
  return clean.map((v, i) => v + g * nz[i]!);
}

async function silencesSection(pairs: Pair[], dir: string): Promise<string> {
  const p = pairs.find((q) => q.file.endsWith('four_utterances_3-6-10s_gaps__bike_snr10.wav'));
  if (!p?.speech_segments_s) return '## long_silences\n\nskipped: no long-silence pair in the corpus\n';
  const clean = (await decodeAudio(pairsDir + p.clean, { ffmpeg: tools.ffmpeg, sampleRate: 16000, channels: 1 })).channels[0]!;
  const noise = (await decodeAudio(corpus + p.noise_src!, { ffmpeg: tools.ffmpeg, sampleRate: 16000, channels: 1 })).channels[0]!;
  const corpus10 = (await decodeAudio(pairsDir + p.file, { ffmpeg: tools.ffmpeg, sampleRate: 16000, channels: 1 })).channels[0]!;
  const segs = p.speech_segments_s;
  const inputs: Array<[string, Float32Array]> = [['clean', clean], ['bike 0 dB (made here)', mixAt(clean, noise, 0)], ['bike 5 dB (made here)', mixAt(clean, noise, 5)], ['bike 10 dB (corpus file)', corpus10]];
  let md = `## long_silences under noise (pauses > 1.0 s shortened to 0.6 s)\n\nfour_utterances_3-6-10s_gaps (68.4 s; gaps 3, 6, 10 s): the ideal removes (3-0.6)+(6-0.6)+(10-0.6) = 17.2 s, leaving 51.2 s. The 0 and 5 dB inputs mix the corpus bike noise (looped) under the clean file, SNR over the whole file. Through the chain's own stage (buildStages of the long_silences plan): built-in = no models installed; silero = corpus models.\n\n| input | VAD | output s | removed s | kept per gap s (3 / 6 / 10 s gaps) | speech energy lost |\n|---|---|---|---|---|---|\n`;
  for (const [name, x] of inputs) {
    for (const [vname, modelsDir] of [['built-in', join(dir, 'no-models')], ['silero', corpusModels]] as const) {
      const built = await buildStages(planEnhancement(new Set(['long_silences']), null), { sampleRate: 16000, channels: 1, modelsDir, spectrum: null });
      const st = built.stages.find((s): s is LongSilenceStage => s instanceof LongSilenceStage);
      if (!st) throw new Error('no long_silences stage');
      const out = await processWhole(built.stages, { sampleRate: 16000, channels: [x] }, 16000);
      let total = 0, lost = 0;
      for (const v of clean) total += v * v;
      for (const [s, e] of st.cuts) for (let i = Math.round(s * 16000); i < Math.round(e * 16000); i++) lost += clean[i]! ** 2;
      const kept = segs.slice(1).map((seg, i) => {
        const g0 = segs[i]![1], g1 = seg[0];
        return (g1 - g0 - st.cuts.reduce((acc, [s, e]) => acc + Math.max(0, Math.min(e, g1) - Math.max(s, g0)), 0)).toFixed(2);
      });
      md += `| ${name} | ${vname} (${built.engines.join('+')}) | ${(out.channels[0]!.length / 16000).toFixed(1)} | ${st.removedSeconds.toFixed(2)} | ${kept.join(' / ')} | ${((lost / total) * 100).toFixed(3)} % |\n`;
      console.error(md.trim().split('\n').pop());
    }
  }
  return md;
}

export async function benchEnhanceAutoid(): Promise<string> {
  const argv = process.argv;
  const opt = (k: string) => { const i = argv.indexOf(k); return i >= 0 ? argv[i + 1] : undefined; };
  const only = opt('--only');
  const label = opt('--label') ?? 'current plan';
  if (!existsSync(pairsDir)) return 'enhance-autoid skipped: no corpus';
  const pairs = JSON.parse(readFileSync(pairsDir + 'pairs.json', 'utf8')) as Pair[];
  const dir = mkdtempSync(join(tmpdir(), 'bench-autoid-'));
  const load = () => execSync('uptime').toString().trim();
  const parts: string[] = [];
  try {
    const t0 = performance.now();
    const loadBefore = load();
    if (!only || only === 'autoid') parts.push(await autoidSection([...corpusCases(pairs), ...(await constructed(dir))], dir, label));
    if (!only || only === 'eq') parts.push(await eqSection(pairs, await constructed(dir), dir));
    if (!only || only === 'silences') parts.push(await silencesSection(pairs, dir));
    parts.unshift(`<!-- run ${label} ${only ?? 'all'} -->\n# autoid (${label}${only ? `, ${only}` : ''})\n\n${machine()}; ${new Date().toISOString()}; ${((performance.now() - t0) / 1000).toFixed(0)} s. Load: before \`${loadBefore}\`, after \`${load()}\`. Reproduce: \`node --import tsx bench/enhance-autoid.ts${only ? ` --only ${only}` : ''}\`.\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const section = parts.join('\n');
  // Each run (label, part) replaces its own earlier block, so before/after figures stay side by side.
  const tag = `<!-- run ${label} ${only ?? 'all'} -->`;
  const old = existsSync(RESULT) ? await readFile(RESULT, 'utf8') : '';
  const start = old.indexOf(tag);
  const next = start >= 0 ? old.indexOf('<!-- run ', start + tag.length) : -1;
  const body = start < 0 ? `${old.trimEnd()}\n\n${section}` : `${old.slice(0, start)}${section}\n${next >= 0 ? old.slice(next) : ''}`;
  await writeFile(RESULT, body.trimStart());
  return RESULT;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchEnhanceAutoid());
