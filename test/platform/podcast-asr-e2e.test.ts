import { execFile } from 'node:child_process';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMediaTools } from '../../src/media/ffmpeg.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { TINY_TRANSCRIPT, writeTinyWhisper } from '../fixtures/whisper-fixture.js';
import { pinFolder, writeCatalogFile } from '../fixtures/pinned-catalog.js';
import { checkModel } from '../../src/models/installed.js';
import { loadCatalog } from '../../src/models/catalog-file.js';

/**
 * Audio and video podcast sources through the HTTP API: a local server serves recordings made with
 * ffmpeg, the tiny Whisper (test/fixtures/whisper-fixture.ts) is installed in MODELS_DIR and "hears"
 * a known transcript, and the script is built from it. Without a model the task fails, naming the
 * command that installs one, and charges nothing.
 */

const API = '/audio/api/v1/api-keys';
const run = promisify(execFile);
const tools = resolveMediaTools({ preferSystem: true });

let dir: string;
let server: Server;
let base: string;
const files = new Map<string, { body: Buffer; type: string }>();

async function make(name: string, type: string, args: string[]): Promise<void> {
  const path = join(dir, name);
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', ...args, path]);
  files.set(`/${name}`, { body: await readFile(path), type });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-asr-e2e-'));
  await make('lighthouse-stories.mp3', 'audio/mpeg', ['-f', 'lavfi', '-i', 'sine=frequency=300:duration=12', '-b:a', '48k']);
  await make('harbour-notes.wav', 'audio/wav', ['-f', 'lavfi', '-i', 'sine=frequency=500:duration=5', '-c:a', 'pcm_s16le']);
  await make('clip.mp4', 'video/mp4', ['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10:duration=3', '-f', 'lavfi', '-i', 'sine=frequency=300:duration=3', '-shortest', '-c:v', 'mpeg4', '-c:a', 'aac']);
  await make('long-talk.mp3', 'audio/mpeg', ['-f', 'lavfi', '-i', 'sine=frequency=200:duration=40', '-b:a', '32k']);
  server = createServer((req, res) => {
    const f = files.get(req.url ?? '');
    if (!f) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': f.type, 'content-length': f.body.length }).end(f.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}, 60_000);
afterAll(async () => {
  server?.close();
  await rm(dir, { recursive: true, force: true });
});

async function scriptTask(app: TestApp, body: Record<string, unknown>) {
  const { key, accountId } = await app.newKey({ credits: 100 });
  const created = await app.post(`${API}/podcast/script/create`, { duration: 1, ...body }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  const done = await app.waitTask(`${API}/podcast/script/get`, 'global_id', created.json.data.global_id, key, 120_000);
  const balance = (await app.container.accounts.getAccount(accountId))!.balance;
  return { done, balance };
}

describe('audio/video podcast sources with a speech recognition model installed', () => {
  let app: TestApp;
  let models: string;
  beforeAll(async () => {
    models = join(dir, 'models');
    await writeTinyWhisper(join(models, 'whisper-tiny'));
    // The stand-in is not the published whisper-tiny: a site catalog pins its bytes, as for any other model.
    const catalog = await writeCatalogFile(join(dir, 'asr-catalog.json'), [pinFolder(models, 'whisper-tiny', 'asr')]);
    app = await startTestApp({ ALLOW_PRIVATE_URLS: '1', MODELS_DIR: models, MODELS_CATALOG_FILE: catalog, ASR_MAX_SECONDS: '20' });
  }, 60_000);
  afterAll(async () => app?.close());

  it('source_type 2 with a direct mp3 link: transcribed, titled from the file name, language detected, script from the transcript', async () => {
    const { done: s } = await scriptTask(app, { source_type: 2, url: `${base}/lighthouse-stories.mp3` });
    expect(s.data.status, JSON.stringify(s)).toBe('success');
    expect(s.data.title).toMatch(/lighthouse stories/i);
    expect(s.data.language).toBe('en');
    expect(s.data.podcast_script_txt).toMatch(/Fresnel|keepers|solar|lighthouse/i);
    expect(TINY_TRANSCRIPT).toMatch(/Fresnel/);
  }, 150_000);

  it('source_type 3 with a recording as the attachment (wav) and a video link (mp4) are transcribed too', async () => {
    const a = await scriptTask(app, { source_type: 3, url: `${base}/harbour-notes.wav`, language: 'en' });
    expect(a.done.data.status, JSON.stringify(a.done)).toBe('success');
    expect(a.done.data.title).toMatch(/harbour notes/i);
    const v = await scriptTask(app, { source_type: 2, url: `${base}/clip.mp4`, language: 'en' });
    expect(v.done.data.status, JSON.stringify(v.done)).toBe('success');
    expect(v.done.data.podcast_script_txt).toMatch(/Fresnel|keepers|solar|lighthouse/i);
  }, 200_000);

  it('refuses a recording over ASR_MAX_SECONDS before transcribing it', async () => {
    const { done: s, balance } = await scriptTask(app, { source_type: 2, url: `${base}/long-talk.mp3` });
    expect(s.data.status).toBe('failed');
    expect(s.data.error).toMatch(/limit is 20 s/);
    expect(balance).toBe(100);
  }, 150_000);
});

describe('audio/video podcast sources without a verified speech recognition model', () => {
  let app: TestApp;
  beforeAll(async () => {
    // A whisper-tiny folder is there, but its files are not the catalog's (as a clone without git-lfs would be):
    // not installed, so never loaded.
    await writeTinyWhisper(join(dir, 'no-models', 'whisper-tiny'));
    app = await startTestApp({ ALLOW_PRIVATE_URLS: '1', MODELS_DIR: join(dir, 'no-models') });
  }, 60_000);
  afterAll(async () => app?.close());

  it('fails with a message naming the install command, and charges nothing', async () => {
    const { done: s, balance } = await scriptTask(app, { source_type: 2, url: `${base}/lighthouse-stories.mp3` });
    expect(s.data.status).toBe('failed');
    expect(s.data.error).toMatch(/speech recognition model/);
    expect(s.data.error).toMatch(/whisper-tiny\/config\.json: \d+ bytes, expected 2248 bytes/);
    expect(s.data.error).toContain('models pull whisper-tiny');
    expect(balance).toBe(100);
  }, 150_000);
});

describe('MODELS_AUTO_PULL: the first audio source downloads the speech recognition model from the mirror', () => {
  let app: TestApp;
  let models: string;
  let catalogFile: string;
  let mirrorHits: string[];
  beforeAll(async () => {
    // The mirror (MODELS_BASE_URL) serves a stand-in whisper-tiny at <base>/<model>/<path>; the catalog pins its bytes.
    const src = join(dir, 'mirror-src');
    await writeTinyWhisper(join(src, 'whisper-tiny'));
    const entry = pinFolder(src, 'whisper-tiny', 'asr');
    for (const f of entry.files) files.set(`/mirror/whisper-tiny/${f.path}`, { body: await readFile(join(src, 'whisper-tiny', f.path)), type: 'application/octet-stream' });
    catalogFile = await writeCatalogFile(join(dir, 'pull-catalog.json'), [entry]);
    mirrorHits = [];
    server.on('request', (req) => req.url?.startsWith('/mirror/') && mirrorHits.push(req.url));
    models = join(dir, 'pulled-models');
    app = await startTestApp({
      ALLOW_PRIVATE_URLS: '1', MODELS_DIR: models, MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'true', MODELS_BASE_URL: `${base}/mirror`, ASR_MAX_SECONDS: '20',
    });
  }, 60_000);
  afterAll(async () => app?.close());

  it('downloads, verifies and installs whisper-tiny, then transcribes with it; the next task downloads nothing', async () => {
    const { done: s } = await scriptTask(app, { source_type: 2, url: `${base}/lighthouse-stories.mp3` });
    expect(s.data.status, JSON.stringify(s)).toBe('success');
    expect(s.data.podcast_script_txt).toMatch(/Fresnel|keepers|solar|lighthouse/i);
    expect(mirrorHits.filter((u) => u.endsWith('.onnx')).length).toBe(2);
    const check = await checkModel(models, loadCatalog(catalogFile).find((e) => e.name === 'whisper-tiny')!);
    expect(check.state).toBe('installed');
    const before = mirrorHits.length;
    const again = await scriptTask(app, { source_type: 3, url: `${base}/harbour-notes.wav`, language: 'en' });
    expect(again.done.data.status, JSON.stringify(again.done)).toBe('success');
    expect(mirrorHits.length).toBe(before);
  }, 200_000);
});

describe('MODELS_AUTO_PULL with a mirror that does not have the model', () => {
  let app: TestApp;
  beforeAll(async () => {
    const catalogFile = join(dir, 'pull-catalog.json');
    app = await startTestApp({
      ALLOW_PRIVATE_URLS: '1', MODELS_DIR: join(dir, 'unpulled-models'), MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'true', MODELS_BASE_URL: `${base}/empty-mirror`,
    });
  }, 60_000);
  afterAll(async () => app?.close());

  it('fails the task with why the download failed and how to install, charges nothing, and installs nothing', async () => {
    const { done: s, balance } = await scriptTask(app, { source_type: 2, url: `${base}/lighthouse-stories.mp3` });
    expect(s.data.status).toBe('failed');
    expect(s.data.error).toMatch(/whisper-tiny could not be installed: .*404/);
    expect(s.data.error).toContain('models pull whisper-tiny');
    expect(balance).toBe(100);
  }, 150_000);
});
