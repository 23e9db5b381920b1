import { timingSafeEqual } from 'node:crypto';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { assertBlobKey, decodeKeyPath } from '../ports/blob-keys.js';
import type { BlobUrls, OwnLink } from '../ports/blob-store.js';

/**
 * Blob URLs as S3 presigned GETs (S3_URL_MODE=presigned): clients download straight from the bucket,
 * so result bandwidth never passes through the API. Only for buckets whose endpoint clients can
 * reach. SigV4 caps a presigned URL at 7 days, and with temporary credentials (an IAM role) a URL
 * dies with the session that signed it: use long-lived keys for this mode.
 *
 * Recognising our own links (the input fetcher reads them from the store instead of downloading):
 * a presigned URL is deterministic given key, date, lifetime and credentials, so we sign again with
 * the URL's X-Amz-Date and X-Amz-Expires and compare signatures. Matching the bucket's address alone
 * would not do: anyone could then name any key (another account's results) and have a worker read it
 * with our credentials. A URL on the bucket that we cannot vouch for (signed with rotated credentials,
 * or forged) is left to S3 itself: it is fetched over HTTP like any URL, SSRF guard included.
 */

const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

export interface PresignedS3UrlsOptions {
  client: S3Client;
  bucket: string;
  /** Links issued before switching to this mode (and any signed /files/ link) keep working. */
  signedLinks: Pick<BlobUrls, 'ownKey'>;
  /** Milliseconds since the epoch, like Date.now (injectable for tests). */
  now?: () => number;
}

export class PresignedS3Urls implements BlobUrls {
  readonly maxTtlSeconds = MAX_PRESIGN_SECONDS;
  private readonly now: () => number;
  /** Origin and path prefix of this bucket's object URLs, learnt from one presigned URL. */
  private location: Promise<{ origin: string; prefix: string }> | null = null;

  constructor(private readonly opts: PresignedS3UrlsOptions) {
    this.now = opts.now ?? Date.now;
  }

  async url(key: string, ttlSeconds: number): Promise<string> {
    assertBlobKey(key);
    if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0 || ttlSeconds > MAX_PRESIGN_SECONDS) {
      throw new RangeError(`Presigned URL lifetime must be 1..${MAX_PRESIGN_SECONDS} s, got ${ttlSeconds}`);
    }
    return this.presign(key, ttlSeconds, new Date(this.now()));
  }

  async ownKey(url: string): Promise<OwnLink> {
    const signed = await this.opts.signedLinks.ownKey(url);
    if (signed.kind !== 'foreign') return signed;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { kind: 'foreign' };
    }
    const q = parsed.searchParams;
    const signature = q.get('X-Amz-Signature');
    const date = AMZ_DATE.exec(q.get('X-Amz-Date') ?? '');
    const expires = Number(q.get('X-Amz-Expires'));
    if (!signature || !date || !Number.isInteger(expires) || expires <= 0 || expires > MAX_PRESIGN_SECONDS) return { kind: 'foreign' };
    const key = await this.keyOf(parsed);
    if (!key) return { kind: 'foreign' };
    const [, y, mo, d, h, mi, s] = date;
    const signedAt = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)));
    const expected = new URL(await this.presign(key, expires, signedAt)).searchParams.get('X-Amz-Signature') ?? '';
    const a = Buffer.from(expected, 'utf8');
    const b = Buffer.from(signature, 'utf8');
    if (a.length !== b.length || !timingSafeEqual(a, b)) return { kind: 'foreign' };
    // Signed by us: now its lifetime is ours to judge, as S3 would.
    if (signedAt.getTime() + expires * 1000 <= this.now()) return { kind: 'refused', reason: 'expired' };
    return { kind: 'own', key };
  }

  private presign(key: string, expiresIn: number, signingDate: Date): Promise<string> {
    const filename = key.slice(key.lastIndexOf('/') + 1);
    const command = new GetObjectCommand({
      Bucket: this.opts.bucket,
      Key: key,
      // Same disposition as the file route; the object's stored Content-Type comes with it.
      ResponseContentDisposition: `inline; filename="${filename}"`,
    });
    return getSignedUrl(this.opts.client, command, { expiresIn, signingDate });
  }

  /** The key a URL on this bucket's address names, or null when it is elsewhere or not a valid key. */
  private async keyOf(url: URL): Promise<string | null> {
    // Path-style or virtual-hosted depends on client settings and endpoint: ask the SDK once.
    this.location ??= this.presign('k', 60, new Date(this.now())).then(
      (probe) => {
        const u = new URL(probe);
        return { origin: u.origin, prefix: u.pathname.slice(0, -1) };
      },
      (err: unknown) => {
        this.location = null; // e.g. credentials not available yet: try again next time
        throw err;
      },
    );
    const { origin, prefix } = await this.location;
    if (url.origin !== origin || !url.pathname.startsWith(prefix)) return null;
    return decodeKeyPath(url.pathname.slice(prefix.length));
  }
}
