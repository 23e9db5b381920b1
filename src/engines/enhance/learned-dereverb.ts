/**
 * Learned dereverberation: a dereverberation RoFormer (src/models/catalog-dereverb.ts) run by the separation engine's
 * RoFormer stage (src/engines/separation/onnx/roformer.ts, proved against python-audio-separator), of which the dry
 * stem ("noreverb") is kept. The enhancement's audio, at any rate, mono or stereo, is resampled to the model's rate
 * (44.1 kHz), made stereo (mono duplicated, as audio-separator does), run chunk by chunk, and the dry stem is brought
 * back to the input rate and layout (mono: the mean of the two channels). Output is sample-aligned with the input and
 * exactly as long.
 *
 * Memory is bounded by the RoFormer chunking (about two chunks of input and accumulators, whatever the file's length)
 * plus the resamplers' blocks; the network's working set is one chunk. Not reproduced from audio-separator's
 * `separate`: bringing an input peaking above 0.9 down to 0.9 first, which needs the whole file (the chain streams).
 *
 * `createDereverbStage` is what the chain calls: the learned model when it is installed and loads, else WPE
 * (dereverb.ts), saying why.
 */
import { z } from 'zod';
import { concatSamples, type AudioData } from '../../media/audio.js';
import { loadFftProvider, type FftProvider } from '../../media/dsp/fft.js';
import { DEREVERB_ENGINE } from '../../models/catalog-dereverb.js';
import { MODEL_CATALOG, type ModelEntry } from '../../models/catalog.js';
import { verifiedModelSync, type ModelSource } from '../../models/verified.js';
import { loadRoformer } from '../separation/onnx/roformer.js';
import type { Stereo } from '../separation/onnx/roformer-chunks.js';
import { StreamResampler } from '../separation/onnx/stream.js';
import { DereverbStage, type DereverbOptions } from './dereverb.js';
import type { AudioStage } from './stage.js';

const dereverbMeta = z.object({
  engine: z.literal(DEREVERB_ENGINE),
  architecture: z.enum(['mel_band_roformer', 'bs_roformer']),
  sampleRate: z.number().int().positive(),
  /** The stem that is the dry speech: the network's target or its residual. */
  dryStem: z.string().min(1),
  checkpointFile: z.string().min(1),
  configFile: z.string().min(1),
  /** false: used when installed, never downloaded on its own (a licence that does not allow every use). */
  autoPull: z.boolean().optional(),
});
export type DereverbModelMeta = z.infer<typeof dereverbMeta>;

/** The learned dereverberation models of a catalog, in order of preference (the catalog's), with their meta checked. */
export function dereverbModels(catalog: readonly ModelEntry[] = MODEL_CATALOG): Array<{ entry: ModelEntry; meta: DereverbModelMeta }> {
  const out: Array<{ entry: ModelEntry; meta: DereverbModelMeta }> = [];
  for (const entry of catalog) {
    if (entry.kind !== 'enhance' || !('meta' in entry)) continue;
    const m = dereverbMeta.safeParse(entry.meta);
    if (m.success) out.push({ entry, meta: m.data });
  }
  return out;
}

/** The stage's view of the network: stereo blocks in, stems of finished positions out (RoformerStage). */
export interface StemNetwork {
  readonly stems: readonly string[];
  push(x: Stereo): Promise<Array<Record<string, Stereo>>>;
  end(): Promise<Array<Record<string, Stereo>>>;
}

function abortIf(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : Object.assign(new Error('aborted'), { name: 'AbortError' });
}

export class LearnedDereverbStage implements AudioStage {
  readonly name = 'dereverb-learned';
  private readonly up: StreamResampler[];
  private readonly down: StreamResampler[];
  private inputFrames = 0;
  private outputFrames = 0;

  /** `net` runs at `modelRate`; `dryStem` must be one of its stems. */
  constructor(readonly sampleRate: number, readonly channelCount: number, private readonly net: StemNetwork, modelRate: number, private readonly dryStem: string, private readonly signal?: AbortSignal) {
    if (channelCount !== 1 && channelCount !== 2) throw new Error(`learned dereverberation takes mono or stereo, not ${channelCount} channels`);
    if (!net.stems.includes(dryStem)) throw new Error(`the network's stems are ${net.stems.join(', ')}: no '${dryStem}'`);
    this.up = Array.from({ length: channelCount }, () => new StreamResampler(sampleRate, modelRate));
    this.down = Array.from({ length: channelCount }, () => new StreamResampler(modelRate, sampleRate));
  }

  async push(block: AudioData): Promise<AudioData | null> {
    abortIf(this.signal);
    const n = block.channels[0]?.length ?? 0;
    if (n === 0) return null;
    this.inputFrames += n;
    const x = this.stereo(this.up.map((u, c) => u.push(block.channels[c]!)));
    return this.emit(x[0].length ? await this.net.push(x) : [], false);
  }

  async flush(): Promise<AudioData | null> {
    abortIf(this.signal);
    const x = this.stereo(this.up.map((u) => u.end()));
    const blocks = x[0].length ? await this.net.push(x) : [];
    return this.emit([...blocks, ...(await this.net.end())], true);
  }

  private stereo(chans: Float32Array[]): Stereo {
    return [chans[0]!, chans[1] ?? chans[0]!.slice()];
  }

  /** The dry stem of finished blocks at the input rate and layout, never past the input's length (padded at the end). */
  private emit(blocks: Array<Record<string, Stereo>>, last: boolean): AudioData | null {
    const parts: Float32Array[][] = this.down.map(() => []);
    for (const b of blocks) {
      const dry = b[this.dryStem]!;
      if (dry[0].length === 0) continue;
      const chans = this.channelCount === 1 ? [dry[0].map((v, i) => 0.5 * (v + dry[1][i]!))] : dry;
      chans.forEach((c, i) => parts[i]!.push(this.down[i]!.push(c)));
    }
    if (last) this.down.forEach((d, i) => parts[i]!.push(d.end()));
    const joined = parts.map(concatSamples);
    const want = Math.max(0, this.inputFrames - this.outputFrames);
    const have = joined[0]!.length;
    // Resampling there and back can end a sample short or long: the tail is cut or padded with silence.
    const n = last ? want : Math.min(have, want);
    if (n === 0) return null;
    this.outputFrames += n;
    const channels = joined.map((c) => {
      if (c.length === n) return c;
      const o = new Float32Array(n);
      o.set(c.subarray(0, n));
      return o;
    });
    return { sampleRate: this.sampleRate, channels };
  }
}

export interface LearnedDereverbOptions {
  sampleRate: number;
  channels: number;
  /** The model's folder (MODELS_DIR/<name>) holding its verified checkpoint and yaml. */
  dir: string;
  meta: DereverbModelMeta;
  executionProviders?: readonly string[];
  threads?: number;
  signal?: AbortSignal;
  fft?: FftProvider;
  /** MDXC overlap (windows per position); default the yaml's inference.num_overlap. */
  overlap?: number;
}

/** Loads the checkpoint and yaml (the graph is built in memory) and returns the stage. */
export async function createLearnedDereverbStage(o: LearnedDereverbOptions): Promise<LearnedDereverbStage> {
  const loaded = await loadRoformer(o.dir, o.meta.checkpointFile, o.meta.configFile, {
    ...(o.threads ? { threads: o.threads } : {}),
    ...(o.executionProviders ? { providers: o.executionProviders } : {}),
  });
  const fft = (o.fft ?? (await loadFftProvider())).create(loaded.config.nFft);
  const net = loaded.createStage(fft, o.overlap ? { overlap: o.overlap } : {});
  return new LearnedDereverbStage(o.sampleRate, o.channels, net, loaded.config.sampleRate, o.meta.dryStem, o.signal);
}

export type DereverbPreference = 'auto' | 'learned' | 'wpe';

export interface DereverbRequest {
  sampleRate: number;
  channels: number;
  models: ModelSource;
  executionProviders?: readonly string[];
  threads?: number;
  signal?: AbortSignal;
  /** auto (default): the learned model when installed (and, on CPU, the input short enough), else WPE; wpe: always WPE; learned: when installed, whatever the length. */
  preference?: DereverbPreference;
  /** Why the learned model could not be had (its automatic download failed), said in `why`. */
  problem?: string;
  /** WPE's options when WPE runs. */
  wpe?: DereverbOptions;
  /** remove_echo was asked: WPE predicts from ECHO_PREDICTION_SECONDS of past frames (discrete echoes need it). */
  echo?: boolean;
  /**
   * With `cpuMaxSeconds`: the input's length. On CPU alone (no accelerator among `executionProviders`) the learned
   * model costs about 7 s per second of audio on 2 cores (the same network as Kim's Mel-Band RoFormer,
   * bench/results/separation-cost.md), so an input longer than `cpuMaxSeconds` gets WPE under `auto`, with the reason.
   */
  inputSeconds?: number;
  cpuMaxSeconds?: number;
}

/** WPE's prediction span for remove_echo (dereverb.ts `predictionSeconds` says what it measured). */
export const ECHO_PREDICTION_SECONDS = 0.25;

/** Measured RTF of this network size on 2 CPU cores (Mel-Band RoFormer Kim: 6.4 on 10 s, 7.1 on 60 s). */
export const LEARNED_DEREVERB_CPU_RTF = 7;

export interface CreatedDereverb {
  stage: AudioStage;
  kind: 'roformer-dereverb' | 'wpe';
  /** The catalog model that runs (learned only). */
  model?: string;
  why: string;
}

/** Why WPE runs whatever is installed (the preference, the layout, the length on CPU alone), or null. */
function learnedRuledOut(r: Omit<DereverbRequest, 'models' | 'sampleRate' | 'channels'> & { channels?: number }): string | null {
  if (r.preference === 'wpe') return 'WPE (ENHANCE_DEREVERB=wpe)';
  if (r.channels !== undefined && r.channels > 2) return `WPE: the learned model takes mono or stereo, the input has ${r.channels} channels`;
  const cpuOnly = !(r.executionProviders ?? ['cpu']).some((p) => p !== 'cpu');
  if (r.preference !== 'learned' && cpuOnly && r.inputSeconds !== undefined && r.cpuMaxSeconds !== undefined && r.inputSeconds > r.cpuMaxSeconds) {
    const minutes = (r.inputSeconds * LEARNED_DEREVERB_CPU_RTF) / 60;
    return `WPE: the learned model on CPU alone would take about ${minutes.toFixed(0)} min for ${(r.inputSeconds / 60).toFixed(1)} min of audio (over the ${r.cpuMaxSeconds} s limit for CPU)`;
  }
  return null;
}

/**
 * The learned models a request would download for dereverberation (the first catalogued one that may be pulled):
 * none when one is installed, or when the request would get WPE anyway (`request`: the same fields as
 * createDereverbStage's).
 */
export function dereverbPullPlan(models: ModelSource, request: Omit<DereverbRequest, 'models' | 'sampleRate' | 'channels'> & { channels?: number } = {}): ModelEntry[] {
  if (learnedRuledOut(request)) return [];
  const candidates = dereverbModels(models.catalog);
  if (candidates.some(({ entry }) => verifiedModelSync(models, entry.name).ok)) return [];
  const first = candidates.find(({ meta }) => meta.autoPull !== false);
  return first ? [first.entry] : [];
}

/** Whether createDereverbStage would run a learned model for this request (one is verified and none of WPE's rules hold). */
export function learnedDereverbWouldRun(models: ModelSource, request: Omit<DereverbRequest, 'models' | 'sampleRate' | 'channels'> & { channels?: number } = {}): boolean {
  if (learnedRuledOut(request)) return false;
  return dereverbModels(models.catalog).some(({ entry }) => verifiedModelSync(models, entry.name).ok);
}

/** The dereverberation stage the chain runs: the installed learned model (first in catalog order), else WPE. */
export async function createDereverbStage(r: DereverbRequest): Promise<CreatedDereverb> {
  const wpeOpts: DereverbOptions = r.echo ? { predictionSeconds: ECHO_PREDICTION_SECONDS, ...r.wpe } : (r.wpe ?? {});
  const wpe = (why: string): CreatedDereverb => ({
    stage: new DereverbStage(r.sampleRate, r.channels, wpeOpts),
    kind: 'wpe',
    why: wpeOpts.predictionSeconds ? `${why} (predicting from ${wpeOpts.predictionSeconds} s for echoes)` : why,
  });
  const out = learnedRuledOut(r);
  if (out) return wpe(out);
  const candidates = dereverbModels(r.models.catalog);
  const problems: string[] = [];
  for (const { entry, meta } of candidates) {
    const v = verifiedModelSync(r.models, entry.name);
    if (!v.ok) {
      if (v.reason) problems.push(`${entry.name}: ${v.reason}`);
      continue;
    }
    try {
      const stage = await createLearnedDereverbStage({
        sampleRate: r.sampleRate, channels: r.channels, dir: v.dir, meta,
        ...(r.executionProviders ? { executionProviders: r.executionProviders } : {}),
        ...(r.threads ? { threads: r.threads } : {}),
        ...(r.signal ? { signal: r.signal } : {}),
      });
      return { stage, kind: 'roformer-dereverb', model: entry.name, why: `${entry.name} (learned, ${meta.architecture}, dry stem '${meta.dryStem}')` };
    } catch (err) {
      problems.push(`${entry.name} did not load: ${(err as Error).message}`);
    }
  }
  if (r.problem) problems.push(r.problem);
  const wanted = candidates.find(({ meta }) => meta.autoPull !== false)?.entry.name;
  const none = wanted ? `no learned dereverberation model installed (${wanted}; MODELS_AUTO_PULL or \`models pull ${wanted}\` installs it)` : 'no learned dereverberation model in the catalog';
  return wpe(`WPE: ${problems.length ? problems.join('; ') : none}`);
}

