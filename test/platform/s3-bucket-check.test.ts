import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';
import { startS3, type TestS3 } from '../helpers/s3.js';

/**
 * Found from outside: BLOB_STORE=s3 with a bucket that does not exist started cleanly, /healthz said only
 * `blobs: unavailable: UnknownError`, and every upload answered 100500. Start-up now stops naming the bucket.
 */
let s3: TestS3;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => s3?.close());

describe('the S3 bucket at start-up', () => {
  it('a bucket that does not exist stops start-up, naming it', async () => {
    await expect(startTestApp({ ...s3.env, S3_BUCKET: 'soundry-no-such-bucket' }, { workers: false })).rejects.toThrow(
      'BLOB_STORE=s3 cannot be used: the bucket soundry-no-such-bucket does not exist (S3_BUCKET).',
    );
  });

  it('the bucket that exists starts as before', async () => {
    const app = await startTestApp(s3.env, { workers: false });
    await app.close();
  });
});
