import * as ort from 'onnxruntime-node';
import type { AudioData } from '../../media/audio.js';
import { verifiedModelSync, type ModelSource } from '../../models/verified.js';
import { StreamResampler } from '../../media/dsp/resample.js';
import type { AudioStage } from './stage.js';
import { pitch, PitchWork } from './speech-features.js';

/**
 * Voice activity per frame: WebRTC VAD (libfvad WASM, always available) or Silero VAD (ONNX, when the
 * model file is present). Both run on 16 kHz mono; `VadTracker` adapts any input to that.
 */

export interface FrameVad {
  /** Frame length in 16 kHz samples. */
  readonly frameSamples: number;
  /** Speech probability (0/1 for WebRTC) of one frame of 16 kHz mono samples. */
  frame(x: Float32Array): Promise<number>;
  close(): Promise<void>;
}

interface FvadModule {
  _fvad_new(): number;
  _fvad_free(inst: number): void;
  _fvad_set_mode(inst: number, mode: number): number;
  _fvad_set_sample_rate(inst: number, rate: number): number;
  _fvad_process(inst: number, ptr: number, len: number): number;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAP16: Int16Array;
}

export class WebRtcVad implements FrameVad {
  readonly frameSamples = 480; // 30 ms: the longest frame libfvad takes, the most reliable
  private constructor(private readonly m: FvadModule, private readonly inst: number, private readonly ptr: number) {}

  /** mode 0 (least aggressive) .. 3 (most aggressive at calling frames non-speech). */
  static async create(mode = 2): Promise<WebRtcVad> {
    const spec = '@echogarden/fvad-wasm'; // no type declarations shipped
    const m = await ((await import(spec)) as { default: () => Promise<FvadModule> }).default();
    const inst = m._fvad_new();
    if (!inst || m._fvad_set_mode(inst, mode) < 0 || m._fvad_set_sample_rate(inst, 16000) < 0) throw new Error('fvad init failed');
    return new WebRtcVad(m, inst, m._malloc(480 * 2));
  }

  async frame(x: Float32Array): Promise<number> {
    const heap = this.m.HEAP16;
    const b = this.ptr >> 1;
    for (let i = 0; i < 480; i++) heap[b + i] = Math.max(-32768, Math.min(32767, Math.round(x[i]! * 32767)));
    return this.m._fvad_process(this.inst, this.ptr, 480) === 1 ? 1 : 0;
  }

  async close(): Promise<void> {
    this.m._fvad_free(this.inst);
    this.m._free(this.ptr);
  }
}

/** The verified silero_vad model file (size and checksum, src/models/verified.ts), or null. */
export function sileroModelPath(models: string | ModelSource): string | null {
  const m = verifiedModelSync(models, 'silero_vad');
  return m.ok ? (m.files.get('silero_vad.onnx') ?? null) : null;
}

/** Silero VAD v5: 512-sample frames with 64 samples of context from the previous frame, recurrent state. */
export class SileroVad implements FrameVad {
  readonly frameSamples = 512;
  private state: ort.Tensor = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
  private readonly input = new Float32Array(576);
  private readonly sr = new ort.Tensor('int64', BigInt64Array.from([16000n]), []);

  private constructor(private readonly session: ort.InferenceSession) {}

  static async create(modelPath: string, providers: readonly string[] = ['cpu']): Promise<SileroVad> {
    try {
      return new SileroVad(await ort.InferenceSession.create(modelPath, { executionProviders: [...providers], intraOpNumThreads: 1, interOpNumThreads: 1 }));
    } catch (err) {
      throw new Error(`${modelPath} could not be loaded (${providers.join(', ')}): ${(err as Error).message.split('\n')[0]}`);
    }
  }

  async frame(x: Float32Array): Promise<number> {
    const inp = this.input;
    inp.copyWithin(0, 512);
    inp.set(x.subarray(0, 512), 64);
    const r = await this.session.run({ input: new ort.Tensor('float32', inp.slice(), [1, 576]), state: this.state, sr: this.sr });
    this.state = r.stateN!;
    return (r.output!.data as Float32Array)[0]!;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/** Periodicity (McLeod NSDF peak, speech-features.ts pitch) from which a frame of the denoised copy counts as voiced. */
export const VOICED_CLARITY = 0.75;
/** A voiced frame marks this much around it as speech (the consonants and word edges beside the vowel). */
export const VOICING_HANGOVER_S = 0.3;

/**
 * Voiced frames (a pitch between 70 and 400 Hz with a clear period), for the denoised copy. Under 0-5 dB of noise
 * WebRTC VAD hears speech in every frame of the input and of RNNoise's output (its residual bursts reach the speech's
 * level), and RNNoise's own VAD says speech in 80% of the pauses; the residual is not periodic, though: in the pauses of
 * the corpus long-silence file under bike noise at 0-10 dB, 1% of the denoised frames reach a clarity of 0.58-0.68,
 * while voiced speech frames reach 0.8-0.9 (bench/results/enhance-autoid.md). Dilated by VOICING_HANGOVER_S (VadTracker),
 * voicing says where speech is.
 */
export class VoicingVad implements FrameVad {
  readonly frameSamples = 480;
  private readonly work = new PitchWork(480, 16000);

  async frame(x: Float32Array): Promise<number> {
    const { f0, clarity } = pitch(x.subarray(0, 480), 16000, this.work);
    return f0 > 0 && clarity >= VOICED_CLARITY ? 1 : 0;
  }

  async close(): Promise<void> {}
}

/** Speech only where every one of several VADs (same frame length) hears it. */
export class AllVad implements FrameVad {
  readonly frameSamples: number;
  constructor(private readonly vads: readonly FrameVad[]) {
    this.frameSamples = vads[0]!.frameSamples;
    if (vads.some((v) => v.frameSamples !== this.frameSamples)) throw new Error('all VADs need the same frame length');
  }

  async frame(x: Float32Array): Promise<number> {
    let p = 1;
    for (const v of this.vads) p = Math.min(p, await v.frame(x));
    return p;
  }

  async close(): Promise<void> {
    for (const v of this.vads) await v.close();
  }
}

/** Widens speech decisions by `h` frames on each side (a look-ahead of h frames): max over [k-h, k+h]. */
export class Dilator {
  private readonly hist: number[] = [];
  private next = 0;
  private seen = 0;
  constructor(private readonly h: number) {}

  push(d: number[]): number[] {
    const out: number[] = [];
    for (const v of d) {
      this.hist.push(v);
      this.seen++;
      while (this.next + this.h < this.seen) out.push(this.emit());
    }
    return out;
  }

  flush(): number[] {
    const out: number[] = [];
    while (this.next < this.seen) out.push(this.emit());
    return out;
  }

  private emit(): number {
    // hist holds frames [seen - hist.length, seen); decision `next` looks at [next - h, next + h].
    const base = this.seen - this.hist.length;
    let m = 0;
    for (let k = Math.max(base, this.next - this.h); k <= Math.min(this.seen - 1, this.next + this.h); k++) m = Math.max(m, this.hist[k - base]!);
    this.next++;
    while (this.hist.length && this.seen - this.hist.length < this.next - this.h) this.hist.shift();
    return m;
  }
}

/** Cuts a 16 kHz stream into a FrameVad's frames and keeps the remainder for the next call. */
class FrameCutter {
  private pending = new Float32Array(0);
  constructor(readonly vad: FrameVad) {}

  async decide(x16: Float32Array): Promise<number[]> {
    const all = new Float32Array(this.pending.length + x16.length);
    all.set(this.pending);
    all.set(x16, this.pending.length);
    const F = this.vad.frameSamples;
    const out: number[] = [];
    let o = 0;
    for (; o + F <= all.length; o += F) out.push(await this.vad.frame(all.subarray(o, o + F)));
    this.pending = all.slice(o);
    return out;
  }
}

/** A second opinion: the same kind of VAD listening to a cleaned (sample-aligned) copy. */
export interface CleanedVad {
  stage: AudioStage;
  vad: FrameVad;
  /** Widen the copy's speech decisions by this many frames each side (VOICING_HANGOVER_S for VoicingVad). */
  dilateFrames?: number;
}

/**
 * Streams audio at any rate and channel count into a frame VAD: downmix, resample to 16 kHz, cut
 * frames. Each decision covers `frameSamples` at 16 kHz; `frameEnd(k)` maps it back to input frames.
 */
export class VadTracker {
  private readonly raw: FrameCutter;
  private readonly cleaned: FrameCutter | null;
  private rawQ: number[] = [];
  private cleanQ: number[] = [];
  private readonly dilate: Dilator | null;

  private constructor(readonly vad: FrameVad, readonly sampleRate: number, private readonly rs: StreamResampler, private readonly second: CleanedVad | null) {
    this.raw = new FrameCutter(vad);
    this.cleaned = second ? new FrameCutter(second.vad) : null;
    this.dilate = second?.dilateFrames ? new Dilator(second.dilateFrames) : null;
  }

  /**
   * `second`: a frame is speech only when the VAD says so on the input AND on a denoised copy. WebRTC
   * VAD calls every frame of 5 dB SNR speech "speech", pauses included, and on the cleaned copy finds
   * pauses there; at 10 dB it finds more on the input (bench/results/enhance.md long_silences), so
   * either one may reveal a pause. Only the decisions see the copy; the audio kept is untouched.
   * Both VADs must have the same frame length.
   */
  static async create(vad: FrameVad, sampleRate: number, second: CleanedVad | null = null): Promise<VadTracker> {
    if (second && second.vad.frameSamples !== vad.frameSamples) throw new Error('both VADs need the same frame length');
    return new VadTracker(vad, sampleRate, await StreamResampler.create(1, sampleRate, 16000), second);
  }

  /** End (exclusive, in input frames) of decision number k (0-based). */
  frameEnd(k: number): number {
    return Math.round(((k + 1) * this.vad.frameSamples * this.sampleRate) / 16000);
  }

  async push(block: AudioData): Promise<number[]> {
    const n = block.channels[0]?.length ?? 0;
    const mono = new Float32Array(n);
    const g = 1 / block.channels.length;
    for (const ch of block.channels) for (let i = 0; i < n; i++) mono[i] = mono[i]! + ch[i]! * g;
    return this.step(this.rs.process([mono])[0]!, false);
  }

  async flush(): Promise<number[]> {
    return this.step(this.rs.flush()[0]!, true);
  }

  private async step(x16: Float32Array, last: boolean): Promise<number[]> {
    const rawD = await this.raw.decide(x16);
    if (!this.second || !this.cleaned) return rawD;
    this.rawQ.push(...rawD);
    let y = x16.length ? ((await this.second.stage.push({ sampleRate: 16000, channels: [x16] }))?.channels[0] ?? new Float32Array(0)) : new Float32Array(0);
    const widen = (d: number[]) => (this.dilate ? this.dilate.push(d) : d);
    this.cleanQ.push(...widen(await this.cleaned.decide(y)));
    if (last) {
      y = (await this.second.stage.flush())?.channels[0] ?? new Float32Array(0);
      this.cleanQ.push(...widen(await this.cleaned.decide(y)));
      if (this.dilate) this.cleanQ.push(...this.dilate.flush());
    }
    // The cleaned copy lags (the denoiser's latency); pair decisions frame by frame as they arrive.
    const n = Math.min(this.rawQ.length, this.cleanQ.length);
    const out: number[] = [];
    for (let k = 0; k < n; k++) out.push(Math.min(this.rawQ[k]!, this.cleanQ[k]!));
    this.rawQ = this.rawQ.slice(n);
    this.cleanQ = this.cleanQ.slice(n);
    if (last) {
      out.push(...this.rawQ);
      this.rawQ = [];
    }
    return out;
  }
}
