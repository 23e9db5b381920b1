import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerModelCommands } from '../../src/cli/models.js';
import { collectingSink, sourceFromAudio } from '../../src/engines/separation/engine.js';
import { findPreset, presetPath, type MdxPreset } from '../../src/engines/separation/onnx/presets.js';
import { SelectingSeparationEngine } from '../../src/engines/separation/select.js';
import { AutoPuller } from '../../src/models/auto-pull.js';
import { findModel } from '../../src/models/catalog.js';
import { pinToBytes } from '../fixtures/pinned-catalog.js';

/**
 * Found from outside: a mirror (MODELS_BASE_URL) that answers 200 with its login page was reported only as "checksum
 * mismatch". The one refusal, naming the page, the URL and the sizes, reaches `models pull` and a task's engine_note.
 */
const PAGE = Buffer.from('<!DOCTYPE html><html><head><title>Log in to the mirror</title></head><body><form method="post"></form></body></html>');
const kim = findPreset('Kim_Vocal_2') as MdxPreset;
// The catalogue's Kim_Vocal_2, pinned to a small stand-in (what the mirror should have served).
const catalog = [pinToBytes(findModel('Kim_Vocal_2')!, { [kim.file]: Buffer.alloc(4096, 1) })];

let server: Server;
let base = '';
let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-mirror-html-'));
  server = createServer((_req, res) => void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': PAGE.length }).end(PAGE));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/soundry`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await rm(dir, { recursive: true, force: true });
});

const refusal = () =>
  `download of ${base}/Kim_Vocal_2/${kim.file} refused: the mirror served an HTML page (Content-Type text/html; charset=utf-8) ` +
  `rather than the model file ${kim.file}: ${PAGE.length} bytes received, the catalogue's ${kim.file} is 4096 bytes (checksum mismatch); the download was discarded`;

async function leftIn(modelsDir: string): Promise<string[]> {
  return existsSync(join(modelsDir, 'Kim_Vocal_2')) ? readdir(join(modelsDir, 'Kim_Vocal_2')) : [];
}

describe('a mirror that serves an HTML page instead of the model', () => {
  it('models pull says so, with the URL and the sizes, and leaves nothing behind', async () => {
    const modelsDir = join(dir, 'cli');
    const program = new Command('soundry').exitOverride();
    registerModelCommands(program, { modelsDir, print: () => {}, progress: () => {}, catalog, baseUrl: base });
    await expect(program.parseAsync(['node', 'soundry', 'models', 'pull', 'Kim_Vocal_2'])).rejects.toThrow(refusal());
    expect(await leftIn(modelsDir)).toEqual([]);
  });

  it('the automatic download gives the same sentence, and so does a separation task\'s engine note', async () => {
    const modelsDir = join(dir, 'auto');
    const why = await new AutoPuller().pull(catalog, { modelsDir, baseUrl: base, signal: new AbortController().signal, onProgress: () => {} });
    expect(why).toBe(`Kim_Vocal_2 could not be installed: ${refusal()}`);
    expect(await leftIn(modelsDir)).toEqual([]);

    const sepDir = join(dir, 'separation');
    const engine = new SelectingSeparationEngine({ modelsDir: sepDir, catalog, choice: 'auto', threads: 1, autoPull: true, baseUrl: base });
    const tone = { sampleRate: 44100, channels: [0, 1].map(() => Float32Array.from({ length: 44100 }, (_, i) => 0.3 * Math.sin((2 * Math.PI * 440 * i) / 44100))) };
    const run = await engine.separate(sourceFromAudio(tone), 350, { tmpDir: dir, signal: new AbortController().signal, onProgress: () => {} }, collectingSink());
    expect(run.engine).toBe('builtin-dsp');
    expect(run.note).toContain(refusal());
    expect(existsSync(presetPath(sepDir, kim))).toBe(false);
    expect(await leftIn(sepDir)).toEqual([]);
  }, 60_000);
});
