import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { registerModelCommands } from '../../src/cli/models.js';
import type { ModelEntry } from '../../src/models/catalog.js';

const BODY = randomBytes(50_000);
let server: Server;
let base = '';
let modelsDir = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url !== '/a.bin') return void res.writeHead(404).end();
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

async function run(args: string[]): Promise<{ printed: unknown[]; progress: string[] }> {
  const printed: unknown[] = [];
  const progress: string[] = [];
  const program = new Command('soundry').exitOverride();
  registerModelCommands(program, {
    modelsDir,
    print: (o) => printed.push(o),
    progress: (l) => progress.push(l),
    catalog: catalog(),
  });
  await program.parseAsync(['node', 'soundry', ...args]);
  return { printed, progress };
}

describe('models CLI', () => {
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
    expect(printed).toEqual([{ pulled: [] }]);
  });
});
