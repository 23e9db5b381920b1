import { assertBlobKey } from '../ports/blob-keys.js';
import type { BlobUrls, OwnLink } from '../ports/blob-store.js';
import { keyFromPath } from './routes/files.js';
import type { UrlSigner } from './signed-url.js';

/**
 * Blob URLs as Soundry's own signed links, `${PUBLIC_BASE_URL}/files/<key>?exp=&sig=`, served by the
 * file route from whichever store holds the blob (local disk, or S3 streamed with Range passed
 * through). Clients only ever need to reach the API, whatever the network between it and the store.
 */
export class SignedBlobUrls implements BlobUrls {
  /** Our own links can live as long as the caller asks (the file TTL and task expiry cap them). */
  readonly maxTtlSeconds = Number.POSITIVE_INFINITY;
  private readonly base: URL;

  constructor(
    private readonly signer: UrlSigner,
    publicBaseUrl: string,
  ) {
    this.base = new URL(publicBaseUrl);
  }

  async url(key: string, ttlSeconds: number): Promise<string> {
    assertBlobKey(key);
    return this.signer.sign(key, ttlSeconds);
  }

  async ownKey(url: string): Promise<OwnLink> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { kind: 'foreign' };
    }
    if (parsed.origin !== this.base.origin) return { kind: 'foreign' };
    const prefix = this.base.pathname.replace(/\/+$/, '');
    if (!parsed.pathname.startsWith(`${prefix}/files/`)) return { kind: 'foreign' };
    // Under our /files/ path it is ours or nothing: a malformed key could never have been signed.
    const key = keyFromPath(parsed.pathname.slice(prefix.length));
    if (!key) return { kind: 'refused', reason: 'invalid' };
    const verdict = this.signer.verify(key, parsed.searchParams.get('exp') ?? undefined, parsed.searchParams.get('sig') ?? undefined);
    if (verdict === 'ok') return { kind: 'own', key };
    return { kind: 'refused', reason: verdict === 'expired' ? 'expired' : 'invalid' };
  }
}
