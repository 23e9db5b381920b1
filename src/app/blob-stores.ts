import { S3Client } from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { BlobStore, BlobUrls } from '../ports/blob-store.js';
import { LocalBlobStore } from '../adapters/local-blob-store.js';
import { BucketProblem, isStorageUnavailable, S3BlobStore } from '../adapters/s3-blob-store.js';
import { StartupRefusal } from '../domain/errors.js';
import { PresignedS3Urls } from '../adapters/s3-presigned-urls.js';
import type { SignedBlobUrls } from '../http/signed-blob-urls.js';
import { PatientBlobStore } from '../jobs/patient-blobs.js';

/** The S3 client of BLOB_STORE=s3, as the store and the start-up check use it. */
function s3Client(config: Config): S3Client {
  return new S3Client({
    region: config.S3_REGION,
    endpoint: config.S3_ENDPOINT,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    // Unset: the AWS default chain (environment, profile, instance or task role).
    ...(config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY
      ? { credentials: { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY } }
      : {}),
    // MinIO, R2, Ceph lag behind the SDK's newer default integrity checksums: send them only when required.
    ...(config.S3_ENDPOINT ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } as const : {}),
    // In api mode every download in progress holds a socket to the bucket; the SDK's default is 50.
    requestHandler: { httpAgent: { keepAlive: true, maxSockets: 256 }, httpsAgent: { keepAlive: true, maxSockets: 256 } },
  });
}

/**
 * Result files: local disk, or an S3-compatible bucket (BLOB_STORE=s3). Links are Soundry's signed
 * /files/ URLs (local, and S3_URL_MODE=api: the API streams from the bucket, clients need reach
 * only the API) or S3 presigned URLs (S3_URL_MODE=presigned: downloads bypass the API).
 */
export function buildBlobs(config: Config, signedUrls: SignedBlobUrls): { blobs: BlobStore; urls: BlobUrls; s3: S3Client | null } {
  if (config.BLOB_STORE !== 's3') return { blobs: new LocalBlobStore(config.BLOB_DIR), urls: signedUrls, s3: null };
  const bucket = config.S3_BUCKET;
  if (!bucket) throw new Error('BLOB_STORE=s3 needs S3_BUCKET'); // loadConfig refuses this already
  const s3 = s3Client(config);
  const blobs = new S3BlobStore({ client: s3, bucket });
  const urls = config.S3_URL_MODE === 'presigned' ? new PresignedS3Urls({ client: s3, bucket, signedLinks: signedUrls }) : signedUrls;
  return { blobs, urls, s3 };
}

/** The worker side's blob store: on S3, result uploads wait out an outage for STORE_OUTAGE_SECONDS (PatientBlobStore). */
export function patientBlobs(config: Config, blobs: BlobStore, stopping: () => boolean, logger: Logger): BlobStore {
  if (config.BLOB_STORE !== 's3') return blobs;
  return new PatientBlobStore(blobs, { unavailable: isStorageUnavailable, outageMs: config.STORE_OUTAGE_SECONDS * 1000, stopping, logger });
}

/**
 * At start-up, with BLOB_STORE=s3, before anything else is opened: a bucket that does not exist, or that these
 * credentials may not use, stops the start naming it (found from outside: it started cleanly, and every upload then
 * answered 100500). A store that cannot be reached now may come back: start anyway, saying so.
 */
export async function checkBucketAtStart(config: Config, logger: Logger): Promise<void> {
  if (config.BLOB_STORE !== 's3' || !config.S3_BUCKET) return;
  const client = s3Client(config);
  try {
    await new S3BlobStore({ client, bucket: config.S3_BUCKET }).ping();
  } catch (err) {
    if (err instanceof BucketProblem && err.lasting) throw new StartupRefusal(`BLOB_STORE=s3 cannot be used: ${err.message}.`);
    logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'the object store cannot be reached at start-up: requests that need it answer 503 until it can');
  } finally {
    client.destroy();
  }
}
