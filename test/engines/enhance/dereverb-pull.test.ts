import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enhanceThread, type EnhanceThreadInput } from '../../../src/kinds/enhance/thread.js';
import { resolveMediaTools } from '../../../src/media/ffmpeg.js';
import type { ModelEntry } from '../../../src/models/catalog.js';

/**
 * The learned dereverberation as a task gets it, through the engine thread's entry with MODELS_AUTO_PULL: a local
 * mirror serves the small seeded RoFormer of the reference golden (test/fixtures/golden/dereverb_roformer) under a
 * catalog entry pinned to its sha256, so the real download, verification and stage run. What is checked is the policy:
 * remove_reverb on short input downloads and runs it; remove_echo alone, input over ENHANCE_DEREVERB_CPU_MAX_SECONDS on
 * CPU, and ENHANCE_DEREVERB=wpe download nothing and run WPE; a failed download runs WPE and says why.
 */
const GOLDEN = join(import.meta.dirname, '..', '..', 'fixtures', 'golden', 'dereverb_roformer');
const NAME = 'test-dereverb';
const tools = resolveMediaTools({ preferSystem: true });

describe('learned dereverberation: downloaded on first use when it would run', () => {
  let dir: string;
  let server: Server;
  let base: string;
  let input: string;
  let catalog: ModelEntry[];
  const hits: string[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-dereverb-pull-'));
    const files = [];
    for (const f of ['model.ckpt', 'config.yaml']) {
      const body = await readFile(join(GOLDEN, f));
      files.push({ path: f, url: `https://example.invalid/${f}`, sizeBytes: (await stat(join(GOLDEN, f))).size, sha256: createHash('sha256').update(body).digest('hex') });
    }
    catalog = [{
      name: NAME, kind: 'enhance', description: 'seeded test RoFormer', license: 'test', files,
      meta: { engine: 'roformer-dereverb', architecture: 'mel_band_roformer', sampleRate: 44100, dryStem: 'noreverb', checkpointFile: 'model.ckpt', configFile: 'config.yaml' },
    }];
    server = createServer(async (req, res) => {
      hits.push(req.url ?? '');
      const m = /^\/mirror\/([^/]+)\/([^/]+)$/.exec(req.url ?? '');
      if (!m || m[1] !== NAME || !['model.ckpt', 'config.yaml'].includes(m[2]!)) return void res.writeHead(404).end();
      const body = await readFile(join(GOLDEN, m[2]!));
      res.writeHead(200, { 'content-length': body.length }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    input = join(dir, 'room.wav');
    // A voice-like tone with an echo-ish tail: enough for both engines to run on.
    await promisify(execFile)(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'sine=frequency=220:duration=3',
      '-af', 'aecho=0.8:0.7:120:0.5', '-ar', '16000', '-ac', '1', input]);
  }, 60_000);
  afterAll(async () => {
    server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const job = (modelsDir: string, out: string, over: Partial<EnhanceThreadInput> = {}): EnhanceThreadInput => ({
    inputPath: input, outPath: join(dir, out), format: 'wav', sampleRate: 16000, channels: 1, totalFrames: 48000,
    flags: ['remove_reverb'], modelsDir, ffmpeg: tools.ffmpeg, targetLufs: -16, dereverbCpuMaxSeconds: 300, ...over,
  });
  const ctx = () => ({ tmpDir: dir, signal: new AbortController().signal, onProgress: () => {} });
  const thread = (modelsDir: string, mirror = 'mirror') => enhanceThread({ modelsDir, separationEngine: 'builtin', autoPull: true, modelsBaseUrl: `${base}/${mirror}`, catalog });
  const downloads = () => hits.filter((h) => h.endsWith('.ckpt') || h.endsWith('.yaml')).length;

  it('remove_reverb on short input: the model is downloaded, verified and run, and named in engines and reasons', async () => {
    const modelsDir = join(dir, 'models-a');
    const out = await thread(modelsDir)(job(modelsDir, 'a.wav'), ctx());
    expect(out.engines).toContain(`roformer-dereverb:${NAME}`);
    expect(out.reasons.dereverb).toMatch(new RegExp(`remove_reverb; engine: ${NAME} \\(learned`));
    expect(hits).toContain(`/mirror/${NAME}/model.ckpt`);
    const before = downloads();
    await thread(modelsDir)(job(modelsDir, 'a2.wav'), ctx());
    expect(downloads()).toBe(before);
  }, 120_000);

  it('remove_echo alone, long input on CPU, and ENHANCE_DEREVERB=wpe: WPE, and nothing is downloaded', async () => {
    const modelsDir = join(dir, 'models-b');
    const before = downloads();
    const echo = await thread(modelsDir)(job(modelsDir, 'b.wav', { flags: ['remove_echo'] }), ctx());
    expect(echo.engines).toContain('wpe');
    expect(echo.reasons.dereverb).toMatch(/discrete echoes/);
    const long = await thread(modelsDir)(job(modelsDir, 'c.wav', { dereverbCpuMaxSeconds: 1 }), ctx());
    expect(long.engines).toContain('wpe');
    expect(long.reasons.dereverb).toMatch(/min for .* of audio/);
    const wpe = await thread(modelsDir)(job(modelsDir, 'd.wav', { dereverb: 'wpe' }), ctx());
    expect(wpe.engines).toContain('wpe');
    expect(wpe.reasons.dereverb).toMatch(/ENHANCE_DEREVERB=wpe/);
    expect(downloads()).toBe(before);
  }, 120_000);

  it('a mirror without the model: WPE runs and the reason says the download failed', async () => {
    const modelsDir = join(dir, 'models-c');
    const out = await thread(modelsDir, 'empty')(job(modelsDir, 'e.wav'), ctx());
    expect(out.engines).toContain('wpe');
    expect(out.reasons.dereverb).toMatch(/automatic download failed/);
  }, 120_000);
});
