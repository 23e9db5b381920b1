import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { constants } from 'node:fs';
import { access, copyFile, mkdir, open, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobInfo, BlobStore } from '../ports/blob-store.js';
import { checkedPrefix, contentTypeForKey, InvalidBlobKeyError, isValidBlobKey } from '../ports/blob-keys.js';
import { blobNotFound, ByteCounter, checkRange } from './blob-streams.js';
import { checkDisk } from './disk-space.js';

/**
 * Blob store on local disk. Keys map straight to files under `root`, so every key is checked
 * twice: by shape (the port's key rules) and by the resolved path. Content type is derived from
 * the file extension (no sidecar files to keep in sync).
 */

/**
 * A hidden name beside the target: same filesystem, so the final rename is atomic; no key can name
 * it (segments never start with a dot); and a crash leaves it inside the entry the reaper removes.
 */
function tempBeside(dest: string): string {
  return path.join(path.dirname(dest), `.${path.basename(dest)}.part-${randomBytes(6).toString('hex')}`);
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

export class LocalBlobStore implements BlobStore {
  private readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  /** The folder exists (or can be made) and is writable, and its disk is not (nearly) full. */
  async ping(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    await access(this.root, constants.W_OK);
    await checkDisk(this.root);
  }

  /** Absolute path of a key, refusing anything that is malformed or would land outside root. */
  pathFor(key: string): string {
    if (!isValidBlobKey(key)) throw new InvalidBlobKeyError(key);
    const full = path.resolve(this.root, ...key.split('/'));
    if (!full.startsWith(this.root + path.sep)) throw new InvalidBlobKeyError(key);
    return full;
  }

  async putFile(key: string, localPath: string, _contentType: string): Promise<BlobInfo> {
    const dest = this.pathFor(key);
    await mkdir(path.dirname(dest), { recursive: true });
    try {
      await rename(localPath, dest);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      // Different filesystem: copy beside the target, then rename so readers never see half a file.
      const tmp = tempBeside(dest);
      try {
        await copyFile(localPath, tmp);
        await rename(tmp, dest);
      } catch (copyErr) {
        await unlink(tmp).catch(() => undefined);
        throw copyErr;
      }
      await unlink(localPath);
    }
    const info = await this.stat(key);
    if (!info) throw new Error(`Blob vanished right after being stored: ${key}`);
    return info;
  }

  async putStream(key: string, body: Readable, _contentType: string, maxBytes?: number): Promise<BlobInfo> {
    const dest = this.pathFor(key);
    const dir = path.dirname(dest);
    const created = await mkdir(dir, { recursive: true });
    const tmp = tempBeside(dest);
    try {
      await pipeline(body, new ByteCounter(maxBytes), createWriteStream(tmp, { flags: 'wx' }));
      await rename(tmp, dest);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      if (created) await this.removeEmptyDirs(dir, created);
      throw err;
    }
    const info = await this.stat(key);
    if (!info) throw new Error(`Blob vanished right after being stored: ${key}`);
    return info;
  }

  /** Undoes a failed put's mkdir, from `dir` up to `top` (the first directory it made), if empty. */
  private async removeEmptyDirs(dir: string, top: string): Promise<void> {
    for (let d = dir; d.startsWith(top) && d.startsWith(this.root + path.sep); d = path.dirname(d)) {
      // ENOTEMPTY: another put has landed there meanwhile; keep it and everything above.
      if (!(await rmdir(d).then(() => true, () => false))) return;
    }
  }

  async stat(key: string): Promise<BlobInfo | null> {
    if (!isValidBlobKey(key)) return null;
    try {
      const st = await stat(this.pathFor(key));
      // Directories are never blobs (no listings).
      return st.isFile() ? { size: st.size, contentType: contentTypeForKey(key) } : null;
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async read(key: string, range?: { start: number; end: number }): Promise<Readable> {
    checkRange(range);
    // Open first so a missing blob rejects here rather than erroring later on the stream.
    const handle = await open(this.pathFor(key), 'r').catch((err: unknown) => {
      throw isMissing(err) ? blobNotFound(key) : err;
    });
    try {
      if (!(await handle.stat()).isFile()) throw blobNotFound(key);
    } catch (err) {
      await handle.close();
      throw err;
    }
    return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  async deletePrefix(prefix: string): Promise<void> {
    const trimmed = checkedPrefix(prefix);
    if (prefix.endsWith('/')) {
      await rm(this.pathFor(trimmed), { recursive: true, force: true });
      return;
    }
    // Plain string prefix: remove every entry of the parent directory whose name starts with it.
    const full = this.pathFor(trimmed);
    const dir = path.dirname(full);
    const base = path.basename(full);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if (isMissing(err)) return;
      throw err;
    }
    await Promise.all(
      names.filter((n) => n.startsWith(base)).map((n) => rm(path.join(dir, n), { recursive: true, force: true })),
    );
  }

  /**
   * Removes half-written files (the hidden `.<name>.part-<hex>` a put writes before its rename) left in the
   * entries under `folder` by a process that died mid-write, and the entry itself if nothing else is in it.
   * Age is the file's mtime, its last write: a put under way keeps it fresh however long the put takes.
   */
  async removePartialsOlderThan(folder: string, cutoffMs: number): Promise<number> {
    const dir = this.pathFor(checkedPrefix(folder));
    let entries: string[];
    try {
      entries = await readdir(dir);
    } catch (err) {
      if (isMissing(err)) return 0;
      throw err;
    }
    let removed = 0;
    for (const entry of entries) {
      const entryDir = path.join(dir, entry);
      // ENOTDIR (a lone file) or ENOENT (expired meanwhile): nothing in it.
      const names = await readdir(entryDir).catch(() => [] as string[]);
      let removedHere = 0;
      for (const name of names.filter((n) => /^\..+\.part-[0-9a-f]{12}$/.test(n))) {
        const file = path.join(entryDir, name);
        const st = await stat(file).catch(() => null);
        if (st && st.mtimeMs < cutoffMs && (await unlink(file).then(() => true, () => false))) removedHere++;
      }
      if (removedHere) await rmdir(entryDir).catch(() => undefined); // only if now empty
      removed += removedHere;
    }
    return removed;
  }

  async deleteOlderThan(folder: string, cutoffMs: number): Promise<number> {
    const dir = this.pathFor(checkedPrefix(folder));
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if (isMissing(err)) return 0;
      throw err;
    }
    let removed = 0;
    for (const name of names) {
      const entry = path.join(dir, name);
      const st = await stat(entry).catch(() => null);
      if (st && st.mtimeMs < cutoffMs) {
        await rm(entry, { recursive: true, force: true });
        removed++;
      }
    }
    return removed;
  }
}
