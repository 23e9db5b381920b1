import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerModelCommands } from '../../src/cli/models.js';
import { MODEL_CATALOG, findModel } from '../../src/models/catalog.js';
import { ENHANCE_MODELS } from '../../src/models/catalog-enhance.js';
import { onnxDenoiserAvailable } from '../../src/engines/enhance/onnx-denoise.js';
import { sileroModelPath } from '../../src/engines/enhance/vad.js';

/** The real model files from the shared test corpus, served by a local stand-in for github.com. */
const CORPUS_MODELS = join(import.meta.dirname, '../../../shared/corpus/models');
const haveCorpus = existsSync(join(CORPUS_MODELS, 'gtcrn/gtcrn.onnx'));

let server: Server;
let base = '';
const requested: string[] = [];

beforeAll(async () => {
  // github.com/<repo>/raw/<commit>/<path> -> the corpus copy of the file with the same name.
  server = createServer((req, res) => {
    requested.push(req.url ?? '');
    const entry = ENHANCE_MODELS.find((m) => m.files.some((f) => new URL(f.url).pathname === req.url));
    const file = entry?.files.find((f) => new URL(f.url).pathname === req.url);
    if (!entry || !file) return void res.writeHead(404).end();
    const body = readFileSync(join(CORPUS_MODELS, entry.name, file.path));
    res.writeHead(200, { 'content-length': body.length }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

const toLocal: typeof fetch = (input, init) => fetch(`${base}${new URL(String(input)).pathname}`, init);

async function cli(modelsDir: string, args: string[]): Promise<unknown[]> {
  const printed: unknown[] = [];
  const program = new Command('soundry').exitOverride();
  registerModelCommands(program, { modelsDir, print: (o) => printed.push(o), progress: () => undefined, fetchImpl: toLocal });
  await program.parseAsync(['node', 'soundry', ...args]);
  return printed;
}

describe('enhancement model catalog', () => {
  it('lists DTLN, GTCRN and Silero VAD with pinned official URLs, sizes, sha256 and MIT licence', () => {
    for (const name of ['dtln', 'gtcrn', 'silero_vad']) {
      const m = findModel(name);
      expect(m, name).toBeDefined();
      expect(m!.license).toBe('MIT');
      for (const f of m!.files) {
        expect(f.url).toMatch(/^https:\/\/github\.com\/(breizhn\/DTLN|Xiaobin-Rong\/gtcrn|snakers4\/silero-vad)\/raw\/[0-9a-f]{7,40}\//);
        expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
        expect(f.sizeBytes).toBeGreaterThan(100_000);
      }
    }
    expect(findModel('dtln')!.files.map((f) => f.path)).toEqual(['model_1.onnx', 'model_2.onnx']);
    expect(MODEL_CATALOG.filter((m) => m.kind === 'vad').map((m) => m.name)).toContain('silero_vad');
  });

  it.skipIf(!haveCorpus)('`models pull` installs each into the layout the denoiser and VAD look for', async () => {
    const modelsDir = await mkdtemp(join(tmpdir(), 'soundry-enh-models-'));
    try {
      expect(onnxDenoiserAvailable(modelsDir, 'dtln')).toBe(false);
      expect(sileroModelPath(modelsDir)).toBeNull();
      for (const name of ['dtln', 'gtcrn', 'silero_vad']) {
        const [res] = (await cli(modelsDir, ['models', 'pull', name])) as Array<{ files: Array<{ outcome: string }> }>;
        expect(res!.files.every((f) => f.outcome === 'downloaded')).toBe(true);
      }
      expect(onnxDenoiserAvailable(modelsDir, 'dtln')).toBe(true);
      expect(onnxDenoiserAvailable(modelsDir, 'gtcrn')).toBe(true);
      expect(sileroModelPath(modelsDir)).toBe(join(modelsDir, 'silero_vad/silero_vad.onnx'));
      expect(requested).toContain('/breizhn/DTLN/raw/1de1f15/pretrained_model/model_2.onnx');
      const [listed] = (await cli(modelsDir, ['models', 'list', '--kind', 'enhance', '--installed'])) as Array<{ models: Array<{ name: string }> }>;
      expect(listed!.models.map((m) => m.name).sort()).toEqual(['dtln', 'gtcrn']);
      // A second pull verifies the installed files and downloads nothing.
      const [again] = (await cli(modelsDir, ['models', 'pull', 'gtcrn'])) as Array<{ files: Array<{ outcome: string }> }>;
      expect(again!.files[0]!.outcome).toBe('skipped');
    } finally {
      await rm(modelsDir, { recursive: true, force: true });
    }
  }, 60_000);
});
