import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AudioData } from '../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { MUSIC_PRESENT_SHARE, MusicDetector, type MusicPresence } from '../src/engines/enhance/music-detect.js';
import { root } from './lib.js';

/**
 * autoid music presence on real material: speech-only recordings must read "no music"; real speech over real
 * music beds at -6/-12/-18 dB (bed RMS relative to the speech's overall RMS) and the beds alone must read "music".
 * Run: node --import tsx -e "import('./bench/enhance-music.ts').then(m=>m.benchMusic()).then(console.log)"
 */
const tools = resolveMediaTools({ preferSystem: true });
const corpus = join(root, '../shared/corpus');
const RATE = 44100;
const MAX_SECONDS = 30;

const load = async (p: string, sampleRate?: number): Promise<AudioData> => {
  const a = await decodeAudio(p, { ffmpeg: tools.ffmpeg, ...(sampleRate ? { sampleRate, channels: 2 } : {}) });
  const n = Math.min(a.channels[0]!.length, MAX_SECONDS * a.sampleRate);
  return { sampleRate: a.sampleRate, channels: a.channels.map((c) => c.slice(0, n)) };
};
const rms = (a: AudioData) => {
  let s = 0;
  for (const c of a.channels) for (const v of c) s += v * v;
  return Math.sqrt(s / (a.channels.length * a.channels[0]!.length));
};
/** speech + gain * bed, the bed looped to the speech's length. */
function mix(speech: AudioData, bed: AudioData, gain: number): AudioData {
  const n = speech.channels[0]!.length;
  return { sampleRate: speech.sampleRate, channels: speech.channels.map((c, ch) => {
    const b = bed.channels[ch] ?? bed.channels[0]!;
    return Float32Array.from({ length: n }, (_, i) => c[i]! + gain * b[i % b.length]!);
  }) };
}
function detect(a: AudioData): MusicPresence {
  const d = new MusicDetector(a.sampleRate);
  const block = a.sampleRate * 5;
  const n = a.channels[0]!.length;
  for (let s = 0; s < n; s += block) d.push({ sampleRate: a.sampleRate, channels: a.channels.map((c) => c.subarray(s, Math.min(n, s + block))) });
  return d.result();
}

const speechOnly = (): string[] => {
  const files: string[] = [];
  const add = (dir: string, keep: (f: string) => boolean) => {
    if (existsSync(join(corpus, dir))) for (const f of readdirSync(join(corpus, dir)).sort()) if (keep(f)) files.push(join(dir, f));
  };
  add('speech/clean', () => true);
  add('speech/conversational', (f) => f.endsWith('.wav'));
  add('speech/noisy_no_reference', (f) => !f.endsWith('.sph')); // NIST SPHERE is not an accepted upload format
  add('speech/constructed_pairs_16k/noisy', (f) => !f.includes('.CLEAN.'));
  add('speech/constructed_pairs_16k/reverb', (f) => !f.includes('.CLEAN.'));
  add('speech/reverberant_real', (f) => f.includes('-1_'));
  return files;
};

async function beds(): Promise<Array<[string, () => Promise<AudioData>]>> {
  const list: Array<[string, () => Promise<AudioData>]> = [];
  const musdb = 'separation/musdb18_sample_music_delta_80s_rock/';
  list.push(['musdb 80s_rock accompaniment (mixture - vocals)', async () => {
    const m = await load(join(corpus, musdb, 'mixture.flac'), RATE);
    const v = await load(join(corpus, musdb, 'vocals.flac'), RATE);
    return { sampleRate: RATE, channels: m.channels.map((c, ch) => c.map((x, i) => x - (v.channels[ch]![i] ?? 0))) };
  }]);
  for (const d of readdirSync(join(corpus, 'separation/fof_guitar_real_stems')).sort()) list.push([`fof ${d} backing`, () => load(join(corpus, 'separation/fof_guitar_real_stems', d, 'backing.flac'), RATE)]);
  for (const d of readdirSync(join(corpus, 'separation/midi_rendered_fluidr3')).sort()) list.push([`fluidr3 ${d} mixture`, () => load(join(corpus, 'separation/midi_rendered_fluidr3', d, 'mixture.flac'), RATE)]);
  for (const f of readdirSync(join(corpus, 'separation/mixture_only_real_songs')).sort()) list.push([`song ${f} (with vocals)`, () => load(join(corpus, 'separation/mixture_only_real_songs', f), RATE)]);
  return list;
}

const row = (file: string, cond: string, r: MusicPresence, expectMusic: boolean) => {
  const music = r.musicShare >= MUSIC_PRESENT_SHARE;
  const verdict = music === expectMusic ? 'ok' : '**miss**';
  return { ok: music === expectMusic, line: `| ${file} | ${cond} | ${(r.musicShare * 100).toFixed(0)}% | ${r.pauseLevelDb.toFixed(0)} | ${music ? 'music → keep_music' : 'no music'} | ${verdict} |` };
};

export async function benchMusic(): Promise<string> {
  if (!existsSync(corpus)) return 'corpus missing';
  const head = '| file | condition | music share of pauses | pause level re speech, dB | decision | |\n|---|---|---|---|---|---|\n';
  const tally: Record<string, [number, number]> = {};
  const count = (group: string, ok: boolean) => {
    const t = (tally[group] ??= [0, 0]);
    t[0] += ok ? 1 : 0;
    t[1] += 1;
  };
  let speechRows = '';
  for (const f of speechOnly()) {
    const r = row(f.replace(/^speech\//, ''), 'speech only (native rate)', detect(await load(join(corpus, f))), false);
    count('speech only', r.ok);
    speechRows += r.line + '\n';
  }
  let musicRows = '';
  let mixRows = '';
  const voices = ['speech/clean/librispeech_5703-47212-0000.ogg', 'speech/conversational/pyannote_sample_telephone.wav'];
  const speeches = await Promise.all(voices.map((v) => load(join(corpus, v), RATE)));
  for (const [name, get] of await beds()) {
    const bed = await get();
    const r = row(name, 'music alone', detect(bed), true);
    count('music alone', r.ok);
    musicRows += r.line + '\n';
    for (const [vi, sp] of speeches.entries()) {
      for (const db of [-6, -12, -18]) {
        const m = row(name, `${voices[vi]!.split('/').pop()} over it, bed ${db} dB`, detect(mix(sp, bed, (rms(sp) / rms(bed)) * 10 ** (db / 20))), true);
        count(`speech + music ${db} dB`, m.ok);
        mixRows += m.line + '\n';
      }
    }
  }
  const summary = Object.entries(tally).map(([g, [ok, n]]) => `| ${g} | ${ok}/${n} |`).join('\n');
  return `Threshold: music when at least ${(MUSIC_PRESENT_SHARE * 100).toFixed(0)}% of the pause frames (bottom 20% by level) are tonal.\n\n`
    + `| group | right |\n|---|---|\n${summary}\n\n### Speech only (must read no music)\n\n${head}${speechRows}\n`
    + `### Music alone (must read music)\n\n${head}${musicRows}\n### Speech over music (44.1 kHz stereo, must read music)\n\n${head}${mixRows}`;
}
