import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = new URL('../../..', import.meta.url).pathname;

describe('flite under sustained load', () => {
  // Regression: Node 20's WASI fast-API path aborted the process after a few paragraphs
  // (nodejs/node#48114); FliteEngine disables fast API calls before loading.
  it('survives repeated paragraphs after espeak in one process', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'test/fixtures/flite-stress.ts'], { cwd: root, timeout: 90_000 });
    expect(stdout).toContain('survived');
  }, 120_000);
});
