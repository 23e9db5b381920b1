import path from 'node:path';

/**
 * Key rules shared by every blob store, the file route and URL issuers. Keys are made by the service
 * (`tasks/<id>/output.mp3`, `uploads/<id>/<name>`), never by clients, so the rules can be strict:
 * relative, slash-separated, segments of [A-Za-z0-9._-] that never start with a dot. That refuses
 * `..`, `.`, a leading `/`, backslashes, empty segments, and leaves dot-names to the stores for
 * their own bookkeeping (the local store's in-flight `.name.part-*` files can never be addressed).
 */

const KEY_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
/** S3 caps keys at 1024 bytes; with this character set bytes and characters are the same. */
const MAX_KEY_LENGTH = 1024;

export function isValidKeySegment(segment: string): boolean {
  return KEY_SEGMENT.test(segment);
}

export function isValidBlobKey(key: string): boolean {
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) return false;
  return key.split('/').every(isValidKeySegment);
}

/**
 * The key a URL path names (`tasks/a/b.mp3` from `tasks/a/b%2Emp3`), or null. Each segment is
 * decoded and judged on its own, so `%2F`, `%2e%2e` and the like are judged on what they decode to.
 */
export function decodeKeyPath(encoded: string): string | null {
  const segments: string[] = [];
  for (const raw of encoded.split('/')) {
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (!isValidKeySegment(seg)) return null;
    segments.push(seg);
  }
  const key = segments.join('/');
  return isValidBlobKey(key) ? key : null;
}

export class InvalidBlobKeyError extends Error {
  constructor(key: string) {
    super(`Invalid blob key: ${JSON.stringify(key.slice(0, 200))}`);
  }
}

export function assertBlobKey(key: string): void {
  if (!isValidBlobKey(key)) throw new InvalidBlobKeyError(key);
}

/**
 * A deletion prefix: a key or a key followed by `/` (a folder). An empty prefix would wipe every
 * task's results, so it is never legitimate. Returns the prefix without its trailing slashes.
 */
export function checkedPrefix(prefix: string): string {
  const trimmed = prefix.replace(/\/+$/, '');
  if (!isValidBlobKey(trimmed)) throw new InvalidBlobKeyError(prefix);
  return trimmed;
}

const CONTENT_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  flac: 'audio/flac',
  m4a: 'audio/mp4',
  aac: 'audio/aac',
  ogg: 'audio/ogg',
  opus: 'audio/ogg; codecs=opus',
  mp4: 'video/mp4',
  webm: 'audio/webm',
  zip: 'application/zip',
  json: 'application/json',
  txt: 'text/plain; charset=utf-8',
  srt: 'application/x-subrip',
  vtt: 'text/vtt; charset=utf-8',
  png: 'image/png',
  svg: 'image/svg+xml',
};

/**
 * The type a blob is served with. It comes from the key's extension, which the service chose, not
 * from what an uploading client declared: a client can never get a blob served as HTML this way.
 */
export function contentTypeForKey(key: string): string {
  const ext = path.posix.extname(key).slice(1).toLowerCase();
  return CONTENT_TYPES[ext] ?? 'application/octet-stream';
}
