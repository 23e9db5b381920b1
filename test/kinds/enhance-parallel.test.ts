import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AudioData } from '../../src/media/audio.js';
import { decodeStream, StreamEncoder } from '../../src/media/ffmpeg-stream.js';
import { resolveMediaTools } from '../../src/media/ffmpeg.js';
import { runEnhance, type EnhanceRunOptions, type EnhanceThreadInput } from '../../src/kinds/enhance/thread.js';
import type { EnhanceFlag } from '../../src/engines/enhance/chain.js';
import { TaskFailure } from '../../src/domain/errors.js';

/**
 * The production path (runEnhance) with the chain on real chunk worker threads against the same path in one thread,
 * on a few seconds of synthetic stereo audio in 2 s chunks: same length, same samples within the seam bound, and
 * abort, progress and the decoded-length limit still working.
 */
const RATE = 16000;
const SECONDS = 9;
const tools = resolveMediaTools({ preferSystem: true });

function synth(): AudioData {
  let s = 7;
  const n = SECONDS * RATE;
  const l = new Float32Array(n);
  const r = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const t = i / RATE;
    const env = Math.max(0, Math.sin(2 * Math.PI * 2.7 * t));
    let v = 0;
    for (let h = 1; h <= 10; h++) v += Math.sin(2 * Math.PI * 140 * h * t + h) / h;
    const noise = ((s = (s * 48271) % 2147483647) / 2147483647) * 2 - 1;
    l[i] = 0.15 * env * v + 0.005 * noise + (i % 6007 === 0 ? 0.5 : 0);
    r[i] = 0.8 * l[i]!;
  }
  return { sampleRate: RATE, channels: [l, r] };
}

async function decodeAll(path: string): Promise<Float32Array[]> {
  const chs: number[][] = [[], []];
  for await (const b of decodeStream(path, { ffmpeg: tools.ffmpeg, sampleRate: RATE, channels: 2, blockFrames: RATE })) b.channels.forEach((c, i) => chs[i]!.push(...c));
  return chs.map((c) => Float32Array.from(c));
}

describe('enhancement on chunk worker threads (runEnhance)', () => {
  let dir: string;
  let input: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-enh-parallel-'));
    input = join(dir, 'in.wav');
    const enc = new StreamEncoder(input, { ffmpeg: tools.ffmpeg, format: 'wav', pcm: 'f32', sampleRate: RATE, channels: 2 });
    await enc.write(synth());
    await enc.end();
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  const job = (out: string, flags: EnhanceFlag[], extra: Partial<EnhanceThreadInput> = {}): EnhanceThreadInput => ({
    inputPath: input, outPath: join(dir, out), format: 'wav', pcm: 'f32', sampleRate: RATE, channels: 2, totalFrames: SECONDS * RATE,
    flags, modelsDir: join(dir, 'no-models'), ffmpeg: tools.ffmpeg, targetLufs: -16, ...extra,
  });
  const run = (j: EnhanceThreadInput, opts: EnhanceRunOptions, signal = new AbortController().signal, progress: number[] = []) =>
    runEnhance(j, { tmpDir: dir, signal, onProgress: (f) => progress.push(f) }, [], {}, opts);

  it('declick + autoeq + normalize: 2 threads give the one-thread output (under -80 dB), length equal', async () => {
    // mouth_sounds + autoeq + normalize: finite-memory stages, so the bound is float rounding; normalize runs on the join.
    const flags: EnhanceFlag[] = ['mouth_sounds', 'autoeq', 'normalize'];
    const progress: number[] = [];
    const one = await run(job('one.wav', flags), { threads: 1, chunkSeconds: 2 });
    const two = await run(job('two.wav', flags), { threads: 2, chunkSeconds: 2 }, undefined, progress);
    expect(one.threads).toBe(1);
    expect(two.threads).toBe(2);
    expect(two.engines).toEqual(one.engines);
    expect(two.reasons).toEqual(one.reasons);
    expect(two.inputSeconds).toBe(SECONDS);
    expect(two.outputSeconds).toBe(one.outputSeconds);
    const [a, b] = [await decodeAll(join(dir, 'one.wav')), await decodeAll(join(dir, 'two.wav'))];
    expect(b[0]!.length).toBe(a[0]!.length);
    let peak = 0;
    let diff = 0;
    a.forEach((ch, c) => ch.forEach((x, i) => ((peak = Math.max(peak, Math.abs(x))), (diff = Math.max(diff, Math.abs(x - b[c]![i]!))))));
    expect(diff / peak).toBeLessThan(1e-4);
    // Progress rises to the end, never backwards.
    expect(progress.at(-1)).toBe(1);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThanOrEqual(progress[i - 1]!);
  }, 120_000);

  it('a stage that cuts (long_silences) runs after the join: the result has the one-thread length', async () => {
    const flags: EnhanceFlag[] = ['remove_noise', 'long_silences'];
    const one = await run(job('cut-one.wav', flags), { threads: 1, chunkSeconds: 2 });
    const two = await run(job('cut-two.wav', flags), { threads: 2, chunkSeconds: 2 });
    expect(two.threads).toBe(2);
    expect(two.engines).toEqual(one.engines);
    expect(two.outputSeconds).toBeCloseTo(one.outputSeconds, 1);
  }, 120_000);

  it('stops on abort with the threads running, and fails at the decoded-length limit', async () => {
    const ctl = new AbortController();
    const started = run(job('abort.wav', ['remove_noise', 'remove_reverb']), { threads: 2, chunkSeconds: 2 }, ctl.signal, []);
    setTimeout(() => ctl.abort(new Error('the run was cancelled')), 300);
    await expect(started).rejects.toThrow(/cancelled|abort/i);
    const over = run(job('over.wav', ['remove_noise'], { maxFrames: 4 * RATE, maxSeconds: 4 }), { threads: 2, chunkSeconds: 2 });
    await expect(over).rejects.toBeInstanceOf(TaskFailure);
  }, 120_000);
});
