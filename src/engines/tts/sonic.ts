/**
 * Pitch-preserving time stretch with Sonic (WASM): the speed fallback for engines without a native
 * rate, and for rates beyond an engine's native range. The WASM module loads once per instance.
 */

interface SonicModule {
  HEAPF32: Float32Array;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  _sonicCreateStream(sampleRate: number, channels: number): number;
  _sonicDestroyStream(stream: number): void;
  _sonicSetSpeed(stream: number, speed: number): void;
  _sonicSetQuality(stream: number, quality: number): void;
  _sonicWriteFloatToStream(stream: number, ptr: number, frames: number): number;
  _sonicFlushStream(stream: number): number;
  _sonicSamplesAvailable(stream: number): number;
  _sonicReadFloatFromStream(stream: number, ptr: number, maxFrames: number): number;
}

const BLOCK = 8192;

export class SonicStretcher {
  private module: Promise<SonicModule> | null = null;

  private load(): Promise<SonicModule> {
    if (!this.module) {
      this.module = import('@echogarden/sonic-wasm').then(async (m: { default: () => Promise<unknown> }) => (await m.default()) as SonicModule);
      // A failed load must not poison the instance forever.
      this.module.catch(() => {
        this.module = null;
      });
    }
    return this.module;
  }

  /** Returns mono samples `speed` times faster (2 = half the duration), pitch unchanged. */
  async stretch(samples: Float32Array, sampleRate: number, speed: number): Promise<Float32Array> {
    if (Math.abs(speed - 1) < 1e-3 || samples.length === 0) return samples;
    const m = await this.load();
    const stream = m._sonicCreateStream(sampleRate, 1);
    const ptr = m._malloc(BLOCK * 4);
    const parts: Float32Array[] = [];
    let total = 0;
    const drain = () => {
      for (;;) {
        const n = m._sonicReadFloatFromStream(stream, ptr, BLOCK);
        if (n <= 0) break;
        // HEAPF32 is re-read every time: the view is replaced when WASM memory grows.
        parts.push(m.HEAPF32.slice(ptr / 4, ptr / 4 + n));
        total += n;
      }
    };
    try {
      m._sonicSetSpeed(stream, speed);
      m._sonicSetQuality(stream, 1); // higher-quality pitch period search: worth it for speech
      for (let i = 0; i < samples.length; i += BLOCK) {
        const block = samples.subarray(i, Math.min(samples.length, i + BLOCK));
        m.HEAPF32.set(block, ptr / 4);
        m._sonicWriteFloatToStream(stream, ptr, block.length);
        drain();
      }
      m._sonicFlushStream(stream);
      drain();
    } finally {
      m._free(ptr);
      m._sonicDestroyStream(stream);
    }
    const out = new Float32Array(total);
    let offset = 0;
    for (const p of parts) {
      out.set(p, offset);
      offset += p.length;
    }
    return out;
  }
}
