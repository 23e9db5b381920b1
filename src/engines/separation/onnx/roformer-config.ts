/**
 * The YAML configuration that comes with a BS-RoFormer or Mel-Band RoFormer checkpoint (ZFTurbo's
 * Music-Source-Separation-Training layout, which UVR and python-audio-separator use as is): `model` holds the
 * constructor arguments, `training` the stems, `inference` the chunking. Read with the defaults of
 * python-audio-separator's RoformerLoader and MDXCSeparator, since that is the inference the stage reproduces.
 * The file is untrusted: bounded in size, parsed without any tag that builds objects (`!!python/tuple`, which the
 * released configs use for `freqs_per_bands`, is read as a plain list), and checked with zod.
 */
import { readFile, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { parse, type Tags } from 'yaml';
import { z } from 'zod';

/** Released configs are 1-2 kB; a megabyte is far beyond any and small enough to parse safely. */
const MAX_CONFIG_BYTES = 1 << 20;

const pythonTuple = { tag: 'tag:yaml.org,2002:python/tuple', collection: 'seq', default: false, resolve: (seq: unknown) => seq } as unknown as Tags[number];

const posInt = z.number().int().positive();

const modelSchema = z.looseObject({
  dim: posInt,
  depth: posInt,
  stereo: z.boolean().default(false),
  num_stems: posInt.optional(),
  time_transformer_depth: posInt.default(2),
  freq_transformer_depth: posInt.default(2),
  linear_transformer_depth: z.number().int().nonnegative().default(0),
  freqs_per_bands: z.array(posInt).min(2).max(4096).optional(),
  num_bands: posInt.max(4096).optional(),
  dim_head: posInt.default(64),
  heads: posInt.default(8),
  sample_rate: posInt.default(44100),
  stft_n_fft: posInt.default(2048),
  stft_hop_length: posInt.optional(),
  stft_win_length: posInt.optional(),
  stft_normalized: z.boolean().default(false),
  match_input_audio_length: z.boolean().default(false),
});

const fileSchema = z.looseObject({
  audio: z.looseObject({ hop_length: posInt.optional(), sample_rate: posInt.optional(), dim_t: posInt.optional(), chunk_size: posInt.optional() }).optional(),
  model: modelSchema,
  training: z.looseObject({
    instruments: z.array(z.string().min(1)).min(1),
    target_instrument: z.string().min(1).nullish(),
  }),
  inference: z.looseObject({ dim_t: posInt.optional(), num_overlap: posInt.optional(), chunk_size: posInt.optional() }).optional(),
});

export type RoformerArch = 'bs_roformer' | 'mel_band_roformer';

export interface RoformerConfig {
  arch: RoformerArch;
  dim: number;
  depth: number;
  channels: 1 | 2;
  timeDepth: number;
  freqDepth: number;
  heads: number;
  dimHead: number;
  /** BS-RoFormer: STFT bins per band, low to high (they sum to nFft/2+1). */
  freqsPerBands?: number[];
  /** Mel-Band RoFormer: number of mel bands (overlapping, from librosa's mel filter bank). */
  numBands?: number;
  /** The audio rate the model runs at (audio.sample_rate). */
  sampleRate: number;
  /** Mel-Band RoFormer: the rate its mel filter bank is computed for (model.sample_rate). */
  melSampleRate: number;
  nFft: number;
  hop: number;
  win: number;
  /** Mel-Band RoFormer's istft(length=input length) option. */
  matchInputLength: boolean;
  /** The network's outputs in order: the target alone, or every instrument. */
  outputs: string[];
  /** A single-target model's other stem (mixture minus target), as MDXCSeparator returns it. */
  residual?: string;
  /** Samples per chunk: stft_hop_length (else audio.hop_length) * (inference.dim_t - 1); not always a multiple of hop. */
  chunk: number;
  /** MDXCSeparator's overlap: windows over each position; the step is chunk // overlap. */
  overlap: number;
}

/** Reads and checks a RoFormer YAML; `file` only names it in errors. */
export function parseRoformerConfig(text: string, file = 'config'): RoformerConfig {
  const name = basename(file);
  let raw: unknown;
  try {
    raw = parse(text, { customTags: [pythonTuple], maxAliasCount: 100, uniqueKeys: true });
  } catch (e) {
    throw new Error(`${name} is not valid YAML: ${(e as Error).message}`);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`${name} is not a RoFormer configuration: ${z.prettifyError(parsed.error)}`);
  const { model: m, training, inference, audio } = parsed.data;
  const fail = (why: string): never => {
    throw new Error(`${name}: ${why}`);
  };
  if (m.freqs_per_bands && m.num_bands) fail('both freqs_per_bands (BS-RoFormer) and num_bands (Mel-Band RoFormer) are set');
  if (!m.freqs_per_bands && !m.num_bands) fail('neither freqs_per_bands (BS-RoFormer) nor num_bands (Mel-Band RoFormer) is set');
  // Options the reference implements but no released vocal model uses; refused rather than run wrong.
  if (m.linear_transformer_depth > 0) fail('linear_transformer_depth > 0 (linear attention) is not supported');
  if (m.stft_normalized) fail('stft_normalized is not supported');
  const nFft = m.stft_n_fft;
  // Two hops, equal in every released config: the network's STFT hop is model.stft_hop_length, else the default of
  // BSRoformer and MelBandRoformer (512; RoformerLoader passes the key only when the yaml has it), while
  // MDXCSeparator's chunk is stft_hop_length * (dim_t - 1), falling back to audio.hop_length. Where they differ
  // the chunk is off the STFT hop grid (as the MVSep Mega model's 882000 vs 512 is), and the stage copes with the
  // shorter network output as the reference does (harness/cases/roformer_multi.py proves that path).
  const hop = m.stft_hop_length ?? 512;
  const chunkHop = m.stft_hop_length ?? audio?.hop_length ?? hop;
  const win = m.stft_win_length ?? 2048;
  if (win !== nFft) fail(`stft_win_length ${win} differs from stft_n_fft ${nFft}, which is not supported`);
  const bins = nFft / 2 + 1;
  if (m.freqs_per_bands) {
    const sum = m.freqs_per_bands.reduce((a, b) => a + b, 0);
    if (sum !== bins) fail(`freqs_per_bands sum to ${sum}, but n_fft ${nFft} gives ${bins} bins`);
  }
  const target = training.target_instrument ?? undefined;
  if (target && !training.instruments.includes(target)) fail(`target_instrument '${target}' is not among the instruments`);
  const outputs = target ? [target] : training.instruments;
  const numStems = m.num_stems ?? outputs.length;
  if (numStems !== outputs.length) fail(`num_stems ${numStems} but ${outputs.length} output stem(s) (${outputs.join(', ')})`);
  // audio-separator's chunk needs inference.dim_t (without it, demix fails on inputs of 10 s or more). A yaml
  // written for ZFTurbo's own inference (the MVSep Mega model's) has none; there the author's code takes
  // inference.chunk_size, else audio.chunk_size, and so does this. audio.dim_t is a training STFT setting that
  // neither reads for a RoFormer.
  const dimT = inference?.dim_t;
  const chunk = dimT ? chunkHop * (dimT - 1) : (inference?.chunk_size ?? audio?.chunk_size);
  if (!chunk) fail('no inference.dim_t (nor inference.chunk_size or audio.chunk_size) to set the chunk length');
  const overlap = inference?.num_overlap ?? 8;
  if (Math.floor(chunk! / overlap) <= 0) fail(`num_overlap ${overlap} exceeds the chunk of ${chunk} samples`);
  return {
    arch: m.freqs_per_bands ? 'bs_roformer' : 'mel_band_roformer',
    dim: m.dim,
    depth: m.depth,
    channels: m.stereo ? 2 : 1,
    timeDepth: m.time_transformer_depth,
    freqDepth: m.freq_transformer_depth,
    heads: m.heads,
    dimHead: m.dim_head,
    ...(m.freqs_per_bands ? { freqsPerBands: m.freqs_per_bands } : { numBands: m.num_bands! }),
    sampleRate: audio?.sample_rate ?? m.sample_rate,
    melSampleRate: m.sample_rate,
    nFft,
    hop,
    win,
    matchInputLength: m.match_input_audio_length,
    outputs,
    ...(target ? { residual: training.instruments.find((s) => s !== target) ?? 'other' } : {}),
    chunk: chunk!,
    overlap,
  };
}

export async function readRoformerConfig(path: string): Promise<RoformerConfig> {
  const { size } = await stat(path);
  if (size > MAX_CONFIG_BYTES) throw new Error(`${basename(path)}: ${size} bytes is too large for a RoFormer configuration`);
  return parseRoformerConfig(await readFile(path, 'utf8'), path);
}
