import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMediaTools } from '../../src/media/ffmpeg.js';
import { measureLoudness, normalizeLoudness } from '../../src/media/loudnorm.js';

const run = promisify(execFile);
const tools = resolveMediaTools({ preferSystem: true });
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-loud-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('two-pass loudness normalization', () => {
  it('brings a quiet, varying signal to -16 LUFS within 1 LU with the true peak under the ceiling', async () => {
    const quiet = join(dir, 'quiet.wav');
    // A tone whose level swings, like speech phrases: quiet enough to need +15 dB.
    await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=frequency=300:sample_rate=24000:duration=20', '-af', 'volume=0.02,tremolo=f=0.5:d=0.6', quiet]);
    const out = join(dir, 'out.mp3');
    await normalizeLoudness(quiet, out, { ffmpeg: tools.ffmpeg, target: { integrated: -16, truePeak: -1.5, range: 11 }, format: 'mp3', sampleRate: 24000 });
    const m = await measureLoudness(out, { ffmpeg: tools.ffmpeg });
    expect(Math.abs(m.integrated + 16)).toBeLessThan(1);
    expect(m.truePeak).toBeLessThan(-0.5);
  }, 60_000);
});
