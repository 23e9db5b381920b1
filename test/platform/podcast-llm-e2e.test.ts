import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { TINY_LLM, writeGguf } from '../fixtures/gguf-writer.js';
import { writeCatalogFile } from '../fixtures/pinned-catalog.js';
import { DEFAULT_LOCAL_LLM, LLM_MODELS } from '../../src/models/catalog-llm.js';
import { checkModel } from '../../src/models/installed.js';
import { loadCatalog } from '../../src/models/catalog-file.js';
import type { ModelEntry } from '../../src/models/catalog.js';

/**
 * The embedded language model over real HTTP, as `npm ci && npm start` runs it: no LLM_BASE_URL, MODELS_AUTO_PULL on,
 * a local mirror (MODELS_BASE_URL) standing in for the Hub. The mirror serves a tiny random-weight GGUF under the
 * default model's name; the site catalog (MODELS_CATALOG_FILE) pins its bytes in place of the real Qwen file's.
 */

const API = '/audio/api/v1/api-keys';
const FILE = LLM_MODELS[0]!.files[0]!.path;
const TEXT = 'Honey bees\n\nBees pollinate most flowering plants. A colony can hold fifty thousand bees in summer. Beekeepers move hives to orchards in spring.';

let dir: string;
let server: Server;
let base: string;
let good: Buffer;
let foreign: Buffer;
const served = new Map<string, Buffer>();
const hits: string[] = [];

/** The default model's catalog entry, pinned to `bytes` (what a site does for its own build of a model). */
function pinned(bytes: Buffer): ModelEntry {
  const entry = LLM_MODELS[0]!;
  return { ...entry, files: [{ path: FILE, url: entry.files[0]!.url, sizeBytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }] };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-llm-e2e-'));
  writeGguf(join(dir, 'good.gguf'), TINY_LLM);
  // Same size, other weights: a foreign file a broken mirror might serve under the right name.
  writeGguf(join(dir, 'foreign.gguf'), { ...TINY_LLM, seed: 8 });
  good = await readFile(join(dir, 'good.gguf'));
  foreign = await readFile(join(dir, 'foreign.gguf'));
  expect(foreign.length).toBe(good.length);
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    const body = served.get(req.url ?? '');
    if (!body) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  served.set(`/good/${DEFAULT_LOCAL_LLM}/${FILE}`, good);
  served.set(`/foreign/${DEFAULT_LOCAL_LLM}/${FILE}`, foreign);
}, 60_000);
afterAll(async () => {
  server?.close();
  await rm(dir, { recursive: true, force: true });
});

async function scriptTask(app: TestApp) {
  const { key } = await app.newKey({ credits: 100 });
  const created = await app.post(`${API}/podcast/script/create`, { source_type: 4, text: TEXT, duration: 1, language: 'en' }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  return app.waitTask(`${API}/podcast/script/get`, 'global_id', created.json.data.global_id, key, 150_000);
}

const llmEnv = { LLM_THREADS: '1', LLM_GPU: 'off' };

describe('no LLM_BASE_URL, MODELS_AUTO_PULL on: the first script pulls the local model and writes with it', () => {
  let app: TestApp;
  let models: string;
  let catalogFile: string;
  beforeAll(async () => {
    models = join(dir, 'models-good');
    catalogFile = await writeCatalogFile(join(dir, 'good-catalog.json'), [pinned(good)]);
    app = await startTestApp({ ...llmEnv, MODELS_DIR: models, MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'true', MODELS_BASE_URL: `${base}/good` });
  }, 60_000);
  afterAll(async () => app?.close());

  it('downloads and verifies the GGUF, and the result names the llama engine', async () => {
    const s = await scriptTask(app);
    expect(s.data.status, JSON.stringify(s)).toBe('success');
    expect(s.data.engine).toBe(`llama:${DEFAULT_LOCAL_LLM}`);
    expect(s.data.engine_note).toBeUndefined();
    expect(s.data.podcast_script.length).toBeGreaterThanOrEqual(1);
    for (const line of s.data.podcast_script as Array<{ role: string; voice_id: string; text: string }>) {
      expect(['A', 'B']).toContain(line.role);
      expect(line.voice_id).toMatch(/^\d+$/);
      expect(line.text.trim()).not.toBe('');
    }
    expect(hits.filter((u) => u.startsWith('/good/')).length).toBe(1);
    const check = await checkModel(models, loadCatalog(catalogFile).find((e) => e.name === DEFAULT_LOCAL_LLM)!);
    expect(check.state).toBe('installed');
  }, 200_000);
});

describe('a foreign or corrupt model file is never used', () => {
  let app: TestApp;
  let models: string;
  afterAll(async () => app?.close());

  it('a mirror serving other bytes under the name: the download is refused, builtin writes the script and says why', async () => {
    models = join(dir, 'models-foreign');
    const catalogFile = await writeCatalogFile(join(dir, 'foreign-catalog.json'), [pinned(good)]);
    app = await startTestApp({ ...llmEnv, MODELS_DIR: models, MODELS_CATALOG_FILE: catalogFile, MODELS_AUTO_PULL: 'true', MODELS_BASE_URL: `${base}/foreign` });
    const s = await scriptTask(app);
    expect(s.data.status, JSON.stringify(s)).toBe('success');
    expect(s.data.engine).toBe('builtin');
    expect(s.data.engine_note).toMatch(new RegExp(`${DEFAULT_LOCAL_LLM} could not be installed: .*(checksum|sha256)`));
    expect(s.data.engine_note).toMatch(/built-in generator/);
    const check = await checkModel(models, loadCatalog(catalogFile).find((e) => e.name === DEFAULT_LOCAL_LLM)!);
    expect(check.state).not.toBe('installed');
  }, 200_000);

  it('a wrong file already in MODELS_DIR, auto-pull off: not loaded, and the note names the checksum mismatch', async () => {
    await app?.close();
    models = join(dir, 'models-corrupt');
    await mkdir(join(models, DEFAULT_LOCAL_LLM), { recursive: true });
    await writeFile(join(models, DEFAULT_LOCAL_LLM, FILE), foreign);
    const catalogFile = await writeCatalogFile(join(dir, 'corrupt-catalog.json'), [pinned(good)]);
    app = await startTestApp({ ...llmEnv, MODELS_DIR: models, MODELS_CATALOG_FILE: catalogFile });
    const s = await scriptTask(app);
    expect(s.data.status, JSON.stringify(s)).toBe('success');
    expect(s.data.engine).toBe('builtin');
    expect(s.data.engine_note).toMatch(new RegExp(`${DEFAULT_LOCAL_LLM}/${FILE.replace(/\./g, '\\.')}: sha256 [0-9a-f]{64}, expected [0-9a-f]{64} \\(checksum mismatch\\)`));
  }, 200_000);

  it('no model and auto-pull off (LLM_ENGINE auto): builtin without a note; LLM_ENGINE=llama: with one', async () => {
    await app?.close();
    app = await startTestApp({ ...llmEnv, MODELS_DIR: join(dir, 'models-none') });
    const quiet = await scriptTask(app);
    expect(quiet.data.engine).toBe('builtin');
    expect(quiet.data.engine_note).toBeUndefined();
    await app.close();
    app = await startTestApp({ ...llmEnv, MODELS_DIR: join(dir, 'models-none'), LLM_ENGINE: 'llama' });
    const asked = await scriptTask(app);
    expect(asked.data.engine).toBe('builtin');
    expect(asked.data.engine_note).toMatch(/not installed and MODELS_AUTO_PULL is off/);
  }, 200_000);
});
