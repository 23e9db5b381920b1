import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { DeclickStage } from '../../../src/engines/enhance/declick.js';
import { processWhole } from '../../../src/engines/enhance/stage.js';

const file = new URL('../../../../shared/corpus/speech/clean/cmu_arctic_us_axb_a0004.wav', import.meta.url).pathname;
const tools = resolveMediaTools({ preferSystem: true });

function snr(ref: Float32Array, y: Float32Array): number {
  let s = 0, n = 0;
  for (let i = 0; i < ref.length; i++) { s += ref[i]! ** 2; n += (y[i]! - ref[i]!) ** 2; }
  return 10 * Math.log10(s / (n || 1e-20));
}

describe.skipIf(!existsSync(file))('declick (LPC residual detection + AR interpolation)', () => {
  it('repairs added mouth clicks and leaves clean speech (consonants included) almost untouched', async () => {
    const a = await decodeAudio(file, { ffmpeg: tools.ffmpeg, sampleRate: 16000 });
    const clean = a.channels[0]!;
    // Untouched speech: fraction of changed samples.
    const y0 = (await processWhole([new DeclickStage(16000, 1)], a, 3000)).channels[0]!;
    expect(y0.length).toBe(clean.length);
    let changed = 0;
    for (let i = 0; i < clean.length; i++) if (Math.abs(y0[i]! - clean[i]!) > 1e-6) changed++;
    expect(changed / clean.length).toBeLessThan(0.005);
    // Clicks: 40 short (0.5 ms) decaying bipolar bursts, in speech and in pauses.
    const clicked = clean.slice();
    const at: number[] = [];
    for (let k = 0; k < 40; k++) {
      const p = 2000 + Math.floor((k * (clean.length - 4000)) / 40);
      at.push(p);
      for (let i = 0; i < 8; i++) clicked[p + i] = clicked[p + i]! + 0.3 * (i % 2 ? -1 : 1) * Math.exp(-i / 3);
    }
    const stage = new DeclickStage(16000, 1);
    const y = (await processWhole([stage], { sampleRate: 16000, channels: [clicked] }, 5000)).channels[0]!;
    expect(stage.repaired).toBeGreaterThan(30);
    // Error around the clicks shrinks a lot.
    const seg = (s: Float32Array) => Float32Array.from(at.flatMap((p) => Array.from(s.subarray(p - 10, p + 20))));
    expect(snr(seg(clean), seg(y)) - snr(seg(clean), seg(clicked))).toBeGreaterThan(6);
  });
});

describe('declick at any sample rate', () => {
  // 22.05 and 11.025 kHz make a 20 ms frame an odd number of samples; the window used to start between
  // two samples there and nothing was ever repaired.
  it.each([22050, 11025, 16000, 44100])('repairs clicks at %i Hz', async (rate) => {
    const { speechLike } = await import('../../helpers/speech-synth.js');
    const x = speechLike(20, rate, 4);
    const at: number[] = [];
    for (let k = 0; k < 20; k++) {
      const p = Math.floor(rate * 0.2) + Math.floor((k * (x.length - rate * 0.4)) / 20);
      at.push(p);
      for (let i = 0; i < 4; i++) x[p + i] = x[p + i]! + 0.3 * (i % 2 ? -1 : 1) * Math.exp(-i / 2);
    }
    const stage = new DeclickStage(rate, 1);
    await processWhole([stage], { sampleRate: rate, channels: [x] }, 4096);
    expect(stage.repaired).toBeGreaterThanOrEqual(15);
  });
});
