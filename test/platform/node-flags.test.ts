import { afterAll, describe, expect, it } from 'vitest';
import { exited, ServerProcesses, until } from '../helpers/processes.js';
import { serverData } from '../helpers/server-data.js';

const servers = new ServerProcesses();
afterAll(() => servers.killAll());

/**
 * An operator's usual Node flags on the command line (`node --max-old-space-size=... --import tsx src/main.ts`):
 * Node refuses them in a worker thread's execArgv, and the engine threads inherited the process's flags, so
 * every task failed as an internal error while the API looked healthy.
 */
describe('Node flags on the command line', () => {
  it('--max-old-space-size and --expose-gc: engine tasks still run', async () => {
    const { dataDir, port, base, post, close } = await serverData('soundry-node-flags-', { credits: 100 });
    try {
      servers.start({ DATA_DIR: dataDir, PORT: String(port), WORKER_THREADS: '1' }, ['--max-old-space-size=1024', '--expose-gc']);
      await until('health', async () => (await fetch(`${base}/healthz`)).ok);
      const created = await post('/tts/task/create', { voice_id: 1001, emotion: 1, speed: 1, language: 'en', text: 'Flags on the command line.' });
      expect(created.code).toBe(100000);
      const done = await until('task finished', async () => {
        const q = await post('/tts/task/get', { global_id: created.data.job_id });
        return q.data?.status !== 'waiting' ? q : null;
      }, 60_000);
      expect(done.data.status).toBe('success');
      expect(done.data.engine).toBe('espeak');
    } finally {
      servers.signalAll('SIGTERM');
      await Promise.all(servers.all().map(exited));
      await close();
    }
  });
});
