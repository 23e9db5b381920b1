import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalBlobStore } from '../../src/adapters/local-blob-store.js';
import { contentTypeForKey, isValidBlobKey } from '../../src/ports/blob-keys.js';

let base = '';
let root = '';
let store: LocalBlobStore;

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function localFile(name: string, content: string | Buffer): Promise<string> {
  const p = path.join(base, name);
  await writeFile(p, content);
  return p;
}

beforeEach(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'soundry-blobs-'));
  root = path.join(base, 'root');
  store = new LocalBlobStore(root);
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('LocalBlobStore', () => {
  it('moves a file in and stats it with a content type from the extension', async () => {
    const src = await localFile('work.mp3', 'abcdefghij');
    const info = await store.putFile('tasks/t1/output.mp3', src, 'audio/mpeg');
    expect(info).toEqual({ size: 10, contentType: 'audio/mpeg' });
    expect(existsSync(src)).toBe(false);
    expect(await readFile(path.join(root, 'tasks/t1/output.mp3'), 'utf8')).toBe('abcdefghij');
    expect(await store.stat('tasks/t1/output.mp3')).toEqual({ size: 10, contentType: 'audio/mpeg' });
  });

  // /dev/shm is usually another filesystem than the temp dir: rename fails with EXDEV there.
  const otherFs = existsSync('/dev/shm') && statSync('/dev/shm').dev !== statSync(os.tmpdir()).dev;
  it.skipIf(!otherFs)('copies across filesystems and removes the source', async () => {
    const src = path.join('/dev/shm', `soundry-blob-${process.pid}-${Date.now()}.wav`);
    await writeFile(src, 'cross-device');
    const info = await store.putFile('tasks/x/out.wav', src, 'audio/wav');
    expect(info).toEqual({ size: 12, contentType: 'audio/wav' });
    expect(existsSync(src)).toBe(false);
    expect(await readFile(path.join(root, 'tasks/x/out.wav'), 'utf8')).toBe('cross-device');
    expect(readdirSync(path.join(root, 'tasks/x'))).toEqual(['out.wav']);
  });

  it('overwrites an existing blob', async () => {
    await store.putFile('tasks/t1/a.json', await localFile('1', '{"a":1}'), 'application/json');
    const info = await store.putFile('tasks/t1/a.json', await localFile('2', '{}'), 'application/json');
    expect(info.size).toBe(2);
  });

  it('reads whole blobs and inclusive byte ranges', async () => {
    await store.putFile('tasks/t1/out.wav', await localFile('w', '0123456789'), 'audio/wav');
    expect((await collect(await store.read('tasks/t1/out.wav'))).toString()).toBe('0123456789');
    expect((await collect(await store.read('tasks/t1/out.wav', { start: 2, end: 5 }))).toString()).toBe('2345');
    expect((await collect(await store.read('tasks/t1/out.wav', { start: 9, end: 9 }))).toString()).toBe('9');
    await expect(store.read('tasks/t1/out.wav', { start: 5, end: 2 })).rejects.toThrow(RangeError);
  });

  it('returns null / rejects for missing blobs and directories', async () => {
    expect(await store.stat('tasks/none/out.mp3')).toBeNull();
    await expect(store.read('tasks/none/out.mp3')).rejects.toMatchObject({ code: 'ENOENT' });
    await store.putFile('tasks/t1/out.mp3', await localFile('x', 'x'), 'audio/mpeg');
    expect(await store.stat('tasks/t1')).toBeNull();
    await expect(store.read('tasks/t1')).rejects.toMatchObject({ code: 'ENOENT' });
    // A file used as a directory is "missing", not an error.
    expect(await store.stat('tasks/t1/out.mp3/more')).toBeNull();
  });

  it.each([
    '../escape.mp3',
    'tasks/../../escape.mp3',
    'tasks/./a.mp3',
    '/etc/passwd',
    'tasks\\a.mp3',
    'tasks/a\0.mp3',
    'tasks//a.mp3',
    'tasks/a.mp3/',
    '',
    'tasks/a b.mp3',
    'tasks/%2e%2e/a.mp3',
    'tâche/a.mp3',
  ])('refuses key %j', async (key) => {
    expect(isValidBlobKey(key)).toBe(false);
    const src = await localFile('k', 'data');
    await expect(store.putFile(key, src, 'audio/mpeg')).rejects.toThrow(/Invalid blob key/);
    expect(existsSync(src)).toBe(true);
    expect(await store.stat(key)).toBeNull();
    await expect(store.read(key)).rejects.toThrow(/Invalid blob key/);
  });

  it('deletes a task directory by prefix and leaves siblings alone', async () => {
    await store.putFile('tasks/t1/a.mp3', await localFile('a', 'a'), 'audio/mpeg');
    await store.putFile('tasks/t1/sub/b.wav', await localFile('b', 'b'), 'audio/wav');
    await store.putFile('tasks/t10/c.mp3', await localFile('c', 'c'), 'audio/mpeg');
    await store.deletePrefix('tasks/t1/');
    expect(existsSync(path.join(root, 'tasks/t1'))).toBe(false);
    expect(await store.stat('tasks/t10/c.mp3')).not.toBeNull();
    await store.deletePrefix('tasks/nothing-here/');
    await store.deletePrefix('nothing/at/all');
  });

  it('treats a prefix without trailing slash as a plain string prefix', async () => {
    await store.putFile('tasks/t2/out.mp3', await localFile('a', 'a'), 'audio/mpeg');
    await store.putFile('tasks/t2/out-preview.mp3', await localFile('b', 'b'), 'audio/mpeg');
    await store.putFile('tasks/t2/keep.mp3', await localFile('c', 'c'), 'audio/mpeg');
    await store.deletePrefix('tasks/t2/out');
    expect(await store.stat('tasks/t2/out.mp3')).toBeNull();
    expect(await store.stat('tasks/t2/out-preview.mp3')).toBeNull();
    expect(await store.stat('tasks/t2/keep.mp3')).not.toBeNull();
  });

  it('refuses dangerous prefixes', async () => {
    await mkdir(path.join(base, 'outside'), { recursive: true });
    await expect(store.deletePrefix('')).rejects.toThrow();
    await expect(store.deletePrefix('/')).rejects.toThrow();
    await expect(store.deletePrefix('../')).rejects.toThrow();
    await expect(store.deletePrefix('tasks/../../outside/')).rejects.toThrow();
    expect(existsSync(path.join(base, 'outside'))).toBe(true);
  });

  it('maps extensions to content types', () => {
    expect(contentTypeForKey('a/b.MP3')).toBe('audio/mpeg');
    expect(contentTypeForKey('a/b.wav')).toBe('audio/wav');
    expect(contentTypeForKey('a/b.flac')).toBe('audio/flac');
    expect(contentTypeForKey('a/b.zip')).toBe('application/zip');
    expect(contentTypeForKey('a/b.svg')).toBe('image/svg+xml');
    expect(contentTypeForKey('a/b.m4a')).toBe('audio/mp4');
    expect(contentTypeForKey('a/noext')).toBe('application/octet-stream');
  });
});

describe('partial files left by a process that died mid-write', () => {
  it('removes stale .part files (and their then-empty upload folder), keeps fresh ones and finished uploads', async () => {
    const uploads = path.join(root, 'uploads');
    const old = new Date(Date.now() - 2 * 3600_000);
    await mkdir(path.join(uploads, 'aaaa'), { recursive: true });
    await writeFile(path.join(uploads, 'aaaa', '.song.mp3.part-0123456789ab'), 'half');
    await utimes(path.join(uploads, 'aaaa', '.song.mp3.part-0123456789ab'), old, old);
    await mkdir(path.join(uploads, 'bbbb'), { recursive: true });
    await writeFile(path.join(uploads, 'bbbb', '.talk.wav.part-ba9876543210'), 'still being written');
    await store.putStream('uploads/cccc/done.mp3', (await import('node:stream')).Readable.from([Buffer.from('x')]), 'audio/mpeg');
    expect(await store.removePartialsOlderThan('uploads', Date.now() - 3600_000)).toBe(1);
    expect(existsSync(path.join(uploads, 'aaaa'))).toBe(false);
    expect(existsSync(path.join(uploads, 'bbbb', '.talk.wav.part-ba9876543210'))).toBe(true);
    expect(await store.stat('uploads/cccc/done.mp3')).not.toBeNull();
  });

  it('a partial counts its age from its last write: an upload that began long ago but still receives data stays', async () => {
    const { PassThrough } = await import('node:stream');
    const body = new PassThrough();
    const put = store.putStream('uploads/dddd/slow.wav', body, 'audio/wav');
    const entry = path.join(root, 'uploads', 'dddd');
    const partial = async () => {
      for (;;) {
        const name = existsSync(entry) ? readdirSync(entry).find((n) => n.includes('.part-')) : undefined;
        if (name && statSync(path.join(entry, name)).size > 0) return path.join(entry, name);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    body.write(Buffer.alloc(1000, 1));
    const file = await partial();
    // Created (and last read) two hours ago, as a slow upload's partial would be; then more bytes arrive.
    const old = new Date(Date.now() - 2 * 3600_000);
    await utimes(file, old, old);
    body.write(Buffer.alloc(1000, 2));
    while (statSync(file).size < 2000) await new Promise((r) => setTimeout(r, 10));
    expect(await store.removePartialsOlderThan('uploads', Date.now() - 3600_000)).toBe(0);
    body.end(Buffer.alloc(1000, 3));
    expect((await put).size).toBe(3000);
    expect(readdirSync(entry)).toEqual(['slow.wav']);
  });

  it('its health check reports an unwritable folder', async () => {
    await store.ping();
    await rm(root, { recursive: true, force: true });
    await writeFile(root, 'a file where the folder should be');
    await expect(store.ping()).rejects.toThrow();
  });
});
