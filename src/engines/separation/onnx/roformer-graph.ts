/**
 * BS-RoFormer and Mel-Band RoFormer as an ONNX graph over the authors' checkpoint (weights stay in the .ckpt or
 * .safetensors file as external initializers). The STFT and iSTFT stay outside: the graph takes one chunk's complex
 * spectrogram and gives each stem's complex mask, both laid out as the reference's "b t (f s c)" features:
 *
 *   input  `spec` [frames, bins * channels * 2]: frame t, bin f, channel s, (re, im) at ((f * channels + s) * 2 + c)
 *   output `mask` [stems, frames, bins * channels * 2], the same layout; the stage multiplies (complex) and inverts.
 *
 * The number of frames is free (a short song's single chunk is shorter); everything else is fixed by the
 * configuration and checked against the checkpoint's tensors, so a file that is not the architecture its YAML
 * describes fails with the file and the tensor named. The network, as python-audio-separator 0.47.1 runs it:
 * band split (per band RMSNorm + Linear), `depth` blocks of a time transformer (attention along frames, per band)
 * and a frequency transformer (along bands, per frame), BS-RoFormer's final RMSNorm, and per stem and band a
 * mask-estimator MLP (Linear/Tanh..., then GLU). The Mel model reads overlapping bands through an index list and
 * averages the masks of the bands that share a bin (the reference's scatter_add over num_bands_per_freq).
 */
import type { Checkpoint } from '../../../models/checkpoint/types.js';
import { Graph, int } from '../../onnx-graph/graph.js';
import { bsBands, melBands, type RoformerBands } from './roformer-bands.js';
import type { RoformerConfig } from './roformer-config.js';
import { RoformerOps, transformer, type AttentionShape } from './roformer-layers.js';

export interface RoformerGraphOptions {
  /**
   * Sequences per attention block in the time transformers (their score tensor is bands * heads * frames^2 floats:
   * 1.3 GB for BS-RoFormer at 801 frames; in blocks of 8 bands, 160 MB). 0 runs all bands at once.
   */
  attentionGroup?: number;
  /**
   * Only these output heads (mask estimators), in this order: a task needs one or two of a multi-instrument model's
   * heads (the MVSep Mega model has 53 of about 12 M parameters each). Absent: every output of the configuration.
   */
  heads?: ReadonlyArray<{ name: string; index: number }>;
}

export interface BuiltRoformerGraph {
  bytes: Buffer;
  bands: RoformerBands;
  /** Floats per frame of `spec` and of each stem's `mask`. */
  features: number;
  stems: number;
}

export function roformerBands(cfg: RoformerConfig): RoformerBands {
  return cfg.freqsPerBands
    ? bsBands(cfg.freqsPerBands, cfg.channels)
    : melBands(cfg.melSampleRate, cfg.nFft, cfg.numBands!, cfg.channels);
}

export function buildRoformerGraph(ckpt: Checkpoint, cfg: RoformerConfig, opts: RoformerGraphOptions = {}): BuiltRoformerGraph {
  const g = new Graph(ckpt, 18);
  const ops = new RoformerOps(g);
  const bands = roformerBands(cfg);
  const bins = cfg.nFft / 2 + 1;
  const entries = bins * cfg.channels;
  const features = entries * 2;
  const { dim } = cfg;
  const nb = bands.perBand.length;
  const mel = cfg.arch === 'mel_band_roformer';

  const spec = g.input('spec', ['frames', features]);
  // Mel: the band features are bins picked (and repeated where bands overlap) from the "(f s)" axis.
  const picked = mel
    ? ops.reshape(g.op1('Gather', [ops.reshape(spec, [-1, entries, 2]), g.constant([bands.freqIndices.length], Array.from(bands.freqIndices), 'int64')], { axis: int(1) }), [-1, bands.freqIndices.length * 2])
    : spec;
  const bandInputs = g.op('Split', [picked, g.ints(bands.perBand.map((n) => 2 * n))], { axis: int(1) }, nb);
  const tokens = bandInputs.map((b, i) => {
    const dimIn = 2 * bands.perBand[i]!;
    const key = `band_split.to_features.${i}`;
    const y = ops.linear(ops.rmsNorm(b, `${key}.0`, dimIn), `${key}.1`, dimIn, dim, true);
    return g.op1('Unsqueeze', [y, g.ints([1])]);
  });
  let x = g.op1('Concat', tokens, { axis: int(1) }); // [frames, bands, dim]

  const shape: AttentionShape = { dim, heads: cfg.heads, dimHead: cfg.dimHead, group: opts.attentionGroup ?? 8 };
  const rot = ops.rotateHalfMatrix(cfg.dimHead);
  // One table per axis; the reference shares one RotaryEmbedding per axis across all layers, and when the file
  // holds different values under the layers' keys, load_state_dict leaves the last one in it.
  const last = cfg.depth - 1;
  const timeRot = { ...ops.rotaryTables(spec, 0, `layers.${last}.0.layers.0.0.rotary_embed.freqs`, cfg.dimHead), rot };
  const freqRot = { ...ops.rotaryTables(x, 1, `layers.${last}.1.layers.0.0.rotary_embed.freqs`, cfg.dimHead), rot };
  for (let i = 0; i < cfg.depth; i++) {
    const t = transformer(ops, ops.transpose(x, [1, 0, 2]), `layers.${i}.0`, cfg.timeDepth, shape, timeRot, nb);
    x = transformer(ops, ops.transpose(t, [1, 0, 2]), `layers.${i}.1`, cfg.freqDepth, shape, freqRot);
  }
  if (g.has('final_norm.gamma')) x = ops.rmsNorm(x, 'final_norm', dim);

  const stems = cfg.outputs.length;
  if (g.has(`mask_estimators.${stems}.to_freqs.0.0.0.weight`) || !g.has(`mask_estimators.${stems - 1}.to_freqs.0.0.0.weight`)) {
    throw new Error(`${ckpt.file}: the checkpoint's mask estimators do not match the configuration's ${stems} stem(s) (${cfg.outputs.join(', ')})`);
  }
  const chosen = opts.heads?.map((h) => h.index) ?? cfg.outputs.map((_, n) => n);
  const missing = chosen.filter((n) => !Number.isInteger(n) || n < 0 || n >= stems);
  if (missing.length || chosen.length === 0) throw new Error(`${ckpt.file}: no output head ${missing.join(', ') || '(none asked for)'}; the configuration has ${stems} (0-${stems - 1})`);
  const masks: string[] = [];
  for (const n of chosen) {
    const perBand = bands.perBand.map((count, b) => {
      const key = `mask_estimators.${n}.to_freqs.${b}.0`;
      let h = g.op1('Gather', [x, g.constant([], [b], 'int64')], { axis: int(1) }); // [frames, dim]
      let inDim = dim;
      // MLP: Linear (Tanh Linear)*; the depth is whatever the file holds (BS and Mel count it differently).
      for (let j = 0; g.has(`${key}.${j}.weight`); j += 2) {
        if (j > 0) h = g.op1('Tanh', [h]);
        const outDim = g.tensor(`${key}.${j}.weight`).shape[0]!;
        h = ops.linear(h, `${key}.${j}`, inDim, outDim, true);
        inDim = outDim;
      }
      if (inDim !== 4 * count) throw new Error(`${ckpt.file}: mask estimator ${n} band ${b} gives ${inDim} values, expected ${4 * count}`);
      const [a, gate] = g.op('Split', [h], { axis: int(1), num_outputs: int(2) }, 2);
      return g.op1('Mul', [a!, g.op1('Sigmoid', [gate!])]); // GLU
    });
    let m = g.op1('Concat', perBand, { axis: int(1) });
    if (mel) m = averageOverlaps(g, ops.reshape(m, [-1, bands.freqIndices.length, 2]), bands, entries);
    masks.push(g.op1('Unsqueeze', [m, g.ints([0])]));
  }
  g.output(masks.length > 1 ? g.op1('Concat', masks, { axis: int(0) }) : masks[0]!, 'mask', [masks.length, 'frames', features]);
  return { bytes: g.toBytes('roformer'), bands, features, stems: masks.length };
}

/**
 * Mel: each "(f s)" entry's mask is the mean of the masks of the bands that hold it. Entry e is held by
 * bandsPerEntry[e] bands; gather the j-th holder's value for every entry (zero where there is none), sum in band
 * order as scatter_add does, divide by the count.
 */
function averageOverlaps(g: Graph, m: string, bands: RoformerBands, entries: number): string {
  const holders: number[][] = Array.from({ length: entries }, () => []);
  bands.freqIndices.forEach((e, k) => holders[e]!.push(k));
  const most = Math.max(...holders.map((h) => h.length));
  let sum = '';
  for (let j = 0; j < most; j++) {
    const idx = holders.map((h) => h[j] ?? 0);
    let v = g.op1('Gather', [m, g.constant([entries], idx, 'int64')], { axis: int(1) });
    if (holders.some((h) => h.length <= j)) v = g.op1('Mul', [v, g.constant([1, entries, 1], holders.map((h) => (h.length > j ? 1 : 0)))]);
    sum = j === 0 ? v : g.op1('Add', [sum, v]);
  }
  const count = g.constant([1, entries, 1], Array.from(bands.bandsPerEntry));
  return g.op1('Reshape', [g.op1('Div', [sum, count]), g.ints([-1, entries * 2])]);
}
