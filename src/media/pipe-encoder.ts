import { spawn, type ChildProcess } from 'node:child_process';
import { abortError, SAFE_ARGS } from './ffmpeg.js';

/** Formats an encoder can write to a pipe as it goes (no seeking back to patch a header). */
export type PipeFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';

/**
 * Containers that need no seek: Ogg for Opus, ADTS for AAC. WAV on a pipe gets ffmpeg's "unknown
 * length" header, which decoders read to the end of the stream. pcm is headerless s16le.
 */
const PIPE_CODEC_ARGS: Record<PipeFormat, string[]> = {
  mp3: ['-c:a', 'libmp3lame', '-b:a', '128k', '-f', 'mp3'],
  opus: ['-c:a', 'libopus', '-b:a', '64k', '-f', 'ogg'],
  aac: ['-c:a', 'aac', '-b:a', '128k', '-f', 'adts'],
  flac: ['-c:a', 'flac', '-f', 'flac'],
  wav: ['-c:a', 'pcm_s16le', '-f', 'wav'],
  pcm: ['-c:a', 'pcm_s16le', '-f', 's16le'],
};

/**
 * An ffmpeg that takes mono float32 on stdin and gives encoded bytes on stdout while it runs, so a
 * caller can forward audio before the whole of it exists. `-flush_packets 1` makes ffmpeg write each
 * packet as soon as it is encoded instead of filling its output buffer first.
 */
export class PipeEncoder {
  private readonly child: ChildProcess;
  readonly done: Promise<void>;

  constructor(opts: { ffmpeg: string; format: PipeFormat; inputRate: number; outputRate: number; signal?: AbortSignal }) {
    const args = [
      ...SAFE_ARGS,
      '-hide_banner', '-loglevel', 'error',
      '-f', 'f32le', '-ar', String(opts.inputRate), '-ac', '1', '-i', 'pipe:0',
      '-map_metadata', '-1', '-ar', String(opts.outputRate), '-ac', '1',
      '-flush_packets', '1',
      ...PIPE_CODEC_ARGS[opts.format],
      'pipe:1',
    ];
    this.child = spawn(opts.ffmpeg, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderrTail = '';
    this.child.stderr!.on('data', (d: Buffer) => {
      stderrTail = (stderrTail + d.toString('utf8')).slice(-4096);
    });
    this.child.stdin!.on('error', () => undefined); // an early exit is reported by `done`
    this.done = new Promise<void>((resolve, reject) => {
      this.child.on('error', (err) => reject(new Error(`${opts.ffmpeg}: ${err.message}`)));
      this.child.on('close', (code, sig) => {
        if (opts.signal?.aborted) return reject(abortError(opts.signal));
        if (code === 0) return resolve();
        reject(new Error(`ffmpeg failed (${code !== null ? `exit ${code}` : `signal ${sig}`}): ${stderrTail.trim().split('\n').slice(-4).join('\n')}`));
      });
    });
    this.done.catch(() => undefined); // observed by the caller
    opts.signal?.addEventListener('abort', () => this.kill(), { once: true });
  }

  /** Encoded bytes as ffmpeg writes them. */
  get output(): AsyncIterable<Buffer> {
    return this.child.stdout! as AsyncIterable<Buffer>;
  }

  /** Feeds samples; waits while ffmpeg is behind (backpressure) or until it has exited. */
  async write(samples: Float32Array): Promise<void> {
    const stdin = this.child.stdin!;
    if (stdin.destroyed) return;
    // Float32Array is host-endian; every platform Node supports for us is little-endian.
    if (!stdin.write(Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength))) {
      await Promise.race([new Promise<void>((r) => stdin.once('drain', r)), this.done.catch(() => undefined)]);
    }
  }

  /** No more input: ffmpeg flushes what it holds and exits. */
  end(): void {
    this.child.stdin!.end();
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}
