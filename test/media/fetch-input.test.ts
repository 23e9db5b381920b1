import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  FetchInputError,
  fetchToFile,
  isBlockedAddress,
  type FetchInputOptions,
  type LookupFn,
  type ResolvedAddress,
} from '../../src/media/fetch-input.js';
import { sniffMediaType } from '../../src/media/sniff.js';

// A documentation-free, really public address (example.com's): the checker must accept it.
const FAKE_PUBLIC = '93.184.215.14';

let server: http.Server;
let port = 0;
let dir = '';
let dest = '';
const hits: string[] = [];

function wavHeader(): Buffer {
  const b = Buffer.alloc(44);
  b.write('RIFF', 0, 'latin1');
  b.writeUInt32LE(36 + 1000, 4);
  b.write('WAVE', 8, 'latin1');
  b.write('fmt ', 12, 'latin1');
  return b;
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    hits.push(`${req.headers.host} ${req.url}`);
    const url = new URL(req.url ?? '/', 'http://x');
    switch (url.pathname) {
      case '/audio.wav': {
        const body = Buffer.concat([wavHeader(), Buffer.alloc(1000, 1)]);
        res.writeHead(200, { 'content-type': 'text/html', 'content-length': body.length });
        res.end(body);
        return;
      }
      case '/big-chunked':
        res.writeHead(200, { 'content-type': 'audio/mpeg' });
        for (let i = 0; i < 64; i++) res.write(Buffer.alloc(16 * 1024, 0xaa));
        res.end();
        return;
      case '/big-declared':
        res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
        res.write(Buffer.alloc(1024));
        return; // never finishes: the declared length alone must be refused
      case '/stall':
        res.writeHead(200, { 'content-type': 'audio/mpeg' });
        res.write(Buffer.from('ID3'));
        return; // never ends
      case '/hang':
        return; // never answers
      case '/trickle': {
        // A byte every 100 ms: 10 bytes/s, for as long as the client listens.
        res.writeHead(200, { 'content-type': 'audio/mpeg' });
        const t = setInterval(() => res.write('x'), 100);
        res.on('close', () => clearInterval(t));
        return;
      }
      case '/steady': {
        // 200 KB in 20 chunks over ~1 s: slow, but far above a 1 KB/s floor.
        res.writeHead(200, { 'content-type': 'audio/mpeg' });
        let n = 0;
        const t = setInterval(() => {
          res.write(Buffer.alloc(10 * 1024, 0xaa));
          if (++n === 20) {
            clearInterval(t);
            res.end();
          }
        }, 50);
        res.on('close', () => clearInterval(t));
        return;
      }
      case '/redirect':
        res.writeHead(302, { location: url.searchParams.get('to') ?? '/' });
        res.end();
        return;
      case '/loop':
        res.writeHead(301, { location: '/loop' });
        res.end();
        return;
      case '/missing':
        res.writeHead(404);
        res.end('nope');
        return;
      default:
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('hello');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  dir = await mkdtemp(path.join(os.tmpdir(), 'soundry-fetch-'));
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  hits.length = 0;
  dest = path.join(dir, `dl-${Math.random().toString(36).slice(2)}`);
});

/** DNS where `public.test` "is" a public address and `internal.test` a private one. */
const fakeDns: LookupFn = async (hostname) => {
  const table: Record<string, ResolvedAddress[]> = {
    'public.test': [{ address: FAKE_PUBLIC, family: 4 }],
    'internal.test': [{ address: '10.1.2.3', family: 4 }],
    'sneaky.test': [{ address: '127.0.0.1', family: 4 }],
    'mixed.test': [
      { address: FAKE_PUBLIC, family: 4 },
      { address: '192.168.1.1', family: 4 },
    ],
    'mapped.test': [{ address: '::ffff:169.254.169.254', family: 6 }],
  };
  const found = table[hostname];
  if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return found;
};

function opts(extra: Partial<FetchInputOptions> = {}): FetchInputOptions {
  return {
    allowPrivate: false,
    maxBytes: 5 * 1024 * 1024,
    timeoutMs: 5000,
    lookup: fakeDns,
    // The checked public address really lives on our 127.0.0.1 test server.
    testOnlyConnectTo: (a) => (a.address === FAKE_PUBLIC ? { address: '127.0.0.1', family: 4 } : a),
    ...extra,
  };
}

async function expectReason(p: Promise<unknown>, reason: FetchInputError['reason']): Promise<FetchInputError> {
  const err = await p.then(
    () => {
      throw new Error('expected a FetchInputError');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(FetchInputError);
  expect((err as FetchInputError).reason).toBe(reason);
  return err as FetchInputError;
}

describe('fetchToFile: address checks', () => {
  const blocked = [
    ['127.0.0.1', () => `http://127.0.0.1:${port}/audio.wav`],
    ['localhost (real DNS)', () => `http://localhost:${port}/audio.wav`],
    ['10/8', () => 'http://10.0.0.5/x'],
    ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data/'],
    ['[::1]', () => `http://[::1]:${port}/audio.wav`],
    ['::ffff:127.0.0.1', () => `http://[::ffff:127.0.0.1]:${port}/audio.wav`],
    ['decimal IPv4 form', () => `http://2130706433:${port}/`],
    ['name resolving to 127.0.0.1', () => `http://sneaky.test:${port}/audio.wav`],
    ['name with one private address among public ones', () => `http://mixed.test:${port}/audio.wav`],
    ['name resolving to mapped metadata', () => 'http://mapped.test/'],
  ] as const;

  for (const [label, url] of blocked) {
    it(`refuses ${label}`, async () => {
      const lookup = label.startsWith('localhost') ? undefined : fakeDns;
      const err = await expectReason(fetchToFile(url(), dest, opts({ lookup })), 'blocked_address');
      expect(err.message).not.toMatch(/10\.1\.2\.3|192\.168|at .*\.ts/);
      expect(hits).toHaveLength(0);
      expect(existsSync(dest)).toBe(false);
    });
  }

  it('fetches through a public-looking name and pins the checked address', async () => {
    let calls = 0;
    // Rebinding attempt: a second resolution would answer loopback, but nobody may ask twice.
    const rebinding: LookupFn = async (h) => (calls++ === 0 ? fakeDns(h) : [{ address: '127.0.0.1', family: 4 }]);
    const r = await fetchToFile(`http://public.test:${port}/audio.wav`, dest, opts({ lookup: rebinding }));
    expect(calls).toBe(1);
    expect(r.bytes).toBe(1044);
    expect(r.contentType).toBe('text/html');
    expect(r.sniffed).toEqual({ kind: 'audio', format: 'wav' });
    expect(r.finalUrl).toBe(`http://public.test:${port}/audio.wav`);
    expect(readFileSync(dest).subarray(0, 4).toString()).toBe('RIFF');
    // Host header keeps the name, not the pinned address.
    expect(hits).toEqual([`public.test:${port} /audio.wav`]);
  });

  it('re-checks every redirect hop: allowed host -> private name', async () => {
    const to = encodeURIComponent('http://internal.test/secret');
    await expectReason(fetchToFile(`http://public.test:${port}/redirect?to=${to}`, dest, opts()), 'blocked_address');
    expect(hits).toHaveLength(1);
  });

  it('re-checks every redirect hop: allowed host -> loopback literal', async () => {
    const to = encodeURIComponent(`http://127.0.0.1:${port}/audio.wav`);
    await expectReason(fetchToFile(`http://public.test:${port}/redirect?to=${to}`, dest, opts()), 'blocked_address');
    expect(hits).toHaveLength(1);
  });

  it('follows an allowed redirect and reports the final URL', async () => {
    const r = await fetchToFile(`http://public.test:${port}/redirect?to=/audio.wav`, dest, opts());
    expect(r.finalUrl).toBe(`http://public.test:${port}/audio.wav`);
    expect(r.sniffed.format).toBe('wav');
  });

  it('refuses a redirect to a non-http scheme', async () => {
    const to = encodeURIComponent('file:///etc/passwd');
    await expectReason(fetchToFile(`http://public.test:${port}/redirect?to=${to}`, dest, opts()), 'scheme');
  });

  it('stops redirect loops', async () => {
    await expectReason(fetchToFile(`http://public.test:${port}/loop`, dest, opts({ maxRedirects: 3 })), 'redirects');
    expect(hits).toHaveLength(4);
  });

  it('allows private addresses with allowPrivate, but never cloud metadata', async () => {
    const r = await fetchToFile(`http://127.0.0.1:${port}/audio.wav`, dest, opts({ allowPrivate: true }));
    expect(r.bytes).toBe(1044);
    const r2 = await fetchToFile(`http://localhost:${port}/`, `${dest}-2`, opts({ allowPrivate: true, lookup: undefined }));
    expect(r2.sniffed).toEqual({ kind: 'text', format: 'plain' });
    await expectReason(fetchToFile('http://169.254.169.254/', dest, opts({ allowPrivate: true })), 'blocked_address');
  });
});

describe('fetchToFile: limits and failures', () => {
  it.each(['file:///etc/passwd', 'ftp://example.com/a.mp3', 'gopher://x/', 'data:text/plain,hi', 'not a url'])(
    'refuses %s',
    async (url) => {
      await expectReason(fetchToFile(url, dest, opts()), 'scheme');
    },
  );

  it('refuses credentials in the URL', async () => {
    const err = await expectReason(fetchToFile(`http://user:pw@public.test:${port}/`, dest, opts()), 'scheme');
    expect(err.message).toMatch(/credentials/);
  });

  it('aborts a stream over maxBytes and deletes the partial file', async () => {
    const err = await expectReason(
      fetchToFile(`http://public.test:${port}/big-chunked`, dest, opts({ maxBytes: 100_000 })),
      'too_large',
    );
    expect(err.message).toMatch(/larger than/);
    expect(existsSync(dest)).toBe(false);
  });

  it('refuses a declared Content-Length over maxBytes before writing', async () => {
    await expectReason(fetchToFile(`http://public.test:${port}/big-declared`, dest, opts({ maxBytes: 1024 * 1024 })), 'too_large');
    expect(existsSync(dest)).toBe(false);
  });

  it('times out a stalled body and deletes the partial file', async () => {
    const t0 = Date.now();
    await expectReason(fetchToFile(`http://public.test:${port}/stall`, dest, opts({ timeoutMs: 300 })), 'timeout');
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(existsSync(dest)).toBe(false);
  });

  it('fails a download slower than its floor as stalled, long before the timeout, naming the setting', async () => {
    const t0 = Date.now();
    const floor = { timeoutMs: 30_000, minBytesPerSecond: 1024, rateWindowMs: 400 };
    const err = await expectReason(fetchToFile(`http://public.test:${port}/trickle`, dest, opts(floor)), 'stalled');
    expect(err.message).toBe('The download stalled: less than 1024 bytes/s over 0.4 s (INPUT_MIN_BYTES_PER_SECOND)');
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(existsSync(dest)).toBe(false);
    // A server that never sends its headers stalls the same way.
    await expectReason(fetchToFile(`http://public.test:${port}/hang`, dest, opts(floor)), 'stalled');
    // Slow but above the floor: fetched whole.
    expect((await fetchToFile(`http://public.test:${port}/steady`, dest, opts(floor))).bytes).toBe(200 * 1024);
  });

  it('times out a server that never answers', async () => {
    await expectReason(fetchToFile(`http://public.test:${port}/hang`, dest, opts({ timeoutMs: 300 })), 'timeout');
  });

  it('reports HTTP errors', async () => {
    const err = await expectReason(fetchToFile(`http://public.test:${port}/missing`, dest, opts()), 'http_status');
    expect(err.message).toContain('404');
  });

  it('reports DNS failures', async () => {
    await expectReason(fetchToFile('http://nowhere.test/', dest, opts()), 'dns');
  });

  it('reports refused connections without leaking the address', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const err = await expectReason(fetchToFile(`http://public.test:${deadPort}/`, dest, opts()), 'network');
    expect(err.message).toContain('public.test');
    expect(err.message).not.toContain('127.0.0.1');
  });

  const hasOpenssl = (() => {
    try {
      execFileSync('openssl', ['version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  it.skipIf(!hasOpenssl)('speaks TLS to the pinned address with the name as SNI and verifies the certificate', async () => {
    const key = path.join(dir, 'tls.key');
    const cert = path.join(dir, 'tls.crt');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-subj', '/CN=public.test', '-days', '1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
    const ctx = { key: readFileSync(key), cert: readFileSync(cert) };
    const seen: string[] = [];
    const tlsServer = https.createServer(
      { ...ctx, SNICallback: (name, cb) => { seen.push(name); cb(null, tls.createSecureContext(ctx)); } },
      (_req, res) => res.end('ok'),
    );
    await new Promise<void>((r) => tlsServer.listen(0, '127.0.0.1', r));
    const tlsPort = (tlsServer.address() as AddressInfo).port;
    try {
      // Self-signed: the download must be refused, which proves certificates are checked.
      const err = await expectReason(fetchToFile(`https://public.test:${tlsPort}/`, dest, opts()), 'network');
      expect(err.message).toMatch(/TLS/);
      expect(seen).toEqual(['public.test']);
    } finally {
      tlsServer.closeAllConnections();
      await new Promise((r) => tlsServer.close(r));
    }
  });

  it('honours an outer abort signal', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const err = await expectReason(fetchToFile(`http://public.test:${port}/hang`, dest, opts({ signal: ac.signal })), 'network');
    expect(err.message).toMatch(/cancelled/);
  });
});

describe('isBlockedAddress', () => {
  it.each([
    '0.0.0.0', '10.0.0.1', '100.64.0.1', '127.0.0.1', '169.254.169.254', '172.16.0.1', '192.168.0.1',
    '224.0.0.1', '240.0.0.1', '255.255.255.255', '198.18.0.1', '::', '::1', 'fe80::1', 'fc00::1',
    'fd00:ec2::254', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '64:ff9b::a00:1', '2002:7f00:1::1',
    '2001:db8::1', '::127.0.0.1', 'garbage',
  ])('blocks %s', (ip) => expect(isBlockedAddress(ip)).toBe(true));

  it.each(['8.8.8.8', '93.184.215.14', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])(
    'allows %s',
    (ip) => expect(isBlockedAddress(ip)).toBe(false),
  );
});

describe('sniffMediaType', () => {
  const bytes = (...parts: (string | number[])[]) =>
    Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
  const ftyp = (major: string, ...compat: string[]) => {
    const b = bytes([0, 0, 0, 16 + 4 * compat.length], 'ftyp', major, [0, 0, 2, 0], ...compat);
    return Buffer.concat([b, Buffer.alloc(32)]);
  };
  const ogg = (codecHead: string) => Buffer.concat([bytes('OggS'), Buffer.alloc(24), bytes(codecHead), Buffer.alloc(20)]);

  it.each([
    ['mp3 with ID3', bytes('ID3', [4, 0, 0, 0, 0, 0, 0]), 'audio', 'mp3'],
    ['mp3 frame sync', bytes([0xff, 0xfb, 0x90, 0x64, 0, 0]), 'audio', 'mp3'],
    ['aac ADTS', bytes([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc]), 'audio', 'aac'],
    ['wav', wavHeader(), 'audio', 'wav'],
    ['flac', bytes('fLaC', [0, 0, 0, 34]), 'audio', 'flac'],
    ['ogg vorbis', ogg('\x01vorbis'), 'audio', 'ogg'],
    ['opus', ogg('OpusHead'), 'audio', 'opus'],
    ['m4a', ftyp('M4A ', 'M4A ', 'mp42', 'isom'), 'audio', 'm4a'],
    ['m4a with isom major', ftyp('isom', 'M4A ', 'mp42'), 'audio', 'm4a'],
    ['mp4 video', ftyp('isom', 'isom', 'iso2', 'avc1', 'mp41'), 'video', 'mp4'],
    ['quicktime', ftyp('qt  ', 'qt  '), 'video', 'mov'],
    ['webm', bytes([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x84], 'webm'), 'video', 'webm'],
    ['mkv', bytes([0x1a, 0x45, 0xdf, 0xa3, 0xa3, 0x42, 0x82, 0x88], 'matroska'), 'video', 'mkv'],
    ['aiff', bytes('FORM', [0, 0, 1, 0], 'AIFF', 'COMM'), 'audio', 'aiff'],
    ['wma/asf', Buffer.from('3026b2758e66cf11a6d900aa0062ce6c0000', 'hex'), 'audio', 'wma'],
    ['amr', bytes('#!AMR\n', [0x3c]), 'audio', 'amr'],
    ['amr-wb', bytes('#!AMR-WB\n', [0x04]), 'audio', 'amr-wb'],
    ['caf', bytes('caff', [0, 1, 0, 0]), 'audio', 'caf'],
    ['pdf', bytes('%PDF-1.7\n%\xe2\xe3\xcf\xd3'), 'pdf', 'pdf'],
    ['zip', bytes('PK\x03\x04', Array(26).fill(0), 'hello.txt'), 'zip', 'zip'],
    ['docx', bytes('PK\x03\x04', Array(26).fill(0), '[Content_Types].xml', 'PK\x03\x04', Array(26).fill(0), 'word/document.xml'), 'zip', 'docx'],
    ['epub', bytes('PK\x03\x04', Array(26).fill(0), 'mimetypeapplication/epub+zip'), 'zip', 'epub'],
    ['html doctype', Buffer.from('\ufeff  <!DOCTYPE html><html>', 'utf8'), 'html', 'html'],
    ['html tag', bytes('\n<HTML lang="en">'), 'html', 'html'],
    ['text', bytes('Hello, world.\nSecond line.'), 'text', 'plain'],
    ['m3u playlist', bytes('#EXTM3U\n#EXTINF:123,Artist - Title\nhttp://example.com/a.mp3\n'), 'playlist', 'm3u'],
    ['hls playlist', Buffer.from('\ufeff#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\nseg0.ts\n', 'utf8'), 'playlist', 'hls'],
    ['ffconcat', bytes('ffconcat version 1.0\nfile /etc/passwd\n'), 'playlist', 'ffconcat'],
    ['pls', bytes('[playlist]\nFile1=http://example.com/stream\nNumberOfEntries=1\n'), 'playlist', 'pls'],
    ['xspf', bytes('<?xml version="1.0" encoding="UTF-8"?>\n<playlist version="1" xmlns="http://xspf.org/ns/0/"><trackList/></playlist>'), 'playlist', 'xspf'],
    ['asx', bytes('<ASX version="3.0"><Entry><Ref href="mms://example.com/a"/></Entry></ASX>'), 'playlist', 'asx'],
    ['wpl', bytes('<?wpl version="1.0"?>\n<smil><body><seq><media src="a.wma"/></seq></body></smil>'), 'playlist', 'wpl'],
    ['binary junk', bytes([0, 1, 2, 3, 0x80, 0x81]), 'unknown', null],
    ['empty', Buffer.alloc(0), 'unknown', null],
  ] as const)('%s', (_label, buf, kind, format) => {
    expect(sniffMediaType(buf)).toEqual({ kind, format });
  });

  it('does not call html text that merely mentions a tag later', () => {
    expect(sniffMediaType(Buffer.from('see <html> docs')).kind).toBe('text');
  });

  it('does not call text a playlist for mentioning one, nor XML with another root', () => {
    expect(sniffMediaType(Buffer.from('How to write #EXTM3U files: start with the header.')).kind).toBe('text');
    expect(sniffMediaType(Buffer.from('<?xml version="1.0"?><rss><channel><title>playlist</title></channel></rss>')).kind).toBe('text');
  });
});
