import { describe, expect, it } from 'vitest';
import { ReusedBlobUrls } from '../../src/adapters/reused-blob-urls.js';
import { SignedBlobUrls } from '../../src/http/signed-blob-urls.js';
import { createUrlSigner } from '../../src/http/signed-url.js';

const T0 = 1_700_000_000_000;
const KEY = 'tasks/abc/output.mp3';

/** Soundry's own signer and the reusing layer on one clock the test moves. */
function setup() {
  const clock = { now: T0 };
  const now = () => clock.now;
  const signer = createUrlSigner({ secret: 'test-secret-0123456789', baseUrl: 'https://audio.example.com', ttlSeconds: 86_400, now });
  const urls = new ReusedBlobUrls(new SignedBlobUrls(signer, 'https://audio.example.com'), { now, maxEntries: 3 });
  const exp = (url: string) => Number(new URL(url).searchParams.get('exp'));
  return { clock, signer, urls, exp };
}

describe('ReusedBlobUrls', () => {
  it('hands a task polled again the link it was given, for up to a minute, then a new one; each verifies', async () => {
    const { clock, signer, urls, exp } = setup();
    const first = await urls.url(KEY, 86_400);
    expect(exp(first)).toBe(T0 / 1000 + 86_400);
    clock.now += 59_000;
    expect(await urls.url(KEY, 86_400)).toBe(first);
    clock.now += 2_000;
    const next = await urls.url(KEY, 86_400);
    expect(next).not.toBe(first);
    expect(exp(next)).toBe((T0 + 61_000) / 1000 + 86_400);
    const u = new URL(next);
    expect(signer.verify(KEY, u.searchParams.get('exp') ?? '', u.searchParams.get('sig') ?? '')).toBe('ok');
  });

  it('never hands out a link that outlives what is asked: a task whose expiry moved closer gets a new one at once', async () => {
    const { clock, urls, exp } = setup();
    const long = await urls.url(KEY, 86_400);
    clock.now += 1_000;
    const short = await urls.url(KEY, 3);
    expect(short).not.toBe(long);
    expect(exp(short) * 1000).toBeLessThanOrEqual(clock.now + 3_000);
    // As the task's end nears, the lifetime asked shrinks with it and ends at the same moment: the link is kept.
    clock.now += 1_000;
    expect(await urls.url(KEY, 2)).toBe(short);
  });

  it('lets a short link end at most a tenth of its lifetime early', async () => {
    const { clock, urls } = setup();
    const first = await urls.url(KEY, 20);
    clock.now += 1_000;
    expect(await urls.url(KEY, 20)).toBe(first);
    clock.now += 1_500;
    expect(await urls.url(KEY, 20)).not.toBe(first);
  });

  it('keeps links of several keys apart and at most maxEntries of them', async () => {
    const { urls } = setup();
    const links = await Promise.all(['a/1.mp3', 'a/2.mp3', 'a/3.mp3'].map((k) => urls.url(k, 600)));
    expect(new Set(links).size).toBe(3);
    expect(await urls.url('a/2.mp3', 600)).toBe(links[1]);
    // A fourth key empties the map: the others are signed again (same clock: the same link, signed afresh).
    await urls.url('a/4.mp3', 600);
    expect(await urls.url('a/1.mp3', 600)).toBe(links[0]);
    expect(urls.maxTtlSeconds).toBe(Number.POSITIVE_INFINITY);
  });
});
