/**
 * BS-RoFormer and Mel-Band RoFormer models from their authors' checkpoint and YAML, run the way
 * python-audio-separator's MDXCSeparator runs them: per chunk (roformer-chunks.ts) a centred, reflect-padded,
 * periodic-Hann, unnormalised STFT of each channel (torch.stft as the model calls it), the network
 * (roformer-graph.ts) giving each stem's complex mask, the mask applied, an iSTFT of hop * (frames - 1) samples
 * (or the chunk's length for a Mel model with match_input_audio_length), and the Hamming-weighted overlap-add.
 * A single-target model's other stem is the mixture minus the target, as the reference returns it.
 *
 * Memory is bounded by the chunk: one chunk of spectrogram, mask and the network's activations at a time.
 * Not reproduced here (the caller's business, as in the reference's `separate`): peak normalisation of the
 * input, and the segment-size override audio-separator applies to inputs under 10 s.
 */
import { join, resolve } from 'node:path';
import type { RealFft } from '../../../media/dsp/fft.js';
import { istft, stft, type Spectrogram } from '../../../media/dsp/stft.js';
import { readCheckpoint, type Checkpoint } from '../../../models/checkpoint/index.js';
import { MdxcChunker, type ChunkBlock, type Stereo } from './roformer-chunks.js';
import { readRoformerConfig, type RoformerConfig } from './roformer-config.js';
import { buildRoformerGraph, type RoformerGraphOptions } from './roformer-graph.js';
import { openSeparationSession, ort, type GraphBytes } from './session.js';

export interface RoformerOptions {
  /** Windows over each position (MDXCSeparator's overlap); defaults to the YAML's inference.num_overlap. */
  overlap?: number;
}

/** One chunk's spectrogram in the graph's "t (f s c)" layout. */
export function roformerInput(spec: readonly Spectrogram[]): Float32Array {
  const channels = spec.length;
  const { frames, bins } = spec[0]!;
  const features = bins * channels * 2;
  const data = new Float32Array(frames * features);
  spec.forEach((sp, s) => {
    for (let t = 0; t < frames; t++) {
      const row = t * features;
      for (let f = 0; f < bins; f++) {
        const at = row + (f * channels + s) * 2;
        data[at] = sp.re[t * bins + f]!;
        data[at + 1] = sp.im[t * bins + f]!;
      }
    }
  });
  return data;
}

/** Channel s of (spectrogram x mask), the mask of one stem in the same layout. */
export function applyMask(spec: Spectrogram, mask: Float32Array, offset: number, s: number, channels: number): Spectrogram {
  const { frames, bins } = spec;
  const out: Spectrogram = { frames, bins, re: new Float32Array(frames * bins), im: new Float32Array(frames * bins) };
  const features = bins * channels * 2;
  for (let t = 0; t < frames; t++) {
    for (let f = 0; f < bins; f++) {
      const at = offset + t * features + (f * channels + s) * 2;
      const mr = mask[at]!;
      const mi = mask[at + 1]!;
      const xr = spec.re[t * bins + f]!;
      const xi = spec.im[t * bins + f]!;
      out.re[t * bins + f] = xr * mr - xi * mi;
      out.im[t * bins + f] = xr * mi + xi * mr;
    }
  }
  return out;
}

export class RoformerStage {
  /** The network's stems, then the residual stem of a single-target model. */
  readonly stems: readonly string[];
  private readonly chunker: MdxcChunker;
  private readonly inputName: string;

  constructor(
    private readonly session: ort.InferenceSession,
    private readonly cfg: RoformerConfig,
    private readonly fft: RealFft,
    opts: RoformerOptions = {},
  ) {
    if (cfg.channels !== 2) throw new Error('RoFormer: only stereo models are supported');
    if (fft.size !== cfg.nFft) throw new Error(`RoFormer: FFT size ${fft.size} != n_fft ${cfg.nFft}`);
    this.inputName = session.inputNames[0]!;
    this.stems = cfg.residual ? [...cfg.outputs, cfg.residual] : [...cfg.outputs];
    const overlap = opts.overlap ?? cfg.overlap;
    const step = Math.floor(cfg.chunk / overlap);
    this.chunker = new MdxcChunker(cfg.chunk, step, cfg.outputs, (part) => this.runChunk(part));
  }

  async push(x: Stereo): Promise<Array<Record<string, Stereo>>> {
    return this.finish(await this.chunker.push(x));
  }

  async end(): Promise<Array<Record<string, Stereo>>> {
    return this.finish(await this.chunker.end());
  }

  private finish(blocks: ChunkBlock[]): Array<Record<string, Stereo>> {
    const { residual, outputs } = this.cfg;
    return blocks.map(({ mix, stems }) => {
      if (!residual) return stems;
      const target = stems[outputs[0]!]!;
      return { ...stems, [residual]: mix.map((c, i) => c.map((v, k) => v - target[i]![k]!)) as Stereo };
    });
  }

  /** The network on one chunk: stems of hop * (frames - 1) samples (the chunk's length with matchInputLength). */
  async runChunk(part: Stereo): Promise<Record<string, Stereo>> {
    const { nFft, hop, outputs, matchInputLength } = this.cfg;
    const spec = part.map((ch) => stft(ch, this.fft, { nFft, hop }));
    const frames = spec[0]!.frames;
    const input = roformerInput(spec);
    const features = input.length / frames;
    const result = await this.session.run({ [this.inputName]: new ort.Tensor('float32', input, [frames, features]) });
    const mask = (Object.values(result)[0] as ort.Tensor).data as Float32Array;
    const length = matchInputLength ? part[0].length : hop * (frames - 1);
    const out: Record<string, Stereo> = {};
    outputs.forEach((name, n) => {
      out[name] = spec.map((sp, s) => istft(applyMask(sp, mask, n * frames * features, s, 2), this.fft, { nFft, hop, length })) as Stereo;
    });
    return out;
  }
}

export interface LoadedRoformer {
  config: RoformerConfig;
  /** The stems a stage emits, in order. */
  sources: readonly string[];
  session: ort.InferenceSession;
  /** The graph the session was opened from (a few hundred KB: the weights stay in the checkpoint). */
  graph: GraphBytes;
  /** Milliseconds spent reading the checkpoint and building the graph, and opening the session. */
  timings: { graphMs: number; sessionMs: number };
  createStage(fft: RealFft, opts?: RoformerOptions): RoformerStage;
}

export interface LoadRoformerOptions extends RoformerGraphOptions {
  threads?: number;
  providers?: readonly string[];
  /** Reads the checkpoint (default: torch.save or safetensors, told apart by the file's first bytes). */
  readCheckpoint?: (path: string) => Promise<Checkpoint>;
}

/**
 * Reads `yamlFile` and `ckptFile` in `dir`, builds the graph in memory (its initializers point into the
 * checkpoint's bytes) and opens the session from it with `dir` as the folder external data is read from. Nothing is
 * written into `dir`: a read-only models folder works, and concurrent loads (worker threads, other head sets) share
 * no file. Rebuilding per load is cheap beside the session: on the full-size goldens (harness/out; 2 cores at load
 * average 12) reading the ~900 MB checkpoint took 0.03-0.22 s and building the ~330 KB graph 0.09-0.27 s, against
 * 5.7-8.1 s to create the session.
 */
export async function loadRoformer(dir: string, ckptFile: string, yamlFile: string, opts: LoadRoformerOptions = {}): Promise<LoadedRoformer> {
  const root = resolve(dir);
  const full = await readRoformerConfig(join(root, yamlFile));
  // With a subset of heads the graph's outputs are those heads, named by the caller; no residual is derived (a
  // multi-instrument model's outputs overlap, and the engine makes the remainder itself).
  const { residual: _residual, ...rest } = full;
  const config: RoformerConfig = opts.heads ? { ...rest, outputs: opts.heads.map((h) => h.name) } : full;
  const t0 = performance.now();
  const ckpt = await (opts.readCheckpoint ?? readCheckpoint)(join(root, ckptFile));
  const graph: GraphBytes = { bytes: buildRoformerGraph(ckpt, full, opts).bytes, externalDataDir: root };
  const t1 = performance.now();
  const session = await openSeparationSession(graph, opts.threads, opts.providers);
  const t2 = performance.now();
  const sources = config.residual ? [...config.outputs, config.residual] : [...config.outputs];
  return {
    config,
    sources,
    session,
    graph,
    timings: { graphMs: t1 - t0, sessionMs: t2 - t1 },
    createStage: (fft, o) => new RoformerStage(session, config, fft, o),
  };
}
