import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { sniffMediaType } from '../../src/media/sniff.js';
import { TaskFailure } from '../../src/domain/errors.js';
import { decodedFrames } from '../../src/kinds/decoded-length.js';
import { NOT_AUDIO_MESSAGE, openAudioInput } from '../../src/kinds/media-input.js';
import { nistSphere, shortenStream, type SphereCoding } from './sphere-fixture.js';

/**
 * Every format users bring that the project's ffmpeg decodes is taken as audio (issue 28: `.sph` was refused as "not an
 * audio or video file"): sniffed as audio or video from its first bytes (what the podcast sources decide on), opened by
 * openAudioInput (the enhancement, separation and transcription input: ffprobe and ffmpeg with the demuxer whitelist)
 * and decoded to the right length. Samples are made by this ffmpeg itself; NIST SPHERE, which it cannot write, is built
 * here (1024-byte header, then PCM, mu-law or a Shorten stream). Formats with no encoder in this ffmpeg (Monkey's Audio,
 * Musepack, DSF) are covered by the sniffer test and the demuxer whitelist only.
 */
const run = promisify(execFile);
const media = resolveMediaTools({ preferSystem: false });
let dir = '';
beforeAll(async () => { dir = await mkdtemp(join(tmpdir(), 'formats-')); });
afterAll(async () => { await rm(dir, { recursive: true, force: true }); });

interface Row { name: string; ext: string; args: string[]; sniff: 'audio' | 'video'; format: string; rate?: number; stereo?: boolean }
const ROWS: Row[] = [
  { name: 'WAV', ext: 'wav', args: ['-c:a', 'pcm_s16le', '-f', 'wav'], sniff: 'audio', format: 'wav' },
  { name: 'WAV (MS ADPCM)', ext: 'wav', args: ['-c:a', 'adpcm_ms', '-f', 'wav'], sniff: 'audio', format: 'wav' },
  { name: 'RF64', ext: 'wav', args: ['-c:a', 'pcm_s24le', '-rf64', 'always', '-f', 'wav'], sniff: 'audio', format: 'wav' },
  { name: 'Wave64', ext: 'w64', args: ['-c:a', 'pcm_s16le', '-f', 'w64'], sniff: 'audio', format: 'w64' },
  { name: 'AIFF', ext: 'aiff', args: ['-f', 'aiff'], sniff: 'audio', format: 'aiff' },
  { name: 'AIFF-C (float)', ext: 'aifc', args: ['-c:a', 'pcm_f32be', '-f', 'aiff'], sniff: 'audio', format: 'aiff' },
  { name: 'CAF (ALAC)', ext: 'caf', args: ['-c:a', 'alac', '-f', 'caf'], sniff: 'audio', format: 'caf' },
  { name: 'Sun AU', ext: 'au', args: ['-f', 'au'], sniff: 'audio', format: 'au' },
  { name: 'Creative VOC', ext: 'voc', args: ['-f', 'voc'], sniff: 'audio', format: 'voc' },
  { name: 'SoX native', ext: 'sox', args: ['-f', 'sox'], sniff: 'audio', format: 'sox' },
  { name: 'IRCAM', ext: 'sf', args: ['-f', 'ircam'], sniff: 'audio', format: 'ircam' },
  { name: 'FLAC', ext: 'flac', args: ['-f', 'flac'], sniff: 'audio', format: 'flac' },
  { name: 'WavPack', ext: 'wv', args: ['-c:a', 'wavpack', '-f', 'wv'], sniff: 'audio', format: 'wv' },
  { name: 'TTA', ext: 'tta', args: ['-c:a', 'tta', '-f', 'tta'], sniff: 'audio', format: 'tta' },
  { name: 'MP3', ext: 'mp3', args: ['-c:a', 'libmp3lame', '-f', 'mp3'], sniff: 'audio', format: 'mp3' },
  { name: 'MP2', ext: 'mp2', args: ['-c:a', 'mp2', '-f', 'mp2'], sniff: 'audio', format: 'mp3' },
  { name: 'AAC (ADTS)', ext: 'aac', args: ['-c:a', 'aac', '-f', 'adts'], sniff: 'audio', format: 'aac' },
  { name: 'M4A (AAC)', ext: 'm4a', args: ['-c:a', 'aac', '-f', 'ipod'], sniff: 'audio', format: 'm4a' },
  { name: 'M4A (ALAC)', ext: 'm4a', args: ['-c:a', 'alac', '-f', 'ipod'], sniff: 'audio', format: 'm4a' },
  { name: 'MP4 (AAC)', ext: 'mp4', args: ['-c:a', 'aac', '-f', 'mp4'], sniff: 'video', format: 'mp4' },
  { name: '3GP (AMR-NB)', ext: '3gp', args: ['-c:a', 'libopencore_amrnb', '-f', '3gp'], sniff: 'video', format: '3gp', rate: 8000 },
  { name: 'AMR-NB', ext: 'amr', args: ['-c:a', 'libopencore_amrnb', '-f', 'amr'], sniff: 'audio', format: 'amr', rate: 8000 },
  { name: 'AMR-WB', ext: 'awb', args: ['-c:a', 'libvo_amrwbenc', '-f', 'amr'], sniff: 'audio', format: 'amr-wb' },
  { name: 'Ogg Opus', ext: 'opus', args: ['-c:a', 'libopus', '-f', 'ogg'], sniff: 'audio', format: 'opus' },
  { name: 'Ogg Vorbis', ext: 'ogg', args: ['-c:a', 'libvorbis', '-f', 'ogg'], sniff: 'audio', format: 'ogg' },
  { name: 'Ogg Speex', ext: 'spx', args: ['-c:a', 'libspeex', '-f', 'ogg'], sniff: 'audio', format: 'speex' },
  { name: 'WebM (Opus)', ext: 'webm', args: ['-c:a', 'libopus', '-f', 'webm'], sniff: 'video', format: 'webm' },
  { name: 'Matroska audio (FLAC)', ext: 'mka', args: ['-c:a', 'flac', '-f', 'matroska'], sniff: 'video', format: 'mkv' },
  { name: 'WMA (ASF)', ext: 'wma', args: ['-c:a', 'wmav2', '-f', 'asf'], sniff: 'audio', format: 'wma' },
  { name: 'AC-3', ext: 'ac3', args: ['-c:a', 'ac3', '-f', 'ac3'], sniff: 'audio', format: 'ac3' },
  { name: 'E-AC-3', ext: 'eac3', args: ['-c:a', 'eac3', '-f', 'eac3'], sniff: 'audio', format: 'eac3', rate: 48000 },
  { name: 'DTS', ext: 'dts', args: ['-c:a', 'dca', '-strict', '-2', '-f', 'dts'], sniff: 'audio', format: 'dts', rate: 48000 },
  { name: 'TrueHD', ext: 'thd', args: ['-c:a', 'truehd', '-strict', '-2', '-f', 'truehd'], sniff: 'audio', format: 'truehd', rate: 48000, stereo: true },
  { name: 'MLP', ext: 'mlp', args: ['-c:a', 'mlp', '-strict', '-2', '-f', 'mlp'], sniff: 'audio', format: 'mlp', rate: 48000 },
  { name: 'FLV (MP3)', ext: 'flv', args: ['-c:a', 'libmp3lame', '-f', 'flv'], sniff: 'audio', format: 'flv', rate: 44100 },
  { name: 'MPEG-PS (MP2)', ext: 'mpg', args: ['-c:a', 'mp2', '-f', 'mpeg'], sniff: 'video', format: 'mpeg', rate: 48000 },
  { name: 'MPEG-TS (AAC)', ext: 'ts', args: ['-c:a', 'aac', '-f', 'mpegts'], sniff: 'video', format: 'mpegts' },
  { name: 'RealAudio (RM)', ext: 'ra', args: ['-c:a', 'real_144', '-f', 'rm'], sniff: 'video', format: 'rm', rate: 8000 },
];

const SECONDS = 0.5;

async function opened(path: string) {
  return openAudioInput(path, { media, tmpDir: dir, signal: new AbortController().signal });
}

describe('input formats: sniffed as media, opened and decoded', () => {
  it.each(ROWS)('$name', async (row) => {
    const rate = row.rate ?? 16000;
    const path = join(dir, `${row.name.replace(/\W+/g, '_')}.${row.ext}`);
    await run(media.ffmpeg, [
      '-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=${rate}:duration=${SECONDS}`,
      '-ac', row.stereo ? '2' : '1', ...row.args, '-y', path,
    ]);
    expect(sniffMediaType((await readFile(path)).subarray(0, 4096))).toEqual({ kind: row.sniff, format: row.format });
    const { path: input, info } = await opened(path);
    expect(info.hasAudio).toBe(true);
    const audio = await decodeAudio(input, { ffmpeg: media.ffmpeg });
    // Lossy codecs add priming or round up to whole frames (AC-3: 1536 samples); never more than 80 ms here.
    expect(Math.abs(audio.channels[0]!.length / audio.sampleRate - SECONDS)).toBeLessThan(0.08);
  });
});

describe('sniffing formats this ffmpeg cannot write', () => {
  const head = (...parts: Array<string | number[]>) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
  it.each([
    ["Monkey's Audio", head('MAC ', [0x96, 0x0f, 0, 0]), 'ape'],
    ['Musepack SV8', head('MPCK', [0x53, 0x48, 0x0a]), 'mpc'],
    ['Musepack SV7', head('MP+', [0x17, 0, 0, 0]), 'mpc'],
    ['DSF', head('DSD ', [0x1c, 0, 0, 0, 0, 0, 0, 0]), 'dsf'],
    ['Shorten (.shn)', head('ajkg', [2, 0xff]), 'shn'],
    ['DTS (14-bit little-endian)', head([0xff, 0x1f, 0x00, 0xe8, 0xf1, 0x07]), 'dts'],
  ])('%s', (_name, bytes, format) => {
    expect(sniffMediaType(bytes)).toEqual({ kind: 'audio', format });
  });

  it('text that begins like a signature is still text', () => {
    expect(sniffMediaType(Buffer.from('MP+ and MAC addresses: notes\n')).kind).toBe('text');
    expect(sniffMediaType(Buffer.from('DSD music notes\n')).kind).toBe('text');
  });
});

describe('NIST SPHERE (.sph)', () => {
  const RATE = 16000;
  const N = 4000; // not a multiple of Shorten's 256-sample blocks: the last block is short
  const pcm = Int16Array.from({ length: N * 2 }, (_, i) => Math.round(12000 * Math.sin((2 * Math.PI * (i % 2 ? 660 : 440) * (i >> 1)) / RATE)));

  const cases: Array<{ name: string; coding: SphereCoding; channels: 1 | 2 }> = [
    { name: 'PCM 16-bit little-endian, mono', coding: 'pcm-le', channels: 1 },
    { name: 'PCM 16-bit big-endian, stereo', coding: 'pcm-be', channels: 2 },
    { name: 'mu-law, mono', coding: 'ulaw', channels: 1 },
    { name: 'Shorten-compressed (pcm,embedded-shorten-v2.00), mono', coding: 'shorten', channels: 1 },
    { name: 'Shorten-compressed, stereo', coding: 'shorten', channels: 2 },
  ];

  it.each(cases)('$name: sniffed as audio, opened, decoded sample for sample', async ({ coding, channels }) => {
    const samples = channels === 2 ? pcm : pcm.filter((_, i) => i % 2 === 0);
    const file = nistSphere({ sampleRate: RATE, channels, samples, coding });
    expect(file.subarray(0, 8).toString('latin1')).toBe('NIST_1A\n');
    const path = join(dir, `${coding}-${channels}.sph`);
    await writeFile(path, file);
    expect(sniffMediaType(file.subarray(0, 4096))).toEqual({ kind: 'audio', format: 'sph' });
    const { path: input, info } = await opened(path);
    expect(info).toMatchObject({ sampleRate: RATE, channels, formatName: 'nistsphere', hasAudio: true });
    const audio = await decodeAudio(input, { ffmpeg: media.ffmpeg });
    expect(audio.channels).toHaveLength(channels);
    expect(audio.channels[0]!.length).toBe(N);
    let maxErr = 0;
    for (let c = 0; c < channels; c++) {
      for (let i = 0; i < N; i++) maxErr = Math.max(maxErr, Math.abs(audio.channels[c]![i]! - samples[i * channels + c]! / 32768));
    }
    // PCM and Shorten are lossless; mu-law keeps 8 bits (a step of at most 1/64 near full scale, ~0.023 at 12000/32768).
    expect(maxErr).toBeLessThanOrEqual(coding === 'ulaw' ? 0.03 : 0);
  });

  it('a corrupt Shorten stream fails the task as undecodable input (TaskFailure, not retried), not as an internal error', async () => {
    const good = shortenStream(Int16Array.from({ length: 1024 }, (_, i) => (i * 37) % 2000), 1);
    const broken = Buffer.concat([good.subarray(0, 5), Buffer.alloc(64, 0x00)]); // magic and version, then no valid header
    const path = join(dir, 'broken.sph');
    await writeFile(path, nistSphere({ sampleRate: RATE, channels: 1, samples: new Int16Array(0), coding: 'shorten', payload: broken, sampleCount: 1024 }));
    // ffprobe reads the SPHERE header alone and accepts it; the decoder is what gives up, and the task says so.
    const { path: input, info } = await opened(path);
    expect(info.codec).toBe('shorten');
    const counting = decodedFrames(input, { ffmpeg: media.ffmpeg, sampleRate: RATE, maxSeconds: 60 });
    await expect(counting).rejects.toBeInstanceOf(TaskFailure);
    await expect(counting).rejects.toThrow('The input could not be decoded as audio');
  });

  it('a text file named .sph is still refused as not audio', async () => {
    const path = join(dir, 'notes.sph');
    await writeFile(path, 'NIST_1B is not a header\nthese are meeting notes\n');
    expect(sniffMediaType(await readFile(path)).kind).toBe('text');
    await expect(opened(path)).rejects.toThrow(NOT_AUDIO_MESSAGE);
  });
});
