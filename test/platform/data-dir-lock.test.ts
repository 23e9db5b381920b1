import { afterAll, describe, expect, it } from 'vitest';
import { exited, ServerProcesses, until } from '../helpers/processes.js';
import { serverData } from '../helpers/server-data.js';
import { freePort } from '../helpers/app.js';

const servers = new ServerProcesses();
afterAll(() => servers.killAll());

/**
 * Found from outside: a second `npm start` on the same DATA_DIR (another PORT) started without a word, and its
 * workers took the first one's tasks, failing those whose upload links name the first server.
 */
describe('one embedded server per DATA_DIR', () => {
  it('a second server on the folder is refused naming the first; once the first has died, the folder is taken over', async () => {
    const { dataDir, port, base, close } = await serverData('soundry-dir-lock-');
    try {
      const first = servers.start({ DATA_DIR: dataDir, PORT: String(port), WORKER_THREADS: '1' });
      await until('first server', async () => (await fetch(`${base}/healthz`).catch(() => null))?.ok);

      const otherPort = await freePort();
      const second = servers.spawn({ DATA_DIR: dataDir, PORT: String(otherPort), WORKER_THREADS: '1' }, ['ignore', 'ignore', 'pipe']);
      let stderr = '';
      second.stderr?.on('data', (d) => (stderr += String(d)));
      await exited(second);
      expect(second.exitCode).toBe(1);
      expect(stderr).toContain(`Soundry cannot start: Another Soundry server (pid ${first.pid}, since `);
      expect(stderr).toContain(`is using DATA_DIR=${dataDir}`);
      // The first one never noticed.
      expect((await fetch(`${base}/healthz`)).ok).toBe(true);

      // kill -9 leaves the lock behind: its process is gone, so the next server takes the folder.
      first.kill('SIGKILL');
      await exited(first);
      const third = servers.start({ DATA_DIR: dataDir, PORT: String(otherPort), WORKER_THREADS: '1' });
      await until('third server', async () => (await fetch(`http://127.0.0.1:${otherPort}/healthz`).catch(() => null))?.ok);
      third.kill('SIGTERM');
      await exited(third);
    } finally {
      servers.signalAll('SIGKILL');
      await Promise.all(servers.all().map(exited));
      await close();
    }
  }, 120_000);

  // Found from outside: DATA_DIR=/proc/x never started nor failed, spinning at 100% CPU in Node's recursive mkdir.
  it.runIf(process.platform === 'linux')('a DATA_DIR that cannot be made stops start-up at once, naming it', async () => {
    const port = await freePort();
    const child = servers.spawn({ DATA_DIR: '/proc/soundry-data', PORT: String(port), WORKER_THREADS: '1' }, ['ignore', 'ignore', 'pipe']);
    let stderr = '';
    child.stderr?.on('data', (d) => (stderr += String(d)));
    await exited(child);
    expect(child.exitCode).toBe(1);
    expect(stderr).toContain('Soundry cannot start: DATA_DIR=/proc/soundry-data cannot be used: creating /proc/soundry-data failed (ENOENT)');
  }, 60_000);
});
