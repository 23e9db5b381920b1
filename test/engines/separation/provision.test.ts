import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectingSink, sourceFromAudio } from '../../../src/engines/separation/engine.js';
import { findPreset, presetPath, type MdxPreset } from '../../../src/engines/separation/onnx/presets.js';
import { SelectingSeparationEngine } from '../../../src/engines/separation/select.js';
import { findModel } from '../../../src/models/catalog.js';
import { pinToBytes, presetCatalog } from '../../fixtures/pinned-catalog.js';
import { writeModel } from '../../fixtures/separation-models.js';

const kim = findPreset('Kim_Vocal_2') as MdxPreset;
let dir: string;
const ctx = () => ({ tmpDir: tmpdir(), signal: new AbortController().signal, onProgress: () => {} });
const tone = (seconds: number) => ({
  sampleRate: 44100,
  channels: [0, 1].map(() => Float32Array.from({ length: 44100 * seconds }, (_, i) => 0.3 * Math.sin((2 * Math.PI * 440 * i) / 44100))),
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-sep-provision-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('a verified model file that will not load', () => {
  it('is not retried as an internal error: the task runs on the built-in engine and the note names the file', async () => {
    // The site's catalog vouches for these bytes, but they are not an ONNX graph.
    await writeModel(presetPath(dir, kim), Buffer.alloc(2048, 0x42));
    const engine = new SelectingSeparationEngine({ modelsDir: dir, catalog: presetCatalog(dir, [kim]), choice: 'auto', threads: 1 });
    expect(engine.pick(350).id).toBe('onnx');
    const run = await engine.separate(sourceFromAudio(tone(2)), 350, ctx(), collectingSink());
    expect(run.engine).toBe('builtin-dsp');
    expect(run.note).toContain(presetPath(dir, kim));
    expect(run.note).toMatch(/could not be loaded.*built-in engine/);
  }, 120_000);

  it('without auto-pull, a missing model leaves the built-in engine with no note', async () => {
    await writeFile(presetPath(dir, kim), 'version https://git-lfs.github.com/spec/v1\n');
    const engine = new SelectingSeparationEngine({ modelsDir: dir, choice: 'auto', threads: 1, autoPull: false });
    const run = await engine.separate(sourceFromAudio(tone(1)), 350, ctx(), collectingSink());
    // The built-in engine may still say which stems it doubted (stemNotes); no note about the engine choice.
    expect(run.engine).toBe('builtin-dsp');
    expect(run.note).toBeUndefined();
  }, 120_000);
});

describe('auto-pull over a network that stops answering', () => {
  it('gives up after the stall time, runs the built-in engine with the reason, and does not retry at once', async () => {
    const hits: string[] = [];
    // Answers headers, then never sends a byte: a dropped connection as a task would see it.
    const server = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.writeHead(200, { 'content-length': 4096 });
      res.flushHeaders();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const empty = await mkdtemp(join(tmpdir(), 'soundry-sep-stall-'));
    try {
      const catalog = [pinToBytes(findModel('Kim_Vocal_2')!, { [kim.file]: Buffer.alloc(4096, 1) })];
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const engine = new SelectingSeparationEngine({ modelsDir: empty, catalog, choice: 'auto', threads: 1, autoPull: true, baseUrl, stallMs: 500 });
      const started = Date.now();
      const run = await engine.separate(sourceFromAudio(tone(1)), 350, ctx(), collectingSink());
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(run.engine).toBe('builtin-dsp');
      expect(run.note).toMatch(/Kim_Vocal_2 could not be installed: download stalled/);
      expect(hits).toEqual([`/Kim_Vocal_2/${kim.file}`]);
      const again = await engine.separate(sourceFromAudio(tone(1)), 350, ctx(), collectingSink());
      expect(again.note).toMatch(/failed recently/);
      expect(hits).toHaveLength(1);
      expect(existsSync(presetPath(empty, kim))).toBe(false);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await rm(empty, { recursive: true, force: true });
    }
  }, 60_000);
});

