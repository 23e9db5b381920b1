import { mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StartupRefusal } from '../domain/errors.js';

/**
 * Makes a folder the server needs at start-up (DATA_DIR, its tmp folder), one level at a time from its nearest
 * existing parent. Node's recursive mkdir never returned for some paths: with DATA_DIR=/proc/x it spun at 100%
 * CPU forever (procfs answers ENOENT for a folder whose parent exists, and Node retries). Here every failure
 * stops start-up with the setting, the folder and the reason.
 */
export async function ensureDirectory(path: string, setting: string): Promise<void> {
  const missing: string[] = [];
  let at = path;
  for (;;) {
    // ENOTDIR: a file on the way, found (and named) one level up.
    const found = await stat(at).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' || err.code === 'ENOTDIR' ? null : refuse(setting, path, `reading ${at}`, err)));
    if (found) {
      if (!found.isDirectory()) throw new StartupRefusal(`${setting}=${path} cannot be used: ${at} is not a folder.`);
      break;
    }
    missing.push(at);
    const parent = dirname(at);
    if (parent === at) break;
    at = parent;
  }
  for (const dir of missing.reverse()) {
    await mkdir(dir).catch(async (err: NodeJS.ErrnoException) => {
      // Made meanwhile by another process (a CLI command starting beside the server): fine if it is a folder.
      if (err.code === 'EEXIST' && (await stat(dir).catch(() => null))?.isDirectory()) return;
      refuse(setting, path, `creating ${dir}`, err);
    });
  }
}

function refuse(setting: string, path: string, step: string, err: NodeJS.ErrnoException): never {
  throw new StartupRefusal(`${setting}=${path} cannot be used: ${step} failed (${err.code ?? err.message}). Choose a folder on a writable disk.`);
}
