import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createTestDatabase } from './postgres.js';
import { startS3 } from './s3.js';
import { TEST_REDIS_URL } from './redis-test-prefix.js';

/**
 * Which deployment profile the HTTP suite runs on. `npm test` runs the suite twice (vitest projects in
 * vitest.config.ts): embedded (SQLite, SQL queue, local disk) and scale-out (PostgreSQL, BullMQ on Redis,
 * S3 through s3rver), so the same tests prove both; a test can still pin a backend through its own env.
 */
export const TEST_PROFILE: 'embedded' | 'scaleout' = process.env.SOUNDRY_TEST_PROFILE === 'scaleout' ? 'scaleout' : 'embedded';

export interface ProfileResources {
  /** Variables that point a server at this profile's backends. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** A throwaway Postgres database, an s3rver bucket and Redis prefixes of its own: nothing shared with other tests. */
export async function startScaleOutResources(): Promise<ProfileResources> {
  const id = randomBytes(6).toString('hex');
  const db = await createTestDatabase();
  const s3 = await startS3();
  const queuePrefix = `sqt${id}`;
  const keyPrefix = `soundry-test:profile:${id}:`;
  return {
    env: {
      ...s3.env,
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queuePrefix,
      REDIS_KEY_PREFIX: keyPrefix,
      SIGNING_SECRET: `test-secret-${id}-${randomBytes(12).toString('hex')}`,
    },
    async close() {
      const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
      try {
        for (const match of [`${queuePrefix}:*`, `${keyPrefix}*`]) {
          for await (const keys of redis.scanStream({ match, count: 500 })) {
            if ((keys as string[]).length) await redis.del(...(keys as string[]));
          }
        }
      } finally {
        await redis.quit();
      }
      await s3.close();
      await db.drop();
    },
  };
}
