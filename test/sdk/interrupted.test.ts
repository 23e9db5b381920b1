import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Soundry, SoundryError, type CreatedTask } from '../../src/sdk/index.js';
import { answer, startFakeApi, type FakeApi } from '../helpers/fake-api.js';

/**
 * Found from outside: when the server died while the client waited for a task it had created, or the wait was
 * cancelled, the error did not say which task: the caller lost the id of a task that runs (and is charged) on the
 * server. Now onCreated tells it as soon as the create is answered, and every later error carries it.
 */
const API = '/audio/api/v1/api-keys';
const TTS = { voice_id: 1, emotion: 0, speed: 1, language: 'en' as const, text: 'x' };
const servers: FakeApi[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.shutdown()));
});
const failure = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a failure'); }, (e: unknown) => e as SoundryError);

/** Answers the create, then the given number of polls "waiting", then `onPoll` decides. */
async function dyingServer(onLastPoll: (api: FakeApi, res: import('node:http').ServerResponse) => void, waitingPolls = 1): Promise<FakeApi> {
  let polls = 0;
  const api = await startFakeApi({
    [`${API}/tts/task/create`]: (_req, res) => answer(res, { job_id: 'tts_0123456789abcdef' }),
    [`${API}/tts/task/get`]: (_req, res, self) => (++polls <= waitingPolls ? answer(res, { status: 'waiting', output: '', progress: 0.1 }) : onLastPoll(self, res)),
  });
  servers.push(api);
  return api;
}

describe('SDK errors after a task was created', () => {
  it('a server that stops listening mid-wait: a network error naming the task, told to onCreated first', async () => {
    const api = await dyingServer((self, res) => {
      res.socket?.destroy();
      void self.shutdown();
    });
    const told: CreatedTask[] = [];
    const client = new Soundry({ baseUrl: api.base, apiKey: 'sk_x' });
    const err = await failure(client.tts.run(TTS, '/tmp/never-written.mp3', { pollIntervalMs: 50, onCreated: (t) => told.push(t) }));
    expect(told).toEqual([{ id: 'tts_0123456789abcdef', kind: 'tts' }]);
    expect(err).toBeInstanceOf(SoundryError);
    expect(err.kind).toBe('network');
    expect(err.task).toEqual({ id: 'tts_0123456789abcdef', kind: 'tts' });
  });

  it('a cancel while waiting: kind cancelled, naming the task, at once', async () => {
    const api = await dyingServer(() => undefined, Infinity);
    const client = new Soundry({ baseUrl: api.base, apiKey: 'sk_x' });
    const cancel = new AbortController();
    const run = client.tts.run(TTS, '/tmp/never-written.mp3', { pollIntervalMs: 2000, signal: cancel.signal, onCreated: () => setTimeout(() => cancel.abort(), 50) });
    const started = Date.now();
    const err = await failure(run);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(err).toMatchObject({ kind: 'cancelled', task: { id: 'tts_0123456789abcdef', kind: 'tts' } });
  });

  it('a cancel mid-download leaves the file already at the output path as it was, and no partial file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'soundry-sdk-cancel-'));
    try {
      const dest = join(dir, 'out.mp3');
      await writeFile(dest, "the user's own file");
      const cancel = new AbortController();
      const api = await startFakeApi({}, (_req, res) => {
        res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': 100_000 });
        res.write(Buffer.alloc(1000));
        setTimeout(() => cancel.abort(), 100);
      });
      servers.push(api);
      const client = new Soundry({ baseUrl: api.base, apiKey: 'sk_x' });
      const err = await failure(client.transport.download(`${api.base}/r.mp3`, dest, undefined, { signal: cancel.signal }));
      expect(err).toMatchObject({ kind: 'cancelled' });
      expect(await readFile(dest, 'utf8')).toBe("the user's own file");
      expect(await readdir(dir)).toEqual(['out.mp3']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a cancel before anything was sent sends nothing', async () => {
    const api = await dyingServer(() => undefined);
    const client = new Soundry({ baseUrl: api.base, apiKey: 'sk_x' });
    const err = await failure(client.tts.create(TTS, { signal: AbortSignal.abort() }));
    expect(err).toMatchObject({ kind: 'cancelled', task: null });
    expect(api.seen).toEqual([]);
  });
});
