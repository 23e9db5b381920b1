import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/** The built-in engine's per-stem honesty reaches the API: a stem it could not find is silent and `stem_notes` says so. */
const run = promisify(execFile);
const API = '/audio/api/v1/api-keys';
const tools = resolveMediaTools({ preferSystem: true });

let app: TestApp;
let key: string;
let songUrl: string;

beforeAll(async () => {
  app = await startTestApp({ WORKER_THREADS: '1', SEPARATION_ENGINE: 'builtin' });
  ({ key } = await app.newKey({ credits: 1000 }));
  // Two steady tones: nothing percussive anywhere.
  const song = join(app.dataDir, 'tones.wav');
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'aevalsrc=0.3*sin(2*PI*220*t)+0.2*sin(2*PI*330*t)|0.3*sin(2*PI*220*t)+0.2*sin(2*PI*277*t):s=44100:d=5', '-c:a', 'pcm_s16le', song]);
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await readFile(song))]), 'tones.wav');
  const up = (await (await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any;
  songUrl = up.data.url;
}, 60_000);

afterAll(async () => {
  await app?.close();
});

describe('separation stem_notes', () => {
  it('340 on a mix without drums: the drums stem file is silent and stem_notes.drums says the instrument was not found', async () => {
    const created = await app.post(`${API}/separation/task/create`, { model_type: 340, inputurl: songUrl, output_format: 'wav' }, key);
    expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
    const done = await app.waitTask(`${API}/separation/task/get`, 'job_id', created.json.data.job_id, key, 120_000);
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.engine).toBe('builtin-dsp');
    expect(done.data.stem_notes?.drums).toMatch(/could not find this instrument/);
    const peak = async (stem: string) => {
      const file = join(app.dataDir, `${stem}.wav`);
      await writeFile(file, Buffer.from(await (await fetch(done.data.output[stem])).arrayBuffer()));
      const audio = await decodeAudio(file, { ffmpeg: tools.ffmpeg, sampleRate: 44100, channels: 2 });
      expect(audio.channels[0]!.length).toBeGreaterThan(4 * 44100);
      return Math.max(...audio.channels.map((c) => c.reduce((m, x) => Math.max(m, Math.abs(x)), 0)));
    };
    expect(Object.keys(done.data.output)).toEqual(['drums']);
    expect(await peak('drums')).toBeLessThan(1e-4);
  }, 180_000);
});
