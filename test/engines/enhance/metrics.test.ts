import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { siSdr, stoi10k } from '../../../src/engines/enhance/metrics.js';

const file = new URL('../../../../shared/corpus/speech/clean/cmu_arctic_a0010.wav', import.meta.url).pathname;

describe.skipIf(!existsSync(file))('metrics', () => {
  it('STOI is 1 for identical signals and falls with SNR; SI-SDR follows the SNR of added noise', async () => {
    const tools = resolveMediaTools({ preferSystem: true });
    const x = (await decodeAudio(file, { ffmpeg: tools.ffmpeg, sampleRate: 10000 })).channels[0]!;
    expect(stoi10k(x, x)).toBeCloseTo(1, 5);
    let p = 0;
    for (const v of x) p += v * v;
    p /= x.length;
    let seed = 1;
    const noise = Float32Array.from(x, () => { seed = (seed * 1103515245 + 12345) >>> 0; return (seed / 2 ** 32) * 2 - 1; });
    let pn = 0;
    for (const v of noise) pn += v * v;
    pn /= noise.length;
    const scores = [10, 0, -10].map((snr) => {
      const g = Math.sqrt(p / pn / 10 ** (snr / 10));
      const y = Float32Array.from(x, (v, i) => v + g * noise[i]!);
      expect(siSdr(y, x)).toBeCloseTo(snr, 0);
      return stoi10k(x, y);
    });
    expect(scores[0]!).toBeGreaterThan(scores[1]!);
    expect(scores[1]!).toBeGreaterThan(scores[2]!);
    expect(scores[0]!).toBeGreaterThan(0.75); // white noise is harsh on the weak high bands of speech
    expect(scores[2]!).toBeLessThan(0.65);
  });
});
