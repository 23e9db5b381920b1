import { AppError } from '../domain/errors.js';
import type { BlobUrls, OwnLink } from '../ports/blob-store.js';

/**
 * What a URL given to a create is, as the input fetcher will take it (BlobUrls.ownKey). A link of this server that
 * the fetcher would not honour (expired, or not valid: its key or signature changed) is refused at create, naming
 * the field: before, it became a task that waited its turn in the queue and then failed in the worker. A link that
 * cannot be judged (the issuer failing) refuses nothing: the worker says what is wrong then.
 */
export async function ownLinkOrRefuse(field: string, url: string, urls: Pick<BlobUrls, 'ownKey'>): Promise<OwnLink> {
  const own = await urls.ownKey(url).catch((): OwnLink => ({ kind: 'foreign' }));
  if (own.kind === 'refused') {
    const what = own.reason === 'expired' ? 'is a file link of this server that has expired' : 'is a file link of this server that is not valid (changed or cut short)';
    throw new AppError('INVALID_PARAMETERS', `Invalid parameters: ${field}: ${what}; upload the file again for a new link`);
  }
  return own;
}
