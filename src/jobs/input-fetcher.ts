import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { TaskFailure } from '../domain/errors.js';
import type { BlobStore, BlobUrls } from '../ports/blob-store.js';
import { fetchToFile, FetchInputError, type AddressPolicy } from '../media/fetch-input.js';
import { sniffMediaType, type SniffedType } from '../media/sniff.js';

export interface FetchedInput {
  path: string;
  bytes: number;
  sniffed: SniffedType;
  /** The Content-Type the server sent (null for our own files): its charset decodes legacy-encoded pages. */
  contentType: string | null;
}

export interface InputFetcherOptions {
  allowPrivate: boolean;
  maxBytes: number;
  timeoutMs: number;
  /** INPUT_MIN_BYTES_PER_SECOND over INPUT_RATE_WINDOW_SECONDS (fetchToFile's floor); 0: none. */
  minBytesPerSecond?: number;
  rateWindowMs?: number;
  /**
   * Test seam only (set through buildContainer's options by test code, never from config or env): the DNS
   * resolver and where a checked address is really connected to. The guard still checks every address the
   * resolver answers, so this cannot open a private address; it only lets tests play "the internet" on 127.0.0.1.
   */
  testOnly?: Pick<AddressPolicy, 'lookup' | 'testOnlyConnectTo'>;
}

/**
 * Brings a task's `inputurl` to a local file. Our own file links (uploads, earlier results), signed
 * /files/ links or S3 presigned URLs alike, are read straight from the blob store once the issuer has
 * verified them: fetching them over HTTP would hit the SSRF guard (loopback, a private bucket) and
 * waste a round trip. Everything else goes through the SSRF-guarded fetcher.
 */
export class InputFetcher {
  constructor(
    private readonly deps: { blobs: BlobStore; urls: Pick<BlobUrls, 'ownKey'> },
    private readonly opts: InputFetcherOptions,
  ) {}

  /**
   * `limits.overLimitHint`: what to tell the user when the kind's own maxBytes (not INPUT_MAX_BYTES) is what
   * refused the file, appended to the message after a semicolon.
   */
  async fetch(url: string, destPath: string, signal: AbortSignal, limits: { maxBytes?: number; overLimitHint?: string } = {}): Promise<FetchedInput> {
    const maxBytes = Math.min(limits.maxBytes ?? Infinity, this.opts.maxBytes);
    const hint = (reason: string) => {
      if (reason === 'too_large' && limits.overLimitHint && limits.maxBytes !== undefined && limits.maxBytes <= this.opts.maxBytes) return `; ${limits.overLimitHint}`;
      // The operator's switch, named where the refusal is read: without it the task fails after an accepted create.
      if (reason === 'blocked_address' && !this.opts.allowPrivate) return '; a server meant for a private network can allow such addresses with ALLOW_PRIVATE_URLS=1';
      return '';
    };
    const own = await this.deps.urls.ownKey(url);
    if (own.kind === 'own') return this.copyBlob(own.key, destPath, maxBytes, hint('too_large'));
    if (own.kind === 'refused') {
      throw new TaskFailure(`The URL is a file link of this server that is ${own.reason === 'expired' ? 'expired' : 'not valid'}`);
    }
    try {
      const res = await fetchToFile(url, destPath, {
        allowPrivate: this.opts.allowPrivate,
        maxBytes,
        timeoutMs: this.opts.timeoutMs,
        ...(this.opts.minBytesPerSecond ? { minBytesPerSecond: this.opts.minBytesPerSecond, rateWindowMs: this.opts.rateWindowMs ?? 30_000 } : {}),
        signal,
        ...this.opts.testOnly,
      });
      return { path: destPath, bytes: res.bytes, sniffed: res.sniffed, contentType: res.contentType };
    } catch (err) {
      if (err instanceof FetchInputError) {
        // Network trouble may pass; a refused address, a 404 or an oversized file will not.
        const transient = err.reason === 'network' || err.reason === 'timeout' || err.reason === 'dns';
        throw new TaskFailure(`The URL could not be fetched: ${err.message}${hint(err.reason)}`, transient && !signal.aborted);
      }
      throw err;
    }
  }

  private async copyBlob(key: string, destPath: string, maxBytes: number, overLimitHint: string): Promise<FetchedInput> {
    const info = await this.deps.blobs.stat(key);
    if (!info) throw new TaskFailure('The URL points to a file of this server that no longer exists');
    if (info.size > maxBytes) throw new TaskFailure(`The file is larger than the limit of ${maxBytes} bytes${overLimitHint}`);
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
