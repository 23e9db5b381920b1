import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Command } from 'commander';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { registerModelCommands } from '../../src/cli/models.js';
import { MODEL_CATALOG, type ModelEntry } from '../../src/models/catalog.js';

const BODY = randomBytes(50_000);
let server: Server;
let base = '';
let modelsDir = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/stall.bin') {
      // Some bytes, then nothing more: a mirror that stalls.
      res.writeHead(200, { 'content-length': BODY.length });
      res.write(BODY.subarray(0, 1000));
      return;
    }
    // A mirror (MODELS_BASE_URL) with two of the catalogue's voices, pinned to stand-in bytes by the test's catalog file.
    const mirrored = /^\/mirror\/piper-en_US-(lessac|ryan)-medium\/[^/]+$/.test(req.url ?? '');
    if (req.url !== '/a.bin' && !mirrored) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-length': BODY.length }).end(BODY);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(async () => {
  modelsDir = await mkdtemp(join(tmpdir(), 'soundry-cli-models-'));
});
afterEach(async () => {
  await rm(modelsDir, { recursive: true, force: true });
});

function catalog(): ModelEntry[] {
  const file = { path: 'a.bin', url: `${base}/a.bin`, sizeBytes: BODY.length, md5: createHash('md5').update(BODY).digest('hex') };
  return [
    { name: 'vad-one', kind: 'vad', description: 'x', license: 'MIT', files: [file] },
    { name: 'sep-one', kind: 'separation', description: 'y', license: 'MIT', files: [{ ...file, url: `${base}/missing` }] },
  ];
}

async function run(args: string[], entries: ModelEntry[] = catalog()): Promise<{ printed: unknown[]; progress: string[] }> {
  const printed: unknown[] = [];
  const progress: string[] = [];
  const program = new Command('soundry').exitOverride();
  registerModelCommands(program, {
    modelsDir,
    print: (o) => printed.push(o),
    progress: (l) => progress.push(l),
    catalog: entries,
    pullStallMs: 500,
  });
  await program.parseAsync(['node', 'soundry', ...args]);
  return { printed, progress };
}

describe('models CLI', () => {
  it('gives a stalled download up after the stall limit, saying so, and keeps its part to resume', async () => {
    const started = Date.now();
    const stalls: ModelEntry = { ...catalog()[0]!, name: 'vad-stalls', files: [{ ...catalog()[0]!.files[0]!, url: `${base}/stall.bin` }] };
    await expect(run(['models', 'pull', 'vad-stalls'], [...catalog(), stalls])).rejects.toThrow('download stalled: no data for 0.5 s; run pull again to resume');
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await readFile(join(modelsDir, 'vad-stalls', 'a.bin.part'))).length).toBe(1000);
  });

  it('lists the catalog as one JSON object', async () => {
    const { printed } = await run(['models', 'list']);
    expect(printed).toHaveLength(1);
    const out = printed[0] as { modelsDir: string; models: Array<{ name: string; installed: boolean }> };
    expect(out.modelsDir).toBe(modelsDir);
    expect(out.models.map((m) => [m.name, m.installed])).toEqual([
      ['vad-one', false],
      ['sep-one', false],
    ]);
    const filtered = (await run(['models', 'list', '--kind', 'separation'])).printed[0] as { models: unknown[] };
    expect(filtered.models).toHaveLength(1);
  });

  it('pulls a model, prints its result and writes progress elsewhere', async () => {
    const { printed, progress } = await run(['models', 'pull', 'vad-one']);
    expect(printed).toEqual([
      { name: 'vad-one', dir: join(modelsDir, 'vad-one'), files: [{ path: 'a.bin', outcome: 'downloaded', sizeBytes: BODY.length }] },
    ]);
    expect(progress.at(-1)).toMatch(/^vad-one\/a\.bin: .*\(100%\)\n$/);
    expect((await readFile(join(modelsDir, 'vad-one', 'a.bin'))).equals(BODY)).toBe(true);
    const listed = (await run(['models', 'list', '--installed'])).printed[0] as { models: Array<{ name: string }> };
    expect(listed.models.map((m) => m.name)).toEqual(['vad-one']);
  });

  it('rejects unknown names and bad combinations', async () => {
    await expect(run(['models', 'pull', 'nope'])).rejects.toThrow(/unknown model: nope/);
    await expect(run(['models', 'pull'])).rejects.toThrow(/missing model name/);
    await expect(run(['models', 'pull', 'vad-one', '--all-tts'])).rejects.toThrow(/not both/);
    await expect(run(['models', 'list', '--kind', 'x'])).rejects.toThrow(/--kind/);
  });

  it('reports download failures as errors', async () => {
    await expect(run(['models', 'pull', 'sep-one'])).rejects.toThrow(/HTTP 404/);
  });

  it('pulls every TTS model with --all-tts (none in this test catalog)', async () => {
    const { printed } = await run(['models', 'pull', '--all-tts']);
    expect(printed).toEqual([{ pulled: [], failed: [] }]);
  });

  it('--all-tts goes on past failures, lists them beside what was pulled, and then fails (exit 1)', async () => {
    // Found from outside: the first failure stopped the command, and every voice after it was left unpulled.
    const tts = (name: string, path: string): ModelEntry => ({
      name, kind: 'tts', engine: 'piper', description: name, license: 'MIT',
      files: [{ ...catalog()[0]!.files[0]!, url: `${base}${path}` }],
      piper: { key: name, language: 'en', locale: 'en_US', quality: 'low', sampleRate: 16000, espeakVoice: 'en-us', modelFile: 'a.bin', configFile: 'a.bin.json', voices: [] },
    });
    const entries = [tts('tts-first', '/a.bin'), tts('tts-missing', '/missing'), tts('tts-stalls', '/stall.bin'), tts('tts-last', '/a.bin'), ...catalog()];
    const printed: unknown[] = [];
    const progress: string[] = [];
    const program = new Command('soundry').exitOverride();
    registerModelCommands(program, { modelsDir, print: (o) => printed.push(o), progress: (l) => progress.push(l), catalog: entries, pullStallMs: 500 });
    await expect(program.parseAsync(['node', 'soundry', 'models', 'pull', '--all-tts'])).rejects.toThrow(
      "2 of 4 TTS models could not be pulled: tts-missing, tts-stalls; their errors are in the output's failed list",
    );
    const pulled = (name: string) => ({ name, dir: join(modelsDir, name), files: [{ path: 'a.bin', outcome: 'downloaded', sizeBytes: BODY.length }] });
    expect(printed).toEqual([{
      pulled: [pulled('tts-first'), pulled('tts-last')],
      failed: [
        { model: 'tts-missing', error: `download of ${base}/missing failed: HTTP 404` },
        // A stall fails its own model only: the next one still gets its full stall time.
        { model: 'tts-stalls', error: 'download stalled: no data for 0.5 s; run pull again to resume' },
      ],
    }]);
    expect(progress).toContain(`tts-missing: failed: download of ${base}/missing failed: HTTP 404\n`);
    expect((await readFile(join(modelsDir, 'tts-last', 'a.bin'))).equals(BODY)).toBe(true);
  });

  it('--all-tts through the bin: one JSON object on stdout with pulled and failed, the error on stderr, exit 1', async () => {
    const sha256 = createHash('sha256').update(BODY).digest('hex');
    const pinned = ['piper-en_US-lessac-medium', 'piper-en_US-ryan-medium'];
    const catalogFile = join(modelsDir, 'catalog.json');
    await writeFile(catalogFile, JSON.stringify({
      models: pinned.map((name) => ({ name, files: MODEL_CATALOG.find((m) => m.name === name)!.files.map((f) => ({ path: f.path, url: f.url, sizeBytes: BODY.length, sha256 })) })),
    }));
    const root = new URL('../..', import.meta.url).pathname;
    const env = { ...process.env, DATA_DIR: modelsDir, MODELS_DIR: join(modelsDir, 'models'), MODELS_BASE_URL: `${base}/mirror`, MODELS_CATALOG_FILE: catalogFile, LOG_LEVEL: 'silent' };
    const done = await promisify(execFile)(process.execPath, [join(root, 'bin/soundry.js'), 'models', 'pull', '--all-tts'], { env }).then(
      () => ({ code: 0, stdout: '', stderr: '' }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(done.code).toBe(1);
    const out = JSON.parse(done.stdout) as { pulled: Array<{ name: string }>; failed: Array<{ model: string; error: string }> };
    const tts = MODEL_CATALOG.filter((m) => m.kind === 'tts').map((m) => m.name);
    expect(out.pulled.map((p) => p.name)).toEqual(pinned);
    expect(out.failed.map((f) => f.model)).toEqual(tts.filter((n) => !pinned.includes(n)));
    for (const f of out.failed) expect(f.error).toMatch(/^download of .*\/mirror\/.* failed: HTTP 404$/);
    expect(JSON.parse(done.stderr.trim().split('\n').pop()!).error).toMatch(new RegExp(`^${tts.length - 2} of ${tts.length} TTS models could not be pulled: piper-`));
  }, 60_000);

  it('list says installed, corrupt or missing per model, with each file\'s URL, size and checksum', async () => {
    await mkdir(join(modelsDir, 'vad-one'), { recursive: true });
    // A Git LFS pointer where the file should be: present, yet corrupt.
    await writeFile(join(modelsDir, 'vad-one', 'a.bin'), 'version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 50000\n');
    let out = (await run(['models', 'list'])).printed[0] as { models: Array<{ name: string; state: string; files: Array<Record<string, unknown>> }> };
    expect(out.models.map((m) => [m.name, m.state])).toEqual([['vad-one', 'corrupt'], ['sep-one', 'missing']]);
    expect(out.models[0]!.files[0]).toEqual(expect.objectContaining({ url: `${base}/a.bin`, sizeBytes: BODY.length, md5: catalog()[0]!.files[0]!.md5, state: 'corrupt' }));
    expect(out.models[0]!.files[0]!.reason).toMatch(/Git LFS pointer/);
    // Same size, other bytes: corrupt too (the checksum decides, not the size).
    await writeFile(join(modelsDir, 'vad-one', 'a.bin'), randomBytes(BODY.length));
    out = (await run(['models', 'list'])).printed[0] as typeof out;
    expect(out.models[0]!.state).toBe('corrupt');
    expect(out.models[0]!.files[0]!.reason).toMatch(/checksum mismatch/);
    await writeFile(join(modelsDir, 'vad-one', 'a.bin'), BODY);
    out = (await run(['models', 'list'])).printed[0] as typeof out;
    expect(out.models[0]!.state).toBe('installed');
    // The verified digest is remembered beside the files, so the next listing is a stat.
    expect(JSON.parse(await readFile(join(modelsDir, 'vad-one', '.verified.json'), 'utf8'))['a.bin']).toEqual(expect.objectContaining({ size: BODY.length, algorithm: 'md5' }));
  });

  it('add imports an offline copy only when its checksum matches; remove deletes it', async () => {
    const offline = join(modelsDir, 'offline');
    await mkdir(offline);
    await writeFile(join(offline, 'a.bin'), Buffer.from(BODY).fill(0, 0, 10));
    await expect(run(['models', 'add', 'vad-one', join(offline, 'a.bin')])).rejects.toThrow(/not installed: .*checksum mismatch/);
    expect(existsSync(join(modelsDir, 'vad-one', 'a.bin'))).toBe(false);
    await writeFile(join(offline, 'wrong-name.bin'), BODY.subarray(1));
    await expect(run(['models', 'add', 'vad-one', join(offline, 'wrong-name.bin')])).rejects.toThrow(/49999 bytes/);
    await writeFile(join(offline, 'a.bin'), BODY);
    const { printed } = await run(['models', 'add', 'vad-one', join(offline, 'a.bin')]);
    expect(printed[0]).toEqual(expect.objectContaining({ name: 'vad-one', files: [expect.objectContaining({ path: 'a.bin', sizeBytes: BODY.length })] }));
    expect((await readFile(join(modelsDir, 'vad-one', 'a.bin'))).equals(BODY)).toBe(true);
    let out = (await run(['models', 'list', '--installed'])).printed[0] as { models: Array<{ name: string }> };
    expect(out.models.map((m) => m.name)).toEqual(['vad-one']);
    expect((await run(['models', 'remove', 'vad-one'])).printed[0]).toEqual({ name: 'vad-one', removed: true });
    out = (await run(['models', 'list', '--installed'])).printed[0] as typeof out;
    expect(out.models).toEqual([]);
    await expect(run(['models', 'remove', 'nope'])).rejects.toThrow(/unknown model/);
  });
});
