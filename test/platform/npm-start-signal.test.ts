import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../helpers/app.js';

const root = new URL('../..', import.meta.url).pathname;

/**
 * `npm start` is how the README runs the server, and how a container or a supervisor stops it: SIGTERM
 * to npm. npm forwards it to its child; with the script run through `sh -c`, that child was the shell,
 * which died and left the server running, orphaned, without draining (port still bound).
 */
describe('npm start', () => {
  it('SIGTERM to npm reaches the server, which drains and exits; nothing keeps the port', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'soundry-npmstart-'));
    const port = await freePort();
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: root,
      env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    npm.stdout.on('data', (d) => (log += String(d)));
    try {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
        if (ok) break;
        if (Date.now() > deadline) throw new Error('server did not start');
        await new Promise((r) => setTimeout(r, 200));
      }
      npm.kill('SIGTERM');
      await new Promise((r) => npm.once('exit', r));
      await new Promise((r) => setTimeout(r, 500));
      const stillUp = await fetch(`http://127.0.0.1:${port}/healthz`).then(() => true, () => false);
      expect(stillUp).toBe(false);
      expect(log).toContain('"msg":"draining"');
      expect(log).toContain('"msg":"stopped"');
    } finally {
      if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
