import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { measureLoudness } from '../../src/media/loudnorm.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const run = promisify(execFile);
const API = '/audio/api/v1/api-keys';
const tools = resolveMediaTools({ preferSystem: true });
let app: TestApp;
let dir: string;

function rms(x: Float32Array, from: number, to: number): number {
  let s = 0;
  for (let i = from; i < to; i++) s += x[i]! * x[i]!;
  return Math.sqrt(s / Math.max(1, to - from));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-music-'));
  const music = join(dir, 'bed.mp3');
  // A 5 s chord loop: shorter than the episode, so looping is exercised.
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'aevalsrc=0.2*sin(2*PI*220*t)+0.2*sin(2*PI*277*t)+0.2*sin(2*PI*330*t):s=44100:d=5', music]);
  app = await startTestApp({ PODCAST_MUSIC_FILE: music, WORKER_THREADS: '2' });
});
afterAll(async () => {
  await app?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('podcast music bed', () => {
  it('plays music alone before the first line, and lines start after the intro', async () => {
    const { key } = await app.newKey({ credits: 100 });
    const text = 'Music beds make a show feel finished. The host speaks over a quiet loop. When nobody speaks, the music comes back up. Listeners notice the difference.';
    const created = await app.post(`${API}/podcast/script/create`, { source_type: 4, text, duration: 1, language: 'en' }, key);
    const s = await app.waitTask(`${API}/podcast/script/get`, 'global_id', created.json.data.global_id, key, 120_000);
    expect(s.data.status).toBe('success');
    const audio = await app.post(`${API}/podcast/audio/create`, { podcast_script: s.data.podcast_script, hightlights: s.data.hightlights, global_id: s.data.global_id }, key);
    const a = await app.waitTask(`${API}/podcast/audio/get`, 'global_id', audio.json.data.global_id, key, 180_000);
    expect(a.data.status, JSON.stringify(a)).toBe('success');
    const file = join(dir, 'ep.mp3');
    await writeFile(file, Buffer.from(await (await fetch(a.data.file_url)).arrayBuffer()));
    const ep = await decodeAudio(file, { ffmpeg: tools.ffmpeg });
    const x = ep.channels[0]!;
    const sr = ep.sampleRate;
    expect(x.length / sr).toBeCloseTo(a.data.duration, 0);
    // Intro: music is there before the first line (which starts at 4 s).
    expect(rms(x, Math.round(1.5 * sr), Math.round(3.5 * sr))).toBeGreaterThan(0.01);
    expect(a.data.hightlights.every((h: any) => h.start_time >= 4)).toBe(true);
    // Music and voices together still land on the target and under the true-peak ceiling, as a listener's
    // meter (ebur128 with true peak, on the MP3) reads them.
    const loud = await measureLoudness(file, { ffmpeg: tools.ffmpeg });
    expect(Math.abs(loud.integrated + 16)).toBeLessThanOrEqual(0.5);
    expect(loud.truePeak).toBeLessThanOrEqual(-1.5);
  }, 300_000);
});
