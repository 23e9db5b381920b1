import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskFailure } from '../../src/domain/errors.js';
import { decodedFrames } from '../../src/kinds/decoded-length.js';
import { NOT_AUDIO_MESSAGE, openAudioInput } from '../../src/kinds/media-input.js';
import { decodeAudio, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { sniffMediaType } from '../../src/media/sniff.js';

/**
 * What an outside attack with real and crafted media found in the input step every media kind shares: a WAV header's
 * sample rate taken on trust (2,147,483,647 Hz: a 51 GB allocation, internal errors), the first audio track used
 * when another is marked default (silent stems, charged), every MPEG-TS file refused (the bundled ffprobe crashes on
 * them), and half an MP3 followed by junk refused whole. Files made here with the real ffmpeg.
 */
const media = resolveMediaTools({ preferSystem: true });
let dir: string;
const signal = new AbortController().signal;
const ff = (...args: string[]) => execFileSync(media.ffmpeg, ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', ...args]);

/** A 16-bit mono PCM WAV of `seconds` of a tone whose header claims `rate` Hz (the samples are 8 kHz's). */
function wavClaiming(rate: number, seconds = 1): Buffer {
  const frames = 8000 * seconds;
  const b = Buffer.alloc(44 + frames * 2);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + frames * 2, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(rate, 24);
  b.writeUInt32LE(Math.min(rate * 2, 0xffffffff), 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36);
  b.writeUInt32LE(frames * 2, 40);
  for (let i = 0; i < frames; i++) b.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000)), 44 + i * 2);
  return b;
}

const rms = (x: Float32Array) => Math.sqrt(x.reduce((s, v) => s + v * v, 0) / Math.max(1, x.length));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-media-input-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('openAudioInput', () => {
  it('refuses a sample rate no audio is made at, naming it, before anything is allocated for it', async () => {
    for (const rate of [2_147_483_647, 200_000_000, 8, 40]) {
      const file = join(dir, `rate-${rate}.wav`);
      await writeFile(file, wavClaiming(rate));
      const err = await openAudioInput(file, { media, tmpDir: dir, signal }).catch((e: unknown) => e);
      expect(err, String(rate)).toBeInstanceOf(TaskFailure);
      expect((err as TaskFailure).message).toBe(
        `The input's audio is at ${rate.toLocaleString('en-US')} Hz, outside the sample rates audio is made at (1,000 to 768,000 Hz): its header is likely wrong`,
      );
      expect((err as TaskFailure).retryable).toBe(false);
    }
    const fine = join(dir, 'rate-8000.wav');
    await writeFile(fine, wavClaiming(8000));
    expect((await openAudioInput(fine, { media, tmpDir: dir, signal })).info.sampleRate).toBe(8000);
  });

  it('takes the audio track marked default, not a silent first one, and says whether the file is a video', async () => {
    const file = join(dir, 'two-tracks.mkv');
    ff('-f', 'lavfi', '-i', 'anullsrc=r=44100:cl=stereo', '-f', 'lavfi', '-i', 'sine=f=440:r=44100', '-map', '0:a', '-map', '1:a', '-t', '2',
      '-c:a', 'flac', '-disposition:a:0', '0', '-disposition:a:1', 'default', file);
    const { path, info } = await openAudioInput(file, { media, tmpDir: dir, signal });
    expect(info.audioIndex).toBe(1);
    expect(info.hasVideo).toBe(false);
    const audio = await decodeAudio(path, { ffmpeg: media.ffmpeg, channels: 1 });
    expect(rms(audio.channels[0]!)).toBeGreaterThan(0.05); // the tone (0.088), not the silence
    // One track, or none marked: the first, read in place.
    const single = join(dir, 'one-track.mka');
    ff('-f', 'lavfi', '-i', 'sine=f=440:r=44100', '-t', '1', '-c:a', 'flac', single);
    expect(await openAudioInput(single, { media, tmpDir: dir, signal })).toMatchObject({ path: single, info: { audioIndex: 0 } });
  });

  it('reads MPEG-TS, a cover picture does not make a video, and a file that is no media is refused as such', async () => {
    const ts = join(dir, 'broadcast.ts');
    ff('-f', 'lavfi', '-i', 'sine=f=440:r=48000', '-t', '3', '-c:a', 'aac', ts);
    // A podcast source is told apart by its first bytes: a transport stream is media, not "an unsupported source".
    expect(sniffMediaType(execFileSync('head', ['-c', '4096', ts]))).toEqual({ kind: 'video', format: 'mpegts' });
    expect(sniffMediaType(Buffer.from(`Good morning. ${'A transcript of the show. '.repeat(40)}`)).kind).toBe('text');
    const { path, info } = await openAudioInput(ts, { media, tmpDir: dir, signal });
    expect(info).toMatchObject({ hasAudio: true, sampleRate: 48000, hasVideo: false });
    expect(await decodedFrames(path, { ffmpeg: media.ffmpeg, sampleRate: 48000, maxSeconds: 60, signal })).toBeGreaterThan(2.9 * 48000);

    const cover = join(dir, 'cover.png');
    ff('-f', 'lavfi', '-i', 'color=c=red:s=64x64', '-frames:v', '1', cover);
    const withCover = join(dir, 'with-cover.mp3');
    ff('-f', 'lavfi', '-i', 'sine=f=440', '-i', cover, '-map', '0:a', '-map', '1:v', '-t', '1', '-c:a', 'libmp3lame', '-c:v', 'png', '-disposition:v', 'attached_pic', withCover);
    expect((await openAudioInput(withCover, { media, tmpDir: dir, signal })).info.hasVideo).toBe(false);
    const movie = join(dir, 'movie.avi');
    ff('-f', 'lavfi', '-i', 'sine=f=440', '-f', 'lavfi', '-i', 'color=c=blue:s=64x64:r=10', '-t', '1', '-c:a', 'pcm_s16le', '-c:v', 'mjpeg', movie);
    expect((await openAudioInput(movie, { media, tmpDir: dir, signal })).info.hasVideo).toBe(true);

    const text = join(dir, 'notes.mp3');
    await writeFile(text, 'these are not sounds '.repeat(200));
    await expect(openAudioInput(text, { media, tmpDir: dir, signal })).rejects.toThrow(NOT_AUDIO_MESSAGE);
  });

  it('decodes the good part of an MP3 followed by junk', async () => {
    const mp3 = join(dir, 'tone.mp3');
    ff('-f', 'lavfi', '-i', 'sine=f=440:r=44100', '-t', '6', '-c:a', 'libmp3lame', mp3);
    const whole = execFileSync('cat', [mp3]);
    // Noise-like junk (xorshift32, seeded): what /dev/urandom gives, and what makes most frames after it fail.
    const junk = Buffer.alloc(3 * 1024 * 1024);
    let x = 0x9e3779b9;
    for (let i = 0; i < junk.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      junk[i] = x & 0xff;
    }
    const damaged = join(dir, 'damaged.mp3');
    await writeFile(damaged, Buffer.concat([whole.subarray(0, whole.length >> 1), junk]));
    const { path } = await openAudioInput(damaged, { media, tmpDir: dir, signal });
    const frames = await decodedFrames(path, { ffmpeg: media.ffmpeg, sampleRate: 44100, maxSeconds: 600, signal });
    expect(frames / 44100).toBeGreaterThan(2.5);
  });

  it('folds more than 8 channels that have no layout to stereo, which ffmpeg could not downmix', async () => {
    // A 9-channel WAV without a channel mask: a tone on channel 0 (left), another on channel 1 (right), silence elsewhere.
    const channels = 9;
    const frames = 8000;
    const b = Buffer.alloc(44 + frames * channels * 2);
    b.write('RIFF', 0);
    b.writeUInt32LE(36 + frames * channels * 2, 4);
    b.write('WAVEfmt ', 8);
    b.writeUInt32LE(16, 16);
    b.writeUInt16LE(1, 20);
    b.writeUInt16LE(channels, 22);
    b.writeUInt32LE(8000, 24);
    b.writeUInt32LE(8000 * channels * 2, 28);
    b.writeUInt16LE(channels * 2, 32);
    b.writeUInt16LE(16, 34);
    b.write('data', 36);
    b.writeUInt32LE(frames * channels * 2, 40);
    for (let i = 0; i < frames; i++) {
      b.writeInt16LE(Math.round(20000 * Math.sin((2 * Math.PI * 440 * i) / 8000)), 44 + (i * channels) * 2);
      b.writeInt16LE(Math.round(20000 * Math.sin((2 * Math.PI * 660 * i) / 8000)), 44 + (i * channels + 1) * 2);
    }
    const file = join(dir, 'nine.wav');
    await writeFile(file, b);
    const { path, info } = await openAudioInput(file, { media, tmpDir: dir, signal });
    expect(info.channels).toBe(2);
    const audio = await decodeAudio(path, { ffmpeg: media.ffmpeg });
    // Each side is the average of its channels: the left tone at 1/5 (five even channels), the right at 1/4.
    expect(rms(audio.channels[0]!)).toBeCloseTo(20000 / 32768 / Math.SQRT2 / 5, 2);
    expect(rms(audio.channels[1]!)).toBeCloseTo(20000 / 32768 / Math.SQRT2 / 4, 2);
    expect(await decodedFrames(path, { ffmpeg: media.ffmpeg, sampleRate: 8000, maxSeconds: 60, signal })).toBe(frames);
  });
});
