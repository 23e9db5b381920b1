import { isStorageUnavailable } from '../adapters/s3-blob-store.js';
import { isDatabaseUnavailable } from '../adapters/sql/unavailable.js';
import type { UnavailableStore } from '../http/envelope.js';

/**
 * Which store an error says cannot be reached, for the API's 503 answers: the object store's SDK errors carry
 * `$metadata` (its network errors included, which would otherwise read as the database's), the rest is the database's.
 */
export function unavailableStore(err: unknown): UnavailableStore | null {
  const fromS3 = typeof err === 'object' && err !== null && '$metadata' in err;
  if (fromS3) return isStorageUnavailable(err) ? 'file store' : null;
  return isDatabaseUnavailable(err) ? 'database' : null;
}
