import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
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
import { findModel, type ModelEntry } from '../../src/models/catalog.js';
import { ChecksumMismatchError, pullModel } from '../../src/models/download.js';
import { pinToBytes } from '../fixtures/pinned-catalog.js';

/**
 * Found from outside: a mirror (MODELS_BASE_URL) that answers 200 with its login page was reported only as "checksum
 * mismatch". The one refusal, naming the page, the URL and the sizes, reaches `models pull` and a task's engine_note;
 * a page is never kept as a part to resume.
 */
const PAGE = Buffer.from('<!DOCTYPE html><html><head><title>Log in to the mirror</title></head><body><form method="post"></form></body></html>');
const kim = findPreset('Kim_Vocal_2') as MdxPreset;
// The catalogue's Kim_Vocal_2, pinned to a small stand-in (what the mirror should have served).
const catalog = [pinToBytes(findModel('Kim_Vocal_2')!, { [kim.file]: Buffer.alloc(4096, 1) })];
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const FILE = Buffer.alloc(4096, 1);
let server: Server;
let root = '';
let base = '';
let dir = '';
let requests: Array<{ url: string; range: string | undefined }> = [];
let cutMode: 'page' | 'file' = 'page';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-mirror-html-'));
  server = createServer((req, res) => {
    const url = req.url ?? '';
    requests.push({ url, range: req.headers.range });
    if (url === '/plain/unlabelled.bin') return void res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': PAGE.length }).end(PAGE);
    if (url === '/plain/cut.bin' && cutMode === 'page') {
      // A page announced as long as the file, then the connection drops: nothing worth resuming.
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': FILE.length });
      res.write(PAGE);
      return void setTimeout(() => res.socket?.destroy(), 100);
    }
    if (url === '/plain/cut.bin') return void res.writeHead(200, { 'content-length': FILE.length }).end(FILE);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': PAGE.length }).end(PAGE);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  root = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  base = `${root}/soundry`;
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

describe('pullModel and an HTML answer', () => {
  const one = (path: string, sizeBytes = FILE.length): ModelEntry => ({
    name: 'plain', kind: 'vad', description: 'test', license: 'MIT',
    files: [{ path: 'model.bin', url: `${root}/plain/${path}`, sizeBytes, sha256: sha256(FILE) }],
  });
  const url = (path: string) => `${root}/plain/${path}`;

  it('a page labelled application/octet-stream is still named by how it begins', async () => {
    const modelsDir = join(dir, 'unlabelled');
    const err = await pullModel(one('unlabelled.bin'), { modelsDir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChecksumMismatchError);
    expect((err as Error).message).toBe(
      `download of ${url('unlabelled.bin')} refused: the mirror served an HTML page (it begins with <!DOCTYPE html) rather than the model file model.bin: ` +
        `${PAGE.length} bytes received, the catalogue's model.bin is 4096 bytes (checksum mismatch); the download was discarded`,
    );
    expect(await readdir(join(modelsDir, 'plain'))).toEqual([]);
  });

  it('a page longer than a small file is cut off there and named as a page', async () => {
    await expect(pullModel(one('login', 20), { modelsDir: join(dir, 'small') })).rejects.toThrow(
      /the mirror sends more than the catalogue's 20 bytes for model\.bin .*; the mirror served an HTML page \(Content-Type text\/html; charset=utf-8\) rather than the model file model\.bin$/,
    );
    await expect(stat(join(dir, 'small', 'plain', 'model.bin.part'))).rejects.toThrow();
  });

  it('keeps no part of a page that breaks off, so the next pull does not resume it', async () => {
    const modelsDir = join(dir, 'cut');
    cutMode = 'page';
    await expect(pullModel(one('cut.bin'), { modelsDir })).rejects.toThrow(
      `download of ${url('cut.bin')} refused: the mirror served an HTML page (Content-Type text/html) rather than the model file model.bin: ` +
        `${PAGE.length} bytes received, the catalogue's model.bin is 4096 bytes before the answer broke off; the download was discarded`,
    );
    await expect(stat(join(modelsDir, 'plain', 'model.bin.part'))).rejects.toThrow();
    // The next pull starts from byte 0 (no Range) and gets the file.
    cutMode = 'file';
    requests = [];
    expect((await pullModel(one('cut.bin'), { modelsDir })).files[0]?.outcome).toBe('downloaded');
    expect(requests).toEqual([{ url: '/plain/cut.bin', range: undefined }]);
  });
});
