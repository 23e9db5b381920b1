import { randomBytes } from 'node:crypto';
import { statfs, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Below this much free space a disk counts as nearly full: 5% of it, at most 256 MiB (a separation's
 * stems can take hundreds of MB; on a tiny disk 5% still leaves room to notice before writes fail).
 */
export function minFreeBytes(totalBytes: number): number {
  return Math.min(256 * 1024 ** 2, Math.floor(totalBytes * 0.05));
}

function mb(bytes: number): string {
  return bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

/**
 * Checks that `dir`'s disk has room and takes writes: free space (statfs) above minFreeBytes, and a
 * 4 KiB probe file can be written and removed (catches ENOSPC, a read-only remount, a full quota).
 * Throws an error that says which; answers the free space otherwise.
 */
export async function checkDisk(dir: string): Promise<string> {
  const fs = await statfs(dir);
  const free = fs.bavail * fs.bsize;
  const total = fs.blocks * fs.bsize;
  if (free < minFreeBytes(total)) throw new Error(`disk nearly full: ${mb(free)} free of ${mb(total)} (${dir})`);
  const probe = join(dir, `.disk-probe-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await writeFile(probe, Buffer.alloc(4096));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOSPC' || code === 'EDQUOT' ? 'disk full' : code === 'EROFS' ? 'disk is read-only' : `disk not writable (${code ?? String(err)})`;
    throw new Error(`${why}: a 4 KiB write failed (${dir})`);
  } finally {
    await unlink(probe).catch(() => undefined);
  }
  return `${mb(free)} free`;
}
