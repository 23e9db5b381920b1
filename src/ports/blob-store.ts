import type { Readable } from 'node:stream';

export interface BlobInfo {
  size: number;
  contentType: string;
}

/** A put that would store more than its byte limit. Nothing is left at the key. */
export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`The blob exceeds the limit of ${maxBytes} bytes`);
  }
}

/**
 * Result files and uploads. Keys follow the rules of ./blob-keys.ts (made by the service, never by
 * clients), e.g. `tasks/<taskId>/output.mp3`; a key breaking them throws InvalidBlobKeyError (stat
 * answers null). Blobs are served with contentTypeForKey(key), whatever type a caller passes.
 * Local disk and S3-compatible stores implement this; test/adapters/blob-contract.ts is the contract.
 */
export interface BlobStore {
  /** Throws when the store cannot be reached or written (for /healthz). */
  ping(): Promise<void>;
  /** Moves a finished local file into the store: on success `localPath` is gone, on failure it stays. */
  putFile(key: string, localPath: string, contentType: string): Promise<BlobInfo>;
  /**
   * Streams `body` into the store without holding it whole anywhere. Readers never see a partial
   * blob: on any error, BlobTooLargeError for more than `maxBytes` included, the key keeps what it
   * had before (nothing, for a new key) and the partial data is discarded.
   */
  putStream(key: string, body: Readable, contentType: string, maxBytes?: number): Promise<BlobInfo>;
  stat(key: string): Promise<BlobInfo | null>;
  /**
   * Byte range is inclusive (like HTTP Range) and must lie within the blob; omit it for the whole
   * blob. A missing blob rejects with an error whose `code` is 'ENOENT'.
   */
  read(key: string, range?: { start: number; end: number }): Promise<Readable>;
  /** Removes every blob whose key starts with prefix (`tasks/<id>/`: a task's files). */
  deletePrefix(prefix: string): Promise<void>;
  /**
   * Removes the entries directly under `folder` (each `uploads/<id>/` with everything in it) whose
   * newest content was stored before `cutoffMs`. Returns how many entries were removed. Used for
   * uploads, which have no task row to expire with.
   */
  deleteOlderThan(folder: string, cutoffMs: number): Promise<number>;
  /**
   * Removes the data of puts into the entries under `folder` that a process dying mid-write (kill -9, OOM) left
   * behind, last written before `cutoffMs`; finished blobs are never touched. Returns how many were removed. A put
   * still under way writes its data as it arrives, so the caller picks a cutoff no such put can be older than
   * (RetentionReaper). Without this, what a crash left stays until its whole entry expires (deleteOlderThan).
   */
  removePartialsOlderThan(folder: string, cutoffMs: number): Promise<number>;
}

/** What a URL handed to the service turns out to be. */
export type OwnLink =
  /** One of our links, verified: read the key straight from the store. */
  | { kind: 'own'; key: string }
  /** One of our links that must not be honoured. */
  | { kind: 'refused'; reason: 'expired' | 'invalid' }
  /** Someone else's URL (or one we cannot vouch for): fetch it like any other. */
  | { kind: 'foreign' };

/**
 * How clients are given a blob: an expiring URL anyone holding it can GET (with Range). Local disk
 * and S3 in `api` mode issue Soundry's signed `/files/...` links; S3 in `presigned` mode issues
 * S3 presigned GET URLs. Whoever issues links also recognises them, so the input fetcher can read
 * our own files from the store instead of downloading them through the SSRF guard.
 */
export interface BlobUrls {
  /** Longest lifetime `url` can give (SigV4 presigned URLs cannot live longer than 7 days). */
  readonly maxTtlSeconds: number;
  /** `ttlSeconds`: a positive integer no larger than maxTtlSeconds (callers cap it; see TaskService). */
  url(key: string, ttlSeconds: number): Promise<string>;
  ownKey(url: string): Promise<OwnLink>;
}
