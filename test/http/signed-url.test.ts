import { describe, expect, it } from 'vitest';
import { createUrlSigner } from '../../src/http/signed-url.js';

const T0 = 1_700_000_000_000;

function setup(now = () => T0) {
  return createUrlSigner({ secret: 'test-secret-0123456789', baseUrl: 'https://audio.example.com/', ttlSeconds: 3600, now });
}

function parts(url: string) {
  const u = new URL(url);
  const key = decodeURIComponent(u.pathname.replace(/^\/files\//, ''));
  return { u, key, exp: u.searchParams.get('exp') ?? '', sig: u.searchParams.get('sig') ?? '' };
}

describe('createUrlSigner', () => {
  it('signs an absolute URL that verifies', () => {
    const signer = setup();
    const url = signer.sign('tasks/abc/output.mp3');
    const { u, key, exp, sig } = parts(url);
    expect(u.origin).toBe('https://audio.example.com');
    expect(u.pathname).toBe('/files/tasks/abc/output.mp3');
    expect(Number(exp)).toBe(T0 / 1000 + 3600);
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(signer.verify(key, exp, sig)).toBe('ok');
    expect(signer.verify(key, Number(exp), sig)).toBe('ok');
  });

  it('keeps slashes but encodes each segment', () => {
    const url = setup().sign('tasks/a b/x?.mp3');
    expect(new URL(url).pathname).toBe('/files/tasks/a%20b/x%3F.mp3');
  });

  it('rejects a tampered key', () => {
    const signer = setup();
    const { exp, sig } = parts(signer.sign('tasks/abc/output.mp3'));
    expect(signer.verify('tasks/abd/output.mp3', exp, sig)).toBe('bad_signature');
    expect(signer.verify('tasks/abc/output.mp3/', exp, sig)).toBe('bad_signature');
  });

  it('rejects a tampered expiry', () => {
    const signer = setup();
    const { key, exp, sig } = parts(signer.sign('tasks/abc/output.mp3'));
    expect(signer.verify(key, String(Number(exp) + 1), sig)).toBe('bad_signature');
    expect(signer.verify(key, `0${exp}`, sig)).toBe('bad_signature');
    expect(signer.verify(key, `${exp}.0`, sig)).toBe('bad_signature');
    expect(signer.verify(key, undefined, sig)).toBe('bad_signature');
  });

  it('rejects a tampered, truncated, missing or foreign signature', () => {
    const signer = setup();
    const { key, exp, sig } = parts(signer.sign('tasks/abc/output.mp3'));
    const flipped = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
    expect(signer.verify(key, exp, flipped)).toBe('bad_signature');
    expect(signer.verify(key, exp, sig.slice(0, -1))).toBe('bad_signature');
    expect(signer.verify(key, exp, `${sig}=`)).toBe('bad_signature');
    expect(signer.verify(key, exp, '')).toBe('bad_signature');
    expect(signer.verify(key, exp, undefined)).toBe('bad_signature');
    const other = createUrlSigner({ secret: 'another-secret', baseUrl: 'https://x', ttlSeconds: 3600, now: () => T0 });
    const foreign = parts(other.sign('tasks/abc/output.mp3'));
    expect(signer.verify(foreign.key, foreign.exp, foreign.sig)).toBe('bad_signature');
  });

  it('reports expiry once the time has passed, and honours a per-link ttl', () => {
    let now = T0;
    const signer = setup(() => now);
    const { key, exp, sig } = parts(signer.sign('tasks/abc/output.mp3', 60));
    now = T0 + 59_000;
    expect(signer.verify(key, exp, sig)).toBe('ok');
    now = T0 + 60_000;
    expect(signer.verify(key, exp, sig)).toBe('expired');
  });

  it('accepts a Buffer secret and refuses bad configuration', () => {
    const signer = createUrlSigner({ secret: Buffer.from('abc'), baseUrl: 'http://h', ttlSeconds: 5 });
    const { key, exp, sig } = parts(signer.sign('k.mp3'));
    expect(signer.verify(key, exp, sig)).toBe('ok');
    expect(() => createUrlSigner({ secret: '', baseUrl: 'http://h', ttlSeconds: 5 })).toThrow();
    expect(() => createUrlSigner({ secret: 's', baseUrl: 'http://h', ttlSeconds: 0 })).toThrow();
    expect(() => signer.sign('k', -1)).toThrow();
  });
});
