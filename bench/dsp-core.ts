import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { loadFftProvider, RealFFT, type RealFft } from '../src/media/dsp/fft.js';
import { complexFft64 } from '../src/media/dsp/fft64.js';
import { resampleOnce, StreamResampler } from '../src/media/dsp/resample.js';
import { hann, sqrtHann, StftProcessor } from '../src/media/dsp/stft-stream.js';
import { decodeWav } from '../src/media/wav.js';
import { RnnoiseStage, SpectralGateStage } from '../src/engines/enhance/denoise.js';
import { siSdr } from '../src/engines/enhance/metrics.js';
import type { AudioData } from '../src/media/audio.js';
import { machine, root } from './lib.js';

/**
 * The shared audio core (src/media/dsp) against the enhancement engine's former FFT, STFT and resampler, taken from
 * git as they were before issue 28 merged them: equivalence on seeded random input and speed.
 * Run: node --import tsx bench/dsp-core.ts   (prints markdown; bench/results/dsp-core.md keeps a run)
 */
const OLD = '63025e6';
const oldDir = join(root, 'node_modules/.cache/dsp-core-old');

function fromGit(path: string, as: string): string {
  const file = join(oldDir, as);
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, execFileSync('git', ['show', `${OLD}:${path}`], { cwd: root }));
  return file;
}

interface OldRealFFT {
  forward(x: ArrayLike<number>, re: Float64Array, im: Float64Array): void;
  inverse(re: ArrayLike<number>, im: ArrayLike<number>, x: Float64Array): void;
}
interface OldStft { process(x: Float32Array): Float32Array }
interface OldResampler { process(c: Float32Array[]): Float32Array[]; flush(): Float32Array[] }
interface OldFftModule {
  RealFFT: new (n: number) => OldRealFFT;
  StftProcessor: new (o: { size: number; hop: number; analysis: Float32Array; synthesis: Float32Array }, f: (re: Float64Array, im: Float64Array) => void) => OldStft;
}
interface OldSpeexModule { StreamResampler: { create(ch: number, a: number, b: number): Promise<OldResampler> } }
interface OldSharedFft { jsFftProvider(): { create(n: number): RealFft } }
interface OldFft64Module { complexFft64(n: number): { forward(re: Float64Array, im: Float64Array): void; inverse(re: Float64Array, im: Float64Array): void } }
interface OldResampleModule { resample(x: Float32Array, a: number, b: number): Float32Array }
interface Stage { push(b: AudioData): Promise<AudioData | null>; flush(): Promise<AudioData | null> }
interface OldDenoiseModule {
  RnnoiseStage: { create(rate: number, channels: number): Promise<Stage> };
  SpectralGateStage: new (rate: number, channels: number) => Stage;
}

/** A whole signal through a stage in 4096-frame blocks. */
async function through(stage: Stage, x: Float32Array, rate: number): Promise<Float32Array> {
  const parts: Float32Array[] = [];
  for (let s = 0; s < x.length; s += 4096) {
    const y = await stage.push({ sampleRate: rate, channels: [x.subarray(s, s + 4096)] });
    if (y) parts.push(y.channels[0]!);
  }
  const tail = await stage.flush();
  if (tail) parts.push(tail.channels[0]!);
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
}

function compare(a: ArrayLike<number>, b: ArrayLike<number>): { identical: boolean; maxAbs: number; relDb: number } {
  let maxAbs = 0, err = 0, pow = 0, identical = a.length === b.length;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) identical = false;
    maxAbs = Math.max(maxAbs, Math.abs(d));
    err += d * d;
    pow += b[i]! * b[i]!;
  }
  return { identical, maxAbs, relDb: err === 0 ? -Infinity : 10 * Math.log10(err / pow) };
}

function time(fn: () => void, minMs = 300): number {
  fn();
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < minMs) { fn(); n++; }
  return (performance.now() - t0) / n;
}

const fmt = (r: { identical: boolean; maxAbs: number; relDb: number }) =>
  r.identical ? 'bit-identical' : `max abs diff ${r.maxAbs.toExponential(2)}, error ${r.relDb.toFixed(1)} dB`;

async function main(): Promise<void> {
  const oldFft = (await import(fromGit('src/engines/enhance/fft.ts', 'enhance-fft.ts'))) as OldFftModule;
  const oldSpeex = (await import(fromGit('src/engines/enhance/resampler.ts', 'enhance-resampler.ts'))) as OldSpeexModule;
  const oldShared = (await import(fromGit('src/media/dsp/fft.ts', 'dsp-fft.ts'))) as OldSharedFft;
  const oldResample = (await import(fromGit('src/media/resample.ts', 'resample.ts'))) as OldResampleModule;
  const pffft = await loadFftProvider();
  const lines: string[] = [];
  const say = (s: string) => { lines.push(s); console.log(s); };
  const load0 = loadavg();
  say(`Machine: ${machine()}; load average at start ${load0.map((x) => x.toFixed(2)).join(', ')}; old code: git ${OLD}.`);
  say('');
  say('## Real FFT (random input, float64 buffers)');
  say('');
  say('| size | new JS vs old enhance RealFFT (fwd / inv) | pffft vs old (fwd, rel. to max bin) | old RealFFT µs | new JS µs | pffft µs | old shared JS (full complex) µs |');
  say('|---|---|---|---|---|---|---|');
  const r = rng(1);
  for (const n of [256, 512, 1024, 2048]) {
    const x = Float64Array.from({ length: n }, r);
    const o = new oldFft.RealFFT(n), nw = new RealFFT(n), pf = pffft.create(n), os = oldShared.jsFftProvider().create(n);
    const b = n / 2 + 1;
    const [ore, oim, nre, nim, pre, pim] = Array.from({ length: 6 }, () => new Float64Array(b));
    o.forward(x, ore!, oim!); nw.forward(x, nre!, nim!); pf.forward(x, pre!, pim!);
    const fw = compare([...nre!, ...nim!], [...ore!, ...oim!]);
    const ox = new Float64Array(n), nx = new Float64Array(n);
    o.inverse(ore!, oim!, ox); nw.inverse(ore!, oim!, nx);
    const inv = compare(nx, ox);
    let peak = 0;
    for (let k = 0; k < b; k++) peak = Math.max(peak, Math.hypot(ore![k]!, oim![k]!));
    const pfc = compare([...pre!, ...pim!], [...ore!, ...oim!]);
    const f32 = Float32Array.from(x), s32re = new Float32Array(b), s32im = new Float32Array(b);
    const tOld = time(() => o.forward(x, ore!, oim!));
    const tNew = time(() => nw.forward(x, nre!, nim!));
    const tPf = time(() => pf.forward(f32, s32re, s32im));
    const tOs = time(() => os.forward(f32, s32re, s32im));
    say(`| ${n} | ${fw.identical && inv.identical ? 'bit-identical' : `${fmt(fw)} / ${fmt(inv)}`} | ${(pfc.maxAbs / peak).toExponential(1)} | ${(tOld * 1e3).toFixed(2)} | ${(tNew * 1e3).toFixed(2)} | ${(tPf * 1e3).toFixed(2)} | ${(tOs * 1e3).toFixed(2)} |`);
    pf.dispose();
  }
  const oldF64 = (await import(fromGit('src/media/dsp/fft64.ts', 'fft64.ts'))) as OldFft64Module;
  let f64Same = true;
  for (const n of [2, 1024, 65536]) {
    const re = Float64Array.from({ length: n }, r), im = Float64Array.from({ length: n }, r);
    const a = [re.slice(), im.slice()] as const, b = [re.slice(), im.slice()] as const;
    const o = oldF64.complexFft64(n), nw = complexFft64(n);
    o.forward(a[0], a[1]); nw.forward(b[0], b[1]); o.inverse(a[0], a[1]); nw.inverse(b[0], b[1]);
    f64Same &&= compare(b[0], a[0]).identical && compare(b[1], a[1]).identical;
  }
  say('');
  say(`complexFft64 (BSS Eval's float64 FFT, now on the same radix-2 kernel) against its former copy, n = 2, 1024, 65536 forward + inverse: ${f64Same ? 'bit-identical' : 'DIFFERENT'}.`);
  say('');
  say('## Streaming STFT (60 s at 48 kHz, random blocks of 1-8191 samples, a fixed spectral gain per bin)');
  say('');
  say('| window / size / hop | new (JS FFT) vs old | new (pffft) vs old | old ms | new JS ms | new pffft ms |');
  say('|---|---|---|---|---|---|');
  const sig = Float32Array.from({ length: 48000 * 60 }, rng(2));
  const blocks: Float32Array[] = [];
  const br = rng(3);
  for (let s = 0; s < sig.length;) { const k = 1 + Math.floor((br() + 0.5) * 8191); blocks.push(sig.subarray(s, s + k)); s += k; }
  for (const [name, size, hop, win] of [['hann', 2048, 512, hann(2048)], ['sqrt-hann', 512, 256, sqrtHann(512)]] as const) {
    const gain = (re: Float64Array, im: Float64Array) => { for (let k = 0; k < re.length; k++) { const g = 1 / (1 + k / 64); re[k]! *= g; im[k]! *= g; } };
    const run = (p: { process(x: Float32Array): Float32Array }) => { const parts = blocks.map((b) => p.process(b)); const out = new Float32Array(parts.reduce((a, p2) => a + p2.length, 0)); let o = 0; for (const p2 of parts) { out.set(p2, o); o += p2.length; } return out; };
    const opts = { size, hop, analysis: win, synthesis: win };
    const pf = pffft.create(size);
    let a = new Float32Array(0), b = a, c = a;
    const tOld = time(() => { a = run(new oldFft.StftProcessor(opts, gain)); }, 1);
    const tNew = time(() => { b = run(new StftProcessor(opts, gain)); }, 1);
    const tPf = time(() => { c = run(new StftProcessor({ ...opts, fft: pf }, gain)); }, 1);
    say(`| ${name} / ${size} / ${hop} | ${fmt(compare(b, a))} | ${fmt(compare(c, a))} | ${tOld.toFixed(0)} | ${tNew.toFixed(0)} | ${tPf.toFixed(0)} |`);
    pf.dispose();
  }
  say('');
  say('## Resampler: the shared Kaiser-sinc kernel (fast: resample(); high: the enhancement stages) against the former Speex (quality 5, WASM)');
  say('');
  say('Error against the exact band-limited signal (three sines at 0.1, 0.37 and 0.71 of the lower Nyquist, 60 s, blocks of 4096 frames, 200 output samples cut at each end); alias: a tone at 1.1x the output Nyquist, its RMS left after downsampling (dB re its own RMS); speed in x real time (one channel).');
  say('');
  say('| rates | error fast / high / speex (dB) | alias fast / high / speex (dB) | x RT fast / high / speex | stream == one-shot (high) |');
  say('|---|---|---|---|---|');
  for (const [from, to] of [[48000, 16000], [16000, 48000], [44100, 48000], [44100, 16000]] as const) {
    const ny = Math.min(from, to) / 2;
    const fs = [0.1, 0.37, 0.71].map((f) => f * ny);
    const gen = (rate: number, len: number) => Float32Array.from({ length: len }, (_, i) => fs.reduce((a, f, j) => a + 0.3 * Math.sin(2 * Math.PI * f * i / rate + j), 0));
    const x = gen(from, from * 60);
    const ref = gen(to, Math.round(x.length * to / from));
    const runStream = (rs: { process(c: Float32Array[]): Float32Array[]; flush(): Float32Array[] }, input: Float32Array) => {
      const parts: Float32Array[] = [];
      for (let s = 0; s < input.length; s += 4096) parts.push(rs.process([input.subarray(s, s + 4096)])[0]!);
      parts.push(rs.flush()[0]!);
      const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
      let o = 0;
      for (const p of parts) { out.set(p, o); o += p.length; }
      return out;
    };
    const makers: Array<() => Promise<{ process(c: Float32Array[]): Float32Array[]; flush(): Float32Array[] }>> = [
      async () => new StreamResampler(1, from, to, 'fast'),
      async () => StreamResampler.create(1, from, to),
      async () => oldSpeex.StreamResampler.create(1, from, to),
    ];
    const cut = (y: Float32Array) => y.subarray(200, y.length - 200);
    const err: string[] = [], alias: string[] = [], speed: string[] = [];
    let high = new Float32Array(0);
    for (const make of makers) {
      const rs = await make();
      const t0 = performance.now();
      const y = runStream(rs, x);
      speed.push((60000 / (performance.now() - t0)).toFixed(0));
      if (make === makers[1]) high = y;
      err.push(compare(cut(y), cut(ref)).relDb.toFixed(1));
      if (to < from) {
        const tone = Float32Array.from({ length: from * 2 }, (_, i) => Math.sin(2 * Math.PI * 1.1 * (to / 2) * i / from));
        const m = cut(runStream(await make(), tone));
        alias.push((10 * Math.log10(m.reduce((a, v) => a + v * v, 0) / m.length / 0.5)).toFixed(1));
      }
    }
    const once = resampleOnce(x, from, to, 'high');
    say(`| ${from} -> ${to} | ${err.join(' / ')} | ${alias.length ? alias.join(' / ') : 'n/a (upsampling)'} | ${speed.join(' / ')} | ${compare(high, once).identical ? 'bit-identical' : 'DIFFERENT'} |`);
  }
  say('');
  say('## One-shot resample() (src/media/resample.ts) before and after (same kernel, exact fractional positions now)');
  say('');
  const xr = Float32Array.from({ length: 44100 * 5 }, rng(4));
  for (const [from, to] of [[44100, 16000], [16000, 22050], [24000, 44100]] as const) {
    const t0 = performance.now();
    const a = oldResample.resample(xr.subarray(0, from * 5), from, to);
    const tA = performance.now() - t0;
    const t1 = performance.now();
    const b = resampleOnce(xr.subarray(0, from * 5), from, to);
    const tB = performance.now() - t1;
    say(`- ${from} -> ${to} (5 s of white noise): ${fmt(compare(b, a))}; old ${tA.toFixed(0)} ms, new ${tB.toFixed(0)} ms`);
  }
  say('');
  say('## The stages before and after (corpus noisy pairs, speech/constructed_pairs_16k)');
  say('');
  // The old denoise stage with its own FFT, STFT, Speex resampler and stage helpers, as they were in git.
  for (const f of ['fft', 'resampler', 'stage']) fromGit(`src/engines/enhance/${f}.ts`, `old/src/engines/enhance/${f}.ts`);
  const oldDenoise = (await import(fromGit('src/engines/enhance/denoise.ts', 'old/src/engines/enhance/denoise.ts'))) as OldDenoiseModule;
  const pairsDir = join(root, '../shared/corpus/speech/constructed_pairs_16k');
  const pairs = (JSON.parse(readFileSync(join(pairsDir, 'pairs.json'), 'utf8')) as Array<{ file: string; clean: string; snr_db?: number }>)
    .filter((p) => p.file.startsWith('noisy/'));
  say('SI-SDR (dB) of the output against the clean reference; RNNoise works at 48 kHz, so the 16 kHz input goes 16 -> 48 -> 16 kHz through the resampler (Speex before, the shared kernel now), and 44.1 kHz input (the pair resampled once, the same file for both) 44.1 -> 48 -> 44.1. The spectral gate uses the FFT and streaming STFT only.');
  say('');
  say('| pair | input | spectral gate old / new | RNNoise 16 kHz old / new | RNNoise 44.1 kHz old / new |');
  say('|---|---|---|---|---|');
  let gateSame = true;
  const sums = [0, 0, 0, 0, 0];
  for (const p of pairs) {
    const noisy = decodeWav(readFileSync(join(pairsDir, p.file))).channels[0]!;
    const clean = decodeWav(readFileSync(join(pairsDir, p.clean))).channels[0]!;
    const noisy44 = resampleOnce(noisy, 16000, 44100, 'high');
    const clean44 = resampleOnce(clean, 16000, 44100, 'high');
    const gOld = await through(new oldDenoise.SpectralGateStage(16000, 1), noisy, 16000);
    const gNew = await through(new SpectralGateStage(16000, 1), noisy, 16000);
    gateSame &&= compare(gNew, gOld).identical;
    const r = [
      siSdr(noisy, clean),
      siSdr(gOld, clean), siSdr(gNew, clean),
      siSdr(await through(await oldDenoise.RnnoiseStage.create(16000, 1), noisy, 16000), clean),
      siSdr(await through(await RnnoiseStage.create(16000, 1), noisy, 16000), clean),
      siSdr(await through(await oldDenoise.RnnoiseStage.create(44100, 1), noisy44, 44100), clean44),
      siSdr(await through(await RnnoiseStage.create(44100, 1), noisy44, 44100), clean44),
    ];
    r.slice(3).forEach((v, i) => (sums[i + 1] = sums[i + 1]! + v));
    say(`| ${p.file.replace('noisy/', '')} | ${r[0]!.toFixed(2)} | ${r[1]!.toFixed(2)} / ${r[2]!.toFixed(2)} | ${r[3]!.toFixed(3)} / ${r[4]!.toFixed(3)} | ${r[5]!.toFixed(3)} / ${r[6]!.toFixed(3)} |`);
  }
  const n = pairs.length;
  say(`| mean of ${n} | | ${gateSame ? 'bit-identical outputs' : 'OUTPUTS DIFFER'} | ${(sums[1]! / n).toFixed(3)} / ${(sums[2]! / n).toFixed(3)} | ${(sums[3]! / n).toFixed(3)} / ${(sums[4]! / n).toFixed(3)} |`);
  say('');
  say(`Load average at end: ${loadavg().map((v) => v.toFixed(2)).join(', ')}.`);
}

await main();
