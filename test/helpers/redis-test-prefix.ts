import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

/** The Redis the scale-out tests use (scripts/ensure-services.sh starts it on CI machines). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * A key prefix of its own for one test run (other runs and other suites share this Redis), and a
 * cleanup that deletes only keys under it: never FLUSHDB.
 */
export async function redisTestPrefix(label: string): Promise<{ prefix: string; admin: Redis; cleanup(): Promise<void> }> {
  const prefix = `soundry-test:${label}:${randomUUID()}:`;
  const admin = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await admin.connect().catch((err: unknown) => {
    throw new Error(`these tests need Redis at ${TEST_REDIS_URL} (TEST_REDIS_URL): ${String(err)}`);
  });
  return {
    prefix,
    admin,
    async cleanup() {
      for await (const keys of admin.scanStream({ match: `${prefix}*`, count: 500 })) {
        if ((keys as string[]).length) await admin.del(...(keys as string[]));
      }
      await admin.quit();
    },
  };
}
