import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Servers, ffmpeg and WASM engines are heavy on a 2-core box: keep files from starving each other.
    maxWorkers: 2,
    pool: 'forks',
  },
});
