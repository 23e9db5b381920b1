import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { BlobInfo, BlobStore } from '../ports/blob-store.js';

/**
 * Blob store on local disk. Keys map straight to files under `root`, so every key is checked
 * twice: by shape (a strict character set, no `.`/`..` segments) and by the resolved path.
 * Content type is derived from the file extension (no sidecar files to keep in sync).
 */

const KEY_SEGMENT = /^[A-Za-z0-9._-]+$/;
const MAX_KEY_LENGTH = 1024;

const CONTENT_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  flac: 'audio/flac',
  m4a: 'audio/mp4',
  aac: 'audio/aac',
  ogg: 'audio/ogg',
  opus: 'audio/ogg; codecs=opus',
  mp4: 'video/mp4',
  webm: 'audio/webm',
  zip: 'application/zip',
  json: 'application/json',
  txt: 'text/plain; charset=utf-8',
  srt: 'application/x-subrip',
  vtt: 'text/vtt; charset=utf-8',
  png: 'image/png',
  svg: 'image/svg+xml',
};

export function contentTypeForKey(key: string): string {
  const ext = path.posix.extname(key).slice(1).toLowerCase();
  return CONTENT_TYPES[ext] ?? 'application/octet-stream';
}

/** True for relative, slash-separated keys made only of [A-Za-z0-9._-] segments, none `.` or `..`. */
export function isValidBlobKey(key: string): boolean {
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) return false;
  return key.split('/').every((seg) => KEY_SEGMENT.test(seg) && seg !== '.' && seg !== '..');
}

export class InvalidBlobKeyError extends Error {
  constructor(key: string) {
    super(`Invalid blob key: ${JSON.stringify(key.slice(0, 200))}`);
  }
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
      const tmp = `${dest}.tmp-${randomBytes(6).toString('hex')}`;
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
    if (range) {
      const { start, end } = range;
      if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
        throw new RangeError(`Invalid byte range ${start}-${end}`);
      }
    }
    // Open first so a missing blob rejects here rather than erroring later on the stream.
    const handle = await open(this.pathFor(key), 'r');
    try {
      if (!(await handle.stat()).isFile()) throw Object.assign(new Error(`Not a blob: ${key}`), { code: 'ENOENT' });
    } catch (err) {
      await handle.close();
      throw err;
    }
    return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  async deletePrefix(prefix: string): Promise<void> {
    // An empty prefix would wipe every task's results: never a legitimate call.
    const trimmed = prefix.replace(/\/+$/, '');
    if (!isValidBlobKey(trimmed)) throw new InvalidBlobKeyError(prefix);
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

  async deleteOlderThan(folder: string, cutoffMs: number): Promise<number> {
    const dir = this.pathFor(folder.replace(/\/+$/, ''));
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
