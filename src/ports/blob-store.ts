import type { Readable } from 'node:stream';

export interface BlobInfo {
  size: number;
  contentType: string;
}

/**
 * Result files. Keys are relative, slash-separated, made by the service (never by clients),
 * e.g. `tasks/<taskId>/output.mp3`. Local disk and S3-compatible stores implement this.
 */
export interface BlobStore {
  /** Move or copy a finished local file into the store. */
  putFile(key: string, localPath: string, contentType: string): Promise<BlobInfo>;
  stat(key: string): Promise<BlobInfo | null>;
  /** Byte range is inclusive (like HTTP Range); omit for the whole blob. */
  read(key: string, range?: { start: number; end: number }): Promise<Readable>;
  /** Removes every blob whose key starts with prefix (a task's files). */
  deletePrefix(prefix: string): Promise<void>;
  /**
   * Removes the entries directly under `folder` (e.g. each `uploads/<id>/`) stored before `cutoffMs`.
   * Returns how many were removed. Used for uploads, which have no task row to expire with.
   */
  deleteOlderThan(folder: string, cutoffMs: number): Promise<number>;
}
