import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskFailure } from '../../src/domain/errors.js';
import { BuiltinSeparationEngine } from '../../src/engines/separation/builtin.js';
import { resolveMediaTools } from '../../src/media/ffmpeg.js';
import { encodeWav } from '../../src/media/wav.js';
import { runSeparation, type SeparationThreadInput } from '../../src/kinds/separation/thread.js';

const tools = resolveMediaTools({ preferSystem: true });
let dir: string;
let input: string;
const RATE = 16000;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sep-task-'));
  const len = RATE * 3;
  const ch = () => Float32Array.from({ length: len }, (_, i) => 0.3 * Math.sin((2 * Math.PI * 220 * i) / RATE));
  input = join(dir, 'in.wav');
  await writeFile(input, encodeWav({ sampleRate: RATE, channels: [ch(), ch()] }, 16));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

function job(over: Partial<SeparationThreadInput>): SeparationThreadInput {
  return {
    inputPath: input, outDir: dir, modelType: 340, sampleRate: RATE, channels: 2, totalFrames: RATE * 3,
    format: 'wav', ffmpeg: tools.ffmpeg, keep: ['drums'], mixes: {}, ...over,
  };
}
const ctx = () => ({ tmpDir: dir, signal: new AbortController().signal, onProgress: () => {} });

describe('runSeparation (engine thread side)', () => {
  it('reports the frames it actually decoded and wrote, the billable length', async () => {
    const out = await runSeparation(new BuiltinSeparationEngine(), job({ totalFrames: RATE * 60 }), ctx());
    expect(out.frames).toBe(RATE * 3);
  });

  it('stops with a clear failure once the decoded audio passes the limit, whatever the header said', async () => {
    const p = runSeparation(new BuiltinSeparationEngine(), job({ maxFrames: RATE, outDir: await mkdtemp(join(dir, 'o')) }), ctx());
    await expect(p).rejects.toBeInstanceOf(TaskFailure);
    await expect(p).rejects.toThrow(/more than 1 s of audio; the limit is 1 s/);
  });
});
