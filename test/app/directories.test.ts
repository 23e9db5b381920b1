import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDirectory } from '../../src/app/directories.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-dirs-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('ensureDirectory (DATA_DIR and its tmp folder at start-up)', () => {
  it('makes every missing level, and is a no-op on an existing folder', async () => {
    const target = join(dir, 'a', 'b', 'c');
    await ensureDirectory(target, 'DATA_DIR');
    expect((await stat(target)).isDirectory()).toBe(true);
    await ensureDirectory(target, 'DATA_DIR');
  });

  it('names a file in the way', async () => {
    await writeFile(join(dir, 'file'), 'x');
    await expect(ensureDirectory(join(dir, 'file', 'data'), 'DATA_DIR')).rejects.toThrow(`DATA_DIR=${join(dir, 'file', 'data')} cannot be used: ${join(dir, 'file')} is not a folder.`);
  });

  // Node's recursive mkdir never returned here (100% CPU): the refusal must come, and quickly.
  it.runIf(process.platform === 'linux')('refuses a folder procfs cannot hold, at once', async () => {
    const started = Date.now();
    await expect(ensureDirectory('/proc/soundry-data/x', 'DATA_DIR')).rejects.toThrow(
      'DATA_DIR=/proc/soundry-data/x cannot be used: creating /proc/soundry-data failed (ENOENT). Choose a folder on a writable disk.',
    );
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
