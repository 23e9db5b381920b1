import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractInWorker, extractMemoryMessage, extractTimeMessage, videoCaptionsInWorker } from '../../../src/engines/podcast/extract-worker.js';
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
    const r = await extractInWorker(text(path), {}, { maxSeconds: 60, memoryMb: 256, maxMb: 100 });
    expect(r.kind).toBe('text');
    expect(r.text).toMatch(/guided ships/);
  }, 60_000);

  it('a failure of the source itself comes back as a TaskFailure with its message', async () => {
    const path = join(dir, 'empty.txt');
    await writeFile(path, '...');
    await expect(extractInWorker(text(path), {}, { maxSeconds: 60, memoryMb: 256, maxMb: 100 })).rejects.toThrow(new TaskFailure('The text has no usable text'));
  }, 60_000);

  it('a source that needs more heap than the cap kills the child and fails naming the limit', async () => {
    // 40 MB of short lines: the line arrays and the cleaned copies need far more than a 64 MB heap.
    const path = join(dir, 'big.txt');
    await writeFile(path, 'a b\n'.repeat(10 * 1024 * 1024));
    const t = performance.now();
    const err = await extractInWorker(text(path), {}, { maxSeconds: 60, memoryMb: 64, maxMb: 100 }).catch((e) => e);
    expect(err).toBeInstanceOf(TaskFailure);
    expect(err.message).toBe(extractMemoryMessage(64));
    expect(performance.now() - t).toBeLessThan(60_000);
  }, 90_000);

  it('a file over SOURCE_MAX_MB is refused before any reading, as a final failure naming the limit', async () => {
    // 3 MB of text against a 2 MB limit: refused by its size, without starting a child (so at once).
    const path = join(dir, 'over.txt');
    await writeFile(path, 'word '.repeat(600 * 1024));
    const t = performance.now();
    const err = await extractInWorker(text(path), {}, { maxSeconds: 60, memoryMb: 256, maxMb: 2 }).catch((e) => e);
    expect(err).toBeInstanceOf(TaskFailure);
    expect(err.message).toBe('The source is 3 MB: pages, documents, feeds and text are read up to 2 MB (SOURCE_MAX_MB)');
    expect(performance.now() - t).toBeLessThan(1000);
    const page = join(dir, 'over.html');
    await writeFile(page, `<html><body>${'<p>x</p>'.repeat(400 * 1024)}</body></html>`);
    await expect(videoCaptionsInWorker(page, 'https://video.example/watch', async () => '', {}, { maxSeconds: 60, memoryMb: 256, maxMb: 2 }))
      .rejects.toThrow(new TaskFailure('The source is 4 MB: pages, documents, feeds and text are read up to 2 MB (SOURCE_MAX_MB)'));
  });

  it('an aborted task kills its child', async () => {
    const path = join(dir, 'ok2.txt');
    await writeFile(path, 'Lighthouses guided ships along dangerous coasts for centuries, and keepers tended them.');
    const ac = new AbortController();
    const p = extractInWorker(text(path), {}, { maxSeconds: 60, memoryMb: 256, maxMb: 100 }, ac.signal);
    ac.abort(new Error('cancelled'));
    await expect(p).rejects.toThrow('cancelled');
  });
});

describe('videoCaptionsInWorker', () => {
  const page = (tracks: string) => `<html><head><title>Printing</title></head><body><video>${tracks}</video></body></html>`;
  const vtt = 'WEBVTT\n\n00:00.000 --> 00:02.000\nThis lecture covers the history of printing presses in Europe.\n\n00:02.000 --> 00:04.000\nGutenberg combined movable type with an oil-based ink.\n';

  it('parses the page and the caption document in the child; tracks are fetched by the parent', async () => {
    const html = join(dir, 'video.html');
    await writeFile(html, page('<track kind="captions" src="/dead.vtt" srclang="en"><track kind="subtitles" src="/subs.vtt" srclang="en">'));
    const asked: string[] = [];
    const fetchToFile = async (url: string) => {
      asked.push(url);
      if (url.endsWith('/dead.vtt')) throw new Error('404'); // a dead track must not hide a working one
      const path = join(dir, `track-${asked.length}.vtt`);
      await writeFile(path, vtt);
      return path;
    };
    const r = await videoCaptionsInWorker(html, 'https://video.example/watch', fetchToFile, {}, { maxSeconds: 60, memoryMb: 256, maxMb: 100 });
    expect(asked).toEqual(['https://video.example/dead.vtt', 'https://video.example/subs.vtt']);
    expect(r?.kind).toBe('captions');
    expect(r?.text).toContain('Gutenberg combined movable type');
    expect(r?.language).toBe('en');
  });

  it('answers null for a page without tracks, and the source time limit covers a fetch that never ends', async () => {
    const none = join(dir, 'none.html');
    await writeFile(none, page(''));
    expect(await videoCaptionsInWorker(none, 'https://video.example/watch', async () => '', {}, { maxSeconds: 60, memoryMb: 256, maxMb: 100 })).toBeNull();
    const stalled = join(dir, 'stalled.html');
    await writeFile(stalled, page('<track kind="captions" src="/slow.vtt" srclang="en">'));
    const never = () => new Promise<string>(() => {});
    await expect(videoCaptionsInWorker(stalled, 'https://video.example/watch', never, {}, { maxSeconds: 2, memoryMb: 256, maxMb: 100 })).rejects.toThrow(new TaskFailure(extractTimeMessage(2)));
  });
});
