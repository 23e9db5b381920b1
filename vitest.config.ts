import { defineConfig } from 'vitest/config';

/**
 * The suite runs on both deployment profiles: every test once on the embedded profile (SQLite, SQL queue,
 * local disk), and the HTTP suite (real servers through test/helpers/app.ts) once more on the scale-out
 * profile (PostgreSQL, BullMQ on Redis, S3 through s3rver; test/helpers/profile.ts). Tests that start their
 * own processes or pin a backend themselves are the same on both and run once.
 */
const PINNED = [
  'test/platform/architecture.test.ts',
  'test/platform/node-engines.test.ts',
  'test/platform/npm-start-signal.test.ts',
  'test/platform/recovery.test.ts',
  'test/platform/restart-handback.test.ts',
  'test/platform/postgres-profile.test.ts',
  'test/platform/s3-e2e.test.ts',
  'test/platform/queue-bullmq-e2e.test.ts',
  'test/platform/scaleout-processes.test.ts',
  'test/http/limits-shared.test.ts',
  // Unit tests of the HTTP layer: no server, no backend.
  'test/http/files-route.test.ts',
  'test/http/signed-url.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    // A server's close under a loaded 2-core machine (engine threads, queue drain) can take a while.
    hookTimeout: 120_000,
    // Servers, ffmpeg and WASM engines are heavy on a 2-core box: keep files from starving each other.
    maxWorkers: 2,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'embedded', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'scaleout',
          include: ['test/platform/**/*.test.ts', 'test/http/**/*.test.ts', 'test/kinds/stored-params.test.ts'],
          exclude: PINNED,
          env: { SOUNDRY_TEST_PROFILE: 'scaleout' },
        },
      },
    ],
  },
});
