import { createReadStream } from 'node:fs';
import { stat as statFile, unlink } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import { GetObjectCommand, HeadBucketCommand, HeadObjectCommand, S3ServiceException, type GetObjectCommandOutput, type S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { BlobInfo, BlobStore } from '../ports/blob-store.js';
import { assertBlobKey, checkedPrefix, contentTypeForKey, isValidBlobKey } from '../ports/blob-keys.js';
import { blobNotFound, ByteCounter, ByteSlice, checkRange } from './blob-streams.js';
import { BatchDeleter, listObjects, type ListedObject } from './s3-listing.js';
import { isNetworkError } from './network-errors.js';

/**
 * Blob store on any S3-compatible service (AWS S3, MinIO, Cloudflare R2, Ceph RGW). Keys are object
 * keys as they are; objects carry their Content-Type so presigned GETs are typed too.
 * Writes go through lib-storage's Upload: parts of `partSizeBytes` streamed from the source, at most
 * `queueSize` in flight, so memory stays near partSize x queueSize whatever the file's size.
 */

export interface S3BlobStoreOptions {
  client: S3Client;
  bucket: string;
  /** Multipart part size; S3's minimum is 5 MiB. Raised for big files to stay under 10,000 parts. */
  partSizeBytes?: number;
  /** Parts uploaded at once. */
  queueSize?: number;
  /** ListObjectsV2 page size (S3's maximum 1000); smaller only to exercise pagination in tests. */
  listPageSize?: number;
  /** Keys per DeleteObjects call (S3's maximum 1000); smaller only for tests. */
  deleteBatchSize?: number;
}

const MIN_PART_SIZE = 5 * 1024 * 1024;
const MAX_PARTS = 10_000;

function isNotFound(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NotFound' || err.name === 'NoSuchKey' || err.$metadata.httpStatusCode === 404);
}

function isInvalidRange(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'InvalidRange' || err.$metadata.httpStatusCode === 416);
}

interface FolderEntry {
  keys: string[];
  newestMs: number;
}

/**
 * Groups a listing of `base` into its entries (`<id>/` with everything below it). Keys sharing a
 * prefix are contiguous in a listing, so each entry is complete as soon as the listing moves past
 * it: memory holds one entry's keys, not the whole folder's.
 */
async function* entriesUnder(objects: AsyncIterable<ListedObject>, base: string): AsyncGenerator<FolderEntry> {
  let name: string | null = null;
  let current: FolderEntry = { keys: [], newestMs: 0 };
  for await (const obj of objects) {
    const rest = obj.key.slice(base.length);
    const slash = rest.indexOf('/');
    // `abc/` (a folder) and a lone object `abc` are different entries.
    const objName = slash === -1 ? rest : rest.slice(0, slash + 1);
    if (objName !== name) {
      if (name !== null) yield current;
      name = objName;
      current = { keys: [], newestMs: 0 };
    }
    current.keys.push(obj.key);
    current.newestMs = Math.max(current.newestMs, obj.lastModifiedMs);
  }
  if (name !== null) yield current;
}

/**
 * Whether an S3 call failed because the store could not serve it (a 5xx such as 503 SlowDown, a server fault, a
 * timeout, a connection refused or cut) rather than because of the request: worth waiting for (PatientBlobStore).
 */
export function isStorageUnavailable(err: unknown): boolean {
  if (isNetworkError(err)) return true;
  if (err instanceof S3ServiceException) return err.$fault === 'server' || (err.$metadata.httpStatusCode ?? 0) >= 500;
  return err instanceof Error && (err.name === 'TimeoutError' || err.name === 'RequestTimeout');
}

/** Why the bucket cannot be used, in words; `lasting`: a configuration problem (no such bucket, no access), not an outage. */
export class BucketProblem extends Error {
  readonly lasting: boolean;

  constructor(bucket: string, cause: unknown) {
    const status = cause instanceof S3ServiceException ? cause.$metadata.httpStatusCode : undefined;
    const why =
      status === 404 ? `the bucket ${bucket} does not exist (S3_BUCKET)`
      : status === 403 ? `access to the bucket ${bucket} is denied (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, or the bucket's policy)`
      : status === 301 ? `the bucket ${bucket} is in another region than S3_REGION`
      : status !== undefined ? `the object store answered HTTP ${status} for the bucket ${bucket}`
      : `the object store cannot be reached (${cause instanceof Error ? ((cause as { code?: string }).code ?? cause.message) : String(cause)})`;
    super(why, { cause });
    this.lasting = status === 404 || status === 403 || status === 301;
  }
}

export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly partSize: number;
  private readonly queueSize: number;
  private readonly listPageSize: number;
  private readonly deleteBatchSize: number;

  constructor(opts: S3BlobStoreOptions) {
    this.client = opts.client;
    this.bucket = opts.bucket;
    this.partSize = Math.max(MIN_PART_SIZE, opts.partSizeBytes ?? 8 * 1024 * 1024);
    this.queueSize = opts.queueSize ?? 4;
    this.listPageSize = opts.listPageSize ?? 1000;
    this.deleteBatchSize = opts.deleteBatchSize ?? 1000;
  }

  /**
   * Throws a BucketProblem naming what is wrong: HeadBucket answers have no body, so the SDK's own error said only
   * "UnknownError" or "NotFound" (found from outside: a bucket that did not exist showed as `blobs: unavailable:
   * UnknownError` in /healthz).
   */
  async ping(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      throw new BucketProblem(this.bucket, err);
    }
  }

  async putFile(key: string, localPath: string, _contentType: string): Promise<BlobInfo> {
    assertBlobKey(key);
    const { size } = await statFile(localPath);
    await this.upload(key, createReadStream(localPath), size);
    // Same contract as the local store's rename: the store now owns the data.
    await unlink(localPath);
    return { size, contentType: contentTypeForKey(key) };
  }

  async putStream(key: string, body: Readable, _contentType: string, maxBytes?: number): Promise<BlobInfo> {
    assertBlobKey(key);
    const counter = new ByteCounter(maxBytes);
    // Errors of `body` reach Upload through `counter` (pipeline destroys it with them).
    const counted = pipeline(body, counter, () => undefined);
    try {
      await this.upload(key, counted, maxBytes);
    } catch (err) {
      // On a source error Upload aborts the multipart upload; should the abort fail too (s3rver has
      // no AbortMultipartUpload; a bucket lifecycle rule sweeps such leftovers), its error would hide
      // the cause the caller needs (BlobTooLargeError is answered 100413).
      throw counter.errored ?? err;
    }
    return { size: counter.bytes, contentType: contentTypeForKey(key) };
  }

  async stat(key: string): Promise<BlobInfo | null> {
    if (!isValidBlobKey(key)) return null;
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: head.ContentLength ?? 0, contentType: head.ContentType ?? contentTypeForKey(key) };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async read(key: string, range?: { start: number; end: number }): Promise<Readable> {
    assertBlobKey(key);
    checkRange(range);
    let out: GetObjectCommandOutput;
    try {
      out = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
      );
    } catch (err) {
      if (isNotFound(err)) throw blobNotFound(key);
      if (isInvalidRange(err)) throw new RangeError(`Byte range ${range?.start}-${range?.end} is outside ${key}`);
      throw err;
    }
    const body = out.Body;
    // In Node the SDK answers an http.IncomingMessage; anything else means a misconfigured client.
    if (!(body instanceof Readable)) throw new Error(`S3 GetObject for ${key} did not answer a Node stream`);
    if (!range) return body;
    // What the server actually sent: no Content-Range means it ignored Range and sent everything.
    const sentFrom = Number(/^bytes (\d+)-\d+\//.exec(out.ContentRange ?? '')?.[1] ?? 0);
    const length = range.end - range.start + 1;
    if (sentFrom === range.start && out.ContentLength === length) return body;
    if (sentFrom > range.start) {
      body.destroy();
      throw new Error(`S3 answered ${out.ContentRange} for bytes=${range.start}-${range.end} of ${key}`);
    }
    return pipeline(body, new ByteSlice(range.start - sentFrom, length), () => undefined);
  }

  async deletePrefix(prefix: string): Promise<void> {
    const trimmed = checkedPrefix(prefix);
    const deleter = new BatchDeleter(this.client, this.bucket, this.deleteBatchSize);
    for await (const obj of listObjects(this.client, this.bucket, prefix.endsWith('/') ? `${trimmed}/` : trimmed, this.listPageSize)) {
      await deleter.add(obj.key);
    }
    await deleter.flush();
  }

  async deleteOlderThan(folder: string, cutoffMs: number): Promise<number> {
    const base = `${checkedPrefix(folder)}/`;
    const deleter = new BatchDeleter(this.client, this.bucket, this.deleteBatchSize);
    let removed = 0;
    for await (const entry of entriesUnder(listObjects(this.client, this.bucket, base, this.listPageSize), base)) {
      if (entry.newestMs >= cutoffMs) continue;
      for (const key of entry.keys) await deleter.add(key);
      removed++;
    }
    await deleter.flush();
    return removed;
  }

  /**
   * Nothing to do here: a put cut short leaves no object, only an incomplete multipart upload, which no listing
   * shows and no reader sees. Upload aborts it on any error in this process (leavePartsOnError: false); one left by
   * a process that died is for the bucket's AbortIncompleteMultipartUpload lifecycle rule (docs/deploy.md). Not
   * aborted from here: ListMultipartUploads gives only an upload's start, not its last part, so telling a dead one
   * from a slow live one would take a ListParts per upload, and s3rver (the tests' S3) has neither call.
   */
  async removePartialsOlderThan(_folder: string, _cutoffMs: number): Promise<number> {
    return 0;
  }

  private async upload(key: string, body: Readable, sizeHint: number | undefined): Promise<void> {
    // Known (or bounded) size: parts big enough that it fits in S3's 10,000 parts.
    const partSize = Math.max(this.partSize, Math.ceil((sizeHint ?? 0) / MAX_PARTS));
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: body, ContentType: contentTypeForKey(key) },
      partSize,
      queueSize: this.queueSize,
      leavePartsOnError: false,
    });
    await upload.done();
  }
}
