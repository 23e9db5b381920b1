import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { AudioData } from '../../media/audio.js';
import { verifiedModelSync, type ModelSource } from '../../models/verified.js';
import { RealFFT, sqrtHann, StftProcessor } from '../../media/dsp/stft-stream.js';
import { StreamResampler } from '../../media/dsp/resample.js';
import { LatencyTrim, type AudioStage } from './stage.js';

/**
 * Neural denoisers run frame by frame through onnxruntime-node (16 kHz models): DTLN (two stages)
 * and GTCRN (STFT-domain with caches). One intra-op thread: these per-frame models get slower with
 * more (perf floors: 2 threads is 2x slower), and several jobs share the cores.
 */

const MODEL_RATE = 16000;

function sessionOptions(providers: readonly string[]): ort.InferenceSession.SessionOptions {
  return { executionProviders: [...providers], intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' };
}

/** Opens one model file; the error names the file, so a task note says which one would not load. */
export async function openFrameModel(path: string, providers: readonly string[] = ['cpu']): Promise<ort.InferenceSession> {
  try {
    return await ort.InferenceSession.create(path, sessionOptions(providers));
  } catch (err) {
    throw new Error(`${path} could not be loaded (${providers.join(', ')}): ${(err as Error).message.split('\n')[0]}`);
  }
}

/** One channel of a 16 kHz frame model: takes any number of samples, returns what is complete. */
interface ChannelModel {
  process(x: Float32Array): Promise<Float32Array>;
}

export type OnnxDenoiser = 'dtln' | 'gtcrn';

export function onnxDenoiserFiles(modelsDir: string, kind: OnnxDenoiser): string[] {
  return kind === 'dtln' ? [join(modelsDir, 'dtln/model_1.onnx'), join(modelsDir, 'dtln/model_2.onnx')] : [join(modelsDir, 'gtcrn/gtcrn.onnx')];
}

/** The catalog model (dtln, gtcrn) verified by size and checksum, never merely present. */
export function onnxDenoiserAvailable(models: string | ModelSource, kind: OnnxDenoiser): boolean {
  return verifiedModelSync(models, kind).ok;
}

/** DTLN: 512-sample frames every 128; stage 1 masks the magnitude, stage 2 refines the time frame. */
class DtlnChannel implements ChannelModel {
  static readonly latency = 384;
  private readonly fft = new RealFFT(512);
  private readonly inBuf = new Float32Array(512);
  private readonly outBuf = new Float32Array(512);
  private pending = new Float32Array(0);
  private s1: ort.Tensor = new ort.Tensor('float32', new Float32Array(512), [1, 2, 128, 2]);
  private s2: ort.Tensor = new ort.Tensor('float32', new Float32Array(512), [1, 2, 128, 2]);
  private readonly re = new Float64Array(257);
  private readonly im = new Float64Array(257);
  private readonly mag = new Float32Array(257);
  private readonly frame = new Float64Array(512);

  constructor(private readonly m1: ort.InferenceSession, private readonly m2: ort.InferenceSession) {}

  async process(x: Float32Array): Promise<Float32Array> {
    const all = new Float32Array(this.pending.length + x.length);
    all.set(this.pending);
    all.set(x, this.pending.length);
    const hops = Math.floor(all.length / 128);
    const out = new Float32Array(hops * 128);
    const { inBuf, outBuf, re, im, mag, frame } = this;
    for (let h = 0; h < hops; h++) {
      inBuf.copyWithin(0, 128);
      inBuf.set(all.subarray(h * 128, h * 128 + 128), 384);
      this.fft.forward(inBuf, re, im);
      for (let k = 0; k < 257; k++) mag[k] = Math.hypot(re[k]!, im[k]!);
      const r1 = await this.m1.run({ input_2: new ort.Tensor('float32', mag.slice(), [1, 1, 257]), input_3: this.s1 });
      const mask = r1.activation_2!.data as Float32Array;
      this.s1 = r1.tf_op_layer_stack_2!;
      // Masking the magnitude keeps the phase: scale the complex bins.
      for (let k = 0; k < 257; k++) { re[k] = re[k]! * mask[k]!; im[k] = im[k]! * mask[k]!; }
      this.fft.inverse(re, im, frame);
      const r2 = await this.m2.run({ input_4: new ort.Tensor('float32', Float32Array.from(frame), [1, 1, 512]), input_5: this.s2 });
      const y = r2.conv1d_3!.data as Float32Array;
      this.s2 = r2.tf_op_layer_stack_5!;
      outBuf.copyWithin(0, 128);
      outBuf.fill(0, 384);
      for (let i = 0; i < 512; i++) outBuf[i] = outBuf[i]! + y[i]!;
      out.set(outBuf.subarray(0, 128), h * 128);
    }
    this.pending = all.slice(hops * 128);
    return out;
  }
}

/** GTCRN: 512-point STFT (sqrt-Hann, hop 256) through the model one frame at a time with its caches. */
class GtcrnChannel implements ChannelModel {
  static readonly latency = 256;
  private readonly stft: StftProcessor;
  private conv: ort.Tensor = new ort.Tensor('float32', new Float32Array(2 * 16 * 16 * 33), [2, 1, 16, 16, 33]);
  private tra: ort.Tensor = new ort.Tensor('float32', new Float32Array(2 * 3 * 16), [2, 3, 1, 1, 16]);
  private inter: ort.Tensor = new ort.Tensor('float32', new Float32Array(2 * 33 * 16), [2, 1, 33, 16]);
  private readonly mix = new Float32Array(514);

  constructor(private readonly session: ort.InferenceSession) {
    const w = sqrtHann(512);
    this.stft = new StftProcessor({ size: 512, hop: 256, analysis: w, synthesis: w }, () => undefined);
  }

  process(x: Float32Array): Promise<Float32Array> {
    return this.stft.processAsync(x, async (re, im) => {
      const mix = this.mix;
      for (let k = 0; k < 257; k++) { mix[2 * k] = re[k]!; mix[2 * k + 1] = im[k]!; }
      const r = await this.session.run({
        mix: new ort.Tensor('float32', mix.slice(), [1, 257, 1, 2]),
        conv_cache: this.conv, tra_cache: this.tra, inter_cache: this.inter,
      });
      const enh = r.enh!.data as Float32Array;
      this.conv = r.conv_cache_out!;
      this.tra = r.tra_cache_out!;
      this.inter = r.inter_cache_out!;
      for (let k = 0; k < 257; k++) { re[k] = enh[2 * k]!; im[k] = enh[2 * k + 1]!; }
    });
  }
}

export interface OnnxDenoiseOptions {
  /** MODELS_DIR, or MODELS_DIR with the effective catalog. */
  modelsDir: string | ModelSource;
  kind: OnnxDenoiser;
  /** ONNX_EXECUTION_PROVIDER's resolved providers (default CPU). */
  executionProviders?: readonly string[];
}

/** Resamples to 16 kHz, runs one model instance per channel, resamples back; output stays aligned. */
export class OnnxDenoiseStage implements AudioStage {
  readonly name: string;
  private readonly trim: LatencyTrim;

  private constructor(
    kind: OnnxDenoiser,
    readonly sampleRate: number,
    private readonly models: ChannelModel[],
    private readonly up: StreamResampler,
    private readonly down: StreamResampler,
    private readonly sessions: ort.InferenceSession[],
    modelLatency: number,
  ) {
    this.name = kind;
    this.modelLatency = modelLatency;
    this.trim = new LatencyTrim(Math.round((modelLatency * sampleRate) / MODEL_RATE));
  }

  private readonly modelLatency: number;

  static async create(sampleRate: number, channelCount: number, opts: OnnxDenoiseOptions): Promise<OnnxDenoiseStage> {
    const model = verifiedModelSync(opts.modelsDir, opts.kind);
    if (!model.ok) throw new Error(`${opts.kind} is not installed${model.reason ? ` (${model.reason})` : ''}`);
    const files = opts.kind === 'dtln' ? [model.files.get('model_1.onnx'), model.files.get('model_2.onnx')] : [model.files.get('gtcrn.onnx')];
    const sessions: ort.InferenceSession[] = [];
    try {
      for (const f of files) {
        // A site catalog that renames the files is a catalog error, not a missing model.
        if (!f) throw new Error(`the catalog entry ${opts.kind} lacks the file layout ${onnxDenoiserFiles('', opts.kind).join(', ')}`);
        sessions.push(await openFrameModel(f, opts.executionProviders));
      }
    } catch (err) {
      // DTLN's first stage must not stay loaded when its second fails.
      await Promise.all(sessions.map((x) => x.release()));
      throw err;
    }
    const models: ChannelModel[] = [];
    for (let c = 0; c < channelCount; c++) {
      models.push(opts.kind === 'dtln' ? new DtlnChannel(sessions[0]!, sessions[1]!) : new GtcrnChannel(sessions[0]!));
    }
    const latency = opts.kind === 'dtln' ? DtlnChannel.latency : GtcrnChannel.latency;
    const up = await StreamResampler.create(channelCount, sampleRate, MODEL_RATE);
    const down = await StreamResampler.create(channelCount, MODEL_RATE, sampleRate);
    return new OnnxDenoiseStage(opts.kind, sampleRate, models, up, down, sessions, latency);
  }

  private async run(x16: Float32Array[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let c = 0; c < this.models.length; c++) out.push(await this.models[c]!.process(x16[c]!));
    return out;
  }

  private emit(ch: Float32Array[]): AudioData | null {
    const t = this.trim.apply(ch);
    return t ? { sampleRate: this.sampleRate, channels: t } : null;
  }

  async push(block: AudioData): Promise<AudioData | null> {
    this.trim.countInput(block.channels[0]?.length ?? 0);
    return this.emit(this.down.process(await this.run(this.up.process(block.channels))));
  }

  async flush(): Promise<AudioData | null> {
    const tail = this.up.flush().map((c) => {
      const p = new Float32Array(c.length + this.modelLatency + 512);
      p.set(c);
      return p;
    });
    const a = this.down.process(await this.run(tail));
    const b = this.down.flush();
    for (const s of this.sessions) await s.release();
    return this.emit(a.map((c, i) => {
      const o = new Float32Array(c.length + b[i]!.length);
      o.set(c);
      o.set(b[i]!, c.length);
      return o;
    }));
  }
}
