import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStorageUnavailable, S3BlobStore } from '../../src/adapters/s3-blob-store.js';
import { PatientBlobStore } from '../../src/jobs/patient-blobs.js';
import { startS3, type TestS3 } from '../helpers/s3.js';
import { startSheddingHop, type SheddingHop } from '../helpers/s3-hop.js';

/**
 * Found from outside: 30 s of 503 SlowDown from the object store failed every running separation and enhancement,
 * the finished work of the first attempt lost while uploading its result, and the two next attempts within 3 s (the
 * SDK's own retries last about a second). A result upload now waits the outage out. Real s3rver behind an HTTP hop
 * that answers 503 SlowDown, as S3 does when it sheds load, for OUTAGE_MS.
 */
const OUTAGE_MS = 3000;
let s3: TestS3;
let hop: SheddingHop;
let dir: string;

beforeAll(async () => {
  s3 = await startS3();
  hop = await startSheddingHop(s3.endpoint);
  dir = await mkdtemp(join(tmpdir(), 'soundry-patient-'));
});
afterAll(async () => {
  await hop?.close();
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The hop answers 503 SlowDown for `ms`; returns when it stops. */
function shedFor(ms: number): number {
  hop.shedding = true;
  setTimeout(() => (hop.shedding = false), ms);
  return Date.now() + ms;
}

function storeThroughHop(outageMs: number): PatientBlobStore {
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: hop.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return new PatientBlobStore(new S3BlobStore({ client, bucket: s3.bucket }), { unavailable: isStorageUnavailable, outageMs, stopping: () => false, logger: pino({ level: 'silent' }) });
}

describe('a result upload during an object store outage', () => {
  it('waits it out and stores the file once the store answers again', async () => {
    const file = join(dir, 'result.mp3');
    await writeFile(file, Buffer.alloc(64 * 1024, 7));
    const until = shedFor(OUTAGE_MS);
    const info = await storeThroughHop(30_000).putFile('tasks/t1/result.mp3', file, 'audio/mpeg');
    expect(Date.now()).toBeGreaterThanOrEqual(until);
    expect(info.size).toBe(64 * 1024);
    const direct = new S3BlobStore({ client: s3.client(), bucket: s3.bucket });
    expect(await direct.stat('tasks/t1/result.mp3')).toMatchObject({ size: 64 * 1024 });
  }, 60_000);

  it('without the wait (STORE_OUTAGE_SECONDS=0) the upload fails as the SDK gives up, and a client error is never retried', async () => {
    const file = join(dir, 'other.mp3');
    await writeFile(file, Buffer.alloc(1024, 1));
    shedFor(OUTAGE_MS);
    const failure = await storeThroughHop(0).putFile('tasks/t2/other.mp3', file, 'audio/mpeg').catch((err: unknown) => err);
    expect(isStorageUnavailable(failure)).toBe(true);
    hop.shedding = false;
    // A missing local file is the caller's fault: thrown at once, not waited on.
    const started = Date.now();
    await expect(storeThroughHop(30_000).putFile('tasks/t3/x.mp3', join(dir, 'missing.mp3'), 'audio/mpeg')).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2000);
  }, 60_000);
});
