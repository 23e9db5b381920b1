/**
 * One writer per model file across threads and processes sharing MODELS_DIR. Two downloads appending to the same
 * `<file>.part` would interleave their bytes while each verifies only its own stream, so a file could be renamed into
 * place that neither downloaded. `<file>.lock` is created exclusively; its holder touches it while bytes arrive, and
 * a lock nobody touched for STALE_MS (its process died) is taken over. A lock written on this host by a process that
 * no longer runs is taken over at once: a `models pull` stopped with Ctrl-C held every download of the file (the
 * server's first TTS task of that voice waited two minutes, then fell back) until the lock went stale.
 */
import { mkdir, open, readFile, rm, stat, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname } from 'node:path';

const STALE_MS = 120_000;
const TOUCH_EVERY_MS = 5_000;

export class DownloadBusyError extends Error {}

async function acquire(lock: string): Promise<void> {
  await mkdir(dirname(lock), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fh = await open(lock, 'wx');
      await fh.writeFile(`${process.pid} ${hostname()}\n`);
      await fh.close();
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const age = await stat(lock).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age < STALE_MS && !(await holderIsGone(lock))) break;
      // Abandoned by a process that died mid-download: take it over (its part file is resumed and re-verified).
      await rm(lock, { force: true });
    }
  }
  throw new DownloadBusyError(`another download of ${lock.slice(0, -'.lock'.length)} is in progress; try again when it ends`);
}

/** The lock names a process of this host that is not running (another host's processes cannot be asked). */
async function holderIsGone(lock: string): Promise<boolean> {
  const [pid, host] = (await readFile(lock, 'utf8').catch(() => '')).trim().split(' ');
  if (host !== hostname() || !/^\d+$/.test(pid ?? '') || Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export async function withDownloadLock<T>(dest: string, fn: (touch: () => void) => Promise<T>): Promise<T> {
  const lock = `${dest}.lock`;
  await acquire(lock);
  let last = Date.now();
  const touch = () => {
    const now = Date.now();
    if (now - last < TOUCH_EVERY_MS) return;
    last = now;
    void utimes(lock, new Date(now), new Date(now)).catch(() => {});
  };
  try {
    return await fn(touch);
  } finally {
    await rm(lock, { force: true });
  }
}
