import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMqJobQueue } from '../../src/adapters/bullmq/queue.js';
import { SqlJobQueue } from '../../src/adapters/sql/queue.js';
import { S3BlobStore } from '../../src/adapters/s3-blob-store.js';
import { LocalBlobStore } from '../../src/adapters/local-blob-store.js';
import { dialectOf } from '../../src/adapters/sql/dialect.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { TEST_PROFILE } from '../helpers/profile.js';

/** The suite runs once per profile (vitest.config.ts); this proves each run is on the backends it claims. */
describe(`the test profile (${TEST_PROFILE})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => app?.close());

  it('runs the servers on the profile backends', () => {
    const { container } = app;
    if (TEST_PROFILE === 'scaleout') {
      expect(dialectOf(container.db)).toBe('postgres');
      expect(container.queue).toBeInstanceOf(BullMqJobQueue);
      expect(container.blobs).toBeInstanceOf(S3BlobStore);
    } else {
      expect(dialectOf(container.db)).toBe('sqlite');
      expect(container.queue).toBeInstanceOf(SqlJobQueue);
      expect(container.blobs).toBeInstanceOf(LocalBlobStore);
    }
  });
});
