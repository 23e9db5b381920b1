/**
 * Model downloads: resumable (HTTP Range), verified while streaming, atomically renamed into place.
 * A file is only ever visible under its final name once its checksum matched.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { Readable } from 'node:stream';
import { checkTarget, FetchInputError, guardedGet, type AddressPolicy, type LookupFn } from '../media/fetch-input.js';
import { MODEL_CATALOG, modelSizeBytes, type ModelEntry, type ModelFile, type ModelKind } from './catalog.js';
import { withDownloadLock } from './download-lock.js';
import { checkModel, rememberVerified, type FileCheck, type ModelState } from './installed.js';
import { ChecksumMismatchError, MirrorAnswer, sizeNote } from './mirror-answer.js';

export { ChecksumMismatchError, type WrongBody } from './mirror-answer.js';

export interface PullProgress {
  model: string;
  file: string;
  receivedBytes: number;
  totalBytes: number;
}

export interface PullOptions {
  modelsDir: string;
  /** Tests only: called without redirects being followed; every hop's host is still checked (not pinned then). */
  fetchImpl?: typeof fetch;
  /** Tests only: the resolver the SSRF check of redirect targets uses (default: the system's). */
  lookup?: LookupFn;
  onProgress?: (p: PullProgress) => void;
  signal?: AbortSignal;
  /** MODELS_BASE_URL: every file is fetched from `<base>/<model name>/<file path>` instead of its official URL. */
  baseUrl?: string;
}

/** Where a catalog file is downloaded from: its official URL, or the mirror's copy. */
export function downloadUrl(entry: Pick<ModelEntry, 'name'>, file: Pick<ModelFile, 'path' | 'url'>, baseUrl?: string): string {
  if (!baseUrl) return file.url;
  const path = [entry.name, ...file.path.split('/')].map(encodeURIComponent).join('/');
  return `${baseUrl.replace(/\/+$/, '')}/${path}`;
}

export type FileOutcome = 'skipped' | 'downloaded' | 'resumed';

export interface PullResult {
  name: string;
  dir: string;
  files: Array<{ path: string; outcome: FileOutcome; sizeBytes: number }>;
}

export function modelDir(modelsDir: string, entry: Pick<ModelEntry, 'name'>): string {
  return join(modelsDir, entry.name);
}

/** Resolves a catalog file path inside the model folder, refusing anything that could escape it. */
export function modelFilePath(modelsDir: string, entry: Pick<ModelEntry, 'name'>, file: Pick<ModelFile, 'path'>): string {
  const rel = normalize(file.path);
  if (isAbsolute(rel) || rel === '..' || rel.startsWith(`..${sep}`)) throw new Error(`unsafe model file path: ${file.path}`);
  return join(modelDir(modelsDir, entry), rel);
}

function checksumOf(file: ModelFile): { algorithm: 'sha256' | 'md5'; expected: string } {
  // sha256 preferred when both are published; a file without any checksum is never trusted.
  if (file.sha256) return { algorithm: 'sha256', expected: file.sha256.toLowerCase() };
  if (file.md5) return { algorithm: 'md5', expected: file.md5.toLowerCase() };
  throw new Error(`catalog file ${file.path} has no checksum; refusing to download it`);
}

async function sizeOf(path: string): Promise<number | null> {
  try {
    const s = await stat(path);
    return s.isFile() ? s.size : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Feeds a file's bytes into `hash` (used to check installed files and to re-hash a part on resume). */
async function hashInto(path: string, hash: Hash, signal?: AbortSignal): Promise<void> {
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    signal?.throwIfAborted();
    hash.update(chunk as Buffer);
  }
}

export async function fileDigest(path: string, algorithm: 'sha256' | 'md5', signal?: AbortSignal): Promise<string> {
  const hash = createHash(algorithm);
  await hashInto(path, hash, signal);
  return hash.digest('hex');
}

async function removeIfExists(path: string): Promise<void> {
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/** Network errors name the URL and the underlying cause (fetch alone says only "fetch failed"). */
/** A body longer than the catalogue's size for its file (its part is removed, not kept to resume). */
class OversizeDownload extends Error {}

async function withContext<T>(url: string, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof OversizeDownload) throw err;
    // As fetch does: a cancelled download rejects with the signal's reason, whatever the stream threw.
    if (signal?.aborted) throw signal.reason;
    if ((err as Error).name === 'AbortError') throw err;
    if (err instanceof FetchInputError && (err.reason === 'blocked_address' || err.reason === 'scheme' || err.reason === 'redirects')) {
      throw new Error(`download of ${url} refused: ${err.message}`, { cause: err });
    }
    const message = (err as Error).message;
    const cause = (err as { cause?: { message?: string; code?: string } }).cause;
    const detail = cause?.code ?? cause?.message;
    const suffix = detail && detail !== message ? ` (${detail})` : '';
    throw new Error(`download of ${url} failed: ${message}${suffix}; run pull again to resume`, { cause: err });
  }
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;

/**
 * One GET of a catalog file, redirects followed by hand under the SSRF guard. The catalog URL's own host is
 * trusted as the operator's choice (a private mirror may live on a private address); any other host a redirect
 * leads to must resolve to public addresses only, and cloud metadata addresses are refused on every hop. Each
 * hop connects to exactly the address that was checked (no second DNS answer), except with an injected fetch.
 */
async function guardedDownload(url: string, headers: Record<string, string>, opts: PullOptions): Promise<Response> {
  const signal = opts.signal ?? new AbortController().signal;
  const ownHost = new URL(url).host;
  let current = url;
  for (let hop = 0; ; hop++) {
    const policy: AddressPolicy = { allowPrivate: new URL(current).host === ownHost, ...(opts.lookup ? { lookup: opts.lookup } : {}) };
    let res: Response;
    if (opts.fetchImpl) {
      // An injected fetch (tests serving the catalog offline) never connects itself: the catalog's own host,
      // trusted anyway, is not resolved; every host a redirect leads to still is.
      if (new URL(current).host !== ownHost) await checkTarget(current, policy, signal);
      res = await opts.fetchImpl(current, { headers, signal, redirect: 'manual' });
    } else {
      res = toResponse(await guardedGet(current, policy, signal, headers));
    }
    const location = res.headers.get('location');
    if (!REDIRECT_STATUSES.has(res.status) || !location) return res;
    await res.body?.cancel();
    if (hop >= MAX_REDIRECTS) throw new FetchInputError('redirects', `Too many redirects (more than ${MAX_REDIRECTS})`);
    current = new URL(location, current).href;
  }
}

function toResponse(msg: import('node:http').IncomingMessage): Response {
  const status = msg.statusCode ?? 0;
  const headers = new Headers();
  for (const [name, value] of Object.entries(msg.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const noBody = status === 204 || status === 304 || REDIRECT_STATUSES.has(status);
  if (noBody) msg.destroy();
  return new Response(noBody ? null : (Readable.toWeb(msg) as ReadableStream<Uint8Array>), { status, headers });
}

/** Parses the start offset of `Content-Range: bytes <start>-<end>/<total>`. */
function contentRangeStart(header: string | null): number | null {
  const m = header ? /^bytes\s+(\d+)-\d+\/(?:\d+|\*)$/i.exec(header.trim()) : null;
  return m ? Number(m[1]) : null;
}

async function downloadFile(
  entry: ModelEntry,
  file: ModelFile,
  dest: string,
  opts: PullOptions,
): Promise<FileOutcome> {
  const { algorithm, expected } = checksumOf(file);
  const url = downloadUrl(entry, file, opts.baseUrl);
  const part = `${dest}.part`;
  const report = (receivedBytes: number) =>
    opts.onProgress?.({ model: entry.name, file: file.path, receivedBytes, totalBytes: file.sizeBytes });

  let hash = createHash(algorithm);
  let offset = (await sizeOf(part)) ?? 0;
  if (offset > file.sizeBytes && file.sizeBytes > 0) {
    // Longer than the real file: it cannot be a prefix of it.
    await removeIfExists(part);
    offset = 0;
  }
  if (offset > 0) await hashInto(part, hash, opts.signal);
  if (offset > 0 && offset === file.sizeBytes) {
    // Complete part left by a run that stopped before the rename: keep it only if it verifies.
    if (hash.copy().digest('hex') === expected) {
      await rename(part, dest);
      return 'resumed';
    }
    await removeIfExists(part);
    offset = 0;
    hash = createHash(algorithm);
  }

  let resumed = false;
  const get = (headers: Record<string, string>) =>
    withContext(url, opts.signal, () => guardedDownload(url, headers, opts));
  let res = await get(offset > 0 ? { Range: `bytes=${offset}-` } : {});
  if (res.status === 416 && offset > 0) {
    // The server disagrees about the part; start over rather than guess.
    await res.body?.cancel();
    offset = 0;
    hash = createHash(algorithm);
    res = await get({});
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`download of ${url} failed: HTTP ${res.status}`);
  }
  let append = false;
  if (res.status === 206) {
    const start = contentRangeStart(res.headers.get('content-range'));
    if (start !== null && start !== offset) {
      await res.body?.cancel();
      throw new Error(`download of ${url}: server resumed at byte ${start}, expected ${offset}`);
    }
    append = offset > 0;
    resumed = append;
  } else if (offset > 0) {
    // 200 to a Range request: the server sends the whole file, so the part is rewritten from zero.
    offset = 0;
    hash = createHash(algorithm);
  }
  if (!res.body) throw new Error(`download of ${url}: empty response body`);
  // The catalogue knows each file's size: a mirror that announces or sends more is cut off there, and the part
  // removed (found from outside: a mirror announcing 20 GB filled the part file until it gave up, 41 MB for a 0.3 MB
  // file, and "run pull again to resume" only started it over).
  const answer = new MirrorAnswer(url, res.headers.get('content-type'));
  const tooLong = (bytes: number) => {
    const html = answer.htmlNote(file.path);
    return `download of ${url}: the mirror sends more than the catalogue's ${file.sizeBytes} bytes for ${file.path} (${bytes} so far); ${html || 'not the file it names'}`;
  };
  const announced = Number(res.headers.get('content-length') ?? NaN);
  if (file.sizeBytes > 0 && Number.isFinite(announced) && offset + announced > file.sizeBytes) {
    await res.body.cancel();
    await removeIfExists(part);
    throw new Error(tooLong(offset + announced));
  }
  const body = res.body as unknown as AsyncIterable<Uint8Array>;

  await mkdir(dirname(part), { recursive: true });
  const fh = await open(part, append ? 'a' : 'w');
  let received = offset;
  let failed: { err: unknown } | null = null;
  try {
    report(received);
    await withContext(url, opts.signal, async () => {
      for await (const chunk of body) {
        answer.see(chunk);
        if (file.sizeBytes > 0 && received + chunk.byteLength > file.sizeBytes) throw new OversizeDownload(tooLong(received + chunk.byteLength));
        hash.update(chunk);
        await fh.write(chunk);
        received += chunk.byteLength;
        report(received);
      }
    });
    await fh.sync();
  } catch (err) {
    failed = { err };
  } finally {
    await fh.close();
  }
  if (failed) {
    // A part is kept to resume only while it can still be the start of the file: not past the catalogue's size, and
    // not an HTML page (resuming a login page would append the model to it, and fail again at the end).
    if (failed.err instanceof OversizeDownload || answer.isHtml()) await removeIfExists(part);
    if (answer.isHtml() && !(failed.err instanceof OversizeDownload) && !opts.signal?.aborted) {
      // Not "run pull again to resume": the page is gone, and what it was is the news.
      throw new Error(`download of ${url} refused: ${answer.htmlNote(file.path)}: ${sizeNote(file.path, received, file.sizeBytes)} before the answer broke off; the download was discarded`, { cause: failed.err });
    }
    throw failed.err;
  }

  const actual = hash.digest('hex');
  if (actual !== expected) {
    await removeIfExists(part);
    const resumedFrom = append ? offset : 0;
    throw new ChecksumMismatchError(file.path, algorithm, expected, actual, {
      url, receivedBytes: received, expectedBytes: file.sizeBytes, html: answer.htmlNote(file.path), ...(resumedFrom ? { resumedFrom } : {}),
    });
  }
  await rename(part, dest);
  return resumed ? 'resumed' : 'downloaded';
}

/**
 * Downloads every file of `entry` into MODELS_DIR/<name>/, skipping files already present with the
 * right checksum. An interrupted download leaves `<file>.part`, which the next call resumes.
 */
export async function pullModel(entry: ModelEntry, opts: PullOptions): Promise<PullResult> {
  const result: PullResult = { name: entry.name, dir: modelDir(opts.modelsDir, entry), files: [] };
  for (const file of entry.files) {
    opts.signal?.throwIfAborted();
    const dest = modelFilePath(opts.modelsDir, entry, file);
    const { algorithm, expected } = checksumOf(file);
    const size = await sizeOf(dest);
    if (size !== null && size === file.sizeBytes && (await fileDigest(dest, algorithm, opts.signal)) === expected) {
      result.files.push({ path: file.path, outcome: 'skipped', sizeBytes: size });
      continue;
    }
    // A present but wrong file stays until a verified download replaces it via rename; one writer per file.
    const outcome = await withDownloadLock(dest, (touch) =>
      downloadFile(entry, file, dest, { ...opts, onProgress: (p) => { touch(); opts.onProgress?.(p); } }),
    );
    result.files.push({ path: file.path, outcome, sizeBytes: file.sizeBytes });
  }
  // Every file above matched its checksum: remembered, so listing and engines need only a stat from now on.
  rememberVerified(opts.modelsDir, entry);
  return result;
}

export interface ModelStatus {
  name: string;
  kind: ModelKind;
  description: string;
  license: string;
  /** installed: every file at its catalog size with a verified checksum; corrupt: a file is there but wrong. */
  state: ModelState;
  installed: boolean;
  sizeBytes: number;
  installedBytes: number;
  files: Array<{ path: string; url: string; sizeBytes: number; sha256?: string; md5?: string; state: FileCheck['state']; reason?: string }>;
}

export async function listModels(opts: { modelsDir: string; catalog?: readonly ModelEntry[]; baseUrl?: string }): Promise<ModelStatus[]> {
  const catalog = opts.catalog ?? MODEL_CATALOG;
  const out: ModelStatus[] = [];
  // One model at a time: a stale marker means hashing, and hashing every model at once would thrash the disk.
  for (const entry of catalog) {
    const checked = await checkModel(opts.modelsDir, entry);
    const files = entry.files.map((f, i) => {
      const c = checked.files[i]!;
      return {
        path: f.path,
        url: downloadUrl(entry, f, opts.baseUrl),
        sizeBytes: f.sizeBytes,
        ...(f.sha256 ? { sha256: f.sha256 } : {}),
        ...(f.md5 ? { md5: f.md5 } : {}),
        state: c.state,
        ...(c.reason ? { reason: c.reason } : {}),
      };
    });
    out.push({
      name: entry.name,
      kind: entry.kind,
      description: entry.description,
      license: entry.license,
      state: checked.state,
      installed: checked.state === 'installed',
      sizeBytes: modelSizeBytes(entry),
      installedBytes: files.reduce((sum, f) => sum + (f.state === 'ok' ? f.sizeBytes : 0), 0),
      files,
    });
  }
  return out;
}
