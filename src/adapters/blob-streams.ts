import { Transform, type TransformCallback } from 'node:stream';
import { BlobTooLargeError } from '../ports/blob-store.js';

/** Stream helpers shared by the blob stores, so both enforce limits and ranges the same way. */

/** Passes bytes through, counting them; fails with BlobTooLargeError past `maxBytes`. */
export class ByteCounter extends Transform {
  bytes = 0;

  constructor(private readonly maxBytes = Infinity) {
    super();
    if (maxBytes !== Infinity && (!Number.isSafeInteger(maxBytes) || maxBytes < 0)) {
      throw new RangeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
    }
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    // Fail before passing the chunk on: the store never receives a byte past the limit.
    if (this.bytes > this.maxBytes) callback(new BlobTooLargeError(this.maxBytes));
    else callback(null, chunk);
  }
}

/**
 * Bytes [skip, skip + length) of what passes through. For servers that answer a range request with
 * more than was asked: HTTP lets a server ignore Range (200, whole body), and s3rver answers
 * `bytes=0-0` with the whole object. What follows the slice is read and dropped.
 */
export class ByteSlice extends Transform {
  private seen = 0;

  constructor(
    private readonly skip: number,
    private readonly length: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const from = Math.max(0, this.skip - this.seen);
    const to = Math.min(chunk.length, this.skip + this.length - this.seen);
    this.seen += chunk.length;
    callback(null, from < to ? chunk.subarray(from, to) : undefined);
  }
}

/** Refuses ranges no store could answer the same way (negative, reversed, not integers). */
export function checkRange(range: { start: number; end: number } | undefined): void {
  if (!range) return;
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new RangeError(`Invalid byte range ${start}-${end}`);
  }
}

/** The error every store rejects `read` with for a missing blob (what the file route looks for). */
export function blobNotFound(key: string): Error {
  return Object.assign(new Error(`No such blob: ${key}`), { code: 'ENOENT' });
}
