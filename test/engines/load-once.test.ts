import { describe, expect, it } from 'vitest';
import { LoadOnce } from '../../src/engines/tts/load-once.js';

describe('LoadOnce (the neural TTS engines\' model cache)', () => {
  it('shares one load between concurrent first calls, per key', async () => {
    const cache = new LoadOnce<string>();
    let opened = 0;
    const open = (v: string) => async () => {
      opened++;
      await new Promise((r) => setTimeout(r, 5));
      return v;
    };
    const [a, b, c] = await Promise.all([cache.get('m', open('one')), cache.get('m', open('two')), cache.get('n', open('three'))]);
    expect([a, b, c, opened]).toEqual(['one', 'one', 'three', 2]);
    expect(await cache.get('m', open('again'))).toBe('one');
    expect(opened).toBe(2);
  });

  it('forgets a failed load, so the next call tries again (the model may have been pulled since)', async () => {
    const cache = new LoadOnce<string>();
    await expect(cache.get('m', async () => Promise.reject(new Error('not installed')))).rejects.toThrow('not installed');
    expect(await cache.get('m', async () => 'loaded')).toBe('loaded');
  });

  it('clear() forgets everything and hands back the loads that succeeded, to release', async () => {
    const cache = new LoadOnce<string>();
    await cache.get('a', async () => 'A');
    await cache.get('b', async () => Promise.reject(new Error('x'))).catch(() => {});
    expect(await cache.clear()).toEqual(['A']);
    expect(await cache.get('a', async () => 'A2')).toBe('A2');
  });
});
