import { describe, expect, it } from 'vitest';
import type { AudioData } from '../../../src/media/audio.js';
import { blocksOf, LatencyTrim, runChain, SampleFifo, type AudioStage } from '../../../src/engines/enhance/stage.js';

/** Delays by `d` samples and re-blocks into 100-sample pieces: exercises holding and flush order. */
function delayStage(d: number): AudioStage {
  const fifo = new SampleFifo(1);
  fifo.pushZeros(d);
  const trim = new LatencyTrim(d);
  return {
    name: `delay${d}`,
    async push(b) {
      trim.countInput(b.channels[0]!.length);
      fifo.push(b.channels);
      const n = Math.floor(fifo.length / 100) * 100;
      const t = trim.apply(fifo.take(n));
      return t ? { sampleRate: b.sampleRate, channels: t } : null;
    },
    async flush() {
      fifo.pushZeros(d);
      const t = trim.apply(fifo.take(fifo.length));
      return t ? { sampleRate: 8000, channels: t } : null;
    },
  };
}

describe('runChain', () => {
  it('passes every sample through delaying stages in order, flushes downstream, reports progress', async () => {
    const x = Float32Array.from({ length: 12345 }, (_v, i) => i);
    const out: number[] = [];
    const progress: number[] = [];
    const r = await runChain([delayStage(37), delayStage(250)], blocksOf({ sampleRate: 8000, channels: [x] }, 777), async (b) => {
      out.push(...b.channels[0]!);
    }, { signal: new AbortController().signal, onProgress: (f) => progress.push(f) }, { totalFrames: x.length });
    expect(r).toEqual({ inputFrames: 12345, outputFrames: 12345 });
    expect(out).toEqual(Array.from(x));
    expect(progress.at(-1)).toBe(1);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThanOrEqual(progress[i - 1]!);
  });

  it('stops with the abort reason', async () => {
    const ctl = new AbortController();
    async function* src(): AsyncGenerator<AudioData> {
      for (let i = 0; ; i++) {
        if (i === 3) ctl.abort(new Error('cancelled by user'));
        yield { sampleRate: 8000, channels: [new Float32Array(100)] };
      }
    }
    await expect(runChain([delayStage(10)], src(), async () => undefined, { signal: ctl.signal, onProgress: () => undefined })).rejects.toThrow('cancelled by user');
  });

  it('SampleFifo keeps order across growth and compaction', () => {
    const f = new SampleFifo(2, 4);
    let next = 0, expectNext = 0;
    for (let round = 0; round < 200; round++) {
      const n = (round * 7) % 13;
      const a = Float32Array.from({ length: n }, () => next++);
      f.push([a, a]);
      const got = f.take((round * 5) % 11);
      for (const v of got[1]!) expect(v).toBe(expectNext++);
    }
  });
});
