import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio, probeMedia, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { measureLoudness } from '../../src/media/loudnorm.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { concat, rng, silence, speechLike } from '../helpers/speech-synth.js';
import { nistSphere, type SphereCoding } from '../media/sphere-fixture.js';

/**
 * Issue 28: a NIST SPHERE recording (.sph, the format of TIMIT, Switchboard and WSJ) uploaded and enhanced through the
 * HTTP API, as a user would: it was refused as "not an audio or video file". PCM and Shorten-compressed files, both
 * built here from synthetic speech with hiss under it and a 2 s pause in the middle.
 */
const API = '/audio/api/v1/api-keys';
const RATE = 16000;
const tools = resolveMediaTools({ preferSystem: true });
let app: TestApp;
let key: string;

const speech = concat([speechLike(10, RATE, 3), silence(2, RATE), speechLike(10, RATE, 4)]);
const noise = rng(9);
const samples = Int16Array.from(speech, (v) => Math.max(-32768, Math.min(32767, Math.round((0.5 * v + 0.01 * noise()) * 32768))));
const seconds = samples.length / RATE;

async function uploadSph(coding: SphereCoding): Promise<{ url: string; path: string }> {
  const path = join(app.dataDir, `speech-${coding}.sph`);
  await writeFile(path, nistSphere({ sampleRate: RATE, channels: 1, samples, coding }));
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await readFile(path))]), `speech-${coding}.sph`);
  const res = await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form });
  const body = (await res.json()) as { code: number; data: { url: string } };
  expect(body.code, JSON.stringify(body)).toBe(100000);
  return { url: body.data.url, path };
}

async function enhance(inputurl: string, enhance_type: Record<string, boolean>) {
  const created = await app.post(`${API}/enhance/task/create`, { inputurl, enhance_type }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  return app.waitTask(`${API}/enhance/task/get`, 'job_id', created.json.data.job_id, key, 240_000);
}

async function download(url: string, name: string): Promise<string> {
  const path = join(app.dataDir, name);
  await writeFile(path, Buffer.from(await (await fetch(url)).arrayBuffer()));
  return path;
}

/** RMS in dB of the pause (from 0.3 s after it starts to 0.3 s before it ends). */
async function pauseDb(path: string): Promise<number> {
  const audio = await decodeAudio(path, { ffmpeg: tools.ffmpeg, sampleRate: RATE, channels: 1 });
  const start = speechLike(10, RATE, 3).length;
  const x = audio.channels[0]!.subarray(start + 0.3 * RATE, start + 1.7 * RATE);
  return 10 * Math.log10(x.reduce((a, v) => a + v * v, 0) / x.length);
}

beforeAll(async () => {
  app = await startTestApp({ ENHANCE_MAX_SECONDS: '120' });
  ({ key } = await app.newKey({ credits: 1000 }));
}, 60_000);
afterAll(async () => app?.close());

describe('NIST SPHERE through the API', () => {
  it('a PCM .sph upload is denoised and normalised: same length and rate, quieter pause, -16 LUFS', async () => {
    const { url, path } = await uploadSph('pcm-le');
    const done = await enhance(url, { remove_noise: true, normalize: true });
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.stages).toEqual(expect.arrayContaining(['denoise', 'normalize']));
    const out = await download(done.data.output, 'enhanced-pcm.wav');
    const info = await probeMedia(out, { ffprobe: tools.ffprobe });
    expect(info.codec).toMatch(/^pcm_/); // PCM in, WAV out
    expect(info.sampleRate).toBe(RATE);
    expect(Math.abs(info.durationSeconds - seconds)).toBeLessThan(0.05);
    expect(Math.abs((await measureLoudness(out, { ffmpeg: tools.ffmpeg })).integrated + 16)).toBeLessThan(0.5);
    // Level-independent: the pause relative to the whole file drops once the hiss is removed.
    const relative = async (p: string) => (await pauseDb(p)) - (await measureLoudness(p, { ffmpeg: tools.ffmpeg })).integrated;
    expect(await relative(out)).toBeLessThan((await relative(path)) - 6);
  }, 300_000);

  it('a Shorten-compressed .sph upload (pcm,embedded-shorten-v2.00) is enhanced too', async () => {
    const { url } = await uploadSph('shorten');
    const done = await enhance(url, { normalize: true });
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    const out = await download(done.data.output, 'enhanced-shorten');
    const info = await probeMedia(out, { ffprobe: tools.ffprobe });
    expect(info.hasAudio).toBe(true);
    expect(info.codec).toMatch(/^pcm_/); // Shorten is lossless: WAV out, not MP3
    expect(Math.abs(info.durationSeconds - seconds)).toBeLessThan(0.1);
    expect(Math.abs((await measureLoudness(out, { ffmpeg: tools.ffmpeg })).integrated + 16)).toBeLessThan(0.5);
  }, 300_000);
});
