import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio, encodeAudio, probeMedia, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { decodeWav, encodeWav } from '../../src/media/wav.js';

function tone(sampleRate: number, seconds: number, hz: number, channels = 1) {
  return {
    sampleRate,
    channels: Array.from({ length: channels }, (_, c) => {
      const x = new Float32Array(Math.round(sampleRate * seconds));
      for (let i = 0; i < x.length; i++) x[i] = 0.5 * Math.sin((2 * Math.PI * hz * (c + 1) * i) / sampleRate);
      return x;
    }),
  };
}

describe('wav codec', () => {
  it('round-trips float32 exactly and int16 to the nearest step', () => {
    const audio = tone(22050, 0.1, 440, 2);
    const f = decodeWav(encodeWav(audio, 32));
    expect(f.sampleRate).toBe(22050);
    expect(f.channels).toHaveLength(2);
    expect(Array.from(f.channels[1]!)).toEqual(Array.from(audio.channels[1]!));
    const s = decodeWav(encodeWav(audio, 16));
    let err = 0;
    for (let i = 0; i < s.channels[0]!.length; i++) err = Math.max(err, Math.abs(s.channels[0]![i]! - audio.channels[0]![i]!));
    expect(err).toBeLessThanOrEqual(0.5 / 32768 + 1e-9);
    // Values already on the int16 grid survive unchanged.
    const grid = { sampleRate: 8000, channels: [Float32Array.from([-1, -0.5, 0, 12345 / 32768])] };
    expect(Array.from(decodeWav(encodeWav(grid, 16)).channels[0]!)).toEqual(Array.from(grid.channels[0]!));
  });

  it('reads 24-bit PCM and streamed headers with an unknown data size', () => {
    const buf = Buffer.alloc(44 + 6);
    buf.write('RIFF', 0); buf.write('WAVE', 8); buf.write('fmt ', 12); buf.writeUInt32LE(16, 16);
    buf.writeUInt16LE(1, 20); buf.writeUInt16LE(1, 22); buf.writeUInt32LE(16000, 24); buf.writeUInt16LE(24, 34);
    buf.write('data', 36); buf.writeUInt32LE(0xffffffff, 40);
    buf.writeIntLE(4194304, 44, 3); buf.writeIntLE(-8388608, 47, 3);
    const a = decodeWav(buf);
    expect(Array.from(a.channels[0]!)).toEqual([0.5, -1]);
    expect(() => decodeWav(Buffer.from('nope'))).toThrow(/RIFF/);
  });
});

describe('ffmpeg', () => {
  const tools = resolveMediaTools({ preferSystem: true });
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-media-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('encodes mp3/wav/flac, probes and decodes back with the same duration', async () => {
    const audio = tone(22050, 1.5, 220);
    for (const format of ['mp3', 'wav', 'flac'] as const) {
      const path = join(dir, `t.${format}`);
      await encodeAudio(audio, path, { ffmpeg: tools.ffmpeg, format });
      const info = await probeMedia(path, { ffprobe: tools.ffprobe });
      expect(info).toMatchObject({ sampleRate: 22050, channels: 1, hasAudio: true, hasVideo: false });
      expect(info.durationSeconds).toBeGreaterThan(1.4);
      const back = await decodeAudio(path, { ffmpeg: tools.ffmpeg });
      expect(Math.abs(back.channels[0]!.length / back.sampleRate - 1.5)).toBeLessThan(0.075);
      const resampled = await decodeAudio(path, { ffmpeg: tools.ffmpeg, sampleRate: 16000, channels: 2 });
      expect(resampled.sampleRate).toBe(16000);
      expect(resampled.channels).toHaveLength(2);
    }
  });

  it('refuses playlist-like inputs that would read other files, and reports stderr', async () => {
    const list = join(dir, 'list.txt');
    await writeFile(list, "ffconcat version 1.0\nfile '/etc/hostname'\n");
    await expect(decodeAudio(list, { ffmpeg: tools.ffmpeg })).rejects.toThrow(/ffmpeg failed .*whitelist|Invalid/s);
    await expect(probeMedia(join(dir, 'missing.wav'), { ffprobe: tools.ffprobe })).rejects.toThrow(/No such file/);
  });

  it('kills the encoder on abort', async () => {
    const controller = new AbortController();
    const long = { sampleRate: 44100, channels: [new Float32Array(44100 * 600)] };
    const started = Date.now();
    setTimeout(() => controller.abort(), 30);
    await expect(encodeAudio(long, join(dir, 'long.mp3'), { ffmpeg: tools.ffmpeg, format: 'mp3', signal: controller.signal })).rejects.toThrow(/abort/i);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
