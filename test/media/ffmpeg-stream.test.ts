import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countDecodedFrames, decodeStream, StreamEncoder } from '../../src/media/ffmpeg-stream.js';
import { probeMedia, resolveMediaTools } from '../../src/media/ffmpeg.js';

const run = promisify(execFile);
const tools = resolveMediaTools({ preferSystem: true });
let dir: string;
let longFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-stream-'));
  // 20 minutes of stereo tone at 44.1 kHz, made by ffmpeg itself (FLAC keeps it small and exact).
  longFile = join(dir, 'long.flac');
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=1200', '-ac', '2', '-c:a', 'flac', longFile]);
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('streaming decode and encode', () => {
  it('streams 20 minutes through decode and encode with flat memory and exact length', async () => {
    const out = join(dir, 'out.flac');
    const encoder = new StreamEncoder(out, { ffmpeg: tools.ffmpeg, format: 'flac', sampleRate: 44100, channels: 2 });
    let frames = 0;
    let blocks = 0;
    const rss: number[] = [];
    for await (const block of decodeStream(longFile, { ffmpeg: tools.ffmpeg, sampleRate: 44100, channels: 2, blockFrames: 441000 })) {
      frames += block.channels[0]!.length;
      blocks++;
      await encoder.write(block);
      if (blocks % 10 === 0) rss.push(process.memoryUsage().rss);
    }
    await encoder.end();
    expect(frames).toBe(1200 * 44100);
    expect(blocks).toBe(120);
    // Whole, this would be 423 MB of float32; growth across the run stays far below that.
    expect(Math.max(...rss) - Math.min(...rss)).toBeLessThan(120 * 1024 * 1024);
    const info = await probeMedia(out, { ffprobe: tools.ffprobe });
    expect(info.durationSeconds).toBeCloseTo(1200, 1);
    expect(info.channels).toBe(2);
  }, 120_000);

  it('keeps sample values and channel order', async () => {
    const stereo = join(dir, 'lr.wav');
    await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=frequency=100:sample_rate=8000:duration=1', '-f', 'lavfi', '-i', 'anullsrc=r=8000:cl=mono', '-filter_complex', '[0][1]amerge=inputs=2,atrim=duration=1', '-c:a', 'pcm_f32le', stereo]);
    const blocks = [];
    for await (const b of decodeStream(stereo, { ffmpeg: tools.ffmpeg, sampleRate: 8000, channels: 2, blockFrames: 3000 })) blocks.push(b);
    expect(blocks.map((b) => b.channels[0]!.length)).toEqual([3000, 3000, 2000]);
    const left = blocks[0]!.channels[0]!;
    const right = blocks[0]!.channels[1]!;
    expect(Math.max(...left.map(Math.abs))).toBeGreaterThan(0.05);
    expect(Math.max(...right.map(Math.abs))).toBe(0);
  });

  it('fails clearly on a file that is not media, and stops on abort', async () => {
    const bogus = join(dir, 'bogus.mp3');
    await run('sh', ['-c', `head -c 5000 /dev/urandom > ${bogus}`]);
    const consume = async (signal?: AbortSignal) => {
      for await (const _ of decodeStream(bogus, { ffmpeg: tools.ffmpeg, sampleRate: 8000, channels: 1, blockFrames: 1000, signal })) {
        /* drain */
      }
    };
    await expect(consume()).rejects.toThrow(/ffmpeg failed/);
    const ctl = new AbortController();
    const gen = decodeStream(longFile, { ffmpeg: tools.ffmpeg, sampleRate: 44100, channels: 2, blockFrames: 44100, signal: ctl.signal });
    await gen.next();
    ctl.abort();
    await expect((async () => {
      for await (const _ of gen) {
        /* drain */
      }
    })()).rejects.toThrow();
  });

  it('countDecodedFrames counts exactly what decodeStream yields, and stops once past maxFrames', async () => {
    const all = await countDecodedFrames(longFile, { ffmpeg: tools.ffmpeg, sampleRate: 44100, maxFrames: 1e9 });
    expect(all).toEqual({ frames: 1200 * 44100, over: false });
    const started = Date.now();
    const cut = await countDecodedFrames(longFile, { ffmpeg: tools.ffmpeg, sampleRate: 44100, maxFrames: 60 * 44100 });
    expect(cut.over).toBe(true);
    // Stopped soon after a minute of audio, not after all twenty.
    expect(cut.frames).toBeLessThan(70 * 44100);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
