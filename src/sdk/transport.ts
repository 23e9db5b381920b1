import { randomBytes } from 'node:crypto';
import { createWriteStream, openAsBlob } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { ERRORS } from '../domain/errors.js';

/**
 * Why a call failed, so a caller (and the CLI's exit codes) can tell a refusal of the API from a failed task,
 * an unreachable server or a file that is not there.
 */
export type SoundryErrorKind = 'api' | 'task_failed' | 'network' | 'timeout' | 'input';

export class SoundryError extends Error {
  override readonly name = 'SoundryError';
  constructor(
    message: string,
    readonly kind: SoundryErrorKind,
    /** The envelope's code when the API answered one (101002 for a bad key, 100100 for credits ...). */
    readonly code: number | null = null,
    readonly httpStatus: number | null = null,
  ) {
    super(message);
  }
}

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
}

const Envelope = z.object({ code: z.number(), data: z.unknown(), message: z.string() });

/** A Blob from a local path or the Blob given; a missing path is the caller's mistake, said with the path. */
async function blobOf(file: string | Blob): Promise<{ blob: Blob; name: string }> {
  if (typeof file !== 'string') return { blob: file, name: 'upload.bin' };
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

  constructor(private readonly opts: TransportOptions) {
    if (!opts.baseUrl) throw new SoundryError('No server URL (set SOUNDRY_URL, e.g. http://127.0.0.1:8080)', 'input');
    if (!opts.apiKey) throw new SoundryError('No API key (set SOUNDRY_API_KEY; an admin creates one with `soundry keys create`)', 'input');
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = opts.fetch ?? fetch;
  }

  private async send(path: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetchImpl(`${this.baseUrl}${path}`, { ...init, headers: { 'api-key': this.opts.apiKey, ...init.headers } });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new SoundryError(`Cannot reach ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, 'network');
    }
  }

  /** The data of a successful envelope; any other code throws with the API's own message. */
  private async envelope(res: Response, what: string): Promise<unknown> {
    const text = await res.text();
    let parsed: z.infer<typeof Envelope>;
    try {
      parsed = Envelope.parse(JSON.parse(text));
    } catch {
      throw new SoundryError(`${what}: HTTP ${res.status}, not an API answer: ${text.slice(0, 200)}`, 'api', null, res.status);
    }
    if (parsed.code !== ERRORS.SUCCESS.code) throw new SoundryError(`${what}: ${parsed.message} (code ${parsed.code})`, 'api', parsed.code, res.status);
    return parsed.data;
  }

  async post<S extends z.ZodType>(path: string, body: unknown, schema: S): Promise<z.output<S>> {
    const res = await this.send(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return this.parse(schema, await this.envelope(res, `POST ${path}`), path);
  }

  async get<S extends z.ZodType>(path: string, schema: S): Promise<z.output<S>> {
    return this.parse(schema, await this.envelope(await this.send(path, { method: 'GET' }), `GET ${path}`), path);
  }

  private parse<S extends z.ZodType>(schema: S, data: unknown, path: string): z.output<S> {
    const r = schema.safeParse(data);
    if (!r.success) throw new SoundryError(`${path}: unexpected answer: ${z.prettifyError(r.error)}`, 'api');
    return r.data;
  }

  /** Uploads a local file (streamed from disk) and answers the URL to use as inputurl. */
  async upload(file: string | Blob, onProgress?: OnProgress): Promise<string> {
    const { blob, name } = await blobOf(file);
    onProgress?.({ phase: 'upload', done: 0, total: blob.size });
    const form = new FormData();
    form.append('file', blob, name);
    const res = await this.send('/audio/api/v1/api-keys/files/upload', { method: 'POST', body: form });
    const data = this.parse(z.object({ url: z.string() }), await this.envelope(res, 'upload'), 'upload');
    onProgress?.({ phase: 'upload', done: blob.size, total: blob.size });
    return data.url;
  }

  /** Streams a result URL to a file (parent folders made), reporting bytes. Result URLs are signed: no key needed. */
  async download(url: string, dest: string, onProgress?: OnProgress): Promise<string> {
    let res: Response;
    try {
      res = await this.fetchImpl(url);
    } catch (err) {
      throw new SoundryError(`Cannot download ${url}: ${(err as Error).message}`, 'network');
    }
    if (!res.ok || !res.body) throw new SoundryError(`Download of ${url} failed: HTTP ${res.status}`, 'api', null, res.status);
    const total = Number(res.headers.get('content-length')) || null;
    let done = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
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
      await rename(part, dest);
    } catch (err) {
      await rm(part, { force: true });
      if (err instanceof SoundryError) throw err;
      // A local file error (the path is a folder, not writable) is the caller's to fix; anything else is the connection.
      const local = typeof (err as NodeJS.ErrnoException).syscall === 'string';
      throw new SoundryError(`Download of ${url} to ${dest} failed: ${(err as Error).message}; nothing was written to ${dest}`, local ? 'input' : 'network');
    }
    return dest;
  }
}
