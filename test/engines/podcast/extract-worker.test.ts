import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractInWorker, extractMemoryMessage } from '../../../src/engines/podcast/extract-worker.js';
import { TaskFailure } from '../../../src/domain/errors.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'extract-worker-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const text = (path: string) => ({ path, sniffed: { kind: 'text', format: 'plain' } as never, contentType: 'text/plain', url: null });

describe('extractInWorker', () => {
  it('reads a source in a child process and answers its result', async () => {
    const path = join(dir, 'ok.txt');
    await writeFile(path, 'Lighthouses\n\nLighthouses guided ships along dangerous coasts for centuries, and keepers tended them.');
    const r = await extractInWorker(text(path), {}, { maxSeconds: 60, memoryMb: 256 });
    expect(r.kind).toBe('text');
    expect(r.text).toMatch(/guided ships/);
  }, 60_000);

  it('a failure of the source itself comes back as a TaskFailure with its message', async () => {
    const path = join(dir, 'empty.txt');
    await writeFile(path, '...');
    await expect(extractInWorker(text(path), {}, { maxSeconds: 60, memoryMb: 256 })).rejects.toThrow(new TaskFailure('The text has no usable text'));
  }, 60_000);

  it('a source that needs more heap than the cap kills the child and fails naming the limit', async () => {
    // 40 MB of short lines: the line arrays and the cleaned copies need far more than a 64 MB heap.
    const path = join(dir, 'big.txt');
    await writeFile(path, 'a b\n'.repeat(10 * 1024 * 1024));
    const t = performance.now();
    const err = await extractInWorker(text(path), {}, { maxSeconds: 60, memoryMb: 64 }).catch((e) => e);
    expect(err).toBeInstanceOf(TaskFailure);
    expect(err.message).toBe(extractMemoryMessage(64));
    expect(performance.now() - t).toBeLessThan(60_000);
  }, 90_000);

  it('an aborted task kills its child', async () => {
    const path = join(dir, 'ok2.txt');
    await writeFile(path, 'Lighthouses guided ships along dangerous coasts for centuries, and keepers tended them.');
    const ac = new AbortController();
    const p = extractInWorker(text(path), {}, { maxSeconds: 60, memoryMb: 256 }, ac.signal);
    ac.abort(new Error('cancelled'));
    await expect(p).rejects.toThrow('cancelled');
  });
});
