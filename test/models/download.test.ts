import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, stat, writeFile, mkdir, readdir, utimes } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ChecksumMismatchError, listModels, pullModel } from '../../src/models/download.js';
import type { ModelEntry } from '../../src/models/catalog.js';

const BODY = randomBytes(300_000);
const CONFIG = Buffer.from('{"audio":{"sample_rate":22050}}');
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

type Mode = 'range' | 'ignore-range' | 'cut' | 'huge-length' | 'endless';
let mode: Mode = 'range';
let requests: Array<{ url: string; range: string | undefined }> = [];
let server: Server;
let base = '';

function serve(req: IncomingMessage, res: ServerResponse): void {
  requests.push({ url: req.url ?? '', range: req.headers.range });
  const body = req.url === '/model.bin' ? BODY : req.url === '/model.json' ? CONFIG : null;
  if (!body) {
    res.writeHead(404).end();
    return;
  }
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  if (mode === 'range' && m) {
    const start = Number(m[1]);
    if (start >= body.length) {
      res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
      return;
    }
    res.writeHead(206, {
      'content-length': body.length - start,
      'content-range': `bytes ${start}-${body.length - 1}/${body.length}`,
      'accept-ranges': 'bytes',
    });
    res.end(body.subarray(start));
    return;
  }
  if (mode === 'huge-length' && body === BODY) {
    // A mirror announcing 20 GB for the file.
    res.writeHead(200, { 'content-length': String(20 * 2 ** 30) });
    res.write(Buffer.alloc(64 * 1024));
    setTimeout(() => res.socket?.destroy(), 2000);
    return;
  }
  if (mode === 'endless' && body === BODY) {
    // No length, and more bytes than the file has: 4 MB, then the connection is dropped.
    res.writeHead(200, {});
    for (let i = 0; i < 64; i++) res.write(Buffer.alloc(64 * 1024, 1));
    setTimeout(() => res.socket?.destroy(), 2000);
    return;
  }
  res.writeHead(200, { 'content-length': body.length, 'accept-ranges': mode === 'range' ? 'bytes' : 'none' });
  if (mode === 'cut' && body === BODY) {
    // Send part of the body, give the client time to store it, then drop the connection.
    res.write(body.subarray(0, 120_000));
    setTimeout(() => res.socket?.destroy(), 100);
    return;
  }
  res.end(body);
}

function entry(overrides: Partial<{ md5: string; sha256: string }> = {}): ModelEntry {
  return {
    name: 'test-model',
    kind: 'vad',
    description: 'test',
    license: 'MIT',
    files: [
      {
        path: 'model.bin',
        url: `${base}/model.bin`,
        sizeBytes: BODY.length,
        ...(overrides.sha256 ? { sha256: overrides.sha256 } : { md5: overrides.md5 ?? md5(BODY) }),
      },
      { path: 'sub/model.json', url: `${base}/model.json`, sizeBytes: CONFIG.length, md5: md5(CONFIG) },
    ],
  };
}

let modelsDir = '';
beforeAll(async () => {
  server = createServer(serve);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(async () => {
  modelsDir = await mkdtemp(join(tmpdir(), 'soundry-models-'));
  mode = 'range';
  requests = [];
});
afterEach(async () => {
  await rm(modelsDir, { recursive: true, force: true });
});

const binPath = () => join(modelsDir, 'test-model', 'model.bin');

describe('pullModel', () => {
  it('downloads every file, verifies it and reports progress', async () => {
    const progress: number[] = [];
    const result = await pullModel(entry(), { modelsDir, onProgress: (p) => p.file === 'model.bin' && progress.push(p.receivedBytes) });
    expect(result.files.map((f) => f.outcome)).toEqual(['downloaded', 'downloaded']);
    expect((await readFile(binPath())).equals(BODY)).toBe(true);
    expect(await readFile(join(modelsDir, 'test-model', 'sub', 'model.json'))).toEqual(CONFIG);
    expect(progress.at(-1)).toBe(BODY.length);
    expect((await readdir(join(modelsDir, 'test-model'))).some((f) => f.endsWith('.part'))).toBe(false);
  });

  it('accepts sha256 checksums', async () => {
    const result = await pullModel(entry({ sha256: sha256(BODY) }), { modelsDir });
    expect(result.files[0]?.outcome).toBe('downloaded');
  });

  it('resumes an interrupted download with a Range request (206)', async () => {
    mode = 'cut';
    await expect(pullModel(entry(), { modelsDir })).rejects.toThrow(/download of http:.*\/model\.bin failed: .*resume/);
    const partSize = (await stat(`${binPath()}.part`)).size;
    expect(partSize).toBeGreaterThan(0);
    expect(partSize).toBeLessThan(BODY.length);
    await expect(stat(binPath())).rejects.toThrow();

    mode = 'range';
    requests = [];
    const result = await pullModel(entry(), { modelsDir });
    expect(requests[0]).toEqual({ url: '/model.bin', range: `bytes=${partSize}-` });
    expect(result.files[0]?.outcome).toBe('resumed');
    expect((await readFile(binPath())).equals(BODY)).toBe(true);
    await expect(stat(`${binPath()}.part`)).rejects.toThrow();
  });

  it('stops on abort and keeps the part for a later resume', async () => {
    const ac = new AbortController();
    const run = pullModel(entry(), {
      modelsDir,
      signal: ac.signal,
      onProgress: (p) => p.receivedBytes > 0 && ac.abort(new Error('stop')),
    });
    await expect(run).rejects.toThrow('stop');
    const result = await pullModel(entry(), { modelsDir });
    expect(['resumed', 'downloaded']).toContain(result.files[0]?.outcome);
    expect((await readFile(binPath())).equals(BODY)).toBe(true);
  });

  it('restarts from zero when the server ignores Range and answers 200', async () => {
    await mkdir(join(modelsDir, 'test-model'), { recursive: true });
    // Garbage in the part proves it is discarded rather than appended to.
    await writeFile(`${binPath()}.part`, Buffer.alloc(5000, 7));
    mode = 'ignore-range';
    const result = await pullModel(entry(), { modelsDir });
    expect(requests[0]?.range).toBe('bytes=5000-');
    expect(result.files[0]?.outcome).toBe('downloaded');
    expect((await readFile(binPath())).equals(BODY)).toBe(true);
  });

  it('starts over when the server answers 416 to a resume', async () => {
    await mkdir(join(modelsDir, 'test-model'), { recursive: true });
    await writeFile(`${binPath()}.part`, Buffer.alloc(BODY.length + 10));
    const result = await pullModel(entry(), { modelsDir });
    expect(result.files[0]?.outcome).toBe('downloaded');
    expect((await readFile(binPath())).equals(BODY)).toBe(true);
  });

  it('deletes the download and throws on checksum mismatch', async () => {
    const bad = entry({ md5: '0'.repeat(32) });
    await expect(pullModel(bad, { modelsDir })).rejects.toBeInstanceOf(ChecksumMismatchError);
    await expect(pullModel(bad, { modelsDir })).rejects.toThrow(/checksum mismatch for model\.bin/);
    await expect(stat(binPath())).rejects.toThrow();
    await expect(stat(`${binPath()}.part`)).rejects.toThrow();
  });

  it('says what came on a checksum mismatch: the size received and the catalogue\'s', async () => {
    const bad = entry({ md5: '0'.repeat(32) });
    await expect(pullModel(bad, { modelsDir })).rejects.toThrow(
      new RegExp(`checksum mismatch for model\\.bin: expected md5 0{32}, got ${md5(BODY)} \\(300000 bytes received, the catalogue's model\\.bin is 300000 bytes, from ${base}/model\\.bin\\)`),
    );
  });

  it('skips files already installed with the right checksum', async () => {
    await pullModel(entry(), { modelsDir });
    requests = [];
    const result = await pullModel(entry(), { modelsDir });
    expect(result.files.map((f) => f.outcome)).toEqual(['skipped', 'skipped']);
    expect(requests).toEqual([]);
  });

  it('replaces an installed file whose checksum is wrong', async () => {
    await mkdir(join(modelsDir, 'test-model'), { recursive: true });
    await writeFile(binPath(), Buffer.alloc(BODY.length, 1));
    const result = await pullModel(entry(), { modelsDir });
    expect(result.files[0]?.outcome).toBe('downloaded');
    expect((await readFile(binPath())).equals(BODY)).toBe(true);
  });

  it('cuts a mirror that announces or sends more than the catalogue\'s size off there, keeping no part', async () => {
    for (const m of ['huge-length', 'endless'] as const) {
      mode = m;
      await expect(pullModel(entry(), { modelsDir }), m).rejects.toThrow(/the mirror sends more than the catalogue's 300000 bytes for model\.bin .*not the file it names/);
      await expect(stat(`${binPath()}.part`), m).rejects.toThrow();
      await expect(stat(binPath()), m).rejects.toThrow();
    }
  });

  it('fails clearly on HTTP errors', async () => {
    const e = entry();
    e.files[0]!.url = `${base}/missing`;
    await expect(pullModel(e, { modelsDir })).rejects.toThrow(/HTTP 404/);
  });

  it('uses an injected fetch', async () => {
    let calls = 0;
    const fetchImpl: typeof fetch = async (input, init) => {
      calls++;
      return fetch(input, init);
    };
    await pullModel(entry(), { modelsDir, fetchImpl });
    expect(calls).toBe(2);
  });
});

describe('listModels', () => {
  it('reports installed only when every file is present', async () => {
    const catalog = [entry()];
    let [status] = await listModels({ modelsDir, catalog });
    expect(status).toMatchObject({ name: 'test-model', installed: false, installedBytes: 0 });
    expect(status?.sizeBytes).toBe(BODY.length + CONFIG.length);
    await pullModel(entry(), { modelsDir });
    [status] = await listModels({ modelsDir, catalog });
    expect(status).toMatchObject({ installed: true, installedBytes: BODY.length + CONFIG.length });
  });

  it('lists the real catalog without touching the network', async () => {
    const all = await listModels({ modelsDir });
    expect(all.length).toBeGreaterThan(5);
    expect(all.every((m) => !m.installed)).toBe(true);
  });
});

describe('pullModel redirects (SSRF)', () => {
  // The catalog URL's own host is the operator's choice and trusted, even on a private address (a mirror);
  // a redirect to any other host must lead to public addresses only, metadata addresses never.
  let mirror: Server;
  let secret: Server;
  let mirrorBase = '';
  let secretPort = 0;
  const secretHits: string[] = [];
  const lookup = async (host: string) => {
    if (host === 'sneaky.example.test') return [{ address: '127.0.0.1', family: 4 as const }];
    throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  };
  beforeAll(async () => {
    secret = createServer((req, res) => {
      secretHits.push(req.url ?? '');
      res.writeHead(200).end(BODY);
    });
    await new Promise<void>((r) => secret.listen(0, '127.0.0.1', r));
    secretPort = (secret.address() as AddressInfo).port;
    const targets: Record<string, string> = {
      '/moved': '/real.bin',
      '/to-secret': `http://127.0.0.1:${secretPort}/secret`,
      '/to-localhost': `http://localhost:${secretPort}/secret`,
      '/to-sneaky': `http://sneaky.example.test:${secretPort}/secret`,
      '/to-metadata': 'http://169.254.169.254/latest/meta-data/',
      '/to-file': 'file:///etc/passwd',
    };
    mirror = createServer((req, res) => {
      const to = targets[req.url ?? ''];
      if (to) res.writeHead(302, { location: to }).end();
      else if (req.url === '/real.bin') res.writeHead(200, { 'content-length': BODY.length }).end(BODY);
      else if (req.url === '/loop') res.writeHead(302, { location: '/loop' }).end();
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => mirror.listen(0, '127.0.0.1', r));
    mirrorBase = `http://127.0.0.1:${(mirror.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => mirror.close(() => r()));
    await new Promise<void>((r) => secret.close(() => r()));
  });

  const one = (path: string): ModelEntry => ({
    name: 'redirected',
    kind: 'vad',
    description: 'test',
    license: 'MIT',
    files: [{ path: 'model.bin', url: `${mirrorBase}${path}`, sizeBytes: BODY.length, md5: md5(BODY) }],
  });

  it('follows a redirect within the catalog host (a private mirror)', async () => {
    const r = await pullModel(one('/moved'), { modelsDir });
    expect(r.files[0]?.outcome).toBe('downloaded');
    expect((await readFile(join(modelsDir, 'redirected', 'model.bin'))).equals(BODY)).toBe(true);
  });

  it('refuses a redirect to another private host, a name resolving to one, or a metadata address', async () => {
    for (const path of ['/to-secret', '/to-localhost', '/to-sneaky', '/to-metadata']) {
      // localhost through the system resolver, the made-up name through the test's.
      await expect(pullModel(one(path), { modelsDir, ...(path === '/to-localhost' ? {} : { lookup }) }), path).rejects.toThrow(
        /refused: Host "[^"]+" points to a private, local or reserved network address, which is not allowed/,
      );
    }
    // With an injected fetch too (checked, though not pinned).
    const fetchImpl: typeof fetch = (input, init) => fetch(input, init);
    await expect(pullModel(one('/to-secret'), { modelsDir, fetchImpl })).rejects.toThrow(/refused: Host "127.0.0.1"/);
    expect(secretHits).toEqual([]);
    await expect(readdir(join(modelsDir, 'redirected')).catch(() => [])).resolves.toEqual([]);
  });

  it('refuses a redirect to another scheme, and endless redirects', async () => {
    await expect(pullModel(one('/to-file'), { modelsDir })).rejects.toThrow(/refused: Only http and https URLs are allowed/);
    await expect(pullModel(one('/loop'), { modelsDir })).rejects.toThrow(/refused: Too many redirects/);
  });
});

describe('one writer per model file', () => {
  it('a second pull of a file being downloaded is refused, and the installed file verifies', async () => {
    const results = await Promise.allSettled([pullModel(entry(), { modelsDir }), pullModel(entry(), { modelsDir })]);
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(1);
    expect(refused).toHaveLength(1);
    for (const r of refused) expect(String(r.reason)).toMatch(/another download of .*model\.bin is in progress/);
    expect(sha256(await readFile(join(modelsDir, 'test-model', 'model.bin')))).toBe(sha256(BODY));
    expect((await readdir(join(modelsDir, 'test-model'))).filter((n) => n.endsWith('.lock'))).toEqual([]);
  });

  it('a lock of this host whose process is gone (a pull stopped with Ctrl-C) is taken over at once', async () => {
    const lock = join(modelsDir, 'test-model', 'model.bin.lock');
    await mkdir(join(modelsDir, 'test-model'), { recursive: true });
    const gone = spawnSync(process.execPath, ['-e', 'process.pid']).pid;
    await writeFile(lock, `${gone} ${hostname()}\n`);
    await pullModel(entry(), { modelsDir });
    expect(sha256(await readFile(join(modelsDir, 'test-model', 'model.bin')))).toBe(sha256(BODY));
    // A live holder (this process, as another download of it would be) still makes a pull wait.
    await rm(join(modelsDir, 'test-model', 'model.bin'));
    await writeFile(lock, `${process.pid} ${hostname()}\n`);
    await expect(pullModel(entry(), { modelsDir })).rejects.toThrow(/in progress/);
    await rm(lock);
  });

  it('a lock left by a process that died is taken over once stale', async () => {
    const lock = join(modelsDir, 'test-model', 'model.bin.lock');
    await mkdir(join(modelsDir, 'test-model'), { recursive: true });
    await writeFile(lock, '99999\n');
    await expect(pullModel(entry(), { modelsDir })).rejects.toThrow(/in progress/);
    const old = new Date(Date.now() - 10 * 60_000);
    await utimes(lock, old, old);
    await pullModel(entry(), { modelsDir });
    expect(sha256(await readFile(join(modelsDir, 'test-model', 'model.bin')))).toBe(sha256(BODY));
  });
});
