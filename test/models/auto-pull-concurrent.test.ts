import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutoPuller } from '../../src/models/auto-pull.js';
import type { ModelEntry } from '../../src/models/catalog.js';
import { modelFilePath } from '../../src/models/download.js';

/**
 * Two tasks on two engine threads (each has its own AutoPuller) asking for the same model at once: one downloads it,
 * the other waits on the download lock instead of giving up (and running on a built-in engine) and uses the result.
 */
const BYTES = Buffer.from(Array.from({ length: 96_000 }, (_, i) => (i * 31) % 251));
const entry: ModelEntry = {
  name: 'stand-in-voice', kind: 'tts', description: 'stand-in', license: 'test', engine: 'piper',
  files: [{ path: 'voice.onnx', url: 'http://127.0.0.1/unused/voice.onnx', sizeBytes: BYTES.length, sha256: createHash('sha256').update(BYTES).digest('hex') }],
  piper: { key: 'xx_XX-stand-in-medium', language: 'en', locale: 'xx_XX', quality: 'medium', sampleRate: 22050, espeakVoice: 'en-us', modelFile: 'voice.onnx', configFile: 'voice.onnx.json', voices: [] },
};

let dir: string;
let server: Server;
let base: string;
let gets = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-pull-once-'));
  server = createServer(async (req, res) => {
    if (req.url !== `/${entry.name}/voice.onnx`) return void res.writeHead(404).end();
    gets++;
    res.writeHead(200, { 'content-length': BYTES.length });
    // ~1.2 s, so the second puller arrives while the first holds the lock.
    for (let at = 0; at < BYTES.length; at += 16_000) {
      res.write(BYTES.subarray(at, at + 16_000));
      await new Promise((r) => setTimeout(r, 200));
    }
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server?.close(() => r()));
  await rm(dir, { recursive: true, force: true });
});

describe('concurrent auto-pulls of one model', () => {
  it('download it once; both succeed', async () => {
    const opts = (progress: number[]) => ({ modelsDir: dir, baseUrl: base, signal: AbortSignal.timeout(30_000), onProgress: (f: number) => progress.push(f) });
    const first: number[] = [];
    const a = new AutoPuller().pull([entry], opts(first));
    await new Promise((r) => setTimeout(r, 300));
    const b = new AutoPuller().pull([entry], opts([]));
    expect(await Promise.all([a, b])).toEqual([undefined, undefined]);
    expect(gets).toBe(1);
    expect(first.at(-1)).toBe(1);
    expect(await readFile(modelFilePath(dir, entry, entry.files[0]!))).toEqual(BYTES);
  }, 30_000);
});
