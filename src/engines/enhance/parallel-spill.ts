import { open, rm, type FileHandle } from 'node:fs/promises';
import type { AudioData } from '../../media/audio.js';
import { frameCount } from './stage.js';

/**
 * The chain's output before `normalize`, kept on disk (raw interleaved float32) so the loudness passes read it back
 * instead of running the chain again: normalize needs the chain's loudness before its first sample, and the
 * limiter aim needs a dry run. Those were two or three runs of the whole chain (the denoiser and WPE each time);
 * reading the file back costs a few percent of one. Disk, not memory: 4 bytes per sample and channel (0.7 GB for
 * 3 hours of 16 kHz mono, 4.1 GB at 48 kHz stereo), in the task's scratch folder, removed when the task ends.
 */
export class SpillFile {
  private frames = 0;
  private channels = 0;
  private rate = 0;

  private constructor(readonly path: string, private readonly handle: FileHandle) {}

  static async create(path: string): Promise<SpillFile> {
    return new SpillFile(path, await open(path, 'w+'));
  }

  get length(): number {
    return this.frames;
  }

  async write(block: AudioData): Promise<void> {
    const n = frameCount(block);
    if (n === 0) return;
    const chs = block.channels.length;
    if (this.channels === 0) {
      this.channels = chs;
      this.rate = block.sampleRate;
    } else if (chs !== this.channels || block.sampleRate !== this.rate) {
      throw new Error('spill: every block must have the same rate and channel count');
    }
    const data = new Float32Array(n * chs);
    for (let c = 0; c < chs; c++) {
      const ch = block.channels[c]!;
      for (let i = 0; i < n; i++) data[i * chs + c] = ch[i]!;
    }
    await this.handle.write(new Uint8Array(data.buffer), 0, data.byteLength, this.frames * chs * 4);
    this.frames += n;
  }

  /** Reads everything written, in blocks of `blockFrames` (the file stays; read it as often as needed). */
  async *read(blockFrames: number): AsyncGenerator<AudioData> {
    const chs = this.channels;
    for (let s = 0; s < this.frames; s += blockFrames) {
      const n = Math.min(blockFrames, this.frames - s);
      const data = new Float32Array(n * chs);
      const { bytesRead } = await this.handle.read(new Uint8Array(data.buffer), 0, data.byteLength, s * chs * 4);
      if (bytesRead !== data.byteLength) throw new Error(`spill: short read at frame ${s}`);
      const channels = Array.from({ length: chs }, () => new Float32Array(n));
      for (let c = 0; c < chs; c++) {
        const ch = channels[c]!;
        for (let i = 0; i < n; i++) ch[i] = data[i * chs + c]!;
      }
      yield { sampleRate: this.rate, channels };
    }
  }

  async remove(): Promise<void> {
    await this.handle.close().catch(() => undefined);
    await rm(this.path, { force: true });
  }
}
