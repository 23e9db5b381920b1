/**
 * The configuration of an HTDemucs checkpoint, read from the authors' own files: the `kwargs` of demucs' package
 * (Meta's `.th`: torch.save of {klass, args, kwargs, state, training_args}) or the `kwargs` JSON of the safetensors
 * metadata (the author's Hugging Face copies, written by adefossez/demucs tools/export_hf.py: metadata `klass`,
 * `args`, `kwargs`, a Fraction as {"_type": "fraction", "numerator", "denominator"}). Absent kwargs take the
 * defaults of `HTDemucs.__init__` (demucs 4.0.1), as demucs' own `load_model` does. Options that change the network
 * in ways the graph builder does not implement are refused by name rather than silently ignored.
 */
import { basename } from 'node:path';
import { z } from 'zod';
import type { Checkpoint, PlainValue, TensorRef } from '../../../models/checkpoint/types.js';
import { isTensorRef } from '../../../models/checkpoint/types.js';

const fraction = z.object({ _type: z.literal('fraction'), numerator: z.number().int(), denominator: z.number().int().positive() });

const kwargsSchema = z.object({
  sources: z.array(z.string().min(1)).min(1).max(64),
  audio_channels: z.number().int().positive().default(2),
  samplerate: z.number().int().positive().default(44100),
  segment: z.union([z.number().positive(), fraction]).default(10),
  channels: z.number().int().positive().default(48),
  channels_time: z.number().int().positive().nullable().default(null),
  growth: z.number().positive().default(2),
  nfft: z.number().int().positive().default(4096),
  wiener_iters: z.number().int().default(0),
  cac: z.boolean().default(true),
  depth: z.number().int().positive().max(16).default(4),
  rewrite: z.boolean().default(true),
  multi_freqs: z.array(z.number()).nullable().default(null),
  freq_emb: z.number().default(0.2),
  emb_scale: z.number().default(10),
  kernel_size: z.number().int().positive().default(8),
  time_stride: z.number().int().positive().default(2),
  stride: z.number().int().positive().default(4),
  context: z.number().int().nonnegative().default(1),
  context_enc: z.number().int().nonnegative().default(0),
  norm_starts: z.number().int().nonnegative().default(4),
  norm_groups: z.number().int().positive().default(4),
  dconv_mode: z.number().int().min(0).max(3).default(1),
  dconv_depth: z.number().int().default(2),
  dconv_comp: z.number().positive().default(8),
  bottom_channels: z.number().int().nonnegative().default(0),
  t_layers: z.number().int().nonnegative().max(64).default(5),
  t_emb: z.string().default('sin'),
  t_hidden_scale: z.number().positive().default(4.0),
  t_heads: z.number().int().positive().default(8),
  t_norm_in: z.boolean().default(true),
  t_norm_in_group: z.boolean().default(false),
  t_group_norm: z.union([z.boolean(), z.number()]).default(false),
  t_norm_first: z.boolean().default(true),
  t_norm_out: z.boolean().default(true),
  t_max_period: z.number().positive().default(10000.0),
  t_layer_scale: z.boolean().default(true),
  t_gelu: z.boolean().default(true),
  t_weight_pos_embed: z.number().default(1.0),
  t_sin_random_shift: z.number().int().default(0),
  t_sparse_self_attn: z.boolean().default(false),
  t_sparse_cross_attn: z.boolean().default(false),
  t_cross_first: z.boolean().default(false),
  use_train_segment: z.boolean().default(true),
}).loose();

export interface HtdemucsConfig {
  sources: string[];
  audioChannels: number;
  samplerate: number;
  /** Training segment in samples: int(segment * samplerate), the length of every network pass. */
  segmentSamples: number;
  channels: number;
  growth: number;
  nfft: number;
  depth: number;
  rewrite: boolean;
  freqEmb: number;
  embScale: number;
  kernelSize: number;
  stride: number;
  context: number;
  contextEnc: number;
  normStarts: number;
  normGroups: number;
  dconvMode: number;
  dconvDepth: number;
  dconvComp: number;
  bottomChannels: number;
  tLayers: number;
  tHiddenScale: number;
  tHeads: number;
  tNormIn: boolean;
  tNormFirst: boolean;
  tNormOut: boolean;
  tMaxPeriod: number;
  tLayerScale: boolean;
  tGelu: boolean;
  tWeightPosEmbed: number;
  tCrossFirst: boolean;
}

/** A demucs checkpoint as the graph builder needs it: the configuration, and the state dict by its own keys. */
export interface DemucsCheckpoint {
  config: HtdemucsConfig;
  /** The checkpoint with `tensors` keyed as HTDemucs' state dict (`encoder.0.conv.weight`, ...). */
  checkpoint: Checkpoint;
}

function segmentSamples(segment: number | z.infer<typeof fraction>, rate: number): number {
  if (typeof segment !== 'number') return Math.floor((segment.numerator * rate) / segment.denominator);
  // A torch reader gives the pickled Fraction as a number (39/5 -> 7.8, whose product with 44100 is
  // 343980.00000000006): demucs takes int() of the exact product, so snap what is an integer up to rounding.
  const x = segment * rate;
  return Math.abs(x - Math.round(x)) < 1e-6 ? Math.round(x) : Math.floor(x);
}

/** Parses and checks a package's kwargs; `file` names the checkpoint in every message. */
export function parseHtdemucsKwargs(raw: unknown, file: string): HtdemucsConfig {
  const parsed = kwargsSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`${file}: HTDemucs kwargs are not valid: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const k = parsed.data;
  const refuse = (why: string): never => {
    throw new Error(`${file}: HTDemucs with ${why} is not supported`);
  };
  if (!k.cac) refuse('cac=false (magnitude masking with Wiener filtering)');
  if (k.multi_freqs && k.multi_freqs.length > 0) refuse('multi_freqs (MultiWrap layers)');
  if (k.t_emb !== 'sin') refuse(`t_emb='${k.t_emb}' (only the sin positional embedding)`);
  if (k.t_sin_random_shift !== 0) refuse('t_sin_random_shift (a random embedding shift at inference)');
  if (k.t_sparse_self_attn || k.t_sparse_cross_attn) refuse('sparse attention (xformers masks)');
  if (k.t_norm_in_group || k.t_group_norm) refuse('group-norm transformer layers (t_norm_in_group / t_group_norm)');
  if (k.channels_time !== null && k.channels_time !== k.channels) refuse('channels_time different from channels');
  if (!k.use_train_segment) refuse('use_train_segment=false (the graph runs one fixed segment length)');
  if (k.dconv_depth <= 0) refuse('dconv_depth <= 0 (undilated DConv)');
  let freqs = k.nfft / 2;
  for (let i = 0; i < k.depth; i++) {
    // The released models stay on the frequency axis to the bottom (2048 bins -> 8 after four layers); a layer that
    // reaches one frequency row merges the branches through an 'empty' time layer, which no released model has.
    if (freqs <= k.kernel_size) refuse(`depth ${k.depth} at nfft ${k.nfft} (layer ${i} would reach a single frequency row)`);
    if (freqs % k.stride !== 0) refuse(`nfft ${k.nfft}: ${freqs} bins at layer ${i} do not divide by stride ${k.stride}`);
    freqs /= k.stride;
  }
  const top = k.channels * k.growth ** (k.depth - 1);
  const dim = k.bottom_channels || top;
  if (k.t_layers > 0 && (dim % k.t_heads !== 0 || dim % 4 !== 0)) refuse(`transformer width ${dim} with ${k.t_heads} heads`);
  return {
    sources: k.sources,
    audioChannels: k.audio_channels,
    samplerate: k.samplerate,
    segmentSamples: segmentSamples(k.segment, k.samplerate),
    channels: k.channels,
    growth: k.growth,
    nfft: k.nfft,
    depth: k.depth,
    rewrite: k.rewrite,
    freqEmb: k.freq_emb,
    embScale: k.emb_scale,
    kernelSize: k.kernel_size,
    stride: k.stride,
    context: k.context,
    contextEnc: k.context_enc,
    normStarts: k.norm_starts,
    normGroups: k.norm_groups,
    dconvMode: k.dconv_mode,
    dconvDepth: k.dconv_depth,
    dconvComp: k.dconv_comp,
    bottomChannels: k.bottom_channels,
    tLayers: k.t_layers,
    tHiddenScale: k.t_hidden_scale,
    tHeads: k.t_heads,
    tNormIn: k.t_norm_in,
    tNormFirst: k.t_norm_first,
    tNormOut: k.t_norm_out,
    tMaxPeriod: k.t_max_period,
    tLayerScale: k.t_layer_scale,
    tGelu: k.t_gelu,
    tWeightPosEmbed: k.t_weight_pos_embed,
    tCrossFirst: k.t_cross_first,
  };
}

const KLASS = 'demucs.htdemucs.HTDemucs';

function isRecord(v: PlainValue | undefined): v is { readonly [key: string]: PlainValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !isTensorRef(v);
}

/** The package's class as a dotted name, however the torch reader renders a pickled class reference. */
function klassName(v: PlainValue | undefined): string | undefined {
  if (typeof v === 'string') return v;
  if (isRecord(v)) {
    const mod = v.module ?? v.__module__;
    const name = v.name ?? v.qualname ?? v.__qualname__;
    if (typeof mod === 'string' && typeof name === 'string') return `${mod}.${name}`;
    const global = v.global ?? v.class;
    if (typeof global === 'string') return global.replace(/\s+/g, '.');
  }
  return undefined;
}

/**
 * Reads the configuration and state dict of an HTDemucs checkpoint: a safetensors file with the author's metadata,
 * or a demucs package read by the torch reader (meta = the unpickled dict, tensors as TensorRefs under `state`).
 */
export function readDemucsCheckpoint(ckpt: Checkpoint): DemucsCheckpoint {
  const file = basename(ckpt.file);
  const meta = ckpt.meta;
  if (!isRecord(meta)) throw new Error(`${file}: no demucs package metadata (klass/args/kwargs)`);
  const klass = klassName(meta.klass);
  if (klass !== undefined && klass !== KLASS) throw new Error(`${file}: model class ${klass} is not ${KLASS}`);
  if (ckpt.format === 'safetensors') {
    if (typeof meta.kwargs !== 'string') throw new Error(`${file}: the safetensors metadata has no 'kwargs' (not a demucs export)`);
    if (klass === undefined) throw new Error(`${file}: the safetensors metadata has no 'klass' (not a demucs export)`);
    let kwargs: unknown;
    try {
      kwargs = JSON.parse(meta.kwargs);
    } catch {
      throw new Error(`${file}: the metadata 'kwargs' is not JSON`);
    }
    return { config: parseHtdemucsKwargs(kwargs, file), checkpoint: ckpt };
  }
  const state = meta.state;
  if (!isRecord(state)) throw new Error(`${file}: the package has no 'state' dict`);
  if (state.__quantized) throw new Error(`${file}: a diffq-quantized package (mdx_q and the like) is not supported`);
  const tensors = new Map<string, TensorRef>();
  for (const [key, value] of Object.entries(state)) {
    if (!isTensorRef(value)) throw new Error(`${file}: state entry '${key}' is not a tensor`);
    tensors.set(key, value);
  }
  return { config: parseHtdemucsKwargs(meta.kwargs, file), checkpoint: { ...ckpt, tensors } };
}
