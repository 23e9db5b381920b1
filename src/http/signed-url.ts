import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Time-limited download links for result blobs: `${baseUrl}/files/<key>?exp=<unix s>&sig=<hmac>`.
 * The HMAC covers the key and the expiry, so neither can be changed without the secret.
 */

export type VerifyResult = 'ok' | 'expired' | 'bad_signature';

export interface UrlSignerOptions {
  secret: Buffer | string;
  /** Public origin (and optional path prefix) of the API, e.g. `https://audio.example.com`. */
  baseUrl: string;
  ttlSeconds: number;
  /** Milliseconds since the epoch, like Date.now (injectable for tests). */
  now?: () => number;
}

export interface UrlSigner {
  sign(key: string, ttlSeconds?: number): string;
  verify(key: string, exp: string | number | undefined, sig: string | undefined): VerifyResult;
}

/** Each segment percent-encoded on its own so the slashes stay path separators. */
export function encodeKeyPath(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

export function createUrlSigner(opts: UrlSignerOptions): UrlSigner {
  const secret = typeof opts.secret === 'string' ? Buffer.from(opts.secret, 'utf8') : Buffer.from(opts.secret);
  if (secret.length === 0) throw new Error('URL signing secret must not be empty');
  if (!Number.isInteger(opts.ttlSeconds) || opts.ttlSeconds <= 0) throw new Error('ttlSeconds must be a positive integer');
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');
  const now = opts.now ?? Date.now;

  // exp is digits only, so "exp\nkey" cannot be re-split into a different (exp, key) pair.
  const mac = (key: string, exp: string) => createHmac('sha256', secret).update(`${exp}\n${key}`, 'utf8').digest('base64url');

  return {
    sign(key, ttlSeconds = opts.ttlSeconds) {
      if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0) throw new Error('ttlSeconds must be a positive integer');
      const exp = String(Math.floor(now() / 1000) + ttlSeconds);
      return `${baseUrl}/files/${encodeKeyPath(key)}?exp=${exp}&sig=${mac(key, exp)}`;
    },
    verify(key, exp, sig) {
      const expStr = typeof exp === 'number' ? String(exp) : exp;
      if (!expStr || !/^\d{1,15}$/.test(expStr) || !sig) return 'bad_signature';
      const expected = Buffer.from(mac(key, expStr), 'utf8');
      const given = Buffer.from(sig, 'utf8');
      // Length is public (fixed for SHA-256); only equal-length buffers may be compared.
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'bad_signature';
      return Number(expStr) * 1000 <= now() ? 'expired' : 'ok';
    },
  };
}
