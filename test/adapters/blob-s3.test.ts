import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3BlobStore } from '../../src/adapters/s3-blob-store.js';
import { PresignedS3Urls } from '../../src/adapters/s3-presigned-urls.js';
import { createUrlSigner } from '../../src/http/signed-url.js';
import { SignedBlobUrls } from '../../src/http/signed-blob-urls.js';
import { startS3, type TestS3 } from '../helpers/s3.js';
import { defineBlobContract, signedUrlMode, tamperParam } from './blob-contract.js';

const MiB = 1024 * 1024;
let s3: TestS3;
let store: S3BlobStore;

defineBlobContract('S3 (s3rver)', {
  async open() {
    s3 = await startS3();
    // Batches of 2 so a handful of objects exercises batched deletes. Pages stay at 1000: s3rver's
    // second page fails in this process (DES tokens, test/helpers/s3.ts); pagination is tested below.
    store = new S3BlobStore({ client: s3.client(), bucket: s3.bucket, partSizeBytes: 5 * MiB, deleteBatchSize: 2 });
    return store;
  },
  leftovers: () => s3.pendingMultipartUploads(),
  // s3rver answers AbortMultipartUpload with 405 (test/helpers/s3.ts).
  abortsMultipart: false,
  urlModes: [
    signedUrlMode('S3_URL_MODE=api (signed /files/ links, streamed from the bucket)', () => s3.env),
    {
      name: 'S3_URL_MODE=presigned',
      env: () => ({ ...s3.env, S3_URL_MODE: 'presigned' }),
      urlPrefix: () => `${s3.endpoint}/${s3.bucket}/`,
      expiredUrl: (app, key) =>
        new PresignedS3Urls({ client: s3.client(), bucket: s3.bucket, signedLinks: app.container.urls, now: () => Date.now() - 3_600_000 }).url(key, 60),
      tamper: (url) => tamperParam(url, 'X-Amz-Signature'),
      // s3rver does not verify SigV4 signatures, only expiry: it serves a tampered URL. S3 answers 403.
      tamperedStatus: 200,
      // Not vouched for by us, so fetched over HTTP like any URL: the SSRF guard refuses loopback.
      tamperedFetchError: /could not be fetched/,
    },
  ],
  close: () => s3.close(),
});

describe('S3 listings across pages (s3rver in a child process with the OpenSSL legacy provider)', () => {
  let paged: TestS3;
  let small: S3BlobStore;
  beforeAll(async () => {
    paged = await startS3({ legacyProvider: true });
    small = new S3BlobStore({ client: paged.client(), bucket: paged.bucket, listPageSize: 2, deleteBatchSize: 3 });
  });
  afterAll(async () => paged?.close());

  const put = (key: string) => small.putStream(key, Readable.from([Buffer.from(key)]), 'x');

  it('deletePrefix lists page by page and deletes in batches', async () => {
    const names = ['a.mp3', 'b.mp3', 'c.wav', 'd.zip', 'e.json', 'f/g.json', 'h.txt'];
    for (const n of names) await put(`tasks/p1/${n}`);
    await put('tasks/p10/keep.mp3');
    await small.deletePrefix('tasks/p1/');
    for (const n of names) expect(await small.stat(`tasks/p1/${n}`)).toBeNull();
    expect(await small.stat('tasks/p10/keep.mp3')).not.toBeNull();
  });

  it('deleteOlderThan judges entries whose objects straddle page boundaries', async () => {
    for (const id of ['u1', 'u2', 'u3', 'u4', 'u5']) {
      for (const n of ['a.wav', 'b.wav', 'c.wav']) await put(`uploads/${id}/${n}`);
    }
    expect(await small.deleteOlderThan('uploads', Date.now() - 60_000)).toBe(0);
    expect(await small.deleteOlderThan('uploads', Date.now() + 60_000)).toBe(5);
    for (const id of ['u1', 'u3', 'u5']) expect(await small.stat(`uploads/${id}/c.wav`)).toBeNull();
  });
});

describe('S3 specifics', () => {
  it('stores the content type on the object, for presigned GETs', async () => {
    const key = `tasks/t${randomBytes(4).toString('hex')}/out.mp3`;
    await store.putStream(key, Readable.from([Buffer.from('mp3')]), 'application/octet-stream');
    const head = await s3.client().send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }));
    expect(head.ContentType).toBe('audio/mpeg');
  });

  it('presigned URLs: the asked lifetime, at most 7 days; own links recognised, others not', async () => {
    const now = Date.now();
    const signer = createUrlSigner({ secret: 'presigned-test-secret', baseUrl: 'http://api.test', ttlSeconds: 60 });
    const urls = new PresignedS3Urls({ client: s3.client(), bucket: s3.bucket, signedLinks: new SignedBlobUrls(signer, 'http://api.test'), now: () => now });
    expect(urls.maxTtlSeconds).toBe(604_800);
    const url = new URL(await urls.url('tasks/abc/out.mp3', 600));
    expect(url.searchParams.get('X-Amz-Expires')).toBe('600');
    expect(url.searchParams.get('response-content-disposition')).toBe('inline; filename="out.mp3"');
    await expect(urls.url('tasks/abc/out.mp3', 604_801)).rejects.toThrow(RangeError);
    await expect(urls.url('../x', 60)).rejects.toThrow(/Invalid blob key/);

    expect(await urls.ownKey(url.toString())).toEqual({ kind: 'own', key: 'tasks/abc/out.mp3' });
    // Links issued in api mode before a switch to presigned stay recognised.
    expect(await urls.ownKey(signer.sign('uploads/u1/a.wav'))).toEqual({ kind: 'own', key: 'uploads/u1/a.wav' });
    // Another key under the same signature, another bucket, another lifetime: not ours.
    const otherKey = url.toString().replace('/tasks/abc/out.mp3', '/tasks/other/out.mp3');
    expect(await urls.ownKey(otherKey)).toEqual({ kind: 'foreign' });
    expect(await urls.ownKey(url.toString().replace(`/${s3.bucket}/`, '/elsewhere/'))).toEqual({ kind: 'foreign' });
    expect(await urls.ownKey(url.toString().replace('X-Amz-Expires=600', 'X-Amz-Expires=6000'))).toEqual({ kind: 'foreign' });
    expect(await urls.ownKey('https://example.com/a.wav')).toEqual({ kind: 'foreign' });
    expect(await urls.ownKey('not a url')).toEqual({ kind: 'foreign' });
    const later = new PresignedS3Urls({ client: s3.client(), bucket: s3.bucket, signedLinks: new SignedBlobUrls(signer, 'http://api.test'), now: () => now + 601_000 });
    expect(await later.ownKey(url.toString())).toEqual({ kind: 'refused', reason: 'expired' });
  });
});
