import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { Soundry, SoundryError, type ProgressEvent } from '../../src/sdk/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
// A stem the built-in engine finds nowhere fails its task: the song has drums, bass and vocals it finds.
import { separableSongSource } from '../helpers/separable-song.js';

/** The SDK against a real server: uploads, waits with progress, downloads real files that ffmpeg decodes. */
const run = promisify(execFile);
const tools = resolveMediaTools({ preferSystem: true });
let app: TestApp;
let client: Soundry;
let song: string;

const ARTICLE = `Solar power is the conversion of energy from sunlight into electricity. Photovoltaic cells convert light into an electric current.
The cost of solar electricity has fallen by more than eighty percent in a decade. Solar panels are now the cheapest source of new electricity in many countries.
Critics point out that solar output varies with weather and season, so grids need flexible backup. Engineers answer with storage and long-distance transmission.`;

beforeAll(async () => {
  app = await startTestApp({ WORKER_THREADS: '2' });
  const { key } = await app.newKey({ credits: 1000 });
  client = new Soundry({ baseUrl: app.baseUrl, apiKey: key });
  song = join(app.dataDir, 'song.wav');
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', separableSongSource(4), '-c:a', 'pcm_s16le', song]);
});
afterAll(async () => app?.close());

const seconds = async (path: string) => {
  const a = await decodeAudio(path, { ffmpeg: tools.ffmpeg });
  return a.channels[0]!.length / a.sampleRate;
};

describe('SDK against a real server', () => {
  it('tts: create, wait with progress, download a decodable mp3', async () => {
    const [voice] = await client.tts.voices({ language: 'en' });
    expect(voice).toBeDefined();
    const events: ProgressEvent[] = [];
    const out = join(app.dataDir, 'out', 'hello.mp3');
    const { data, file } = await client.tts.run({ voice_id: voice!.id, emotion: 0, speed: 1, language: 'en', text: 'Hello from the client.' }, out, { onProgress: (e) => events.push(e), pollIntervalMs: 100 });
    expect(data.status).toBe('success');
    expect(file).toBe(out);
    expect(await seconds(out)).toBeGreaterThan(0.5);
    expect(events.some((e) => e.phase === 'wait' && e.done === 1)).toBe(true);
    expect(events.some((e) => e.phase === 'download' && e.done > 0)).toBe(true);
    // The lower-level calls give the same task back.
    const id = await client.tts.create({ voice_id: voice!.id, emotion: 0, speed: 1, language: 'en', text: 'Twice.' });
    expect((await client.tts.wait(id, { pollIntervalMs: 100 })).output).toMatch(/^http/);
  });

  it('separation.run uploads a local file and downloads every stem of model 501', async () => {
    const dir = join(app.dataDir, 'stems');
    const phases = new Set<string>();
    const { files, data } = await client.separation.run(song, { modelType: 501, outputDir: dir, format: 'wav', pollIntervalMs: 100, onProgress: (e) => phases.add(e.phase) });
    expect(Object.keys(files).sort()).toEqual(['bass', 'drums', 'other', 'vocals']);
    expect((await readdir(dir)).sort()).toEqual(['bass.wav', 'drums.wav', 'other.wav', 'vocals.wav']);
    expect(Math.abs((await seconds(files.vocals!)) - 4)).toBeLessThan(0.1);
    expect(data.credits).toBe(1);
    expect([...phases].sort()).toEqual(['download', 'upload', 'wait']);
  }, 180_000);

  it('enhance.run writes the enhanced file', async () => {
    const out = join(app.dataDir, 'enhanced.wav');
    const { data, file } = await client.enhance.run(song, { flags: ['normalize'], output: out, pollIntervalMs: 100 });
    expect(data.stages).toContain('normalize');
    expect(Math.abs((await seconds(file)) - 4)).toBeLessThan(0.1);
  }, 180_000);

  it('podcast.run does both steps from pasted text', async () => {
    const out = join(app.dataDir, 'episode.mp3');
    const { script, episode, file } = await client.podcast.run({ text: ARTICLE }, { output: out, duration: 1, language: 'en', pollIntervalMs: 200 });
    expect(script.podcast_script.length).toBeGreaterThan(1);
    expect(episode.status).toBe('success');
    expect(episode.file_url).toMatch(/^http/);
    expect(await seconds(file)).toBeGreaterThan(5);
  }, 240_000);

  it('says why: a bad key is an api error with 101002, a missing file an input error, a dead server a network error', async () => {
    const bad = new Soundry({ baseUrl: app.baseUrl, apiKey: 'sk_nope' });
    const refused = await bad.tts.create({ voice_id: 1, emotion: 0, speed: 1, language: 'en', text: 'x' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SoundryError);
    expect(refused).toMatchObject({ kind: 'api', code: 101002, message: expect.stringContaining('Invalid API key') });
    await expect(client.separation.run(join(app.dataDir, 'missing.wav'), { modelType: 501, outputDir: app.dataDir })).rejects.toMatchObject({ kind: 'input', message: `No such file: ${join(app.dataDir, 'missing.wav')}` });
    const dead = new Soundry({ baseUrl: 'http://127.0.0.1:9', apiKey: 'sk_x' });
    await expect(dead.tts.get('x')).rejects.toMatchObject({ kind: 'network' });
    // A failed task throws with the server's reason, which names the setting that would allow it.
    await expect(client.enhance.run('http://127.0.0.1:9/nothing.wav', { flags: [], output: join(app.dataDir, 'never.wav'), pollIntervalMs: 100 })).rejects.toMatchObject({
      kind: 'task_failed',
      message: expect.stringMatching(/private, local or reserved network address.*ALLOW_PRIVATE_URLS=1/),
    });
  }, 60_000);

  it('a 2-minute WAV over the spec\'s 10 MB enhancement limit is refused at its upload, saying what to send instead', async () => {
    const wav = join(app.dataDir, 'two-minutes.wav');
    await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'sine=f=220:d=120:sample_rate=44100', '-ac', '2', '-c:a', 'pcm_s16le', wav]);
    // It used to be uploaded whole and fail as a task; the upload names its kind now (test/http/upload-kind-limit.test.ts).
    await expect(client.enhance.run(wav, { flags: ['normalize'], output: join(app.dataDir, 'never.wav'), pollIntervalMs: 100 })).rejects.toMatchObject({
      kind: 'api',
      code: 100413,
      task: null,
      message: expect.stringMatching(/declares \d+ bytes; enhance input files may be at most 10485760 bytes \(ENHANCE_MAX_BYTES\); send a compressed format \(MP3, Opus, FLAC.*ENHANCE_MAX_BYTES/),
    });
  }, 60_000);
});
