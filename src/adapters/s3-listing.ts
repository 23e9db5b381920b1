import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';

/** Paginated listing and batched deletion: how the S3 store removes a task's files and old uploads. */

export interface ListedObject {
  key: string;
  lastModifiedMs: number;
}

/** Every object under `prefix`, page by page (S3 returns them in key order, at most 1000 a page). */
export async function* listObjects(client: S3Client, bucket: string, prefix: string, pageSize = 1000): AsyncGenerator<ListedObject> {
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, MaxKeys: pageSize, ContinuationToken: token }));
    for (const obj of page.Contents ?? []) {
      if (obj.Key === undefined) continue;
      yield { key: obj.Key, lastModifiedMs: obj.LastModified?.getTime() ?? 0 };
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}

/** Collects keys and deletes them with DeleteObjects, `batchSize` (S3's maximum: 1000) at a time. */
export class BatchDeleter {
  private keys: string[] = [];

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly batchSize = 1000,
  ) {
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1000) throw new RangeError('batchSize must be 1..1000');
  }

  async add(key: string): Promise<void> {
    this.keys.push(key);
    if (this.keys.length >= this.batchSize) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.keys.length === 0) return;
    const batch = this.keys;
    this.keys = [];
    const out = await this.client.send(
      new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }),
    );
    // DeleteObjects answers 200 even when some keys failed: those are only listed in Errors.
    const failed = out.Errors ?? [];
    if (failed.length > 0) {
      const first = failed[0];
      throw new Error(`S3 refused to delete ${failed.length} of ${batch.length} objects (first: ${first?.Key}: ${first?.Code} ${first?.Message})`);
    }
  }
}
