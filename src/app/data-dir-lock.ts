import { open, readFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { StartupRefusal } from '../domain/errors.js';
import { processExists } from './temp-dirs.js';

const LOCK_FILE = '.soundry-server.lock';

/**
 * One embedded server (ROLE=all on SQLite) per DATA_DIR. Found from outside: a second `npm start` on the same folder
 * (another PORT) started without a word, and its workers took the first one's tasks, failing those whose upload
 * links name the first server ("points to a private address"). The lock holds the owner's pid and host; a lock
 * whose process no longer runs on this host (kill -9, a crash) is taken over, and one from another host (a
 * container restarted under a new name) is taken over with a warning, since its process cannot be checked from here.
 */
export class DataDirLock {
  private constructor(private readonly path: string) {}

  static async take(dataDir: string, logger: Logger): Promise<DataDirLock> {
    const path = join(dataDir, LOCK_FILE);
    const me = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const handle = await open(path, 'wx');
        await handle.writeFile(JSON.stringify(me));
        await handle.close();
        return new DataDirLock(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const owner = await readOwner(path);
      if (owner && owner.host === me.host && owner.pid !== me.pid && processExists(owner.pid)) {
        throw new StartupRefusal(
          `Another Soundry server (pid ${owner.pid}, since ${owner.since}) is using DATA_DIR=${dataDir}: two servers on one ` +
            'data folder take each other\'s tasks. Stop it, or give this one a DATA_DIR of its own (API and worker processes ' +
            `apart need the scale-out profile, docs/deploy.md). If no such process runs, remove ${path}.`,
        );
      }
      if (owner && owner.host !== me.host) logger.warn({ owner }, 'taking over the data folder lock of a server on another host');
      await unlink(path).catch(() => undefined);
    }
    throw new StartupRefusal(`Could not take the data folder lock ${path}: another server is starting on DATA_DIR=${dataDir}`);
  }

  async release(): Promise<void> {
    const owner = await readOwner(this.path);
    if (owner?.pid === process.pid && owner.host === hostname()) await unlink(this.path).catch(() => undefined);
  }
}

async function readOwner(path: string): Promise<{ pid: number; host: string; since: string } | null> {
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as { pid?: unknown; host?: unknown; since?: unknown };
    if (typeof parsed.pid !== 'number' || typeof parsed.host !== 'string') return null;
    return { pid: parsed.pid, host: parsed.host, since: typeof parsed.since === 'string' ? parsed.since : 'an unknown time' };
  } catch {
    return null;
  }
}
