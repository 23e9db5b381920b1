import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
// A stem the built-in engine finds nowhere fails its task: the song has drums, bass and vocals it finds.
import { separableSongSource } from '../helpers/separable-song.js';

/** The user-facing commands of the `soundry` bin, run as a user would, against a real server. */
const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const tools = resolveMediaTools({ preferSystem: true });
let app: TestApp;
let key: string;
let song: string;
let site: Server;
let siteUrl: string;
const ARTICLE = [
  'Bees pollinate most flowering plants, and many of the crops people eat depend on them. A single colony can hold fifty thousand bees in summer.',
  'Beekeepers move hives to orchards in spring, when apple and cherry trees bloom. Growers pay for the visits because the harvest depends on them.',
  'Winter losses have grown in many countries over the last twenty years. Researchers study mites, viruses, pesticides and weather as causes.',
  'Wild bees matter as much as honey bees. Hedges, meadows and fewer mown verges give them food and places to nest.',
  'Some cities now keep hives on rooftops. Their honey tastes of the parks and street trees around them.',
];
const PAGE = `<!doctype html><html lang="en"><head><title>Bees and orchards</title></head><body><nav>Home | About</nav>
<article><h1>Bees and orchards</h1>${ARTICLE.map((p) => `<p>${p}</p>`).join('')}</article><footer>(c) Example</footer></body></html>`;

async function soundry(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: any; err: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(root, 'bin/soundry.js'), ...args], {
      cwd: app.dataDir,
      env: { ...process.env, SOUNDRY_URL: app.baseUrl, SOUNDRY_API_KEY: key, LOG_LEVEL: 'silent', ...env },
    });
    return { code: 0, out: JSON.parse(stdout.trim()), err: stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, out: err.stdout, err: err.stderr };
  }
}

const seconds = async (path: string) => {
  const a = await decodeAudio(path, { ffmpeg: tools.ffmpeg });
  return a.channels[0]!.length / a.sampleRate;
};

beforeAll(async () => {
  // The article is served on 127.0.0.1: this server allows private addresses, as an intranet one would.
  app = await startTestApp({ WORKER_THREADS: '2', ALLOW_PRIVATE_URLS: '1' });
  site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE));
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  siteUrl = `http://127.0.0.1:${(site.address() as { port: number }).port}/bees.html`;
  ({ key } = await app.newKey({ credits: 1000 }));
  song = join(app.dataDir, 'song.wav');
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', separableSongSource(3), '-ac', '2', '-c:a', 'pcm_s16le', song]);
});
afterAll(async () => {
  site?.close();
  await app?.close();
});

describe('soundry client commands', () => {
  it('tts writes an mp3 and prints its path', async () => {
    const r = await soundry(['tts', 'Hello from the command line.', '-o', 'hello.mp3']);
    expect(r.code, r.err).toBe(0);
    expect(r.out.file).toBe('hello.mp3');
    // The engine that spoke is printed; engine_note only when a neural voice was asked for and could not be had.
    expect(r.out.engine).toBe('espeak');
    expect(r.out).not.toHaveProperty('engine_note');
    expect(await seconds(join(app.dataDir, 'hello.mp3'))).toBeGreaterThan(0.5);
  }, 60_000);

  it('separate writes one file per stem; enhance writes the enhanced file', async () => {
    const s = await soundry(['separate', song, '--model', '501', '-o', 'stems/']);
    expect(s.code, s.err).toBe(0);
    expect((await readdir(join(app.dataDir, 'stems'))).sort()).toEqual(['bass.mp3', 'drums.mp3', 'other.mp3', 'vocals.mp3']);
    // The built-in engine's per-stem notes are printed as the API gives them (the same input separated again).
    expect(s.out.engine).toBe('builtin-dsp');
    const up = new FormData();
    up.append('file', new Blob([new Uint8Array(await readFile(song))]), 'song.wav');
    const url = ((await (await fetch(`${app.baseUrl}/audio/api/v1/api-keys/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: up })).json()) as any).data.url;
    const created = await app.post('/audio/api/v1/api-keys/separation/task/create', { model_type: 501, inputurl: url }, key);
    const api = await app.waitTask('/audio/api/v1/api-keys/separation/task/get', 'job_id', created.json.data.job_id, key, 120_000);
    expect(s.out.stem_notes).toEqual(api.data.stem_notes);
    expect(s.out.engine_note).toEqual(api.data.engine_note);
    const e = await soundry(['enhance', song, '--remove-noise', '--normalize', '-o', 'clean.wav']);
    expect(e.code, e.err).toBe(0);
    expect(e.out.stages).toEqual(expect.arrayContaining(['normalize']));
    // Why each stage ran (or what stood in for a neural one), as the API's result says it.
    expect(typeof e.out.reasons?.normalize).toBe('string');
    expect(Math.abs((await seconds(join(app.dataDir, 'clean.wav'))) - 3)).toBeLessThan(0.1);
  }, 180_000);

  it('enhance without -o names the file with the result\'s extension, not the input\'s', async () => {
    // Found from outside: `enhance x.ogg` wrote x.enhanced.ogg holding MP3, a file without extension x.enhanced.wav holding MP3.
    await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-i', song, '-c:a', 'libvorbis', join(app.dataDir, 'take one.ogg')]);
    const e = await soundry(['enhance', 'take one.ogg', '--normalize']);
    expect(e.code, e.err).toBe(0);
    expect(e.out.file).toBe('take one.enhanced.mp3');
    expect((await readFile(join(app.dataDir, 'take one.enhanced.mp3'))).subarray(0, 3).toString('latin1')).toMatch(/^(ID3|\xff)/);
    const w = await soundry(['enhance', song, '--normalize']);
    expect(w.out.file).toBe('song.enhanced.wav');
  }, 120_000);

  it('podcast runs both steps from pasted text', async () => {
    const text = 'Bees pollinate most flowering plants. A colony can hold fifty thousand bees in summer. Beekeepers move hives to orchards in spring. Losses in winter have grown in many countries, and researchers study mites and weather as causes.';
    const r = await soundry(['podcast', '--text', text, '--duration', '1', '--language', 'en', '-o', 'episode.mp3']);
    expect(r.code, r.err).toBe(0);
    expect(r.out.title).toBeTruthy();
    expect(r.out.script_engine).toBeTruthy();
    expect(await seconds(join(app.dataDir, 'episode.mp3'))).toBeGreaterThan(5);
  }, 240_000);

  it('podcast runs both steps from a web page URL', async () => {
    const r = await soundry(['podcast', siteUrl, '--duration', '1', '-o', 'web-episode.mp3']);
    expect(r.code, r.err).toBe(0);
    expect(await seconds(join(app.dataDir, 'web-episode.mp3'))).toBeGreaterThan(5);
  }, 240_000);

  it('fails with a clear message and an exit code a script can test', async () => {
    const bad = await soundry(['tts', 'x', '--voice', '1'], { SOUNDRY_API_KEY: 'sk_wrong' });
    expect(bad.code).toBe(3);
    expect(bad.err).toMatch(/Invalid API key \(code 101002\).*SOUNDRY_API_KEY.*DATA_DIR/);
    const missing = await soundry(['separate', 'no-such-song.mp3']);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('No such file: no-such-song.mp3');
    const noKey = await soundry(['tts', 'x'], { SOUNDRY_API_KEY: '' });
    expect(noKey.code).toBe(2);
    expect(noKey.err).toContain('SOUNDRY_API_KEY');
    const down = await soundry(['tts', 'x'], { SOUNDRY_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(5);
    expect(down.err).toContain('Cannot reach http://127.0.0.1:9');
    // An output that cannot be written is refused before any task is created (and charged).
    const tasksBefore = (await app.container.tasks.list({ limit: 10_000 })).length;
    const folder = await soundry(['tts', 'x', '-o', '.']);
    expect(folder.code).toBe(2);
    expect(folder.err).toContain('The output . is a folder: give a file name with -o');
    const file = await soundry(['separate', song, '-o', song]);
    expect(file.code).toBe(2);
    expect(file.err).toContain(`The output ${song} is a file: give a folder for the stems with -o`);
    expect((await soundry(['tts', 'x', '-o', ''])).err).toContain('The output path is empty');
    expect((await app.container.tasks.list({ limit: 10_000 })).length).toBe(tasksBefore);
  }, 60_000);

  it('keeps the admin commands, and they say which database they use', async () => {
    const r = await soundry(['keys', 'create', '--credits', '5'], { DATA_DIR: app.dataDir });
    expect(r.code, r.err).toBe(0);
    expect(r.out.api_key).toMatch(/^sk_/);
    expect(r.err).toContain(`using the database SQLite ${join(app.dataDir, 'soundry.db')}`);
    expect(r.err).not.toContain('there is no database');
    // A DATA_DIR without a database (a typo) is said to make a new, empty one.
    const typo = join(app.dataDir, 'typo');
    const t = await soundry(['tasks', 'list'], { DATA_DIR: typo });
    expect(t.err).toContain(`there is no database at ${join(typo, 'soundry.db')} yet: this command creates a new, empty one`);
  }, 60_000);
});
