import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { TaskFailure } from '../domain/errors.js';
import type { BlobStore } from '../ports/blob-store.js';
import type { UrlSigner } from '../http/signed-url.js';
import { keyFromPath } from '../http/routes/files.js';
import { fetchToFile, FetchInputError } from '../media/fetch-input.js';
import { sniffMediaType, type SniffedType } from '../media/sniff.js';

export interface FetchedInput {
  path: string;
  bytes: number;
  sniffed: SniffedType;
  /** The Content-Type the server sent (null for our own files): its charset decodes legacy-encoded pages. */
  contentType: string | null;
}

export interface InputFetcherOptions {
  publicBaseUrl: string;
  allowPrivate: boolean;
  maxBytes: number;
  timeoutMs: number;
}

/**
 * Brings a task's `inputurl` to a local file. Our own signed file URLs (uploads, earlier results)
 * are read straight from the blob store: fetching them over HTTP would hit the SSRF guard (loopback)
 * and waste a round trip. Everything else goes through the SSRF-guarded fetcher.
 */
export class InputFetcher {
  constructor(
    private readonly deps: { blobs: BlobStore; signer: Pick<UrlSigner, 'verify'> },
    private readonly opts: InputFetcherOptions,
  ) {}

  async fetch(url: string, destPath: string, signal: AbortSignal, limits: { maxBytes?: number } = {}): Promise<FetchedInput> {
    const maxBytes = Math.min(limits.maxBytes ?? Infinity, this.opts.maxBytes);
    const own = this.ownKey(url);
    if (own) return this.copyBlob(own, destPath, maxBytes);
    try {
      const res = await fetchToFile(url, destPath, {
        allowPrivate: this.opts.allowPrivate,
        maxBytes,
        timeoutMs: this.opts.timeoutMs,
        signal,
      });
      return { path: destPath, bytes: res.bytes, sniffed: res.sniffed, contentType: res.contentType };
    } catch (err) {
      if (err instanceof FetchInputError) {
        // Network trouble may pass; a refused address, a 404 or an oversized file will not.
        const transient = err.reason === 'network' || err.reason === 'timeout' || err.reason === 'dns';
        throw new TaskFailure(`The URL could not be fetched: ${err.message}`, transient && !signal.aborted);
      }
      throw err;
    }
  }

  /** The blob key when `url` is one of our own file links with a valid signature. */
  private ownKey(url: string): string | null {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return null;
    }
    const base = new URL(this.opts.publicBaseUrl);
    if (parsed.origin !== base.origin) return null;
    const prefix = base.pathname.replace(/\/+$/, '');
    if (!parsed.pathname.startsWith(`${prefix}/files/`)) return null;
    const key = keyFromPath(parsed.pathname.slice(prefix.length));
    if (!key) return null;
    const verdict = this.deps.signer.verify(key, parsed.searchParams.get('exp') ?? undefined, parsed.searchParams.get('sig') ?? undefined);
    if (verdict !== 'ok') throw new TaskFailure(`The URL is a file link of this server that is ${verdict === 'expired' ? 'expired' : 'not valid'}`);
    return key;
  }

  private async copyBlob(key: string, destPath: string, maxBytes: number): Promise<FetchedInput> {
    const info = await this.deps.blobs.stat(key);
    if (!info) throw new TaskFailure('The URL points to a file of this server that no longer exists');
    if (info.size > maxBytes) throw new TaskFailure(`The file is larger than the limit of ${maxBytes} bytes`);
    await pipeline(await this.deps.blobs.read(key), createWriteStream(destPath));
    const handle = await open(destPath, 'r');
    try {
      const head = Buffer.alloc(4096);
      const { bytesRead } = await handle.read(head, 0, head.length, 0);
      return { path: destPath, bytes: info.size, sniffed: sniffMediaType(head.subarray(0, bytesRead)), contentType: null };
    } finally {
      await handle.close();
    }
  }
}
