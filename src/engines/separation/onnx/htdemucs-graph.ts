/**
 * Builds HTDemucs (demucs htdemucs.py) as an ONNX graph whose weights are the checkpoint's own tensors (external
 * initializers into Meta's `.th` or the author's `.safetensors`, fp16 cast to float32 once at session start).
 * The graph has the 'sevagh' layout DemucsStage runs (src/engines/separation/onnx/htdemucs.ts), so the STFT and iSTFT
 * stay outside it:
 *   inputs  `waveform` [1, C, L] (one training segment) and `spectrogram` [1, 2C, F, T] (demucsSpec's complex-as-
 *           channels: L.re, L.im, R.re, R.im), F = nfft/2, T = ceil(L / hop);
 *   outputs `freq` [1, S, 2C, F, T] (the frequency branch's spectrogram, iSTFT'd by the stage) and `time` [1, S, C, L].
 * Inside: HTDemucs.forward from the normalisation of both inputs (mean and unbiased std of each) to the
 * de-normalised branch outputs, i.e. everything between `_spec` and `_ispec`.
 */
import { basename } from 'node:path';
import type { Checkpoint } from '../../../models/checkpoint/types.js';
import { Graph, int } from '../../onnx-graph/graph.js';
import type { HtdemucsConfig } from './htdemucs-config.js';
import { binary, conv, decoderLayer, encoderLayer, type LayerSpec, moments, reshape, type Value } from './htdemucs-layers.js';
import { crossTransformer } from './htdemucs-transformer.js';

/** Bumped whenever the graph this module writes changes, so cached graphs beside checkpoints are rebuilt. */
export const HTDEMUCS_GRAPH_VERSION = 1;

export interface HtdemucsShapes {
  /** Samples per network pass. */
  length: number;
  bins: number;
  frames: number;
}

export function htdemucsShapes(cfg: HtdemucsConfig): HtdemucsShapes {
  const hop = cfg.nfft / 4;
  return { length: cfg.segmentSamples, bins: cfg.nfft / 2, frames: Math.ceil(cfg.segmentSamples / hop) };
}

/**
 * (x - mean) / (1e-5 + std) over all of x, std unbiased as torch's; returns the mean and std (float32) for the way
 * back. The statistics are float64 (see `moments`): 2.75M spectrogram values summed in float32 are 1e-4 off.
 */
function standardise(g: Graph, x: Value): { x: Value; mean: string; std: string } {
  const axes = x.s.map((_, i) => i).slice(1);
  const { mean: meanD, variance } = moments(g, x, axes, true);
  const mean = g.op1('Cast', [meanD], { to: int(1) });
  const std = g.op1('Cast', [g.op1('Sqrt', [variance])], { to: int(1) });
  return { x: { v: g.op1('Div', [g.op1('Sub', [x.v, mean]), g.op1('Add', [std, g.scalar(1e-5)])]), s: x.s }, mean, std };
}

/** Channel widths per level: [input, output] of the frequency and time encoders (the decoders mirror them). */
function widths(cfg: HtdemucsConfig): Array<{ inZ: number; outZ: number; inT: number; outT: number }> {
  const out = [];
  let chin = cfg.audioChannels;
  let chinZ = 2 * chin;
  let chout = cfg.channels;
  let choutZ = cfg.channels;
  for (let i = 0; i < cfg.depth; i++) {
    out.push({ inZ: chinZ, outZ: choutZ, inT: chin, outT: chout });
    chin = chout;
    chinZ = choutZ;
    chout = Math.trunc(cfg.growth * chout);
    choutZ = Math.trunc(cfg.growth * choutZ);
  }
  return out;
}

/**
 * `taps`: also output each level's encoder and decoder results (`tap.encoder.<i>`, `tap.tencoder.<i>`,
 * `tap.decoder.<j>`, `tap.tdecoder.<j>`, `tap.transformer`, `tap.transformer_t`), to find where a graph departs
 * from PyTorch; DemucsStage ignores them, but they cost memory, so only diagnostics ask for them.
 */
export function buildHtdemucsGraph(ckpt: Checkpoint, cfg: HtdemucsConfig, opts: { taps?: boolean } = {}): Buffer {
  const g = new Graph(ckpt, 18);
  const tap = (name: string, v: Value) => {
    if (opts.taps) g.output(v.v, `tap.${name}`, v.s);
  };
  const { length: L, bins: F, frames: T } = htdemucsShapes(cfg);
  const C = cfg.audioChannels;
  const S = cfg.sources.length;
  const wave = { v: g.input('waveform', [1, C, L]), s: [1, C, L] };
  const spec = { v: g.input('spectrogram', [1, 2 * C, F, T]), s: [1, 2 * C, F, T] };
  const zNorm = standardise(g, spec);
  const tNorm = standardise(g, wave);
  let x = zNorm.x;
  let xt = tNorm.x;

  const levels = widths(cfg);
  const common = (level: number) => ({
    kernel: cfg.kernelSize, stride: cfg.stride, norm: level >= cfg.normStarts, normGroups: cfg.normGroups, rewrite: cfg.rewrite,
    dconvDepth: cfg.dconvDepth, dconvComp: cfg.dconvComp,
  });
  const saved: Value[] = [];
  const savedT: Value[] = [];
  const lengthsT: number[] = [];
  for (let i = 0; i < cfg.depth; i++) {
    const w = levels[i]!;
    const enc: LayerSpec = { ...common(i), key: `encoder.${i}`, freq: true, chout: w.outZ, context: cfg.contextEnc, dconv: (cfg.dconvMode & 1) !== 0 };
    lengthsT.push(xt.s[2]!);
    xt = encoderLayer(g, xt, { ...enc, key: `tencoder.${i}`, freq: false, chout: w.outT });
    savedT.push(xt);
    tap(`tencoder.${i}`, xt);
    x = encoderLayer(g, x, enc);
    tap(`encoder.${i}`, x);
    if (i === 0 && cfg.freqEmb) {
      // ScaledEmbedding: the table times emb_scale, times freq_emb, added per (channel, frequency row).
      const rows = x.s[2]!;
      const table = g.op1('Transpose', [g.weight('freq_emb.embedding.weight', [rows, w.outZ])], { perm: { ints: [1, 0] } });
      const emb = g.op1('Mul', [g.op1('Mul', [table, g.scalar(cfg.embScale)]), g.scalar(cfg.freqEmb)]);
      x = binary(g, 'Add', x, g.op1('Reshape', [emb, g.ints([1, w.outZ, rows, 1])]));
    }
    saved.push(x);
  }

  if (cfg.tLayers > 0) {
    const [b, c, fr, t] = x.s as [number, number, number, number];
    if (cfg.bottomChannels) {
      x = reshape(g, conv(g, reshape(g, x, [b, c, fr * t]), 'channel_upsampler', cfg.bottomChannels, { kernel: [1] }), [b, cfg.bottomChannels, fr, t]);
      xt = conv(g, xt, 'channel_upsampler_t', cfg.bottomChannels, { kernel: [1] });
    }
    [x, xt] = crossTransformer(g, x, xt, cfg);
    tap('transformer', x);
    tap('transformer_t', xt);
    if (cfg.bottomChannels) {
      x = reshape(g, conv(g, reshape(g, x, [b, cfg.bottomChannels, fr * t]), 'channel_downsampler', c, { kernel: [1] }), [b, c, fr, t]);
      xt = conv(g, xt, 'channel_downsampler_t', c, { kernel: [1] });
    }
  }

  for (let j = 0; j < cfg.depth; j++) {
    const level = cfg.depth - 1 - j;
    const w = levels[level]!;
    const last = level === 0;
    const dec = { ...common(level), key: `decoder.${j}`, freq: true, context: cfg.context, dconv: (cfg.dconvMode & 2) !== 0, last, length: 0 };
    x = decoderLayer(g, x, saved.pop()!, { ...dec, chout: last ? S * 2 * C : w.inZ });
    xt = decoderLayer(g, xt, savedT.pop()!, { ...dec, key: `tdecoder.${j}`, freq: false, chout: last ? S * C : w.inT, length: lengthsT.pop()! });
    tap(`decoder.${j}`, x);
    tap(`tdecoder.${j}`, xt);
  }

  const freq = reshape(g, x, [1, S, 2 * C, F, T]);
  const time = reshape(g, xt, [1, S, C, L]);
  g.output(g.op1('Add', [g.op1('Mul', [freq.v, zNorm.std]), zNorm.mean]), 'freq', freq.s);
  g.output(g.op1('Add', [g.op1('Mul', [time.v, tNorm.std]), tNorm.mean]), 'time', time.s);
  return g.toBytes(`htdemucs ${basename(ckpt.file)} v${HTDEMUCS_GRAPH_VERSION}`);
}
