import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeAudio, probeMedia, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { measureLoudness } from '../../src/media/loudnorm.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { concat, rng, silence, speechLike } from '../helpers/speech-synth.js';

/**
 * What an outside checker found on real recordings, reproduced on generated speech-like input through
 * the HTTP API: MP3 outputs 0.4-0.7 LU under the normalize target (constant-bitrate LAME lowers the
 * level), 24-bit/float/8-bit WAV inputs losing their depth or family, long_silences finding no pause
 * in 5 dB SNR speech, a normalize-only result naming no engine, autoid "denoising" digital silence.
 */
const run = promisify(execFile);
const API = '/audio/api/v1/api-keys';
const tools = resolveMediaTools({ preferSystem: true });
let app: TestApp;
let key: string;

async function upload(path: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await readFile(path))]), path.split('/').pop()!);
  return ((await (await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any).data.url;
}

async function enhance(enhance_type: Record<string, boolean>, inputurl: string) {
  const created = await app.post(`${API}/enhance/task/create`, { inputurl, enhance_type }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  const done = await app.waitTask(`${API}/enhance/task/get`, 'job_id', created.json.data.job_id, key, 240_000);
  expect(done.data.status, JSON.stringify(done)).toBe('success');
  return done;
}

async function download(url: string, name: string): Promise<string> {
  const path = join(app.dataDir, name);
  await writeFile(path, Buffer.from(await (await fetch(url)).arrayBuffer()));
  return path;
}

/** ffmpeg: transcode a WAV into another format with extra output args. */
async function transcode(src: string, name: string, args: string[]): Promise<string> {
  const out = join(app.dataDir, name);
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-i', src, ...args, out]);
  return out;
}

let speechWav: string; // 22.05 kHz mono, quiet, with 3 s pauses

beforeAll(async () => {
  app = await startTestApp({ WORKER_THREADS: '2', ENHANCE_MAX_SECONDS: '120' });
  ({ key } = await app.newKey({ credits: 1000 }));
  const R = 22050;
  const x = concat([speechLike(10, R, 1), silence(3, R), speechLike(10, R, 2), silence(3, R), speechLike(10, R, 3)]);
  for (let i = 0; i < x.length; i++) x[i] = x[i]! * 0.3;
  speechWav = join(app.dataDir, 'speech.wav');
  await encodeAudio({ sampleRate: R, channels: [x] }, speechWav, { ffmpeg: tools.ffmpeg, format: 'wav' });
}, 120_000);
afterAll(async () => app?.close());

describe('enhancement output format and level', () => {
  it('MP3 in, MP3 out: normalize lands within 0.2 LU of -16 LUFS and at most -1 dBTP (ffmpeg ebur128)', async () => {
    for (const [name, args] of [
      ['stereo22k.mp3', ['-ac', '2', '-c:a', 'libmp3lame', '-b:a', '96k']],
      ['mono8k.mp3', ['-ar', '8000', '-c:a', 'libmp3lame', '-b:a', '32k']],
    ] as const) {
      const done = await enhance({ normalize: true }, await upload(await transcode(speechWav, name, [...args])));
      expect(done.data.engine).toBe('r128-normalize');
      const out = await download(done.data.output, `norm-${name}`);
      const info = await probeMedia(out, { ffprobe: tools.ffprobe });
      expect(info.codec).toBe('mp3');
      const loud = await measureLoudness(out, { ffmpeg: tools.ffmpeg });
      expect(Math.abs(loud.integrated + 16), `${name}: ${loud.integrated} LUFS`).toBeLessThanOrEqual(0.2);
      expect(loud.truePeak, name).toBeLessThanOrEqual(-1);
    }
  }, 400_000);

  it('WAV keeps its family and depth: 24-bit stays 24-bit, float stays float, 8-bit comes back as WAV', async () => {
    for (const [name, codec, want] of [['s24.wav', 'pcm_s24le', 'pcm_s24le'], ['f32.wav', 'pcm_f32le', 'pcm_f32le'], ['u8.wav', 'pcm_u8', 'pcm_s16le']] as const) {
      const done = await enhance({ remove_noise: true }, await upload(await transcode(speechWav, name, ['-c:a', codec])));
      const info = await probeMedia(await download(done.data.output, `out-${name}`), { ffprobe: tools.ffprobe });
      expect(info.codec, name).toBe(want);
      expect(info.sampleRate).toBe(22050);
    }
  }, 400_000);

  it('long_silences shortens the pauses of speech under noise at 5 dB SNR', async () => {
    const R = 22050;
    const clean = concat([speechLike(10, R, 1), silence(3, R), speechLike(10, R, 2), silence(3, R), speechLike(10, R, 3)]);
    let e = 0;
    for (const v of clean) e += v * v;
    const speechRms = Math.sqrt(e / clean.length);
    const noiseRms = speechRms / 10 ** (5 / 20);
    const rand = rng(7);
    // Brown-ish noise (a rumble, like a fan or a bike): integrated white noise, leaky.
    let b = 0;
    const noise = new Float32Array(clean.length);
    for (let i = 0; i < noise.length; i++) noise[i] = b = 0.98 * b + (rand() * 2 - 1);
    let n2 = 0;
    for (const v of noise) n2 += v * v;
    const g = noiseRms / Math.sqrt(n2 / noise.length);
    const noisy = clean.map((v, i) => 0.3 * (v + noise[i]! * g));
    const path = join(app.dataDir, 'noisy5.wav');
    await encodeAudio({ sampleRate: R, channels: [noisy] }, path, { ffmpeg: tools.ffmpeg, format: 'wav' });
    const done = await enhance({ long_silences: true }, await upload(path));
    const inSeconds = noisy.length / R;
    // Two 3 s pauses become about 0.6 s each: 4.8 s shorter; at least 3 s must go.
    expect(done.data.duration, JSON.stringify(done.data.reasons)).toBeLessThan(inSeconds - 3);
    expect(done.data.duration).toBeGreaterThan(inSeconds - 6);
  }, 240_000);

  const SPEECH = '../shared/corpus/speech/constructed_pairs_16k/long_silences/four_utterances_3-6-10s_gaps.wav';
  const BIKE = '../shared/corpus/speech/noise/speechcommands_exercise_bike.wav';
  it.skipIf(!existsSync(SPEECH) || !existsSync(BIKE))('long_silences on real speech under a real exercise-bike noise at about 5 dB SNR', async () => {
    // Utterances -20.7 dB while speaking, the bike -32.6 dB: +6.9 dB puts it 5 dB under the speech (amix halves both).
    const path = join(app.dataDir, 'bike5.wav');
    await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-i', SPEECH, '-stream_loop', '-1', '-i', BIKE, '-filter_complex',
      '[1]volume=6.9dB[n];[0][n]amix=inputs=2:duration=first,volume=2', '-c:a', 'pcm_s16le', path]);
    const inSeconds = (await probeMedia(path, { ffprobe: tools.ffprobe })).durationSeconds;
    const done = await enhance({ long_silences: true }, await upload(path));
    // Gaps of 3, 6 and 10 s: raw WebRTC VAD found none; on the cleaned copy at least one (the noise still masks much).
    expect(done.data.duration, JSON.stringify(done.data.reasons)).toBeLessThan(inSeconds - 2);
  }, 240_000);

  it('autoid on digital silence says so and runs nothing', async () => {
    const path = join(app.dataDir, 'zero.wav');
    await encodeAudio({ sampleRate: 16000, channels: [new Float32Array(48000)] }, path, { ffmpeg: tools.ffmpeg, format: 'wav' });
    const done = await enhance({}, await upload(path));
    expect(done.data.stages).toEqual([]);
    expect(done.data.reasons.autoid).toMatch(/silent/);
    expect(done.data.duration).toBeCloseTo(3, 2);
  }, 240_000);
});
