/**
 * Whether a catalog model is really installed. A file counts only when it has the catalog's size and its
 * checksum matched; the digest is remembered in a marker (MODELS_DIR/<name>/.verified.json: size, mtime, ctime and
 * digest per file) so that listing stays a stat, and a file whose size, mtime or ctime changed since is hashed again.
 * An LFS pointer, a truncated or a foreign file is therefore `corrupt`, never installed.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { ModelEntry, ModelFile } from './catalog.js';
import { fileDigest, modelDir, modelFilePath } from './download.js';

export type FileState = 'ok' | 'missing' | 'corrupt';
export type ModelState = 'installed' | 'missing' | 'corrupt';

export interface FileCheck {
  path: string;
  state: FileState;
  /** Why a present file is not trusted (LFS pointer, wrong size, checksum mismatch). */
  reason?: string;
}

export interface ModelCheck {
  name: string;
  state: ModelState;
  files: FileCheck[];
}

const MARKER = '.verified.json';
const MarkerFile = z.record(z.string(), z.object({ size: z.number(), mtimeMs: z.number(), ctimeMs: z.number(), algorithm: z.enum(['sha256', 'md5']), digest: z.string() }));
type MarkerFile = z.infer<typeof MarkerFile>;

export function expectedChecksum(file: ModelFile): { algorithm: 'sha256' | 'md5'; expected: string } | null {
  if (file.sha256) return { algorithm: 'sha256', expected: file.sha256.toLowerCase() };
  if (file.md5) return { algorithm: 'md5', expected: file.md5.toLowerCase() };
  return null;
}

/**
 * Digests remembered in memory by one long-lived caller (an engine thread's engine), keyed by model folder: where
 * MODELS_DIR is read-only the marker cannot be written, and a route decision must not re-hash 60 MB each time.
 */
export type VerifiedMemo = Map<string, MarkerFile>;

function readMarker(modelsDir: string, entry: ModelEntry, memo?: VerifiedMemo): MarkerFile {
  let disk: MarkerFile = {};
  try {
    disk = MarkerFile.parse(JSON.parse(readFileSync(join(modelDir(modelsDir, entry), MARKER), 'utf8')));
  } catch {
    // No marker yet (or unreadable): every present file is hashed once.
  }
  return { ...memo?.get(modelDir(modelsDir, entry)), ...disk };
}

function writeMarker(modelsDir: string, entry: ModelEntry, marker: MarkerFile): void {
  // Written beside the files and renamed, so a reader never sees half a marker.
  const path = join(modelDir(modelsDir, entry), MARKER);
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify(marker));
    renameSync(tmp, path);
  } catch {
    // A read-only MODELS_DIR still works: the file is simply hashed again next time.
  }
}

function statFile(path: string): { size: number; mtimeMs: number; ctimeMs: number } | null {
  try {
    const s = statSync(path);
    return s.isFile() ? { size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs } : null;
  } catch {
    return null;
  }
}

/** A clone without git-lfs leaves a ~130-byte text file starting like this instead of the model. */
function describeWrongSize(path: string, size: number, expected: number): string {
  let head = '';
  try {
    const fd = openSync(path, 'r');
    const buf = Buffer.alloc(64);
    const n = readSync(fd, buf, 0, 64, 0);
    closeSync(fd);
    head = buf.subarray(0, n).toString('latin1');
  } catch {
    // Unreadable: the size alone explains it.
  }
  if (head.startsWith('version https://git-lfs')) return `Git LFS pointer (${size} bytes), not the model file; expected ${expected} bytes`;
  return `${size} bytes, expected ${expected} bytes (${size < expected ? 'truncated' : 'not this model'})`;
}

function digestSync(path: string, algorithm: 'sha256' | 'md5'): string {
  const hash = createHash(algorithm);
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(1 << 20);
    for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) hash.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

interface Pending {
  file: ModelFile;
  path: string;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  algorithm: 'sha256' | 'md5';
  expected: string;
}

/** Decides every file that a stat and the marker can decide; the rest need hashing. */
function plan(modelsDir: string, entry: ModelEntry, marker: MarkerFile): Array<FileCheck | Pending> {
  return entry.files.map((file) => {
    const path = modelFilePath(modelsDir, entry, file);
    const sum = expectedChecksum(file);
    const st = statFile(path);
    if (!st) return { path: file.path, state: 'missing' };
    if (!sum) return { path: file.path, state: 'corrupt', reason: 'the catalog has no checksum for this file' };
    if (st.size !== file.sizeBytes) return { path: file.path, state: 'corrupt', reason: describeWrongSize(path, st.size, file.sizeBytes) };
    const seen = marker[file.path];
    // ctime too: a rewrite that restores the old mtime (touch -d, cp -p) still changes it.
    if (seen && seen.size === st.size && seen.mtimeMs === st.mtimeMs && seen.ctimeMs === st.ctimeMs && seen.algorithm === sum.algorithm) {
      return judge(file.path, seen.digest, sum.algorithm, sum.expected);
    }
    return { file, path, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, algorithm: sum.algorithm, expected: sum.expected };
  });
}

function judge(path: string, digest: string, algorithm: string, expected: string): FileCheck {
  return digest === expected ? { path, state: 'ok' } : { path, state: 'corrupt', reason: `${algorithm} ${digest}, expected ${expected} (checksum mismatch)` };
}

function finish(modelsDir: string, entry: ModelEntry, marker: MarkerFile, items: Array<FileCheck | Pending>, digests: Map<Pending, string>, memo?: VerifiedMemo): ModelCheck {
  const files = items.map((item) => {
    if (!('file' in item)) return item;
    const digest = digests.get(item)!;
    marker[item.file.path] = { size: item.size, mtimeMs: item.mtimeMs, ctimeMs: item.ctimeMs, algorithm: item.algorithm, digest };
    return judge(item.file.path, digest, item.algorithm, item.expected);
  });
  if (digests.size > 0) {
    writeMarker(modelsDir, entry, marker);
    memo?.set(modelDir(modelsDir, entry), marker);
  }
  const state: ModelState = files.every((f) => f.state === 'ok') ? 'installed' : files.some((f) => f.state === 'corrupt') ? 'corrupt' : 'missing';
  return { name: entry.name, state, files };
}

/** Checks a model; files whose marker is stale are hashed with async reads. */
export async function checkModel(modelsDir: string, entry: ModelEntry): Promise<ModelCheck> {
  const marker = readMarker(modelsDir, entry);
  const items = plan(modelsDir, entry, marker);
  const digests = new Map<Pending, string>();
  for (const item of items) if ('file' in item) digests.set(item, await fileDigest(item.path, item.algorithm));
  return finish(modelsDir, entry, marker, items, digests);
}

/** The same check, synchronous: engine threads decide a route synchronously (off the event loop). */
export function checkModelSync(modelsDir: string, entry: ModelEntry, memo?: VerifiedMemo): ModelCheck {
  const marker = readMarker(modelsDir, entry, memo);
  const items = plan(modelsDir, entry, marker);
  const digests = new Map<Pending, string>();
  for (const item of items) if ('file' in item) digests.set(item, digestSync(item.path, item.algorithm));
  return finish(modelsDir, entry, marker, items, digests, memo);
}

/** Records files just verified by a pull or an import, so the next check is a stat. */
export function rememberVerified(modelsDir: string, entry: ModelEntry): void {
  const marker = readMarker(modelsDir, entry);
  for (const file of entry.files) {
    const sum = expectedChecksum(file);
    const st = statFile(modelFilePath(modelsDir, entry, file));
    if (sum && st && st.size === file.sizeBytes) marker[file.path] = { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, algorithm: sum.algorithm, digest: sum.expected };
  }
  writeMarker(modelsDir, entry, marker);
}

/** One line naming what is wrong with a model that is not installed (for task messages and notes). */
export function describeCheck(c: ModelCheck): string {
  const bad = c.files.filter((f) => f.state !== 'ok');
  return bad.map((f) => `${c.name}/${f.path}: ${f.state === 'missing' ? 'missing' : f.reason}`).join('; ');
}
