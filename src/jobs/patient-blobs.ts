import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { BlobInfo, BlobStore } from '../ports/blob-store.js';
import { throughOutage } from './outage.js';

/**
 * The worker side's blob store: a result file's upload waits out an object store that cannot be reached (S3
 * answering 503 SlowDown, connections cut) for up to `outageMs`, as the task records wait out the database.
 * Found from outside: 30 s of 503s failed every running separation and enhancement, the work of the first attempt
 * (finished, then lost while uploading) and the two next attempts within 3 s, since the SDK's own retries last about
 * a second. Uploads of a local file can be sent again; a stream (putStream) cannot, and is passed through.
 */
export class PatientBlobStore implements BlobStore {
  constructor(
    private readonly inner: BlobStore,
    private readonly opts: { unavailable: (err: unknown) => boolean; outageMs: number; stopping: () => boolean; logger: Logger },
  ) {}

  putFile(key: string, localPath: string, contentType: string): Promise<BlobInfo> {
    return throughOutage(() => this.inner.putFile(key, localPath, contentType), {
      unavailable: this.opts.unavailable,
      deadline: Date.now() + this.opts.outageMs,
      abandon: this.opts.stopping,
      log: this.opts.logger,
      what: `storing ${key}`,
    });
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  putStream(key: string, body: Readable, contentType: string, maxBytes?: number): Promise<BlobInfo> {
    return this.inner.putStream(key, body, contentType, maxBytes);
  }

  stat(key: string): Promise<BlobInfo | null> {
    return this.inner.stat(key);
  }

  read(key: string, range?: { start: number; end: number }): Promise<Readable> {
    return this.inner.read(key, range);
  }

  deletePrefix(prefix: string): Promise<void> {
    return this.inner.deletePrefix(prefix);
  }

  deleteOlderThan(folder: string, cutoffMs: number): Promise<number> {
    return this.inner.deleteOlderThan(folder, cutoffMs);
  }

  removePartialsOlderThan(folder: string, cutoffMs: number): Promise<number> {
    return this.inner.removePartialsOlderThan(folder, cutoffMs);
  }
}
