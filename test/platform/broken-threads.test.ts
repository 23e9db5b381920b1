import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import { exited, ServerProcesses, until } from '../helpers/processes.js';
import { serverData } from '../helpers/server-data.js';

const servers = new ServerProcesses();
afterAll(() => servers.killAll());

/**
 * Engine threads that cannot start, as with a broken install: a module every thread imports throws. Piscina
 * then emitted 'error' with no listener, which ended the whole process (API included) at the first task, and
 * runs waiting for a thread stayed queued, their tasks running forever. /healthz said ok throughout.
 */
describe('engine threads that cannot start', () => {
  it('the server stays up, /healthz names the cause, tasks fail without a charge', async () => {
    const { dataDir, port, base, post, db, issued, close } = await serverData('soundry-broken-threads-', { credits: 100 });
    try {
      // Loaded by the process and, through its execArgv, by every engine thread: only the threads fail.
      const breaker = join(dataDir, 'break-threads.mjs');
      await writeFile(breaker, "import { isMainThread } from 'node:worker_threads';\nif (!isMainThread) throw new Error('a module the threads need is missing (test)');\n");
      const server = servers.start({ DATA_DIR: dataDir, PORT: String(port), WORKER_THREADS: '1' }, ['--import', breaker]);
      const health = await until('health names the engines', async () => {
        const res = await fetch(`${base}/healthz`);
        const body = (await res.json()) as Record<string, string>;
        return res.status === 503 && body.engines?.startsWith('unavailable') ? body : null;
      }, 30_000);
      expect(health.engines).toBe('unavailable: engine threads cannot start: a module the threads need is missing (test)');
      expect(health.database).toBe('ok');

      const created = await post('/tts/task/create', { voice_id: 1001, emotion: 1, speed: 1, language: 'en', text: 'No thread to speak this.' });
      expect(created.code).toBe(100000);
      const done = await until('task failed', async () => {
        const q = await post('/tts/task/get', { global_id: created.data.job_id });
        return q.data?.status === 'waiting' ? null : q;
      }, 60_000);
      expect(done.data).toMatchObject({ status: 'failed', error: 'Processing failed because of an internal error' });
      expect(server.exitCode).toBeNull();
      expect((await new SqlAccountStore(db).getAccount(issued.account.id))?.balance).toBe(100);
      // The API still answers (a voice list needs no thread).
      const voices = await fetch(`${base}/audio/api/v1/api-keys/tts/voices?language=en`, { headers: { 'api-key': issued.apiKey } });
      expect(voices.status).toBe(200);
    } finally {
      servers.signalAll('SIGTERM');
      await Promise.all(servers.all().map(exited));
      await close();
    }
  }, 120_000);
});
