import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobTooLargeError, type BlobStore } from '../../src/ports/blob-store.js';
import { InputFetcher } from '../../src/jobs/input-fetcher.js';
import { createUrlSigner } from '../../src/http/signed-url.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * The blob store contract: every BlobStore (local disk, S3) must pass the same tests, including the
 * URLs clients are given, fetched over real HTTP from a real Soundry server (and the bucket itself
 * for presigned URLs). Each test works under its own random prefix, so one store serves the file.
 */

export const SIGNING_SECRET = 'blob-contract-signing-secret';

export interface UrlMode {
  name: string;
  /** startTestApp variables selecting this store and URL mode (read once the backend is open). */
  env(): Record<string, string>;
  /** Where issued URLs point (the API's /files/, or the bucket). */
  urlPrefix(app: TestApp): string;
  /** A link to `key` issued an hour ago for 60 s, as this mode issues links. */
  expiredUrl(app: TestApp, key: string): Promise<string>;
  /** The issued link with its signature changed. */
  tamper(url: string): string;
  /** What serving it answers (a real store would say 403 everywhere; see test/helpers/s3.ts). */
  tamperedStatus: number;
  /** How the input fetcher refuses the tampered link. */
  tamperedFetchError: RegExp;
}

export interface BlobBackend {
  /** The store under test: 5 MiB multipart parts, and tiny list pages / delete batches where it has them. */
  open(): Promise<BlobStore>;
  /** Data of failed puts still held somewhere (local: `.part-` files; S3: unfinished multipart uploads). */
  leftovers(): Promise<number>;
  /** False when the server cannot abort a multipart upload (s3rver): a put failing after its first part leaves the parts. */
  abortsMultipart: boolean;
  urlModes: UrlMode[];
  close(): Promise<void>;
}

/** Changes the first character of a query parameter's value (a signature), leaving the rest as is. */
export function tamperParam(url: string, name: string): string {
  return url.replace(new RegExp(`([?&]${name}=)(.)`), (_m, head: string, c: string) => head + (c === '0' ? '1' : '0'));
}

/** Soundry's signed /files/ links: local disk, and S3 with S3_URL_MODE=api. */
export function signedUrlMode(name: string, env: () => Record<string, string>): UrlMode {
  return {
    name,
    env,
    urlPrefix: (app) => `${app.baseUrl}/files/`,
    async expiredUrl(app, key) {
      const past = createUrlSigner({ secret: SIGNING_SECRET, baseUrl: app.config.PUBLIC_BASE_URL, ttlSeconds: 60, now: () => Date.now() - 3_600_000 });
      return past.sign(key);
    },
    tamper: (url) => tamperParam(url, 'sig'),
    tamperedStatus: 403,
    tamperedFetchError: /not valid/,
  };
}

const MiB = 1024 * 1024;
const BODY = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));

const ns = () => `t${randomBytes(6).toString('hex')}`;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c as Uint8Array));
  return Buffer.concat(chunks);
}

/** `data` as a stream of `chunk`-sized pieces, the way a request body arrives. */
function streamOf(data: Buffer, chunk = 64 * 1024): Readable {
  return Readable.from((function* () {
    for (let i = 0; i < data.length; i += chunk) yield data.subarray(i, i + chunk);
  })());
}

export function defineBlobContract(name: string, backend: BlobBackend): void {
  let store: BlobStore;
  let scratch = '';
  const file = async (content: Buffer | string) => {
    const p = join(scratch, `src-${randomBytes(4).toString('hex')}`);
    await writeFile(p, content);
    return p;
  };

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'soundry-blob-contract-'));
    store = await backend.open();
  });
  afterAll(async () => {
    await backend.close();
    await rm(scratch, { recursive: true, force: true });
  });

  describe(`${name}: blob store contract`, () => {
    it('moves a file in; stats and reads it whole and by inclusive ranges', async () => {
      const key = `tasks/${ns()}/output.mp3`;
      const src = await file(BODY);
      expect(await store.putFile(key, src, 'audio/mpeg')).toEqual({ size: 1000, contentType: 'audio/mpeg' });
      expect(existsSync(src)).toBe(false);
      expect(await store.stat(key)).toEqual({ size: 1000, contentType: 'audio/mpeg' });
      expect((await collect(await store.read(key))).equals(BODY)).toBe(true);
      for (const [start, end] of [[0, 0], [2, 5], [100, 199], [999, 999], [0, 999]] as const) {
        expect((await collect(await store.read(key, { start, end }))).equals(BODY.subarray(start, end + 1))).toBe(true);
      }
      await expect(store.read(key, { start: 5, end: 2 })).rejects.toThrow(RangeError);
      await expect(store.read(key, { start: -1, end: 2 })).rejects.toThrow(RangeError);
    });

    it('streams a blob in; the type comes from the key, not from what the caller declares', async () => {
      const key = `uploads/${ns()}/voice.wav`;
      expect(await store.putStream(key, streamOf(BODY, 100), 'text/html')).toEqual({ size: 1000, contentType: 'audio/wav' });
      expect(await store.stat(key)).toEqual({ size: 1000, contentType: 'audio/wav' });
      expect((await collect(await store.read(key))).equals(BODY)).toBe(true);
      const empty = `uploads/${ns()}/empty.bin`;
      expect(await store.putStream(empty, Readable.from([]), 'application/octet-stream')).toEqual({ size: 0, contentType: 'application/octet-stream' });
      expect(await store.stat(empty)).toEqual({ size: 0, contentType: 'application/octet-stream' });
    });

    it('overwrites a blob', async () => {
      const key = `tasks/${ns()}/result.json`;
      await store.putFile(key, await file('{"a":1}'), 'application/json');
      expect((await store.putFile(key, await file('{}'), 'application/json')).size).toBe(2);
      expect((await collect(await store.read(key))).toString()).toBe('{}');
    });

    it('answers null / ENOENT for missing blobs, and never treats a prefix as a blob', async () => {
      const dir = `tasks/${ns()}`;
      expect(await store.stat(`${dir}/none.mp3`)).toBeNull();
      await expect(store.read(`${dir}/none.mp3`)).rejects.toMatchObject({ code: 'ENOENT' });
      await store.putFile(`${dir}/out.mp3`, await file('x'), 'audio/mpeg');
      expect(await store.stat(dir)).toBeNull();
      await expect(store.read(dir)).rejects.toMatchObject({ code: 'ENOENT' });
      expect(await store.stat(`${dir}/out.mp3/more`)).toBeNull();
    });

    it.each([
      '../escape.mp3',
      'tasks/../../escape.mp3',
      'tasks/./a.mp3',
      'tasks/.hidden.mp3',
      '/etc/passwd',
      'tasks\\a.mp3',
      'tasks/a\0.mp3',
      'tasks//a.mp3',
      'tasks/a.mp3/',
      '',
      'tasks/a b.mp3',
      'tasks/%2e%2e/a.mp3',
      'tâche/a.mp3',
      `tasks/${'a'.repeat(1100)}.mp3`,
    ])('refuses key %j everywhere', async (key) => {
      const src = await file('data');
      await expect(store.putFile(key, src, 'audio/mpeg')).rejects.toThrow(/Invalid blob key/);
      expect(existsSync(src)).toBe(true);
      await expect(store.putStream(key, Readable.from([Buffer.from('data')]), 'audio/mpeg')).rejects.toThrow(/Invalid blob key/);
      expect(await store.stat(key)).toBeNull();
      await expect(store.read(key)).rejects.toThrow(/Invalid blob key/);
    });

    it('refuses deletion prefixes that could reach beyond one entry', async () => {
      for (const p of ['', '/', '//', '../', 'tasks/../../x/', '/tasks/']) await expect(store.deletePrefix(p), p).rejects.toThrow(/Invalid blob key/);
      await expect(store.deleteOlderThan('../', Date.now())).rejects.toThrow(/Invalid blob key/);
    });

    it('deletes by prefix, across list pages and delete batches, leaving siblings alone', async () => {
      const base = `tasks/${ns()}`;
      for (const name of ['a.mp3', 'b.mp3', 'c.wav', 'd.zip', 'sub/e.json']) await store.putFile(`${base}1/${name}`, await file(name), 'x');
      await store.putFile(`${base}10/keep.mp3`, await file('keep'), 'audio/mpeg');
      await store.deletePrefix(`${base}1/`);
      for (const name of ['a.mp3', 'b.mp3', 'c.wav', 'd.zip', 'sub/e.json']) expect(await store.stat(`${base}1/${name}`)).toBeNull();
      expect(await store.stat(`${base}10/keep.mp3`)).not.toBeNull();
      await store.deletePrefix(`${base}-nothing/`);
    });

    it('treats a prefix without trailing slash as a plain string prefix', async () => {
      const dir = `tasks/${ns()}`;
      for (const name of ['out.mp3', 'out-preview.mp3', 'keep.mp3']) await store.putFile(`${dir}/${name}`, await file(name), 'audio/mpeg');
      await store.deletePrefix(`${dir}/out`);
      expect(await store.stat(`${dir}/out.mp3`)).toBeNull();
      expect(await store.stat(`${dir}/out-preview.mp3`)).toBeNull();
      expect(await store.stat(`${dir}/keep.mp3`)).not.toBeNull();
    });

    it('deletes the entries of a folder whose newest content is older than the cutoff', async () => {
      const folder = `${ns()}/uploads`;
      await store.putFile(`${folder}/aold/x.wav`, await file('1'), 'audio/wav');
      await store.putFile(`${folder}/aold/y.wav`, await file('2'), 'audio/wav');
      await store.putFile(`${folder}/bmixed/old.wav`, await file('3'), 'audio/wav');
      // S3 LastModified has whole seconds: 2.1 s apart, with a 1 s margin on the cutoff, is unambiguous.
      await new Promise((r) => setTimeout(r, 2100));
      const cutoff = Date.now() - 1000;
      await store.putFile(`${folder}/bmixed/new.wav`, await file('4'), 'audio/wav');
      await store.putFile(`${folder}/cnew/z.wav`, await file('5'), 'audio/wav');
      expect(await store.deleteOlderThan(folder, cutoff)).toBe(1);
      expect(await store.stat(`${folder}/aold/x.wav`)).toBeNull();
      expect(await store.stat(`${folder}/aold/y.wav`)).toBeNull();
      expect(await store.stat(`${folder}/bmixed/old.wav`)).not.toBeNull();
      expect(await store.stat(`${folder}/cnew/z.wav`)).not.toBeNull();
      expect(await store.deleteOlderThan(folder, Date.now() + 60_000)).toBe(2);
      expect(await store.stat(`${folder}/cnew/z.wav`)).toBeNull();
      expect(await store.deleteOlderThan(`${ns()}/uploads`, Date.now())).toBe(0);
    });

    it('putStream over its limit fails with BlobTooLargeError and keeps nothing (one part)', async () => {
      const before = await backend.leftovers();
      const key = `uploads/${ns()}/big.wav`;
      await expect(store.putStream(key, streamOf(BODY, 100), 'audio/wav', 999)).rejects.toThrow(BlobTooLargeError);
      expect(await store.stat(key)).toBeNull();
      expect(await backend.leftovers()).toBe(before);
      // Exactly at the limit is fine.
      expect((await store.putStream(key, streamOf(BODY, 100), 'audio/wav', 1000)).size).toBe(1000);
      // A failed overwrite keeps the previous blob.
      await expect(store.putStream(key, streamOf(Buffer.alloc(2000)), 'audio/wav', 1500)).rejects.toThrow(BlobTooLargeError);
      expect((await collect(await store.read(key))).equals(BODY)).toBe(true);
    });

    it('putStream over its limit after several parts keeps no object', async () => {
      const before = await backend.leftovers();
      const key = `uploads/${ns()}/huge.wav`;
      await expect(store.putStream(key, streamOf(randomBytes(12 * MiB)), 'audio/wav', 6 * MiB)).rejects.toThrow(BlobTooLargeError);
      expect(await store.stat(key)).toBeNull();
      await expect(store.read(key)).rejects.toMatchObject({ code: 'ENOENT' });
      // s3rver answers AbortMultipartUpload with 405, so its parts stay there; S3, MinIO, R2 and Ceph
      // abort (and a lifecycle rule sweeps what an interrupted process could not, docs/deploy.md).
      expect(await backend.leftovers()).toBe(backend.abortsMultipart ? before : before + 1);
    });

    it('putStream fails with the source error and keeps nothing when the source breaks', async () => {
      const key = `uploads/${ns()}/broken.wav`;
      const source = Readable.from((async function* () {
        yield Buffer.alloc(1000);
        throw new Error('client went away');
      })());
      await expect(store.putStream(key, source, 'audio/wav')).rejects.toThrow('client went away');
      expect(await store.stat(key)).toBeNull();
    });

    it('stores 12 MiB in several 5 MiB parts from a file and from a stream, byte for byte', async () => {
      const data = randomBytes(12 * MiB);
      const fromFile = `tasks/${ns()}/big.flac`;
      expect(await store.putFile(fromFile, await file(data), 'audio/flac')).toEqual({ size: data.length, contentType: 'audio/flac' });
      const fromStream = `uploads/${ns()}/big.flac`;
      expect((await store.putStream(fromStream, streamOf(data), 'audio/flac', 20 * MiB)).size).toBe(data.length);
      for (const key of [fromFile, fromStream]) {
        expect(await store.stat(key)).toEqual({ size: data.length, contentType: 'audio/flac' });
        expect(sha256(await collect(await store.read(key)))).toBe(sha256(data));
        // Across the first part boundary.
        const range = { start: 5 * MiB - 10, end: 5 * MiB + 9 };
        expect((await collect(await store.read(key, range))).equals(data.subarray(range.start, range.end + 1))).toBe(true);
      }
    });
  });

  for (const mode of backend.urlModes) {
    describe(`${name}: URLs, ${mode.name}`, () => {
      let app: TestApp;
      beforeAll(async () => {
        app = await startTestApp({ SIGNING_SECRET, ...mode.env() }, { workers: false });
      });
      afterAll(async () => app?.close());

      const put = async () => {
        const key = `tasks/${ns()}/output.mp3`;
        await app.container.blobs.putStream(key, Readable.from([BODY]), 'audio/mpeg');
        return { key, url: await app.container.urls.url(key, 60) };
      };

      it('serves issued URLs over HTTP: 200, Range 206, 416; expired and tampered links as the server does', async () => {
        const { key, url } = await put();
        expect(url.startsWith(mode.urlPrefix(app)), url).toBe(true);
        const whole = await fetch(url);
        expect(whole.status).toBe(200);
        expect(whole.headers.get('content-type')).toBe('audio/mpeg');
        expect(Buffer.from(await whole.arrayBuffer()).equals(BODY)).toBe(true);
        const ranged = await fetch(url, { headers: { range: 'bytes=100-199' } });
        expect(ranged.status).toBe(206);
        expect(ranged.headers.get('content-range')).toBe('bytes 100-199/1000');
        expect(Buffer.from(await ranged.arrayBuffer()).equals(BODY.subarray(100, 200))).toBe(true);
        const tail = await fetch(url, { headers: { range: 'bytes=990-' } });
        expect(tail.status).toBe(206);
        expect(Buffer.from(await tail.arrayBuffer()).equals(BODY.subarray(990))).toBe(true);
        const beyond = await fetch(url, { headers: { range: 'bytes=5000-' } });
        expect(beyond.status).toBe(416);
        await beyond.arrayBuffer();
        const expired = await fetch(await mode.expiredUrl(app, key));
        expect(expired.status).toBe(403);
        await expired.arrayBuffer();
        const tampered = await fetch(mode.tamper(url));
        expect(tampered.status).toBe(mode.tamperedStatus);
        await tampered.arrayBuffer();
      });

      it('the input fetcher reads issued URLs from the store, without HTTP, and refuses expired ones', async () => {
        const { key, url } = await put();
        // allowPrivate false: fetching the loopback URL over HTTP would be refused by the SSRF guard.
        const input = new InputFetcher({ blobs: app.container.blobs, urls: app.container.urls }, { allowPrivate: false, maxBytes: 1 << 20, timeoutMs: 5000 });
        const signal = new AbortController().signal;
        const got = await input.fetch(url, join(scratch, `in-${ns()}`), signal);
        expect(got.bytes).toBe(1000);
        await expect(input.fetch(await mode.expiredUrl(app, key), join(scratch, `in-${ns()}`), signal)).rejects.toThrow(/expired/);
        await expect(input.fetch(mode.tamper(url), join(scratch, `in-${ns()}`), signal)).rejects.toThrow(mode.tamperedFetchError);
      });
    });
  }
}
