import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AudioData } from '../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { RnnoiseStage } from '../src/engines/enhance/denoise.js';
import { siSdr } from '../src/engines/enhance/metrics.js';
import { OnnxDenoiseStage, onnxDenoiserAvailable } from '../src/engines/enhance/onnx-denoise.js';
import { BuiltinSeparationEngine } from '../src/engines/separation/builtin.js';
import { pickVocalEngine, SeparationStage } from '../src/engines/enhance/separate.js';
import { processWhole, type AudioStage } from '../src/engines/enhance/stage.js';
import { root } from './lib.js';

/**
 * remove_background_audio and keep_music, measured: SI-SDR of the output against the true voice (or the
 * true voice + music bed for keep_music) next to the unprocessed input, on (a) a real multitrack song whose
 * vocals stem is the truth and (b) real speech laid over that song's accompaniment plus ambient noise.
 * Run: node --import tsx -e "import('./bench/enhance-background.ts').then(m=>m.benchBackground()).then(console.log)"
 */
const tools = resolveMediaTools({ preferSystem: true });
const song = join(root, '../shared/corpus/separation/musdb18_sample_music_delta_80s_rock/');
const speechFile = join(root, '../shared/corpus/speech/clean/librispeech_5703-47212-0000.ogg');
const modelsDir = join(root, '../shared/corpus/models');

const load = (p: string, sampleRate?: number) => decodeAudio(p, { ffmpeg: tools.ffmpeg, ...(sampleRate ? { sampleRate, channels: 2 } : {}) });
/** Channels concatenated, as the separation bench scores stereo. */
const flat = (a: AudioData) => {
  const n = a.channels[0]!.length;
  const o = new Float32Array(n * a.channels.length);
  a.channels.forEach((c, i) => o.set(c.subarray(0, n), i * n));
  return o;
};
const sum = (parts: AudioData[], gains: number[]): AudioData => {
  const n = Math.min(...parts.map((p) => p.channels[0]!.length));
  const channels = [0, 1].map((c) => {
    const o = new Float32Array(n);
    parts.forEach((p, k) => { const x = p.channels[c]!; for (let i = 0; i < n; i++) o[i]! += gains[k]! * x[i]!; });
    return o;
  });
  return { sampleRate: parts[0]!.sampleRate, channels };
};
const rms = (a: AudioData) => Math.sqrt(flat(a).reduce((s, v) => s + v * v, 0) / (a.channels[0]!.length * 2));

/** Loops `a` to n frames (the song excerpt is shorter than the utterance). */
function loopTo(a: AudioData, n: number): AudioData {
  return { sampleRate: a.sampleRate, channels: a.channels.map((c) => Float32Array.from({ length: n }, (_, i) => c[i % c.length]!)) };
}

/** Decorrelated pink-ish noise per channel (deterministic): ambience with no stereo centre. */
function ambience(n: number, rate: number): AudioData {
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  const channels = [0, 1].map(() => {
    const o = new Float32Array(n);
    let b0 = 0, b1 = 0;
    for (let i = 0; i < n; i++) { const w = rnd(); b0 = 0.99 * b0 + 0.1 * w; b1 = 0.9 * b1 + 0.3 * w; o[i] = b0 + b1 + 0.2 * w; }
    return o;
  });
  return { sampleRate: rate, channels };
}

type Variant = [string, (rate: number) => Promise<AudioStage[]>];

function denoisers(): Array<[string, (rate: number) => Promise<AudioStage>]> {
  const list: Array<[string, (rate: number) => Promise<AudioStage>]> = [['rnnoise', (r) => RnnoiseStage.create(r, 2)]];
  for (const kind of ['gtcrn', 'dtln'] as const) if (onnxDenoiserAvailable(modelsDir, kind)) list.push([kind, (r) => OnnxDenoiseStage.create(r, 2, { modelsDir, kind })]);
  return list;
}

const ctl = new AbortController();
/** What the chain picks with no neural separation model (the speech separator); `song` = the song engine. */
const separate = (rate: number, mode: 'voice' | 'keep_music', voiceStages: AudioStage[] = [], song = false) =>
  new SeparationStage(rate, 2, { choice: song ? { engine: new BuiltinSeparationEngine(), modelType: 350 } : pickVocalEngine(), mode, voiceStages, signal: ctl.signal, tmpDir: root });

async function score(input: AudioData, truth: AudioData, variants: Variant[]): Promise<string[]> {
  const rows = [`| unprocessed | ${siSdr(flat(input), flat(truth)).toFixed(2)} | | |`];
  const base = siSdr(flat(input), flat(truth));
  for (const [name, make] of variants) {
    const t0 = performance.now();
    const out = await processWhole(await make(input.sampleRate), input, input.sampleRate * 5);
    const rtf = (performance.now() - t0) / 1000 / (input.channels[0]!.length / input.sampleRate);
    const s = siSdr(flat(out), flat(truth));
    rows.push(`| ${name} | ${s.toFixed(2)} | ${(s - base).toFixed(2)} | ${rtf.toFixed(3)} |`);
  }
  return rows;
}

export async function benchBackground(): Promise<string> {
  if (!existsSync(song + 'mixture.flac') || !existsSync(speechFile)) return 'corpus missing';
  const head = '| processing | SI-SDR dB | Δ vs unprocessed | RTF |\n|---|---|---|---|\n';
  const dn = denoisers();
  const voiceVariants: Variant[] = [
    ['song engine vocals (separation builtin-dsp, model 350)', async (r) => [separate(r, 'voice', [], true)]],
    ['speech separator (builtin-speech)', async (r) => [separate(r, 'voice')]],
  ];
  for (const [n, mk] of dn) voiceVariants.push([`speech separator → ${n} (remove_background_audio)`, async (r) => [separate(r, 'voice'), await mk(r)]]);

  // (a) the song: vocals stem is the truth.
  const mix = await load(song + 'mixture.flac');
  const vocals = await load(song + 'vocals.flac');
  let md = `### (a) musdb18 music_delta_80s_rock (44.1 kHz stereo, ${(mix.channels[0]!.length / mix.sampleRate).toFixed(1)} s, sung vocals), truth = vocals stem\n\n${head}`;
  md += (await score(mix, vocals, voiceVariants)).join('\n') + '\n\n';

  // (b) speech over the song's accompaniment (drums + bass + other) at -6 dB and ambience at -20 dB re the speech.
  const rate = mix.sampleRate;
  const speech = await load(speechFile, rate);
  const n = speech.channels[0]!.length;
  const acc = loopTo(sum([await load(song + 'drums.flac'), await load(song + 'bass.flac'), await load(song + 'other.flac')], [1, 1, 1]), n);
  const amb = ambience(n, rate);
  const s = rms(speech);
  const music = sum([acc], [(s / rms(acc)) * 10 ** (-6 / 20)]);
  const noise = sum([amb], [(s / rms(amb)) * 10 ** (-20 / 20)]);
  const input = sum([speech, music, noise], [1, 1, 1]);
  const speechVariants: Variant[] = [];
  for (const [nm, mk] of dn) speechVariants.push([`${nm} alone (remove_noise)`, async (r) => [await mk(r)]]);
  speechVariants.push(...voiceVariants);
  md += `### (b) LibriSpeech 5703-47212-0000 centred, over that song's accompaniment (-6 dB) and decorrelated ambience (-20 dB), ${(n / rate).toFixed(1)} s, truth = the speech\n\n${head}`;
  md += (await score(input, speech, speechVariants)).join('\n') + '\n\n';

  // (c) keep_music on (b): the truth is speech + music bed (the ambience should go, the music stay).
  const keepVariants: Variant[] = [];
  for (const [nm, mk] of dn) {
    keepVariants.push([`${nm} on the whole mix (remove_noise without keep_music)`, async (r) => [await mk(r)]]);
    keepVariants.push([`keep_music: separate → ${nm} on the voice → + music`, async (r) => [separate(r, 'keep_music', [await mk(r)])]]);
  }
  md += `### (c) keep_music on (b), truth = speech + music bed (ambience removed, music kept)\n\n${head}`;
  md += (await score(input, sum([speech, music], [1, 1]), keepVariants)).join('\n') + '\n';
  return md;
}
