import type { BlobUrls, OwnLink } from '../ports/blob-store.js';

export interface ReusedBlobUrlsOptions {
  /** Links kept at most; past it the map is emptied (each key is signed again on its next poll). */
  maxEntries?: number;
  /** Milliseconds since the epoch, like Date.now (injectable for tests). */
  now?: () => number;
}

/** How much earlier than asked a reused link may end: a minute, or a tenth of a short lifetime. */
const SLACK_MS = 60_000;
const SLACK_SHARE = 0.1;

/**
 * Every poll of a finished task signed its result link again: an HMAC per poll for Soundry's own links
 * (about 10-15 us, 10% of such a poll's CPU: bench/results/http.md F), a SigV4 presign for S3 links. A client
 * polls the same task many times; this hands it the link it was last given while that one still fits.
 *
 * A link issued for `key` is reused when it ends no later than the link now asked for would (a link never
 * outlives what the caller asks, e.g. its task's expiry: TaskService caps the lifetime), and no more than
 * the slack earlier (a minute, or a tenth of the asked lifetime when that is shorter). So a link handed out
 * lives at most a minute less than it would have, and a task whose expiry moved closer gets a new one at once.
 */
export class ReusedBlobUrls implements BlobUrls {
  readonly maxTtlSeconds: number;
  private readonly issued = new Map<string, { url: string; endMs: number }>();
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly inner: BlobUrls,
    opts: ReusedBlobUrlsOptions = {},
  ) {
    this.maxTtlSeconds = inner.maxTtlSeconds;
    this.maxEntries = opts.maxEntries ?? 10_000;
    this.now = opts.now ?? Date.now;
  }

  async url(key: string, ttlSeconds: number): Promise<string> {
    const now = this.now();
    const wantedEndMs = now + ttlSeconds * 1000;
    const last = this.issued.get(key);
    if (last && last.endMs <= wantedEndMs && last.endMs >= wantedEndMs - Math.min(SLACK_MS, ttlSeconds * 1000 * SLACK_SHARE)) return last.url;
    const url = await this.inner.url(key, ttlSeconds);
    if (this.issued.size >= this.maxEntries) this.issued.clear();
    // The end as the issuer counts it (whole seconds from its own clock reading) is no later than this.
    this.issued.set(key, { url, endMs: wantedEndMs });
    return url;
  }

  ownKey(url: string): Promise<OwnLink> {
    return this.inner.ownKey(url);
  }
}
