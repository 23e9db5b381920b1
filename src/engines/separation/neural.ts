import { join } from 'node:path';
import type { EngineContext } from '../../ports/engines.js';
import type { AudioData } from '../../media/audio.js';
import { abortError } from '../../media/ffmpeg.js';
import { loadFftProvider, type FftProvider, type RealFft } from '../../media/dsp/fft.js';
import { outputStems, STEMS_BY_MODEL_TYPE, type AudioSource, type SeparationEngine, type SeparationRun, type StemSink } from './engine.js';
import type { DemucsOptions } from './onnx/htdemucs.js';
import type { MdxOptions } from './onnx/mdx.js';
import type { Stereo } from './onnx/overlap-add.js';
import { TaskFailure } from '../../domain/errors.js';
import type { ModelEntry } from '../../models/catalog.js';
import type { VerifiedMemo } from '../../models/installed.js';
import { installedPresets, MODEL_RATE, NEURAL_PRESETS, presetEntry, presetPath, type NeuralPreset } from './onnx/presets.js';
import { routeFor, type Route, type StereoStage } from './onnx/routes.js';
import { openSeparationSession, type ort } from './onnx/session.js';
import type { CheckpointDemucsPreset, RoformerPreset } from './onnx/checkpoint-presets.js';
import { loadHtdemucsCheckpoint, type LoadedHtdemucs } from './onnx/htdemucs-loader.js';
import { loadRoformer, type LoadedRoformer } from './onnx/roformer.js';
import { readCheckpoint } from '../../models/checkpoint/index.js';
import { PlanarFifo, StreamResampler } from './onnx/stream.js';

/**
 * The neural separation engine: ONNX models (MDX-Net, HTDemucs) found in MODELS_DIR. Input blocks are resampled to
 * 44.1 kHz stereo (mono duplicated), run through the route's streaming stage, brought back to the input rate and
 * layout (mono: the two channels averaged), and the stem that is not the model's (`other` / `remainder`) is the
 * mixture minus the others, so stems always sum back to the input. Memory: one model chunk plus the pipeline delay.
 */
export interface NeuralEngineOptions {
  modelsDir: string;
  /** Models to consider (default: every known preset); only installed (catalogued and verified) ones are used. */
  presets?: readonly NeuralPreset[];
  /** The model catalog whose sizes and checksums decide what is installed (default: the built-in one). */
  catalog?: readonly ModelEntry[];
  /**
   * The site asked for one model by name (SEPARATION_ENGINE): a model never pulled on its own (the fine-tuned bag, the
   * Mega RoFormer whose weights have no stated licence) may then be downloaded when nothing else serves the type.
   */
  pullOptIn?: boolean;
  /** onnxruntime execution providers in order of preference (default: CPU). */
  executionProviders?: readonly string[];
  threads?: number;
  mdx?: MdxOptions;
  demucs?: DemucsOptions;
  fft?: FftProvider;
}

/** A model file that is verified but will not load: permanent (retrying cannot help), and it names the file. */
export class ModelLoadError extends TaskFailure {
  constructor(readonly file: string, cause: unknown) {
    super(`Model file ${file} could not be loaded: ${(cause as Error)?.message ?? String(cause)}`, false);
  }
}

interface Stats {
  mean: number;
  std: number;
}

export class NeuralSeparationEngine implements SeparationEngine {
  readonly id = 'onnx';
  // Owned by this instance (an engine thread keeps one): sessions stay warm between tasks.
  private readonly sessions = new Map<string, Promise<ort.InferenceSession>>();
  // Checkpoint models: the graph is built in memory at load (nothing written into MODELS_DIR), the session kept
  // like the others.
  private readonly demucsLoads = new Map<string, Promise<LoadedHtdemucs>>();
  private readonly roformerLoads = new Map<string, Promise<LoadedRoformer>>();
  private ffts = new Map<number, RealFft>();
  private provider: FftProvider | undefined;
  // Digests this instance has verified, for a MODELS_DIR where the on-disk marker cannot be written.
  private readonly verified: VerifiedMemo = new Map();

  constructor(private readonly opts: NeuralEngineOptions) {}

  /** The route this engine would take for a model type with what is installed now, if any. */
  route(modelType: number): Route | undefined {
    const available = installedPresets(this.opts.modelsDir, this.opts.presets ?? NEURAL_PRESETS, this.opts.catalog, this.verified);
    return routeFor(modelType, available, (t) => STEMS_BY_MODEL_TYPE[t] ?? []);
  }

  /**
   * The catalog models to download so that a model type gets a neural route: the best route among every preset the
   * catalog can provide, less what is installed. Empty when nothing downloadable serves the type.
   */
  pullPlan(modelType: number): ModelEntry[] {
    const presets = this.opts.presets ?? NEURAL_PRESETS;
    const catalogued = presets.filter((p) => presetEntry(p, this.opts.catalog) !== undefined);
    const stems = (t: number) => STEMS_BY_MODEL_TYPE[t] ?? [];
    // Models marked autoPull: false are downloaded only when the site named one and nothing else serves the type.
    const route = routeFor(modelType, catalogued.filter((p) => !('autoPull' in p) || p.autoPull !== false), stems) ?? (this.opts.pullOptIn ? routeFor(modelType, catalogued, stems) : undefined);
    if (!route) return [];
    const installed = new Set(installedPresets(this.opts.modelsDir, route.presets, this.opts.catalog, this.verified));
    return route.presets.filter((p) => !installed.has(p)).map((p) => presetEntry(p, this.opts.catalog)!);
  }

  supports(modelType: number): boolean {
    return this.route(modelType) !== undefined;
  }

  async separate(input: AudioSource, modelType: number, ctx: EngineContext, sink: StemSink): Promise<SeparationRun> {
    const route = this.route(modelType);
    if (!route) throw new Error(`no installed neural model serves model_type ${modelType}`);
    this.provider ??= this.opts.fft ?? (await loadFftProvider());
    // A load failure happens here, before any stem is written, so the caller can still fall back.
    const stage = await route.build({
      session: (p) => this.session(p),
      htdemucs: (p, m) => this.htdemucs(p, m),
      roformer: (p, stems) => this.roformer(p, stems),
      fft: (n) => this.fft(n),
      mdx: this.opts.mdx ?? {},
      demucs: this.opts.demucs ?? { shiftSamples: Math.floor(MODEL_RATE / 4) },
    });
    const stats = route.scaling === 'none' ? { mean: 0, std: 1 } : await inputStats(input, route.scaling, ctx.signal);
    await runPipeline(input, modelType, route, stage, stats, ctx, sink);
    return { engine: route.label };
  }

  private session(p: NeuralPreset): Promise<ort.InferenceSession> {
    const path = presetPath(this.opts.modelsDir, p);
    let s = this.sessions.get(path);
    if (!s) {
      s = openSeparationSession(path, this.opts.threads, this.opts.executionProviders).catch((err: unknown) => {
        throw new ModelLoadError(path, err);
      });
      // A failed load is not cached: the next task retries (e.g. after a completed download).
      s.catch(() => this.sessions.delete(path));
      this.sessions.set(path, s);
    }
    return s;
  }

  private htdemucs(p: CheckpointDemucsPreset, model: number): Promise<LoadedHtdemucs> {
    const dir = join(this.opts.modelsDir, p.name);
    const file = p.models[model]!.file;
    return this.cached(this.demucsLoads, join(dir, file), async () => {
      const loaded = await loadHtdemucsCheckpoint(dir, file, { threads: this.opts.threads, providers: this.opts.executionProviders });
      // A verified file can still be another network than its entry says (a site pinning the 4-source file under the
      // 6-source name): refused here, as a load error the caller can fall back from, not a crash mid-task.
      const got = loaded.preset.sources;
      if (got.length !== p.sources.length || p.sources.some((s) => !got.includes(s))) {
        await loaded.session.release();
        throw new Error(`${file} separates ${got.join(', ')}; the catalog entry ${p.name} expects ${p.sources.join(', ')}`);
      }
      return loaded;
    });
  }

  private roformer(p: RoformerPreset, stems?: readonly string[]): Promise<LoadedRoformer> {
    const dir = join(this.opts.modelsDir, p.name);
    const heads = p.heads && stems ? stems.map((name) => ({ name, index: p.heads![name]! })) : undefined;
    const key = `${join(dir, p.file)}#${heads?.map((h) => h.index).join(',') ?? 'all'}`;
    return this.cached(this.roformerLoads, key, () =>
      loadRoformer(dir, p.file, p.config, { threads: this.opts.threads, providers: this.opts.executionProviders, readCheckpoint, ...(heads ? { heads } : {}) }),
    );
  }

  /** One load per key and engine instance; a failed load is not kept, so the next task retries it. */
  private cached<T>(map: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> {
    let s = map.get(key);
    if (!s) {
      s = load().catch((err: unknown) => {
        throw new ModelLoadError(key.split('#')[0]!, err);
      });
      s.catch(() => map.delete(key));
      map.set(key, s);
    }
    return s;
  }

  private fft(n: number): RealFft {
    let f = this.ffts.get(n);
    if (!f) this.ffts.set(n, (f = this.provider!.create(n)));
    return f;
  }

  async dispose(): Promise<void> {
    for (const f of this.ffts.values()) f.dispose();
    this.ffts = new Map();
    for (const s of this.sessions.values()) await (await s.catch(() => null))?.release();
    this.sessions.clear();
    for (const l of [...this.demucsLoads.values(), ...this.roformerLoads.values()]) await (await l.catch(() => null))?.session.release();
    this.demucsLoads.clear();
    this.roformerLoads.clear();
  }
}

/** audio-separator's normalization_threshold: the MDXC path scales an input peaking above it down to it. */
const PEAK_LIMIT = 0.9;

/**
 * mean-std (demucs/separate.py): ref = mean over channels; the mix is (x - ref.mean()) / ref.std() (unbiased std).
 * peak (audio-separator's spec_utils.normalize before MDXC): x * 0.9 / peak when the peak exceeds 0.9. Either way the
 * stems are scaled back, so they still sum to the input.
 */
async function inputStats(input: AudioSource, scaling: 'mean-std' | 'peak', signal: AbortSignal): Promise<Stats> {
  let n = 0;
  let mean = 0;
  let m2 = 0;
  let peak = 0;
  for await (const block of input.blocks(signal)) {
    if (signal.aborted) throw abortError(signal);
    const chans = block.channels;
    const len = chans[0]?.length ?? 0;
    for (let i = 0; i < len; i++) {
      let v = 0;
      for (const c of chans) {
        v += c[i]!;
        peak = Math.max(peak, Math.abs(c[i]!));
      }
      v /= chans.length;
      n++;
      const d = v - mean;
      mean += d / n;
      m2 += d * (v - mean);
    }
  }
  if (scaling === 'peak') return { mean: 0, std: peak > PEAK_LIMIT ? peak / PEAK_LIMIT : 1 };
  const std = n > 1 ? Math.sqrt(m2 / (n - 1)) : 0;
  // Digital silence: demucs would divide by 0; nothing to normalise.
  return { mean, std: std > 1e-8 ? std : 1 };
}

async function runPipeline(
  input: AudioSource,
  modelType: number,
  route: Route,
  stage: StereoStage,
  stats: Stats,
  ctx: EngineContext,
  sink: StemSink,
): Promise<void> {
  const rate = input.sampleRate;
  const nch = input.channelCount;
  const names = outputStems(modelType);
  const residualName = names[names.length - 1]!;
  const up = [new StreamResampler(rate, MODEL_RATE), new StreamResampler(rate, MODEL_RATE)];
  const down = new Map<string, StreamResampler[]>(stage.stems.map((s) => [s, [new StreamResampler(MODEL_RATE, rate), new StreamResampler(MODEL_RATE, rate)]]));
  const mixFifo = new PlanarFifo();
  const stemFifo = new PlanarFifo();
  let written = 0;
  let inputFrames = 0;

  const fold = (pair: Float32Array[]): Float32Array[] => (nch === 1 ? [pair[0]!.map((v, i) => 0.5 * (v + pair[1]![i]!))] : pair);
  const accept = (blocks: Array<Record<string, Stereo>>, last: boolean) => {
    const outs: Record<string, Float32Array[]> = {};
    for (const b of blocks) {
      for (const s of stage.stems) {
        const y = b[s]!.map((c) => c.map((v) => v * stats.std + stats.mean));
        const r = down.get(s)!;
        const back = y.map((c, i) => r[i]!.push(c));
        outs[s] = outs[s] ? outs[s]!.map((c, i) => concat(c, back[i]!)) : back;
      }
    }
    if (last) for (const s of stage.stems) {
      const tail = down.get(s)!.map((r) => r.end());
      outs[s] = outs[s] ? outs[s]!.map((c, i) => concat(c, tail[i]!)) : tail;
    }
    if (Object.keys(outs).length) stemFifo.push(Object.fromEntries(Object.entries(outs).map(([k, v]) => [k, fold(v)])));
  };
  const drain = async () => {
    const k = Math.min(mixFifo.length, stemFifo.length);
    if (k === 0) return;
    const mix = mixFifo.take(k).mix!;
    const model = stemFifo.take(k);
    const out: Record<string, AudioData> = {};
    const residual = mix.map((c) => Float32Array.from(c));
    for (let c = 0; c < nch; c++) {
      const composed = route.compose(Object.fromEntries(stage.stems.map((s) => [s, model[s]![c]!])), mix[c]!);
      for (const name of names) {
        if (name === residualName) continue;
        const y = composed[name]!;
        (out[name] ??= { sampleRate: rate, channels: [] }).channels.push(y);
        const r = residual[c]!;
        for (let i = 0; i < k; i++) r[i]! -= y[i]!;
      }
    }
    out[residualName] = { sampleRate: rate, channels: residual };
    await sink.write(written, out);
    written += k;
    if (input.totalFrames) ctx.onProgress(Math.min(1, written / input.totalFrames));
  };

  for await (const block of input.blocks(ctx.signal)) {
    if (ctx.signal.aborted) throw abortError(ctx.signal);
    const len = block.channels[0]?.length ?? 0;
    if (len === 0) continue;
    inputFrames += len;
    mixFifo.push({ mix: block.channels.map((c) => c.slice()) });
    const l = block.channels[0]!;
    const r = block.channels[1] ?? l;
    const x = [up[0]!.push(l), up[1]!.push(r)].map((c) => c.map((v) => (v - stats.mean) / stats.std)) as Stereo;
    if (x[0].length) accept(await stage.push(x), false);
    await drain();
  }
  if (ctx.signal.aborted) throw abortError(ctx.signal);
  if (inputFrames > 0) {
    const x = up.map((u) => u.end().map((v) => (v - stats.mean) / stats.std)) as Stereo;
    const blocks = x[0].length ? await stage.push(x) : [];
    accept([...blocks, ...(await stage.end())], true);
  }
  // Resampling there and back can leave the stems a sample short or long of the input.
  if (stemFifo.length < mixFifo.length) {
    const gap = mixFifo.length - stemFifo.length;
    stemFifo.push(Object.fromEntries(stage.stems.map((s) => [s, Array.from({ length: nch }, () => new Float32Array(gap))])));
  }
  await drain();
  await sink.end?.();
}

function concat(a: Float32Array, b: Float32Array): Float32Array {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  const o = new Float32Array(a.length + b.length);
  o.set(a);
  o.set(b, a.length);
  return o;
}

export function createNeuralSeparationEngine(opts: NeuralEngineOptions): NeuralSeparationEngine {
  return new NeuralSeparationEngine(opts);
}
