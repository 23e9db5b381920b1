import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerModelCommands } from '../../src/cli/models.js';
import { MODEL_CATALOG, findModel, type ModelEntry } from '../../src/models/catalog.js';
import { ASR_MODELS } from '../../src/models/catalog-asr.js';
import { findAsrModel } from '../../src/engines/asr/whisper.js';
import { writeTinyWhisper } from '../fixtures/whisper-fixture.js';

/** A stand-in for huggingface.co serving the tiny Whisper under the real entry's paths. */
let server: Server;
let base = '';
let fixtureDir = '';
let root = '';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'soundry-asr-catalog-'));
  fixtureDir = join(root, 'fixture');
  await writeTinyWhisper(fixtureDir);
  await mkdir(join(fixtureDir, 'onnx'));
  await rename(join(fixtureDir, 'encoder_model.onnx'), join(fixtureDir, 'onnx/encoder_model_quantized.onnx'));
  await rename(join(fixtureDir, 'decoder_model_merged.onnx'), join(fixtureDir, 'onnx/decoder_model_merged_quantized.onnx'));
  await writeFile(join(fixtureDir, 'generation_config.json'), JSON.stringify({ suppress_tokens: [], begin_suppress_tokens: [] }));
  server = createServer((req, res) => {
    const m = /^\/Xenova\/whisper-tiny\/resolve\/[0-9a-f]{40}\/(.+)$/.exec(req.url ?? '');
    if (!m) return void res.writeHead(404).end();
    const body = readFileSync(join(fixtureDir, m[1]!));
    res.writeHead(200, { 'content-length': body.length }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await rm(root, { recursive: true, force: true });
});

const toLocal: typeof fetch = (input, init) => fetch(`${base}${new URL(String(input)).pathname}`, init);

async function cli(modelsDir: string, args: string[], catalog?: readonly ModelEntry[]): Promise<unknown[]> {
  const printed: unknown[] = [];
  const program = new Command('soundry').exitOverride();
  registerModelCommands(program, { modelsDir, print: (o) => printed.push(o), progress: () => undefined, fetchImpl: toLocal, ...(catalog ? { catalog } : {}) });
  await program.parseAsync(['node', 'soundry', ...args]);
  return printed;
}

describe('ASR model catalog', () => {
  it('lists whisper-tiny pinned to a Hub revision with sizes and sha256, in the main catalog', () => {
    const m = findModel('whisper-tiny');
    expect(m).toBeDefined();
    expect(m!.kind).toBe('asr');
    expect(MODEL_CATALOG).toContain(ASR_MODELS[0]);
    expect(m!.files.map((f) => f.path).sort()).toEqual(['config.json', 'generation_config.json', 'onnx/decoder_model_merged_quantized.onnx', 'onnx/encoder_model_quantized.onnx', 'tokenizer.json']);
    for (const f of m!.files) {
      expect(f.url).toMatch(/^https:\/\/huggingface\.co\/Xenova\/whisper-tiny\/resolve\/[0-9a-f]{40}\//);
      expect(f.url.endsWith(f.path)).toBe(true);
      expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(f.sizeBytes).toBeGreaterThan(1000);
    }
  });

  it('models pull whisper-tiny verifies every file: bytes that are not the published ones are refused', async () => {
    const modelsDir = join(root, 'real-entry');
    await expect(cli(modelsDir, ['models', 'pull', 'whisper-tiny'])).rejects.toThrow(/checksum|size/i);
    expect((await findAsrModel(modelsDir)).name).toBeNull();
  });

  it('a pulled model lands in the folder and layout the engine looks for', async () => {
    const modelsDir = join(root, 'pulled');
    const entry = ASR_MODELS[0]!;
    // Same entry, checksums of the stand-in files: proves the paths, not the published digests.
    const local: ModelEntry = {
      ...entry,
      files: entry.files.map((f) => {
        const body = readFileSync(join(fixtureDir, f.path));
        return { ...f, sizeBytes: body.length, sha256: createHash('sha256').update(body).digest('hex') };
      }),
    };
    const [out] = (await cli(modelsDir, ['models', 'pull', 'whisper-tiny'], [local])) as Array<{ name: string; files: unknown[] }>;
    expect(out!.name).toBe('whisper-tiny');
    expect(out!.files).toHaveLength(5);
    const found = await findAsrModel({ modelsDir, catalog: [local] });
    expect(found.name).toBe('whisper-tiny');
    expect(found.name !== null && found.files.encoder.startsWith(join(modelsDir, 'whisper-tiny'))).toBe(true);
  });
});
