import { afterAll, describe, expect, it } from 'vitest';
import { exited, ServerProcesses, until } from '../helpers/processes.js';
import { serverData } from '../helpers/server-data.js';

const API = '/audio/api/v1/api-keys';
const servers = new ServerProcesses();
const startServer = (env: Record<string, string>) => servers.start(env);

afterAll(() => servers.killAll());

describe('graceful restarts during one long task', () => {
  it('three SIGTERMs while it runs hand it back each time: with MAX_ATTEMPTS=1 it still succeeds, charged once', async () => {
    const { dataDir, port, db, issued, base, post, close } = await serverData('soundry-handback-');
    // No grace: each stop aborts the running task at once, which must not count as an attempt.
    const env = { DATA_DIR: dataDir, PORT: String(port), SHUTDOWN_GRACE_SECONDS: '0', MAX_ATTEMPTS: '1', TTS_MAX_CHARS: '100000', WORKER_THREADS: '1', POLL_INTERVAL_MS: '50' };
    try {
      const task = (id: string) => db.selectFrom('tasks').select(['state', 'started_at', 'charged']).where('id', '=', id).executeTakeFirstOrThrow();

      let server = startServer(env);
      await until('health', async () => (await fetch(`${base}/healthz`)).ok);
      const voices = (await (await fetch(`${base}${API}/tts/voices?language=en`, { headers: { 'api-key': issued.apiKey } })).json()) as any;
      const text = 'The quick brown fox jumps over the lazy dog, and keeps on running through the long summer afternoon. '.repeat(60);
      const created = await post('/tts/task/create', { voice_id: voices.data.records[0].id, emotion: 0, speed: 1, language: 'en', text });
      expect(created.code).toBe(100000);
      const id = created.data.job_id as string;

      let startedAt = 0;
      for (let restart = 0; restart < 3; restart++) {
        // SIGTERM drains only once main.ts has installed its handlers, after start-up.
        await until('health', async () => (await fetch(`${base}/healthz`)).ok);
        // markRunning stamps started_at on every delivery: a newer stamp is this process running it.
        startedAt = await until(`delivery ${restart + 1}`, async () => {
          const t = await task(id);
          return t.state === 'running' && Number(t.started_at) > startedAt ? Number(t.started_at) : null;
        });
        server.kill('SIGTERM');
        expect(await exited(server)).toBe(0);
        expect((await task(id)).state).toBe('running'); // handed back, not failed and not finished
        const job = await db.selectFrom('jobs').select(['state', 'attempts']).where('task_id', '=', id).executeTakeFirstOrThrow();
        expect(job).toEqual({ state: 'queued', attempts: 0 });
        server = startServer(env);
      }

      const done = await until('task finished', async () => {
        const q = await post('/tts/task/get', { global_id: id });
        return q.data?.status !== 'waiting' ? q : null;
      }, 120_000);
      expect(done.data.status).toBe('success');
      const price = Math.ceil([...text].length / 100);
      expect(await db.selectFrom('ledger').select('amount').where('task_id', '=', id).execute()).toEqual([{ amount: -price }]);
      // The job row goes once the worker acknowledges, just after it records success: wait for that, not for the poll.
      await until('job removed', async () => ((await db.selectFrom('jobs').select('task_id').where('task_id', '=', id).execute()).length === 0 ? true : null));
      server.kill('SIGTERM');
      await exited(server);
    } finally {
      await close();
    }
  }, 300_000);
});
