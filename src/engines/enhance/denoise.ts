import type { AudioData } from '../../media/audio.js';
import { StreamResampler } from '../../media/dsp/resample.js';
import { hann, nextPow2, StftProcessor } from '../../media/dsp/stft-stream.js';
import { LatencyTrim, SampleFifo, type AudioStage } from './stage.js';

/**
 * Noise removal: RNNoise (WASM, 48 kHz, 480-sample frames) with resampling around it, and a
 * dependency-free spectral-gating fallback.
 */

interface RnnoiseModule {
  _rnnoise_create(model: number): number;
  _rnnoise_destroy(st: number): void;
  _rnnoise_process_frame(st: number, outPtr: number, inPtr: number): number;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAPF32: Float32Array;
}

const RN_RATE = 48000;
const RN_FRAME = 480;
/** RNNoise's overlap-add output lags its input by one frame (measured: see denoise.test.ts). */
const RN_DELAY = 480;

export interface RnnoiseOptions {
  /** 0..1: mix of the denoised signal with the original (1 = fully denoised). */
  strength?: number;
}

export class RnnoiseStage implements AudioStage {
  readonly name = 'rnnoise';
  private readonly states: number[] = [];
  private readonly inPtr: number;
  private readonly outPtr: number;
  private readonly fifo: SampleFifo;
  private readonly trim: LatencyTrim;
  private readonly strength: number;
  /** Speech probability of the last frame per channel (RNNoise's own VAD). */
  lastVad = 0;

  private constructor(
    private readonly m: RnnoiseModule,
    readonly sampleRate: number,
    readonly channelCount: number,
    private readonly up: StreamResampler,
    private readonly down: StreamResampler,
    opts: RnnoiseOptions,
  ) {
    for (let c = 0; c < channelCount; c++) this.states.push(m._rnnoise_create(0));
    this.inPtr = m._malloc(RN_FRAME * 4);
    this.outPtr = m._malloc(RN_FRAME * 4);
    this.fifo = new SampleFifo(channelCount);
    this.trim = new LatencyTrim(Math.round((RN_DELAY * sampleRate) / RN_RATE));
    this.strength = opts.strength ?? 1;
  }

  static async create(sampleRate: number, channelCount: number, opts: RnnoiseOptions = {}): Promise<RnnoiseStage> {
    const spec = '@echogarden/rnnoise-wasm'; // no type declarations shipped
    const mod = (await import(spec)) as { default: () => Promise<RnnoiseModule> };
    const m = await mod.default();
    const up = await StreamResampler.create(channelCount, sampleRate, RN_RATE);
    const down = await StreamResampler.create(channelCount, RN_RATE, sampleRate);
    return new RnnoiseStage(m, sampleRate, channelCount, up, down, opts);
  }

  async push(block: AudioData): Promise<AudioData | null> {
    this.trim.countInput(block.channels[0]?.length ?? 0);
    return this.emit(this.down.process(this.frames(this.up.process(block.channels))));
  }

  async flush(): Promise<AudioData | null> {
    // Zeros push the model's own delay out; the trim cuts the total back to the input length.
    const pad = Array.from({ length: this.channelCount }, () => new Float32Array(RN_DELAY + RN_FRAME));
    const a = this.down.process(this.frames([...this.up.flush().map((c, i) => concat(c, pad[i]!))]));
    const b = this.down.flush();
    const out = a.map((c, i) => concat(c, b[i]!));
    this.destroy();
    return this.emit(out);
  }

  private emit(ch: Float32Array[]): AudioData | null {
    const t = this.trim.apply(ch);
    return t ? { sampleRate: this.sampleRate, channels: t } : null;
  }

  /** 48 kHz samples in, 48 kHz denoised samples out (whole frames only). */
  private frames(x: Float32Array[]): Float32Array[] {
    const m = this.m;
    this.fifo.push(x);
    const nFrames = Math.floor(this.fifo.length / RN_FRAME);
    const out = Array.from({ length: this.channelCount }, () => new Float32Array(nFrames * RN_FRAME));
    const s = this.strength;
    for (let f = 0; f < nFrames; f++) {
      for (let c = 0; c < this.channelCount; c++) {
        const frame = this.fifo.peek(c, RN_FRAME, f * RN_FRAME);
        const heap = m.HEAPF32;
        const ib = this.inPtr >> 2;
        // RNNoise works on 16-bit-scaled floats.
        for (let i = 0; i < RN_FRAME; i++) heap[ib + i] = frame[i]! * 32768;
        this.lastVad = m._rnnoise_process_frame(this.states[c]!, this.outPtr, this.inPtr);
        const h = m.HEAPF32;
        const ob = this.outPtr >> 2;
        const o = out[c]!;
        const base = f * RN_FRAME;
        if (s >= 1) for (let i = 0; i < RN_FRAME; i++) o[base + i] = h[ob + i]! / 32768;
        else for (let i = 0; i < RN_FRAME; i++) o[base + i] = (h[ob + i]! / 32768) * s;
      }
    }
    if (s < 1) {
      if (!this.dryFifo) {
        this.dryFifo = new SampleFifo(this.channelCount);
        this.dryFifo.pushZeros(RN_DELAY);
      }
      this.dryFifo.push(this.fifo.take(nFrames * RN_FRAME));
      this.mixDry(out, nFrames * RN_FRAME);
    } else this.fifo.discard(nFrames * RN_FRAME);
    return out;
  }

  // Dry 48 kHz signal delayed like RNNoise's output, for partial strength.
  private dryFifo: SampleFifo | null = null;
  private mixDry(out: Float32Array[], n: number): void {
    if (!this.dryFifo) return;
    const w = 1 - this.strength;
    for (let c = 0; c < this.channelCount; c++) {
      const o = out[c]!;
      const src = this.dryFifo.peek(c, n);
      for (let i = 0; i < n; i++) o[i] = o[i]! + w * src[i]!;
    }
    this.dryFifo.discard(n);
  }

  destroy(): void {
    for (const st of this.states.splice(0)) this.m._rnnoise_destroy(st);
  }
}

function concat(a: Float32Array, b: Float32Array): Float32Array {
  const o = new Float32Array(a.length + b.length);
  o.set(a);
  o.set(b, a.length);
  return o;
}

export interface SpectralGateOptions {
  /** Maximum attenuation in dB (the floor keeps some noise so speech does not sound gated). */
  reductionDb?: number;
  /** Noise estimate window: the quietest frames within this many seconds define the noise profile. */
  noiseWindowSeconds?: number;
  /** Over-subtraction factor applied to the noise estimate. */
  overSubtract?: number;
  attackMs?: number;
  releaseMs?: number;
}

/**
 * Spectral gating: per-bin noise power from the minimum of smoothed power over a sliding window
 * (minimum statistics: the quietest frames, no look-ahead), Wiener-like gain with a floor, smoothed
 * over time with fast attack / slow release and across neighbouring bins to avoid musical noise.
 */
export class SpectralGateStage implements AudioStage {
  readonly name = 'spectral-gate';
  private readonly stfts: StftProcessor[] = [];
  private readonly trim: LatencyTrim;

  constructor(readonly sampleRate: number, readonly channelCount: number, opts: SpectralGateOptions = {}) {
    const size = nextPow2(Math.round(0.032 * sampleRate));
    const hop = size / 4;
    const win = hann(size);
    const bins = size / 2 + 1;
    const frameRate = sampleRate / hop;
    const floor = 10 ** (-(opts.reductionDb ?? 18) / 20);
    const over = opts.overSubtract ?? 1.5;
    const subWins = 8;
    const subLen = Math.max(1, Math.round(((opts.noiseWindowSeconds ?? 2) * frameRate) / subWins));
    const attack = Math.exp(-1 / (((opts.attackMs ?? 5) / 1000) * frameRate));
    const release = Math.exp(-1 / (((opts.releaseMs ?? 60) / 1000) * frameRate));
    const psdAlpha = 0.7;
    for (let c = 0; c < channelCount; c++) {
      const smooth = new Float64Array(bins);
      const subMin = Array.from({ length: subWins }, () => new Float64Array(bins).fill(Infinity));
      const curMin = new Float64Array(bins).fill(Infinity);
      const noise = new Float64Array(bins);
      const gain = new Float64Array(bins).fill(1);
      const raw = new Float64Array(bins);
      let frameNo = 0;
      let sub = 0;
      this.stfts.push(new StftProcessor({ size, hop, analysis: win, synthesis: win }, (re, im) => {
        for (let k = 0; k < bins; k++) {
          const p = re[k]! * re[k]! + im[k]! * im[k]!;
          smooth[k] = frameNo === 0 ? p : psdAlpha * smooth[k]! + (1 - psdAlpha) * p;
          if (smooth[k]! < curMin[k]!) curMin[k] = smooth[k]!;
        }
        if (++frameNo % subLen === 0) {
          subMin[sub % subWins]!.set(curMin);
          sub++;
          curMin.fill(Infinity);
        }
        // Noise = min over the finished sub-windows and the current one; 1.5 undoes the minimum's bias.
        for (let k = 0; k < bins; k++) {
          let m = curMin[k]!;
          for (let s = 0; s < Math.min(sub, subWins); s++) if (subMin[s]![k]! < m) m = subMin[s]![k]!;
          noise[k] = 1.5 * m;
          const p = re[k]! * re[k]! + im[k]! * im[k]! + 1e-20;
          const g = Math.max(floor, Math.sqrt(Math.max(0, 1 - (over * noise[k]!) / p)));
          raw[k] = g;
        }
        for (let k = 0; k < bins; k++) {
          // Three-bin smoothing across frequency, then attack/release over time.
          const g = (raw[Math.max(0, k - 1)]! + 2 * raw[k]! + raw[Math.min(bins - 1, k + 1)]!) / 4;
          const a = g > gain[k]! ? attack : release;
          gain[k] = a * gain[k]! + (1 - a) * g;
          re[k] = re[k]! * gain[k]!;
          im[k] = im[k]! * gain[k]!;
        }
      }));
    }
    this.trim = new LatencyTrim(this.stfts[0]!.latency);
  }

  async push(block: AudioData): Promise<AudioData | null> {
    this.trim.countInput(block.channels[0]?.length ?? 0);
    const t = this.trim.apply(block.channels.map((x, c) => this.stfts[c]!.process(x)));
    return t ? { sampleRate: this.sampleRate, channels: t } : null;
  }

  async flush(): Promise<AudioData | null> {
    const pad = new Float32Array(this.stfts[0]!.latency + this.stfts[0]!.fft.size);
    const t = this.trim.apply(this.stfts.map((s) => s.process(pad)));
    return t ? { sampleRate: this.sampleRate, channels: t } : null;
  }
}
