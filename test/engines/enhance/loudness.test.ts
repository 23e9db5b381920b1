import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AudioData } from '../../../src/media/audio.js';
import { decodeAudio, encodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { LoudnessMeter, parseEbur128Summary } from '../../../src/engines/enhance/loudness.js';
import { LimitedLoudnessPass, NormalizeStage } from '../../../src/engines/enhance/normalize.js';
import { blocksOf, processWhole } from '../../../src/engines/enhance/stage.js';

const corpus = new URL('../../../../shared/corpus/speech/', import.meta.url).pathname;
const tools = resolveMediaTools({ preferSystem: true });
const dir = mkdtempSync(join(tmpdir(), 'loud-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function ffmpegEbur128(path: string): { integratedLufs: number; truePeakDbtp: number | null } {
  const r = spawnSync(tools.ffmpeg, ['-nostdin', '-hide_banner', '-nostats', '-i', path, '-filter_complex', 'ebur128=peak=true', '-f', 'null', '-'], { encoding: 'utf8' });
  return parseEbur128Summary(r.stderr);
}

async function measure(audio: AudioData, blockFrames = 7777) {
  const m = new LoudnessMeter(audio.sampleRate, audio.channels.length);
  for await (const b of blocksOf(audio, blockFrames)) m.push(b);
  return m.result();
}

function synth(rate: number, seconds: number, channels: number, fn: (t: number, c: number) => number): AudioData {
  const n = Math.round(rate * seconds);
  return { sampleRate: rate, channels: Array.from({ length: channels }, (_, c) => Float32Array.from({ length: n }, (_v, i) => fn(i / rate, c))) };
}

function lowNoise(env: (t: number) => number): (t: number) => number {
  let seed = 12345, y = 0;
  return (t) => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    y = 0.6 * y + 0.4 * ((seed / 2 ** 32) * 2 - 1);
    return env(t) * y;
  };
}

describe('BS.1770 loudness', () => {
  it('1 kHz stereo sine at -23 dBFS reads -23 LUFS (EBU Tech 3341 case)', async () => {
    const a = 10 ** (-23 / 20);
    const r = await measure(synth(48000, 20, 2, (t) => a * Math.sin(2 * Math.PI * 1000 * t)));
    expect(r.integratedLufs).toBeCloseTo(-23, 1);
  });

  const synthetic: Array<[string, AudioData]> = [
    ['sine 997 Hz 44.1k stereo', synth(44100, 10, 2, (t, c) => 0.3 * Math.sin(2 * Math.PI * 997 * t + c))],
    // Low-passed noise: white noise up to Nyquist is partly cut by the resampler ffmpeg puts before its 48 kHz-only meter.
    ['noise bursts 16k mono (gating)', synth(16000, 12, 1, lowNoise((t) => (Math.floor(t) % 3 === 0 ? 0.5 : 0.01)))],
    ['chirp 22.05k mono', synth(22050, 8, 1, (t) => 0.5 * Math.sin(2 * Math.PI * (50 * t + 600 * t * t)))],
  ];
  for (const [label, audio] of synthetic) {
    it(`matches ffmpeg ebur128 within 0.2 LU: ${label}`, async () => {
      const path = join(dir, `${label.replace(/\W+/g, '_')}.wav`);
      await encodeAudio(audio, path, { ffmpeg: tools.ffmpeg, format: 'wav' });
      const decoded = await decodeAudio(path, { ffmpeg: tools.ffmpeg });
      const ours = await measure(decoded);
      const ref = ffmpegEbur128(path);
      expect(Math.abs(ours.integratedLufs - ref.integratedLufs)).toBeLessThan(0.2);
      expect(Math.abs(ours.truePeakDbtp - ref.truePeakDbtp!)).toBeLessThan(0.5);
    });
  }

  const files = ['constructed_pairs_16k/noisy/libri5703__bike_snr05.wav', 'constructed_pairs_16k/reverb/libri3436__dfnrir079_rev.wav', 'conversational/pyannote_sample_telephone.wav', 'clean/cmu_arctic_a0010.wav', 'constructed_pairs_16k/long_silences/four_utterances_3-6-10s_gaps.wav'];
  for (const f of files) {
    it.skipIf(!existsSync(corpus + f))(`matches ffmpeg ebur128 within 0.2 LU: ${f}`, async () => {
      const audio = await decodeAudio(corpus + f, { ffmpeg: tools.ffmpeg });
      const ours = await measure(audio, 16000);
      const ref = ffmpegEbur128(corpus + f);
      expect(Math.abs(ours.integratedLufs - ref.integratedLufs)).toBeLessThan(0.2);
    });
  }
});

describe('normalize stage', () => {
  it.skipIf(!existsSync(corpus + 'clean/cmu_arctic_a0010.wav'))('reaches -16 LUFS with true peak under -1 dBTP (limiter engaged), ffmpeg confirms', async () => {
    const audio = await decodeAudio(corpus + 'clean/cmu_arctic_a0010.wav', { ffmpeg: tools.ffmpeg });
    const before = await measure(audio);
    const stage = new NormalizeStage(before, audio.sampleRate, audio.channels.length, { targetLufs: -16, ceilingDbtp: -1 });
    const out = await processWhole([stage], audio, 5000);
    expect(out.channels[0]!.length).toBe(audio.channels[0]!.length);
    const path = join(dir, 'norm.wav');
    await encodeAudio(out, path, { ffmpeg: tools.ffmpeg, format: 'flac' });
    const ref = ffmpegEbur128(path);
    const ours = await measure(out);
    expect(Math.abs(ours.integratedLufs + 16)).toBeLessThan(0.5);
    expect(Math.abs(ref.integratedLufs + 16)).toBeLessThan(0.5);
    expect(ours.truePeakDbtp).toBeLessThan(-0.9);
    expect(ref.truePeakDbtp!).toBeLessThan(-0.8);
    // Alignment: away from peaks the output is the input times the gain.
    const g = 10 ** (stage.gainDb / 20);
    let matched = 0;
    for (let i = 1000; i < audio.channels[0]!.length; i += 997) if (Math.abs(out.channels[0]![i]! - g * audio.channels[0]![i]!) < 1e-4) matched++;
    expect(matched).toBeGreaterThan(10);
  });

  it.skipIf(!existsSync(corpus + 'conversational/pyannote_sample_telephone.wav'))('limiter loss compensation pass brings a heavily limited file within 0.3 LU of the target', async () => {
    const audio = await decodeAudio(corpus + 'conversational/pyannote_sample_telephone.wav', { ffmpeg: tools.ffmpeg });
    const before = await measure(audio);
    const plain = await processWhole([new NormalizeStage(before, audio.sampleRate, 1)], audio);
    const pass = new LimitedLoudnessPass(before, audio.sampleRate, 1);
    for await (const b of blocksOf(audio, 8000)) pass.push(b);
    const comp = pass.result();
    expect(comp).toBeGreaterThan(0.2);
    const out = await processWhole([new NormalizeStage(before, audio.sampleRate, 1, { compensationDb: comp })], audio);
    const plainErr = Math.abs((await measure(plain)).integratedLufs + 16);
    const r = await measure(out);
    expect(Math.abs(r.integratedLufs + 16)).toBeLessThan(Math.min(0.3, plainErr));
    expect(r.truePeakDbtp).toBeLessThan(-0.9);
  });

  it('plain gain when the ceiling is not reached', async () => {
    const audio = synth(48000, 5, 2, (t) => 0.01 * Math.sin(2 * Math.PI * 1000 * t));
    const before = await measure(audio);
    const stage = new NormalizeStage(before, 48000, 2, { targetLufs: -23 });
    expect(stage.limiting).toBe(false);
    const out = await processWhole([stage], audio);
    expect((await measure(out)).integratedLufs).toBeCloseTo(-23, 1);
  });
});

describe('loudness of clips shorter than one 400 ms gating block', () => {
  const sine = (seconds: number, rate = 48000, amp = 0.1): AudioData => ({
    sampleRate: rate,
    channels: [Float32Array.from({ length: Math.round(seconds * rate) }, (_, i) => amp * Math.sin((2 * Math.PI * 1000 * i) / rate))],
  });
  const measure = (a: AudioData) => {
    const m = new LoudnessMeter(a.sampleRate, 1);
    m.push(a);
    return m.result().integratedLufs;
  };
  it('a 0.3 s clip measures like the same tone held for 3 s (was -Infinity, so normalize left it alone)', () => {
    const long = measure(sine(3));
    expect(Number.isFinite(long)).toBe(true);
    expect(Math.abs(measure(sine(0.3)) - long)).toBeLessThan(0.5);
  });
  it('a short clip of digital silence stays -Infinity', () => {
    expect(measure({ sampleRate: 48000, channels: [new Float32Array(14400)] })).toBe(-Infinity);
  });
});
