import { randomBytes } from 'node:crypto';
import { createWriteStream, openAsBlob } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { ERRORS } from '../domain/errors.js';
import type { TaskKind } from '../domain/task.js';
import { SoundryError } from './errors.js';
import { guardRequest, type RequestGuard } from './guard.js';
import { uploadBody } from './upload-body.js';

export { SoundryError, type SoundryErrorKind, type CreatedTask } from './errors.js';

/** One step of a long call: upload, wait (progress 0..1 of the task) or download (bytes). */
export interface ProgressEvent {
  phase: 'upload' | 'wait' | 'download';
  done: number;
  /** null when unknown (a download without Content-Length). */
  total: number | null;
  /** The task's status while waiting. */
  status?: string;
}
export type OnProgress = (event: ProgressEvent) => void;

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  fetch?: typeof fetch;
  /**
   * Give a request up (SoundryError 'timeout') when the server sends nothing for this many seconds: no answer
   * headers, no body bytes, no upload bytes taken. A limit on silence, not on duration; 0: no limit. Default 30.
   */
  timeoutSeconds?: number;
  /**
   * The slowest upload link to wait for, in bytes per second (default 32 KiB/s). The system takes several MB of an
   * upload at once and sends them at the link's pace: meanwhile the socket takes nothing, which the silence limit
   * alone would read as a server that stopped reading (found from outside: a 3 MB upload over a 200 KB/s link timed
   * out at 3 s while its bytes still reached the server). So an upload's silence limit is extended by the time the
   * bytes the system may still hold (at most 8 MiB) take at this rate.
   */
  minUploadBytesPerSecond?: number;
}

/** Per call: the caller's cancel (a Ctrl-C), which aborts the request in flight. */
export interface CallOptions {
  signal?: AbortSignal | undefined;
}

/**
 * An upload's `kind`: the task kind the file is for, sent as `?kind=`. The server then holds the upload to that kind's
 * own input limit (enhance: ENHANCE_MAX_BYTES) and refuses it from its declared length before the body is sent,
 * instead of taking hundreds of MB for a task that would fail.
 */
export interface UploadOptions extends CallOptions {
  kind?: TaskKind | undefined;
}

export const DEFAULT_TIMEOUT_SECONDS = 30;
const DEFAULT_MIN_UPLOAD_BYTES_PER_SECOND = 32 * 1024;
/** About the most a Linux socket's send and receive buffers hold between client and server (tcp_wmem and tcp_rmem). */
const MAX_BYTES_IN_BUFFERS = 8 * 1024 * 1024;

const Envelope = z.object({ code: z.number(), data: z.unknown(), message: z.string() });

/** A Blob from a local path or the Blob given; a missing path is the caller's mistake, said with the path. */
async function blobOf(file: string | Blob): Promise<{ blob: Blob; name: string }> {
  // A File keeps its own name (it was sent as upload.bin, found from outside: the server stored and served it without its
  // extension); a bare Blob has none.
  if (typeof file !== 'string') return { blob: file, name: file instanceof File && file.name ? file.name : 'upload.bin' };
  // openAsBlob's own error does not say what is wrong (no code), so look first.
  const info = await stat(file).catch(() => null);
  if (!info) throw new SoundryError(`No such file: ${file}`, 'input');
  if (!info.isFile()) throw new SoundryError(`Not a file: ${file}`, 'input');
  try {
    return { blob: await openAsBlob(file), name: basename(file) };
  } catch (err) {
    throw new SoundryError(`Cannot read ${file}: ${(err as Error).message}`, 'input');
  }
}

/** The HTTP side of the client: one envelope per call, refusals as SoundryError with the API's code and message. */
export class Transport {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly silenceMs: number;
  private readonly minUploadRate: number;

  constructor(private readonly opts: TransportOptions) {
    if (!opts.baseUrl) throw new SoundryError('No server URL (set SOUNDRY_URL, e.g. http://127.0.0.1:8080)', 'input');
    if (!opts.apiKey) throw new SoundryError('No API key (set SOUNDRY_API_KEY; an admin creates one with `soundry keys create`)', 'input');
    const seconds = opts.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
    if (!Number.isFinite(seconds) || seconds < 0) throw new SoundryError(`timeoutSeconds must be 0 (no limit) or more, got ${seconds}`, 'input');
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = opts.fetch ?? fetch;
    this.silenceMs = seconds * 1000;
    const rate = opts.minUploadBytesPerSecond ?? DEFAULT_MIN_UPLOAD_BYTES_PER_SECOND;
    if (!Number.isFinite(rate) || rate <= 0) throw new SoundryError(`minUploadBytesPerSecond must be more than 0, got ${rate}`, 'input');
    this.minUploadRate = rate;
  }

  /**
   * One request under a silence limit and the caller's cancel: `consume` reads the answer, calling the guard's
   * touch for every chunk. What aborted it (timeout, cancel) is thrown as itself, never as fetch's AbortError.
   */
  private async request<T>(
    url: string,
    what: string,
    call: CallOptions,
    init: (guard: RequestGuard) => RequestInit,
    consume: (res: Response, guard: RequestGuard) => Promise<T>,
    allowanceMs?: () => number,
  ): Promise<T> {
    const server = new URL(url).origin;
    const guard = guardRequest({ silenceMs: this.silenceMs, server, what, cancel: call.signal, ...(allowanceMs ? { allowanceMs } : {}) });
    try {
      let res: Response;
      try {
        res = await this.fetchImpl(url, { ...init(guard), signal: guard.signal });
      } catch (err) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        throw guard.reason() ?? new SoundryError(`Cannot reach ${server}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, 'network');
      }
      guard.touch();
      try {
        return await consume(res, guard);
      } catch (err) {
        if (guard.reason()) throw guard.reason();
        if (err instanceof SoundryError) throw err;
        throw new SoundryError(`${what}: the connection to ${server} broke off: ${(err as Error).message}`, 'network');
      }
    } finally {
      guard.done();
    }
  }

  /** An API call: the key sent, the envelope's data answered; the body read chunk by chunk, each one touching the guard. */
  private api(path: string, what: string, call: CallOptions, init: (guard: RequestGuard) => RequestInit, allowanceMs?: () => number): Promise<unknown> {
    return this.request(
      `${this.baseUrl}${path}`,
      what,
      call,
      (guard) => {
        const i = init(guard);
        return { ...i, headers: { 'api-key': this.opts.apiKey, ...(i.headers as Record<string, string> | undefined) } };
      },
      async (res, guard) => {
        const chunks: Buffer[] = [];
        for await (const chunk of res.body ?? []) {
          guard.touch();
          chunks.push(Buffer.from(chunk as Uint8Array));
        }
        return this.envelope(res.status, Buffer.concat(chunks).toString('utf8'), what);
      },
      allowanceMs,
    );
  }

  /** The data of a successful envelope; any other code throws with the API's own message. */
  private envelope(status: number, text: string, what: string): unknown {
    let parsed: z.infer<typeof Envelope>;
    try {
      parsed = Envelope.parse(JSON.parse(text));
    } catch {
      throw new SoundryError(`${what}: HTTP ${status}, not an API answer: ${text.slice(0, 200)}`, 'api', null, status);
    }
    if (parsed.code !== ERRORS.SUCCESS.code) throw new SoundryError(`${what}: ${parsed.message} (code ${parsed.code})`, 'api', parsed.code, status);
    return parsed.data;
  }

  async post<S extends z.ZodType>(path: string, body: unknown, schema: S, call: CallOptions = {}): Promise<z.output<S>> {
    const data = await this.api(path, `POST ${path}`, call, () => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
    return this.parse(schema, data, path);
  }

  async get<S extends z.ZodType>(path: string, schema: S, call: CallOptions = {}): Promise<z.output<S>> {
    return this.parse(schema, await this.api(path, `GET ${path}`, call, () => ({ method: 'GET' })), path);
  }

  private parse<S extends z.ZodType>(schema: S, data: unknown, path: string): z.output<S> {
    const r = schema.safeParse(data);
    if (!r.success) throw new SoundryError(`${path}: unexpected answer: ${z.prettifyError(r.error)}`, 'api');
    return r.data;
  }

  /** Uploads a local file (streamed from disk, progress as the socket takes it) and answers the URL to use as inputurl. */
  async upload(file: string | Blob, onProgress?: OnProgress, call: UploadOptions = {}): Promise<string> {
    const { blob, name } = await blobOf(file);
    onProgress?.({ phase: 'upload', done: 0, total: blob.size });
    const path = `/audio/api/v1/api-keys/files/upload${call.kind ? `?kind=${encodeURIComponent(call.kind)}` : ''}`;
    // Bytes the socket has taken: the system may still be sending up to MAX_BYTES_IN_BUFFERS of them (minUploadBytesPerSecond).
    let taken = 0;
    const data = await this.api(
      path,
      'upload',
      call,
      (guard) => {
        const { body, headers } = uploadBody(blob, name, (done) => {
          taken = done;
          guard.touch();
          onProgress?.({ phase: 'upload', done, total: blob.size });
        });
        return { method: 'POST', headers, body, duplex: 'half' };
      },
      () => (Math.min(taken, MAX_BYTES_IN_BUFFERS) / this.minUploadRate) * 1000,
    );
    const { url } = this.parse(z.object({ url: z.string() }), data, 'upload');
    onProgress?.({ phase: 'upload', done: blob.size, total: blob.size });
    return url;
  }

  /**
   * Streams a result URL to a file (parent folders made), reporting bytes. Result URLs are signed: no key needed.
   * The silence limit restarts with every chunk, so a large result on a slow link is not cut off.
   */
  async download(url: string, dest: string, onProgress?: OnProgress, call: CallOptions = {}): Promise<string> {
    const [written] = await this.downloadAll([{ url, dest }], onProgress, call);
    return written!;
  }

  /**
   * Several results (a separation's stems) as one: each into a file beside its destination, and only once every one
   * is whole are they renamed over theirs. A download stopped between two stems (a Ctrl-C, a cut) left new stems
   * beside the old ones of an earlier run in the same folder (found from outside); now the folder keeps the old set.
   */
  async downloadAll(items: ReadonlyArray<{ url: string; dest: string }>, onProgress?: OnProgress, call: CallOptions = {}): Promise<string[]> {
    const parts: string[] = [];
    try {
      for (const { url, dest } of items) parts.push(await this.downloadPart(url, dest, onProgress, call));
      for (const [i, part] of parts.entries()) {
        const dest = items[i]!.dest;
        // The path is a folder, or not writable: the caller's to fix.
        await rename(part, dest).catch((err: Error) => {
          throw new SoundryError(`Cannot write ${dest}: ${err.message}; nothing was written to ${dest}`, 'input');
        });
      }
    } catch (err) {
      await Promise.all(parts.map((part) => rm(part, { force: true })));
      throw err;
    }
    return items.map((i) => i.dest);
  }

  /** One result into a new file beside `dest` (its path answered); nothing is left of it when this throws. */
  private async downloadPart(url: string, dest: string, onProgress: OnProgress | undefined, call: CallOptions): Promise<string> {
    return this.request(url, `download of ${url}`, call, () => ({}), async (res, guard) => {
      if (!res.ok || !res.body) {
        await res.body?.cancel().catch(() => undefined);
        throw new SoundryError(`Download of ${url} failed: HTTP ${res.status}`, 'api', null, res.status);
      }
      const total = Number(res.headers.get('content-length')) || null;
      let done = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
          guard.touch();
          done += chunk.length;
          onProgress?.({ phase: 'download', done, total });
          cb(null, chunk);
        },
      });
      await mkdir(dirname(dest), { recursive: true });
      // Into a file beside `dest`, renamed over it once whole: a download cut off part way used to truncate the file the
      // user already had at that path and leave a half-written one (found from outside).
      const part = `${dest}.part-${randomBytes(4).toString('hex')}`;
      try {
        await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), counter, createWriteStream(part, { flags: 'wx' }));
        if (total !== null && done !== total) throw new Error(`the answer ended after ${done} of ${total} bytes`);
      } catch (err) {
        await rm(part, { force: true });
        const aborted = guard.reason();
        if (aborted) throw aborted;
        if (err instanceof SoundryError) throw err;
        // A local file error (the path is a folder, not writable) is the caller's to fix; anything else is the connection.
        const local = typeof (err as NodeJS.ErrnoException).syscall === 'string';
        throw new SoundryError(`Download of ${url} to ${dest} failed: ${(err as Error).message}; nothing was written to ${dest}`, local ? 'input' : 'network');
      }
      return part;
    });
  }
}
