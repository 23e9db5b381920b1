import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Soundry, SoundryError } from '../../src/sdk/index.js';
import { answer, startFakeApi, type FakeApi } from '../helpers/fake-api.js';

/**
 * Found from outside: a server that accepted the connection and never answered left the client waiting for ever.
 * The SDK gives a request up after timeoutSeconds of silence, not of duration: a slow download that keeps sending,
 * an upload the server keeps reading and a task that keeps answering its polls all finish. Real HTTP servers on
 * 127.0.0.1, each with the failure it plays.
 */
const API = '/audio/api/v1/api-keys';
let dir = '';
const servers: FakeApi[] = [];
const fake = async (...args: Parameters<typeof startFakeApi>) => {
  const api = await startFakeApi(...args);
  servers.push(api);
  return api;
};
const failure = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a failure'); }, (e: unknown) => e as SoundryError);
const TTS = { voice_id: 1, emotion: 0, speed: 1, language: 'en' as const, text: 'x' };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-sdk-timeout-'));
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.shutdown()));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SDK silence limit', () => {
  it('a server that accepts and never answers fails as a timeout naming the server and the limit', async () => {
    const silent = await fake({}, () => undefined);
    const client = new Soundry({ baseUrl: silent.base, apiKey: 'sk_x', timeoutSeconds: 0.3 });
    const started = Date.now();
    const err = await failure(client.tts.create(TTS));
    expect(Date.now() - started).toBeLessThan(5000);
    expect(err).toBeInstanceOf(SoundryError);
    expect(err).toMatchObject({ kind: 'timeout', silentSeconds: 0.3, task: null });
    expect(err.message).toBe(`No answer from ${silent.base} for 0.3 s (POST ${API}/tts/task/create)`);
  });

  it('answer headers and then silence is a timeout too, and a cut-off download leaves nothing behind', async () => {
    const stalls = await fake({}, (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': 1000 });
      res.write(Buffer.alloc(10));
    });
    const client = new Soundry({ baseUrl: stalls.base, apiKey: 'sk_x', timeoutSeconds: 0.3 });
    const dest = join(dir, 'stalled.mp3');
    const err = await failure(client.transport.download(`${stalls.base}/r.mp3`, dest));
    expect(err).toMatchObject({ kind: 'timeout', silentSeconds: 0.3, task: null });
    expect(err.message).toContain(`No answer from ${stalls.base} for 0.3 s (download of ${stalls.base}/r.mp3)`);
    expect(await readdir(dir)).not.toContain('stalled.mp3');
    expect((await readdir(dir)).filter((f) => f.includes('.part-'))).toEqual([]);
  });

  it('a download that keeps sending takes as long as it needs', async () => {
    const slow = await fake({}, (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': 12 * 1000 });
      let sent = 0;
      const tick = setInterval(() => {
        res.write(Buffer.alloc(1000, sent));
        if (++sent === 12) (clearInterval(tick), res.end());
      }, 100);
    });
    const client = new Soundry({ baseUrl: slow.base, apiKey: 'sk_x', timeoutSeconds: 0.4 });
    const started = Date.now();
    const dest = await client.transport.download(`${slow.base}/r.mp3`, join(dir, 'slow.mp3'));
    expect(Date.now() - started).toBeGreaterThan(1000);
    expect((await readFile(dest)).length).toBe(12_000);
  });

  it('polls keep a long task going: the limit is per request, not on the wait', async () => {
    let polls = 0;
    const api = await fake({
      [`${API}/tts/task/create`]: (_req, res) => answer(res, { job_id: 'tts_long' }),
      [`${API}/tts/task/get`]: (_req, res) => answer(res, ++polls < 8 ? { status: 'waiting', output: '', progress: polls / 8 } : { status: 'success', output: 'http://127.0.0.1:9/x.mp3' }),
    });
    const client = new Soundry({ baseUrl: api.base, apiKey: 'sk_x', timeoutSeconds: 0.3 });
    const started = Date.now();
    const data = await client.tts.wait(await client.tts.create(TTS), { pollIntervalMs: 100 });
    expect(data.status).toBe('success');
    expect(Date.now() - started).toBeGreaterThan(600);
  });

  it('an upload the server keeps reading is progress; one it never reads times out', async () => {
    const file = join(dir, 'big.wav');
    await writeFile(file, Buffer.alloc(24 * 1024 * 1024, 3));
    // Read with a pause after every chunk: the whole body takes about 2.5 s, twice the limit.
    const reader = await fake({
      [`${API}/files/upload`]: (req, res) => {
        let bytes = 0;
        req.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          req.pause();
          setTimeout(() => req.resume(), 5);
        });
        req.on('end', () => answer(res, { url: `uploaded:${bytes}` }));
      },
    });
    const uploads: number[] = [];
    // The longest pause between two pulls is the socket's buffers draining (about 0.5 s here), well under the limit.
    const client = new Soundry({ baseUrl: reader.base, apiKey: 'sk_x', timeoutSeconds: 1.2 });
    const started = Date.now();
    const url = await client.transport.upload(file, (e) => uploads.push(e.done));
    expect(Date.now() - started).toBeGreaterThan(1200);
    expect(Number(url.split(':')[1])).toBeGreaterThan(24 * 1024 * 1024);
    // Progress as the socket took the body, not 0 and then done.
    expect(new Set(uploads).size).toBeGreaterThan(10);

    const deaf = await fake({}, () => undefined);
    // The fastest link waited for: no allowance for what the system holds (the next test is about that).
    const stuck = new Soundry({ baseUrl: deaf.base, apiKey: 'sk_x', timeoutSeconds: 0.5, minUploadBytesPerSecond: 1024 ** 3 });
    const err = await failure(stuck.transport.upload(file));
    expect(err).toMatchObject({ kind: 'timeout', silentSeconds: 0.5 });
  }, 30_000);

  it("an upload whose bytes sit in the system's buffers while a slow link sends them is not given up", async () => {
    // Found from outside: 3 MB over a 200 KB/s link, timeout 3 s. The socket took the file at once, then nothing while
    // the kernel sent it, and the client gave up while the server was still receiving (and then stored it whole).
    const file = join(dir, 'slow.wav');
    await writeFile(file, Buffer.alloc(2 * 1024 * 1024, 5));
    const slowReader = () =>
      fake({
        [`${API}/files/upload`]: (req, res) => {
          let bytes = 0;
          // About 640 KB/s: 64 KB, then a pause.
          req.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            req.pause();
            setTimeout(() => req.resume(), Math.ceil(chunk.length / 640));
          });
          req.on('end', () => answer(res, { url: `uploaded:${bytes}` }));
        },
      });
    const slow = await slowReader();
    const client = new Soundry({ baseUrl: slow.base, apiKey: 'sk_x', timeoutSeconds: 1 });
    const started = Date.now();
    const url = await client.transport.upload(file);
    expect(Number(url.split(':')[1])).toBeGreaterThan(2 * 1024 * 1024);
    // Longer than the limit in all: the socket's silence while the buffers drained was longer than 1 s too.
    expect(Date.now() - started).toBeGreaterThan(2000);

    // Without the allowance (a link taken to be as fast as loopback) the same upload is given up.
    const again = await slowReader();
    const hasty = new Soundry({ baseUrl: again.base, apiKey: 'sk_x', timeoutSeconds: 1, minUploadBytesPerSecond: 1024 ** 3 });
    expect(await failure(hasty.transport.upload(file))).toMatchObject({ kind: 'timeout' });
  }, 30_000);

  it('0 is no limit; a negative one is refused', async () => {
    const late = await fake({}, (_req, res) => void setTimeout(() => answer(res, { job_id: 'tts_late' }), 600));
    const client = new Soundry({ baseUrl: late.base, apiKey: 'sk_x', timeoutSeconds: 0 });
    expect(await client.tts.create(TTS)).toBe('tts_late');
    expect(() => new Soundry({ baseUrl: late.base, apiKey: 'sk_x', timeoutSeconds: -1 })).toThrow(/timeoutSeconds must be 0/);
  });
});
