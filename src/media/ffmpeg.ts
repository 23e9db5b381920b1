import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import type { AudioData } from './audio.js';
import { decodeWav } from './wav.js';

export interface MediaTools {
  ffmpeg: string;
  ffprobe: string;
  source: 'system' | 'npm';
}

export interface MediaInfo {
  durationSeconds: number;
  sampleRate: number;
  channels: number;
  codec: string;
  formatName: string;
  hasAudio: boolean;
  hasVideo: boolean;
  /** Which audio stream the fields above describe (0: the first): the one marked default, else the first. */
  audioIndex: number;
  /** ffprobe's name for the stream's channel layout ('stereo', '5.1(side)'); '' when the file gives none. */
  channelLayout: string;
}

/**
 * Every call gets these: no interactive stdin, and only the file and pipe protocols, so a crafted
 * input (playlist, concat list, subtitle with URLs) can neither reach the network nor other protocols.
 */
export const SAFE_ARGS = ['-nostdin', '-protocol_whitelist', 'file,pipe'];

/**
 * Inputs from users may only be opened by ordinary media demuxers: playlist-like ones (hls, concat,
 * image2 patterns, tty, ffmetadata ...) would read other local files through the allowed file protocol.
 */
export const INPUT_FORMATS = [
  'wav', 'w64', 'mp3', 'flac', 'ogg', 'matroska', 'webm', 'mov', 'mp4', 'm4a', 'aac', 'aiff', 'caf', 'asf',
  'amr', 'au', 'avi', 'flv', 'mpeg', 'mpegts', 'ac3', 'eac3', 'dts', 'truehd', 'wv', 'ape', 'tta', 'opus', 'rm',
  // Speech corpora and studio formats users bring (issue 28): NIST SPHERE (.sph: TIMIT, Switchboard, WSJ), Creative
  // Voice, Musepack, SoX, IRCAM/BICSF, DSD, raw Shorten, MLP and DTS-HD. All single-file audio demuxers.
  'nistsphere', 'voc', 'mpc', 'mpc8', 'sox', 'ircam', 'dsf', 'shn', 'mlp', 'dtshd',
].join(',');

function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here: keep looking
    }
  }
  return null;
}

/** System binaries when asked for and both present (usually newer, with more codecs); otherwise the npm builds. */
export function resolveMediaTools(opts: { preferSystem: boolean }): MediaTools {
  if (opts.preferSystem) {
    const ffmpeg = findOnPath('ffmpeg');
    const ffprobe = findOnPath('ffprobe');
    if (ffmpeg && ffprobe) return { ffmpeg, ffprobe, source: 'system' };
  }
  const require = createRequire(import.meta.url);
  const ffmpeg = (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
  const ffprobe = (require('@ffprobe-installer/ffprobe') as { path: string }).path;
  return { ffmpeg, ffprobe, source: 'npm' };
}

/** Input paths go through the file: protocol so a name like "concat:a|b" or "-x" is never read as anything else. */
export function fileUrl(path: string): string {
  return `file:${isAbsolute(path) ? path : resolve(path)}`;
}

/**
 * The input side of every decode of user media: no stdin, file/pipe protocols only, the whitelisted demuxers,
 * and the first audio stream alone.
 */
export function safeAudioInput(path: string): string[] {
  // -max_error_rate 1: frames that fail to decode are skipped, never the whole file. By default ffmpeg exits 69 once
  // two thirds of the frames failed: half an MP3 followed by 3 MB of junk was refused though its 3.4 s decode.
  return [...SAFE_ARGS, '-hide_banner', '-loglevel', 'error', '-max_error_rate', '1', '-format_whitelist', INPUT_FORMATS, '-i', fileUrl(path), '-map', '0:a:0', '-vn', '-sn', '-dn'];
}

interface RunResult {
  stdout: Buffer;
}

/** Runs a tool, feeding `input` to stdin; rejects with the last stderr lines on a non-zero exit, kills on abort. */
function runTool(bin: string, args: string[], opts: { input?: Buffer; signal?: AbortSignal; collectStdout?: boolean }): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    if (opts.signal?.aborted) {
      reject(abortError(opts.signal));
      return;
    }
    const child = spawn(bin, args, { stdio: [opts.input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let stderrTail = '';
    let settled = false;
    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolvePromise({ stdout: Buffer.concat(out) });
    };
    const onAbort = () => {
      child.kill('SIGKILL');
      finish(abortError(opts.signal!));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout?.on('data', (d: Buffer) => {
      if (opts.collectStdout) out.push(d);
    });
    child.stderr?.on('data', (d: Buffer) => {
      // Only the tail matters for the error message; keep memory bounded on chatty runs.
      stderrTail = (stderrTail + d.toString('utf8')).slice(-8192);
    });
    child.on('error', (err) => finish(new Error(`${bin}: ${err.message}`)));
    child.on('close', (code, sig) => {
      if (code === 0) return finish(null);
      const lines = stderrTail.trim().split('\n').slice(-6).join('\n');
      finish(new Error(`${toolName(bin)} failed (${code !== null ? `exit ${code}` : `signal ${sig}`}): ${lines || 'no error output'}`));
    });
    if (opts.input && child.stdin) {
      // EPIPE when ffmpeg exits early is reported through the exit code instead.
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.input);
    }
  });
}

function toolName(bin: string): string {
  return bin.split(/[\\/]/).pop() ?? bin;
}

export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const err = new Error('aborted');
  err.name = 'AbortError';
  return err;
}

/** Interleaves planar float32 into little-endian f32 frames for ffmpeg's raw input. */
function interleave(audio: AudioData): Buffer {
  const channelCount = audio.channels.length;
  const frames = audio.channels[0]?.length ?? 0;
  const data = new Float32Array(frames * channelCount);
  for (let c = 0; c < channelCount; c++) {
    const ch = audio.channels[c]!;
    for (let i = 0; i < frames; i++) data[i * channelCount + c] = ch[i]!;
  }
  // Float32Array is host-endian; every platform Node supports for us is little-endian.
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

export const CODEC_ARGS: Record<'mp3' | 'wav' | 'flac', (kbps: number) => string[]> = {
  mp3: (kbps) => ['-c:a', 'libmp3lame', '-b:a', `${kbps}k`, '-f', 'mp3'],
  wav: () => ['-c:a', 'pcm_s16le', '-f', 'wav'],
  flac: () => ['-c:a', 'flac', '-f', 'flac'],
};

export async function encodeAudio(
  audio: AudioData,
  outPath: string,
  opts: { ffmpeg: string; format: 'mp3' | 'wav' | 'flac'; bitrateKbps?: number; signal?: AbortSignal },
): Promise<void> {
  const channelCount = audio.channels.length;
  if (channelCount === 0) throw new Error('encodeAudio: no channels');
  const args = [
    ...SAFE_ARGS,
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'f32le', '-ar', String(audio.sampleRate), '-ac', String(channelCount), '-i', 'pipe:0',
    '-map_metadata', '-1',
    ...CODEC_ARGS[opts.format](opts.bitrateKbps ?? 128),
    fileUrl(outPath),
  ];
  await runTool(opts.ffmpeg, args, { input: interleave(audio), signal: opts.signal });
}

/**
 * Decodes any supported media file to float32; ffmpeg writes a float WAV to stdout, whose header tells
 * the rate and channel count when the caller leaves them to the source.
 */
export async function decodeAudio(
  path: string,
  opts: { ffmpeg: string; sampleRate?: number; channels?: number; signal?: AbortSignal },
): Promise<AudioData> {
  const args = [
    ...safeAudioInput(path),
    ...(opts.sampleRate ? ['-ar', String(opts.sampleRate)] : []),
    ...(opts.channels ? ['-ac', String(opts.channels)] : []),
    '-c:a', 'pcm_f32le', '-f', 'wav', 'pipe:1',
  ];
  const { stdout } = await runTool(opts.ffmpeg, args, { signal: opts.signal, collectStdout: true });
  return decodeWav(stdout);
}

interface ProbeJson {
  format?: { duration?: string; format_name?: string };
  streams?: Array<{
    codec_type?: string;
    codec_name?: string;
    sample_rate?: string;
    channels?: number;
    duration?: string;
    channel_layout?: string;
    disposition?: { default?: number; attached_pic?: number };
  }>;
}

export async function probeMedia(path: string, opts: { ffprobe: string; signal?: AbortSignal }): Promise<MediaInfo> {
  // ffprobe has no -nostdin (it takes it as an unknown option and silently prints nothing); its stdin is
  // closed by runTool instead, which is what -nostdin guarantees for ffmpeg.
  const args = [
    ...SAFE_ARGS.filter((a) => a !== '-nostdin'),
    '-hide_banner', '-v', 'error',
    '-format_whitelist', INPUT_FORMATS,
    '-print_format', 'json', '-show_format', '-show_streams',
    fileUrl(path),
  ];
  const { stdout } = await runTool(opts.ffprobe, args, { signal: opts.signal, collectStdout: true });
  const info = JSON.parse(stdout.toString('utf8')) as ProbeJson;
  const streams = info.streams ?? [];
  const audios = streams.filter((s) => s.codec_type === 'audio');
  // A player plays the track marked default: a film's first track may be a silent or commentary one (found from outside:
  // a silent first track and the music second, marked default, gave silent stems, charged).
  const marked = audios.length > 1 ? audios.findIndex((s) => s.disposition?.default === 1) : -1;
  const audioIndex = Math.max(0, marked);
  const audio = audios[audioIndex];
  // Cover art (MP3, M4A, FLAC) is a "video" stream of one picture, flagged as attached: it does not make the file a video.
  const hasVideo = streams.some((s) => s.codec_type === 'video' && s.disposition?.attached_pic !== 1);
  const duration = Number(info.format?.duration ?? audio?.duration ?? 0);
  return {
    durationSeconds: Number.isFinite(duration) ? duration : 0,
    sampleRate: Number(audio?.sample_rate ?? 0),
    channels: audio?.channels ?? 0,
    codec: audio?.codec_name ?? '',
    formatName: info.format?.format_name ?? '',
    hasAudio: audio !== undefined,
    hasVideo,
    audioIndex,
    channelLayout: audio?.channel_layout ?? '',
  };
}

/**
 * Folds audio whose channels have no layout (a WAV of 9, 24 or 64 channels without a channel mask) to stereo, even
 * channels left and odd ones right, each side their average: ffmpeg cannot downmix channels it cannot place
 * ("Rematrix is needed ... not enough information"), so every later step failed with "could not be decoded".
 */
export async function foldUnplacedChannels(path: string, outPath: string, opts: { ffmpeg: string; channels: number; signal?: AbortSignal }): Promise<void> {
  const side = (first: number) => {
    const picks = Array.from({ length: opts.channels }, (_, c) => c).filter((c) => c % 2 === first);
    return picks.map((c) => `${(1 / picks.length).toFixed(6)}*c${c}`).join('+');
  };
  await runTool(opts.ffmpeg, [
    ...safeAudioInput(path), '-af', `pan=stereo|c0=${side(0)}|c1=${side(1)}`, '-c:a', 'flac', '-f', 'flac', '-y', fileUrl(outPath),
  ], { signal: opts.signal });
}

/**
 * Copies (no re-encoding) one audio stream, and any video, into a Matroska file: the input every later step reads
 * as its first audio stream, and one this ffprobe can read when it cannot read the original (the bundled ffprobe
 * crashes on every MPEG-TS file, which ffmpeg reads fine).
 */
export async function remuxAudio(path: string, outPath: string, opts: { ffmpeg: string; audioIndex: number; signal?: AbortSignal }): Promise<void> {
  await runTool(opts.ffmpeg, [
    ...SAFE_ARGS, '-hide_banner', '-loglevel', 'error', '-y', '-format_whitelist', INPUT_FORMATS, '-i', fileUrl(path),
    '-map', `0:a:${opts.audioIndex}`, '-map', '0:V?', '-c', 'copy', '-f', 'matroska', fileUrl(outPath),
  ], { signal: opts.signal });
}
