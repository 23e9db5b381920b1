/**
 * The SSRF guard end to end, through a real server and its workers (ALLOW_PRIVATE_URLS off, the default).
 *
 * How "the internet" is played on one machine, honestly: the test's resolver (buildContainer's test-only option,
 * no env var can set it) answers media.example.test with 93.184.215.14, a public address, so the guard lets it
 * through; only after that check passed does the seam connect that one address to the test's 127.0.0.1 server.
 * Every other address, 127.0.0.1, 169.254.169.254 or a made-up name resolving to loopback, is judged by the
 * production guard unchanged, and the "secret" server on 127.0.0.1 counts every request that reaches it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ResolvedAddress } from '../../src/media/fetch-input.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const API = '/audio/api/v1/api-keys';
const FAKE_PUBLIC = '93.184.215.14';
const BLOCKED = /The URL could not be fetched: Host "[^"]+" points to a private, local or reserved network address, which is not allowed/;
const FACTS = [
  'Lighthouses guided ships along dangerous coasts for centuries.',
  'The first lighthouse keepers burned wood and coal in open fires.',
  'Fresnel lenses later focused the light into beams visible for miles.',
  'Today most lighthouses are automated and powered by solar panels.',
];

let pub: Server;
let secret: Server;
let pubPort = 0;
let secretPort = 0;
const secretHits: string[] = [];
const pubHits: string[] = [];
let app: TestApp;
let key: string;

const lookup = async (host: string): Promise<ResolvedAddress[]> => {
  if (host === 'media.example.test') return [{ address: FAKE_PUBLIC, family: 4 }];
  if (host === 'localhost') return [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }];
  if (host === 'sneaky.example.test') return [{ address: '127.0.0.1', family: 4 }];
  if (host === 'cloud.example.test') return [{ address: '169.254.169.254', family: 4 }];
  if (host === 'half.example.test') return [{ address: FAKE_PUBLIC, family: 4 }, { address: '10.0.0.7', family: 4 }];
  throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
};

const media = () => `http://media.example.test:${pubPort}`;
const secretUrls = () => [
  `http://127.0.0.1:${secretPort}/secret`,
  `http://localhost:${secretPort}/secret`,
  `http://sneaky.example.test:${secretPort}/secret`,
  `http://half.example.test:${secretPort}/secret`,
  `http://[::ffff:127.0.0.1]:${secretPort}/secret`,
  'http://169.254.169.254/latest/meta-data/',
  'http://cloud.example.test/latest/meta-data/',
];

function watchPage(tracks: string[]): string {
  const player = { videoDetails: { title: 'Lighthouses' }, captions: { playerCaptionsTracklistRenderer: { captionTracks: tracks.map((baseUrl) => ({ baseUrl, languageCode: 'en' })) } } };
  return `<html><head><title>Lighthouses - Video</title></head><body><script>var ytInitialPlayerResponse = ${JSON.stringify(player)};</script></body></html>`;
}

beforeAll(async () => {
  secret = createServer((req, res) => {
    secretHits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`${FACTS.join(' ')} SECRET`);
  });
  await new Promise<void>((r) => secret.listen(0, '127.0.0.1', r));
  secretPort = (secret.address() as AddressInfo).port;
  pub = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    pubHits.push(url.pathname + url.search);
    const q = url.searchParams.get('to');
    if (url.pathname === '/redirect' && q) res.writeHead(302, { location: q }).end();
    else if (url.pathname === '/notes.md') res.writeHead(200, { 'content-type': 'text/markdown' }).end(`# Lighthouses\n\n${FACTS.join(' ')}\n`);
    else if (url.pathname === '/timedtext') res.end(`<?xml version="1.0"?><transcript>${FACTS.map((f, i) => `<text start="${i * 4}" dur="4">${f}</text>`).join('')}</transcript>`);
    else if (url.pathname === '/watch') res.writeHead(200, { 'content-type': 'text/html' }).end(watchPage(url.searchParams.getAll('track')));
    else if (url.pathname === '/page') {
      // Links of every kind to private addresses: a page is read as text, nothing it links to is fetched.
      const links = secretUrls().map((u) => `<a href="${u}">more</a><img src="${u}"><iframe src="${u}"></iframe><link rel="alternate" type="application/rss+xml" href="${u}">`).join('');
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><head><title>Lighthouses</title>${links}</head><body><article><h1>Lighthouses</h1>${FACTS.map((f) => `<p>${f}</p>`).join('')}</article></body></html>`);
    } else if (url.pathname === '/feed.xml') {
      const items = FACTS.map((f, i) => `<item><title>Episode ${i}</title><link>${secretUrls()[i % 7]}</link><description>${f}</description><enclosure url="${secretUrls()[(i + 1) % 7]}" type="audio/mpeg" length="1000"/></item>`).join('');
      res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(`<?xml version="1.0"?><rss version="2.0"><channel><title>Lighthouse feed</title><link>${secretUrls()[0]}</link><description>About lighthouses</description>${items}</channel></rss>`);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => pub.listen(0, '127.0.0.1', r));
  pubPort = (pub.address() as AddressInfo).port;
  app = await startTestApp({}, {
    container: {
      testOnlyInputNetwork: { lookup, testOnlyConnectTo: (a) => (a.address === FAKE_PUBLIC ? { address: '127.0.0.1', family: 4 } : a) },
    },
  });
  expect(app.config.ALLOW_PRIVATE_URLS).toBe(false);
  key = (await app.newKey({ credits: 10_000 })).key;
}, 60_000);

afterAll(async () => {
  await app?.close();
  await new Promise<void>((r) => pub?.close(() => r()));
  await new Promise<void>((r) => secret?.close(() => r()));
});

beforeEach(() => {
  secretHits.length = 0;
  pubHits.length = 0;
});

async function separation(inputurl: string) {
  const created = await app.post(`${API}/separation/task/create`, { model_type: 350, inputurl }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  return app.waitTask(`${API}/separation/task/get`, 'job_id', created.json.data.job_id, key, 60_000);
}

async function enhance(inputurl: string) {
  const created = await app.post(`${API}/enhance/task/create`, { inputurl, enhance_type: { normalize: true } }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  return app.waitTask(`${API}/enhance/task/get`, 'job_id', created.json.data.job_id, key, 60_000);
}

async function script(source_type: number, url: string) {
  const created = await app.post(`${API}/podcast/script/create`, { duration: 1, language: 'en', source_type, url }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  return app.waitTask(`${API}/podcast/script/get`, 'global_id', created.json.data.global_id, key, 60_000);
}

const viaRedirect = (to: string) => `${media()}/redirect?to=${encodeURIComponent(to)}`;

describe('SSRF guard through the API (ALLOW_PRIVATE_URLS off)', () => {
  it('control: a public name, checked and then connected through the seam, is fetched', async () => {
    const s = await script(3, `${media()}/notes.md`);
    expect(s.data.status, JSON.stringify(s)).toBe('success');
    const again = await script(3, viaRedirect(`${media()}/notes.md`));
    expect(again.data.status, JSON.stringify(again)).toBe('success');
    expect(pubHits).toContain('/notes.md');
  });

  it('inputurl of separation and enhance: a name or literal pointing at a private address is refused, nothing fetched', async () => {
    for (const url of secretUrls()) {
      const sep = await separation(url);
      expect(sep.data.status, `${url}: ${JSON.stringify(sep)}`).toBe('failed');
      expect(sep.data.error, url).toMatch(BLOCKED);
      const enh = await enhance(url);
      expect(enh.data.status, `${url}: ${JSON.stringify(enh)}`).toBe('failed');
      expect(enh.data.error, url).toMatch(BLOCKED);
    }
    expect(secretHits).toEqual([]);
  }, 120_000);

  it('inputurl: a public server redirecting to a private or metadata address is refused, the target never reached', async () => {
    for (const url of secretUrls()) {
      const sep = await separation(viaRedirect(url));
      expect(sep.data.status, url).toBe('failed');
      expect(sep.data.error, url).toMatch(BLOCKED);
      const enh = await enhance(viaRedirect(url));
      expect(enh.data.error, url).toMatch(BLOCKED);
    }
    expect(pubHits.filter((h) => h.startsWith('/redirect')).length).toBe(secretUrls().length * 2);
    expect(secretHits).toEqual([]);
  }, 120_000);

  it('podcast url (page, video link, attachment): private addresses and redirects to them are refused', async () => {
    for (const source_type of [1, 2, 3]) {
      for (const url of [secretUrls()[0]!, secretUrls()[2]!, viaRedirect(secretUrls()[0]!), viaRedirect(secretUrls()[5]!)]) {
        const s = await script(source_type, url);
        expect(s.data.status, `${source_type} ${url}: ${JSON.stringify(s)}`).toBe('failed');
        expect(s.data.error, `${source_type} ${url}`).toMatch(BLOCKED);
      }
    }
    expect(secretHits).toEqual([]);
  }, 120_000);

  it('video page (source_type 2): caption tracks at private addresses, directly or by redirect, are never fetched', async () => {
    const bad = [...secretUrls(), viaRedirect(secretUrls()[0]!), viaRedirect(secretUrls()[2]!)];
    // At most 4 tracks are tried: two pages so every bad track is tried.
    for (const tracks of [bad.slice(0, 4), bad.slice(4, 8)]) {
      const s = await script(2, `${media()}/watch?${tracks.map((t) => `track=${encodeURIComponent(t)}`).join('&')}`);
      expect(s.data.status, JSON.stringify(s)).toBe('failed');
      expect(s.data.error).toBe('The video page exposes no captions or transcript to build a script from');
    }
    // A refused track does not hide a good one after it.
    const mixed = await script(2, `${media()}/watch?track=${encodeURIComponent(bad[0]!)}&track=${encodeURIComponent(`${media()}/timedtext`)}`);
    expect(mixed.data.status, JSON.stringify(mixed)).toBe('success');
    expect(mixed.data.podcast_script_txt).toMatch(/Fresnel|keepers|solar/);
    expect(secretHits).toEqual([]);
  }, 120_000);

  it('website (source_type 1): a page or feed linking private addresses is read as text, its links and enclosures never fetched', async () => {
    for (const path of ['/page', '/feed.xml']) {
      const s = await script(1, `${media()}${path}`);
      expect(s.data.status, `${path}: ${JSON.stringify(s)}`).toBe('success');
      expect(s.data.podcast_script_txt, path).toMatch(/Fresnel|keepers|solar|lighthouse/i);
    }
    expect(pubHits).toEqual(['/page', '/feed.xml']);
    expect(secretHits).toEqual([]);
  }, 120_000);
});
