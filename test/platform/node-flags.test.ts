import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import { issueApiKey } from '../../src/services/auth.js';
import { freePort } from '../helpers/app.js';
import { exited, ServerProcesses, until } from '../helpers/processes.js';

const API = '/audio/api/v1/api-keys';
const servers = new ServerProcesses();
afterAll(() => servers.killAll());

/**
 * An operator's usual Node flags on the command line (`node --max-old-space-size=... --import tsx src/main.ts`):
 * Node refuses them in a worker thread's execArgv, and the engine threads inherited the process's flags, so
 * every task failed as an internal error while the API looked healthy.
 */
describe('Node flags on the command line', () => {
  it('--max-old-space-size and --expose-gc: engine tasks still run', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'soundry-node-flags-'));
    const port = await freePort();
    const db = await openSqlite(join(dataDir, 'soundry.db'));
    try {
      const issued = await issueApiKey(new SqlAccountStore(db), { credits: 100, rateLimit: 1000, concurrency: null });
      const base = `http://127.0.0.1:${port}`;
      const post = async (path: string, body: unknown) =>
        (await fetch(`${base}${API}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'api-key': issued.apiKey }, body: JSON.stringify(body) })).json() as Promise<any>;
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
      await db.destroy();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
