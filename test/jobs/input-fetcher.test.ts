import { createServer, type Server } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalBlobStore } from '../../src/adapters/local-blob-store.js';
import { createUrlSigner } from '../../src/http/signed-url.js';
import { SignedBlobUrls } from '../../src/http/signed-blob-urls.js';
import { InputFetcher } from '../../src/jobs/input-fetcher.js';
import { TaskFailure } from '../../src/domain/errors.js';

let dir: string;
let server: Server;
let port: number;
const WAV = Buffer.concat([Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt '), Buffer.alloc(64)]);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-input-'));
  server = createServer((req, res) => {
    if (req.url === '/song.wav') res.end(WAV);
    else res.writeHead(404).end('nope');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  server.close();
  await rm(dir, { recursive: true, force: true });
});

function fetcher(allowPrivate: boolean, now = Date.now) {
  const blobs = new LocalBlobStore(join(dir, 'blobs'));
  const signer = createUrlSigner({ secret: 'a-test-secret-of-enough-length', baseUrl: 'http://soundry.test:8080', ttlSeconds: 60, now });
  const urls = new SignedBlobUrls(signer, 'http://soundry.test:8080');
  return { blobs, signer, input: new InputFetcher({ blobs, urls }, { allowPrivate, maxBytes: 1 << 20, timeoutMs: 5000 }) };
}

describe('InputFetcher', () => {
  it('reads our own signed file links from the blob store, without HTTP', async () => {
    const { blobs, signer, input } = fetcher(false);
    const src = join(dir, 'up.wav');
    await writeFile(src, WAV);
    await blobs.putFile('uploads/abc/up.wav', src, 'audio/wav');
    const got = await input.fetch(signer.sign('uploads/abc/up.wav'), join(dir, 'in1'), new AbortController().signal);
    expect(got.sniffed.kind).toBe('audio');
    expect(await readFile(join(dir, 'in1'))).toEqual(WAV);
  });

  it('refuses our own links when tampered or expired', async () => {
    const { signer: pastSigner } = fetcher(false, () => Date.now() - 3_600_000);
    const { input } = fetcher(false);
    const stale = pastSigner.sign('uploads/abc/up.wav');
    await expect(input.fetch(stale, join(dir, 'in2'), new AbortController().signal)).rejects.toThrow(/expired/);
    await expect(input.fetch(stale.replace(/sig=./, 'sig=Z'), join(dir, 'in2'), new AbortController().signal)).rejects.toThrow(TaskFailure);
  });

  it('fetches other URLs through the SSRF guard: private refused unless allowed', async () => {
    const url = `http://127.0.0.1:${port}/song.wav`;
    const blocked = fetcher(false).input.fetch(url, join(dir, 'in3'), new AbortController().signal);
    await expect(blocked).rejects.toThrow(/URL could not be fetched/);
    const allowed = await fetcher(true).input.fetch(url, join(dir, 'in4'), new AbortController().signal);
    expect(allowed.bytes).toBe(WAV.length);
    const missing = fetcher(true).input.fetch(`http://127.0.0.1:${port}/missing.wav`, join(dir, 'in5'), new AbortController().signal);
    await expect(missing).rejects.toMatchObject({ retryable: false });
  });

  it('names the setting behind a refusal: ALLOW_PRIVATE_URLS for a private address, the kind\'s hint for its own size limit', async () => {
    const url = `http://127.0.0.1:${port}/song.wav`;
    await expect(fetcher(false).input.fetch(url, join(dir, 'in6'), new AbortController().signal)).rejects.toThrow(/private.*ALLOW_PRIVATE_URLS=1/);
    const hint = 'send a compressed format';
    // Over the kind's own limit (smaller than INPUT_MAX_BYTES): fetched and own files alike carry the hint.
    await expect(fetcher(true).input.fetch(url, join(dir, 'in7'), new AbortController().signal, { maxBytes: 10, overLimitHint: hint })).rejects.toThrow(/larger than.*; send a compressed format$/);
    const { blobs, signer, input } = fetcher(false);
    await writeFile(join(dir, 'big.wav'), WAV);
    await blobs.putFile('uploads/big/big.wav', join(dir, 'big.wav'), 'audio/wav');
    await expect(input.fetch(signer.sign('uploads/big/big.wav'), join(dir, 'in8'), new AbortController().signal, { maxBytes: 10, overLimitHint: hint })).rejects.toThrow(
      `The file is larger than the limit of 10 bytes; ${hint}`,
    );
  });
});
