import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMediaTools } from '../../src/media/ffmpeg.js';
import { servingModels, unfoundStemsMessage } from '../../src/engines/separation/remedy.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { makeSeparableSong } from '../helpers/separable-song.js';

/**
 * The built-in engine's per-stem honesty reaches the API. A stem it found but doubts comes back turned down, with
 * `stem_notes` saying so, and is charged; a stem it found nowhere is silence, not a result: with no model installed
 * that serves the model type, the task fails uncharged (its hold released) with a message naming what would serve it,
 * and the server log gets a warning.
 */
const run = promisify(execFile);
const API = '/audio/api/v1/api-keys';
const tools = resolveMediaTools({ preferSystem: true });

let app: TestApp;
const logLines: any[] = [];
let tonesUrl: string;
let songUrl: string;

async function upload(key: string, path: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await readFile(path))]), path.split('/').pop()!);
  const up = (await (await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any;
  return up.data.url;
}

async function separate(key: string, body: Record<string, unknown>) {
  const created = await app.post(`${API}/separation/task/create`, body, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  const id: string = created.json.data.job_id;
  return { id, ...(await app.waitTask(`${API}/separation/task/get`, 'job_id', id, key, 120_000)) };
}

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) logLines.push(JSON.parse(line));
      done();
    },
  });
  // No model installed and no auto-pull (the test default): only the built-in engine can run.
  app = await startTestApp({ WORKER_THREADS: '1' }, { logger: pino({ level: 'info' }, sink) });
  const { key } = await app.newKey({ credits: 1000 });
  // Two steady tones: nothing percussive, nothing centred that moves.
  const tones = join(app.dataDir, 'tones.wav');
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'aevalsrc=0.3*sin(2*PI*220*t)+0.2*sin(2*PI*330*t)|0.3*sin(2*PI*220*t)+0.2*sin(2*PI*277*t):s=44100:d=5', '-c:a', 'pcm_s16le', tones]);
  tonesUrl = await upload(key, tones);
  songUrl = await upload(key, await makeSeparableSong(tools.ffmpeg, join(app.dataDir, 'song.wav'), 5));
}, 60_000);

afterAll(async () => {
  await app?.close();
});

const funds = async (accountId: string) => {
  const a = (await app.container.accounts.getAccount(accountId))!;
  return { balance: a.balance, held: a.held };
};

describe('separation stems the built-in engine doubts or does not find', () => {
  it('340 on a mix with drums: found but doubted, the stem is returned with its stem_notes and charged', async () => {
    const { key, accountId } = await app.newKey({ credits: 10 });
    const done = await separate(key, { model_type: 340, inputurl: songUrl, output_format: 'wav' });
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.engine).toBe('builtin-dsp');
    expect(Object.keys(done.data.output)).toEqual(['drums']);
    expect(done.data.stem_notes?.drums).toMatch(/unsure of this stem: turned down by up to 12\.0 dB/);
    expect(done.data.credits).toBe(1);
    expect(await funds(accountId)).toEqual({ balance: 9, held: 0 });
  }, 180_000);

  it('350 on a mix without vocals: fails uncharged, naming the model an operator can pull, and warns in the log', async () => {
    const { key, accountId } = await app.newKey({ credits: 10 });
    const done = await separate(key, { model_type: 350, inputurl: tonesUrl, output_format: 'wav' });
    expect(done.data.status, JSON.stringify(done)).toBe('failed');
    const models = servingModels(350);
    expect(models.length).toBeGreaterThan(0);
    expect(done.data.error).toBe(unfoundStemsMessage(350, ['vocals'], { cause: 'not-installed', models }));
    expect(done.data.error).toMatch(/^The built-in engine could not find vocals in this input, .*; nothing was charged\. An operator can install one with `soundry models pull [^`]+`/);
    expect(done.data.output).toEqual({});
    expect(done.data.credits).toBeUndefined();
    expect(await funds(accountId)).toEqual({ balance: 10, held: 0 });
    const warned = logLines.find((l) => l.level === 40 && l.taskId === done.id && /found requested stems nowhere/.test(l.msg));
    expect(warned, JSON.stringify(logLines.filter((l) => l.level >= 40))).toBeDefined();
    expect(warned.unfound).toEqual(['vocals']);
    expect(warned.remedy).toMatchObject({ cause: 'not-installed', models });
  }, 180_000);

  it('380 on a mix without piano, asked for the accompaniment: fails uncharged too (the result would be the input again)', async () => {
    const { key, accountId } = await app.newKey({ credits: 10 });
    const done = await separate(key, { model_type: 380, inputurl: tonesUrl, separation_type: 'accompaniment' });
    expect(done.data.status, JSON.stringify(done)).toBe('failed');
    const models = servingModels(380);
    expect(done.data.error).toBe(unfoundStemsMessage(380, ['piano'], { cause: models.length ? 'not-installed' : 'none', models }));
    expect(await funds(accountId)).toEqual({ balance: 10, held: 0 });
  }, 180_000);
});
