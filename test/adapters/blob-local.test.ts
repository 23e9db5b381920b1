import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalBlobStore } from '../../src/adapters/local-blob-store.js';
import { defineBlobContract, signedUrlMode } from './blob-contract.js';

let base = '';

defineBlobContract('local disk', {
  async open() {
    base = await mkdtemp(join(tmpdir(), 'soundry-blob-local-'));
    return new LocalBlobStore(join(base, 'root'));
  },
  async leftovers() {
    // putStream's in-flight files: `.<name>.part-<random>` beside their target.
    const names = await readdir(join(base, 'root'), { recursive: true }).catch(() => []);
    return names.filter((n) => /(^|\/)\.[^/]+\.part-[0-9a-f]+$/.test(n)).length;
  },
  abortsMultipart: true,
  urlModes: [signedUrlMode('signed /files/ links', () => ({}))],
  async close() {
    await rm(base, { recursive: true, force: true });
  },
});
