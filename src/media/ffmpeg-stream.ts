import { spawn, type ChildProcess } from 'node:child_process';
import type { AudioData } from './audio.js';
import { abortError, CODEC_ARGS, fileUrl, safeAudioInput, SAFE_ARGS } from './ffmpeg.js';

/**
 * Streaming decode and encode, so long inputs (hours) flow through in blocks and memory stays flat:
 * only one block per stage is held at a time (perf floors: 60 min stereo f32 is 1.26 GB whole,
 * 52-62 MB streamed in 10 s blocks).
 */

function watch(child: ChildProcess, bin: string): { done: Promise<void> } {
  let stderrTail = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderrTail = (stderrTail + d.toString('utf8')).slice(-8192);
  });
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', (err) => reject(new Error(`${bin}: ${err.message}`)));
    child.on('close', (code, sig) => {
      if (code === 0) return resolve();
      const lines = stderrTail.trim().split('\n').slice(-6).join('\n');
      reject(new Error(`ffmpeg failed (${code !== null ? `exit ${code}` : `signal ${sig}`}): ${lines || 'no error output'}`));
    });
  });
  done.catch(() => undefined); // observed by the caller; never an unhandled rejection
  return { done };
}

export interface DecodeStreamOptions {
  ffmpeg: string;
  /** Output rate and channel count are fixed up front (probe first) so blocks need no header. */
  sampleRate: number;
  channels: number;
  blockFrames: number;
  signal?: AbortSignal;
}

/** Yields planar blocks of exactly `blockFrames` frames (the last one shorter). */
export async function* decodeStream(path: string, opts: DecodeStreamOptions): AsyncGenerator<AudioData> {
  const args = [
    ...safeAudioInput(path),
    '-ar', String(opts.sampleRate), '-ac', String(opts.channels),
    '-f', 'f32le', 'pipe:1',
  ];
  const child = spawn(opts.ffmpeg, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const { done } = watch(child, opts.ffmpeg);
  const onAbort = () => child.kill('SIGKILL');
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const frameBytes = 4 * opts.channels;
  const blockBytes = opts.blockFrames * frameBytes;
  let pending: Buffer = Buffer.alloc(0);
  const toBlock = (bytes: Buffer): AudioData => {
    const frames = Math.floor(bytes.length / frameBytes);
    // Copy into an aligned buffer: pipe chunks can start at any byte offset.
    const interleaved = new Float32Array(frames * opts.channels);
    new Uint8Array(interleaved.buffer).set(bytes.subarray(0, frames * frameBytes));
    const channels = Array.from({ length: opts.channels }, () => new Float32Array(frames));
    for (let c = 0; c < opts.channels; c++) {
      const ch = channels[c]!;
      for (let i = 0; i < frames; i++) ch[i] = interleaved[i * opts.channels + c]!;
    }
    return { sampleRate: opts.sampleRate, channels };
  };
  try {
    for await (const chunk of child.stdout!) {
      pending = pending.length ? Buffer.concat([pending, chunk as Buffer]) : (chunk as Buffer);
      while (pending.length >= blockBytes) {
        yield toBlock(pending.subarray(0, blockBytes));
        pending = pending.subarray(blockBytes);
      }
    }
    if (opts.signal?.aborted) throw abortError(opts.signal);
    await done;
    if (pending.length >= frameBytes) yield toBlock(pending);
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

export interface DecodedLength {
  /** Frames decoded (at the requested rate); when `over`, the count where decoding was stopped. */
  frames: number;
  /** True when the input held more than `maxFrames`: decoding stopped there, the rest was never read. */
  over: boolean;
}

/**
 * What a file really holds: decodes the first audio stream at `sampleRate` exactly as decodeStream does
 * and counts the frames, stopping (and killing ffmpeg) once more than `maxFrames` came out. A header's
 * duration is only a claim (an MP3's Xing frame count, a WAV's data size): a 1 KB file can claim ten
 * hours, a long one a few seconds. One byte per frame (8-bit mono) crosses the pipe, so counting costs
 * about what decoding does.
 */
export async function countDecodedFrames(
  path: string,
  opts: { ffmpeg: string; sampleRate: number; maxFrames: number; signal?: AbortSignal },
): Promise<DecodedLength> {
  const args = [
    ...safeAudioInput(path),
    '-ar', String(opts.sampleRate), '-ac', '1',
    '-c:a', 'pcm_u8', '-f', 'u8', 'pipe:1',
  ];
  const child = spawn(opts.ffmpeg, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const { done } = watch(child, opts.ffmpeg);
  const onAbort = () => child.kill('SIGKILL');
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  let frames = 0;
  try {
    for await (const chunk of child.stdout!) {
      frames += (chunk as Buffer).length;
      if (frames > opts.maxFrames) return { frames, over: true };
    }
    if (opts.signal?.aborted) throw abortError(opts.signal);
    await done;
    return { frames, over: false };
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

export interface EncodeStreamOptions {
  ffmpeg: string;
  format: 'mp3' | 'wav' | 'flac';
  sampleRate: number;
  channels: number;
  bitrateKbps?: number;
  /**
   * MP3 only: LAME VBR quality (0 best .. 9) instead of the constant bitrate. Constant-bitrate LAME
   * lowers the level by 0.3-0.5 dB at 128-192 kbps (measured with ebur128), VBR keeps it, which
   * matters where the loudness was set on purpose.
   */
  mp3Vbr?: number;
  /** WAV only: the PCM sample format (default 16-bit), so a 24-bit or float input keeps its depth. */
  pcm?: PcmFormat;
  signal?: AbortSignal;
}

export type PcmFormat = 's16' | 's24' | 'f32';
const PCM_CODECS: Record<PcmFormat, string> = { s16: 'pcm_s16le', s24: 'pcm_s24le', f32: 'pcm_f32le' };

function encoderArgs(o: EncodeStreamOptions): string[] {
  if (o.format === 'mp3' && o.mp3Vbr !== undefined) return ['-c:a', 'libmp3lame', '-q:a', String(o.mp3Vbr), '-f', 'mp3'];
  if (o.format === 'wav' && o.pcm) return ['-c:a', PCM_CODECS[o.pcm], '-f', 'wav'];
  return CODEC_ARGS[o.format](o.bitrateKbps ?? 192);
}

/** An ffmpeg encoder fed block by block; `write` waits when ffmpeg falls behind (backpressure). */
export class StreamEncoder {
  private readonly child: ChildProcess;
  private readonly done: Promise<void>;

  constructor(
    outPath: string,
    private readonly opts: EncodeStreamOptions,
  ) {
    const args = [
      ...SAFE_ARGS,
      '-hide_banner', '-loglevel', 'error', '-y',
      '-f', 'f32le', '-ar', String(opts.sampleRate), '-ac', String(opts.channels), '-i', 'pipe:0',
      '-map_metadata', '-1',
      ...encoderArgs(opts),
      fileUrl(outPath),
    ];
    this.child = spawn(opts.ffmpeg, args, { stdio: ['pipe', 'ignore', 'pipe'] });
    this.done = watch(this.child, opts.ffmpeg).done;
    this.child.stdin!.on('error', () => undefined); // an early exit is reported by `done`
    opts.signal?.addEventListener('abort', () => this.child.kill('SIGKILL'), { once: true });
  }

  async write(block: AudioData): Promise<void> {
    if (block.channels.length !== this.opts.channels) throw new Error(`encoder expects ${this.opts.channels} channels, got ${block.channels.length}`);
    const n = this.opts.channels;
    const frames = block.channels[0]?.length ?? 0;
    const data = new Float32Array(frames * n);
    for (let c = 0; c < n; c++) {
      const ch = block.channels[c]!;
      for (let i = 0; i < frames; i++) data[i * n + c] = ch[i]!;
    }
    const stdin = this.child.stdin!;
    if (!stdin.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength))) {
      await Promise.race([new Promise<void>((r) => stdin.once('drain', r)), this.done]);
    }
  }

  async end(): Promise<void> {
    this.child.stdin!.end();
    await this.done;
    if (this.opts.signal?.aborted) throw abortError(this.opts.signal);
  }

  abort(): void {
    this.child.kill('SIGKILL');
  }
}
