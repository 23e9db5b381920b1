import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio, probeMedia, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { Mp3Encoder } from '../../src/media/mp3.js';

const tools = resolveMediaTools({ preferSystem: true });
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-mp3-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const tone = (rate: number, seconds: number, hz: number) => Float32Array.from({ length: Math.round(rate * seconds) }, (_, i) => 0.4 * Math.sin((2 * Math.PI * hz * i) / rate));

/** Correlation of two signals over their common part, after the best shift within `maxLag` samples (LAME adds a delay). */
function bestCorrelation(a: Float32Array, b: Float32Array, maxLag: number): number {
  let best = -1;
  for (let lag = 0; lag <= maxLag; lag++) {
    let ab = 0;
    let aa = 0;
    let bb = 0;
    const n = Math.min(a.length, b.length - lag) - 1000;
    for (let i = 1000; i < n; i++) {
      ab += a[i]! * b[i + lag]!;
      aa += a[i]! * a[i]!;
      bb += b[i + lag]! * b[i + lag]!;
    }
    best = Math.max(best, ab / Math.sqrt(aa * bb));
  }
  return best;
}

describe('Mp3Encoder (LAME in WebAssembly)', () => {
  it('writes MP3 that ffmpeg reads back as the same sound, at the rates TTS engines speak, reusing one encoder', async () => {
    const encoder = new Mp3Encoder();
    for (const [rate, channels] of [[22050, 1], [24000, 1], [44100, 2]] as const) {
      const input = Array.from({ length: channels }, (_, c) => tone(rate, 1.5, 440 + 110 * c));
      const path = join(dir, `tone-${rate}-${channels}.mp3`);
      await writeFile(path, await encoder.encode({ sampleRate: rate, channels: input }, 128));
      const probe = await probeMedia(path, tools);
      expect(probe.codec).toBe('mp3');
      expect(probe.sampleRate).toBe(rate);
      expect(probe.durationSeconds).toBeGreaterThan(1.45);
      expect(probe.durationSeconds).toBeLessThan(1.65);
      const decoded = await decodeAudio(path, { ffmpeg: tools.ffmpeg, sampleRate: rate, channels });
      for (let c = 0; c < channels; c++) expect(bestCorrelation(input[c]!, decoded.channels[c]!, 3000)).toBeGreaterThan(0.98);
    }
  });

  it('refuses more than two channels instead of writing a broken file', async () => {
    const three = [0, 1, 2].map(() => tone(22050, 0.1, 440));
    await expect(new Mp3Encoder().encode({ sampleRate: 22050, channels: three })).rejects.toThrow(/3 channels/);
  });
});
