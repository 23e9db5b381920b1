/**
 * HTDemucs' cross-domain transformer (demucs transformer.py CrossTransformerEncoder) as ONNX: the frequency branch's
 * [B, C, Fr, T1] flattened to T1*Fr tokens (time-major) with a 2-D sin embedding, the time branch's [B, C, T2] with
 * a 1-D sin embedding, then layers alternating self-attention (each branch alone) and cross-attention (each branch
 * queries the other's input to that layer). Layers are nn.TransformerEncoderLayer-style (norm_first, LayerScale,
 * GELU feed-forward, a GroupNorm(1) over all tokens and channels at the end when norm_out).
 * The embeddings are computed in the graph from their positions (onnxruntime folds them once at session start),
 * in float32 as PyTorch computes them, so the graph file stays small.
 */
import { float, type Graph, int, ints } from '../../onnx-graph/graph.js';
import type { HtdemucsConfig } from './htdemucs-config.js';
import { add, gelu, normalise, reshape, slice, transpose, type Value } from './htdemucs-layers.js';

function layerNorm(g: Graph, x: Value, key: string): Value {
  const c = x.s[x.s.length - 1]!;
  return { v: g.op1('LayerNormalization', [x.v, g.weight(`${key}.weight`, [c]), g.weight(`${key}.bias`, [c])], { axis: int(-1), epsilon: float(1e-5) }), s: x.s };
}

/** MyGroupNorm(1, C) on [B, N, C]: normalised over all N*C values of the item, affine per channel. */
function groupNormTokens(g: Graph, x: Value, key: string): Value {
  const [b, n, c] = x.s as [number, number, number];
  const flat = reshape(g, x, [b, 1, n * c]);
  const back = g.op1('Reshape', [normalise(g, flat, 1e-5), g.ints(x.s)]);
  return { v: g.op1('Add', [g.op1('Mul', [back, g.weight(`${key}.weight`, [c])]), g.weight(`${key}.bias`, [c])]), s: x.s };
}

/** nn.Linear on [..., in]: x W^T + b (the transpose of a weight is folded at session start). */
function linear(g: Graph, x: Value, key: string, out: number): Value {
  const inDim = x.s[x.s.length - 1]!;
  const w = g.op1('Transpose', [g.weight(`${key}.weight`, [out, inDim])], { perm: ints([1, 0]) });
  return { v: g.op1('Add', [g.op1('MatMul', [x.v, w]), g.weight(`${key}.bias`, [out])]), s: [...x.s.slice(0, -1), out] };
}

/** One third of nn.MultiheadAttention's packed in-projection applied to x. */
function inProjection(g: Graph, x: Value, key: string, part: number, e: number): Value {
  const w = { v: g.weight(`${key}.in_proj_weight`, [3 * e, e]), s: [3 * e, e] };
  const b = { v: g.weight(`${key}.in_proj_bias`, [3 * e]), s: [3 * e] };
  const wPart = transpose(g, slice(g, w, 0, part * e, (part + 1) * e), [1, 0]);
  const bPart = slice(g, b, 0, part * e, (part + 1) * e);
  return { v: g.op1('Add', [g.op1('MatMul', [x.v, wPart.v]), bPart.v]), s: [...x.s.slice(0, -1), e] };
}

/** nn.MultiheadAttention(batch_first) of queries q [B, N, E] over keys/values kv [B, M, E]. */
function attention(g: Graph, q: Value, kv: Value, key: string, heads: number): Value {
  const [b, n, e] = q.s as [number, number, number];
  const m = kv.s[1]!;
  const d = e / heads;
  const qh = transpose(g, reshape(g, inProjection(g, q, key, 0, e), [b, n, heads, d]), [0, 2, 1, 3]);
  const kh = transpose(g, reshape(g, inProjection(g, kv, key, 1, e), [b, m, heads, d]), [0, 2, 3, 1]);
  const vh = transpose(g, reshape(g, inProjection(g, kv, key, 2, e), [b, m, heads, d]), [0, 2, 1, 3]);
  const scores = g.op1('MatMul', [g.op1('Mul', [qh.v, g.scalar(1 / Math.sqrt(d))]), kh.v]);
  const probs = g.op1('Softmax', [scores], { axis: int(-1) });
  const ctx = { v: g.op1('MatMul', [probs, vh.v]), s: [b, heads, n, d] };
  const merged = reshape(g, transpose(g, ctx, [0, 2, 1, 3]), [b, n, e]);
  return linear(g, merged, `${key}.out_proj`, e);
}

function layerScale(g: Graph, x: Value, key: string, on: boolean): Value {
  return on ? { v: g.op1('Mul', [x.v, g.weight(`${key}.scale`, [x.s[x.s.length - 1]!])]), s: x.s } : x;
}

function feedForward(g: Graph, x: Value, key: string, cfg: HtdemucsConfig): Value {
  const e = x.s[2]!;
  const hidden = Math.trunc(e * cfg.tHiddenScale);
  const h = linear(g, x, `${key}.linear1`, hidden);
  const act = cfg.tGelu ? gelu(g, h) : { v: g.op1('Relu', [h.v]), s: h.s };
  return linear(g, act, `${key}.linear2`, e);
}

/** MyTransformerEncoderLayer (self-attention) when `kv` is null, else CrossTransformerEncoderLayer. */
function encoderLayer(g: Graph, x: Value, kv: Value | null, key: string, cfg: HtdemucsConfig): Value {
  const ls = cfg.tLayerScale;
  const ffNorm = kv ? 'norm3' : 'norm2';
  if (cfg.tNormFirst) {
    const q = layerNorm(g, x, `${key}.norm1`);
    const a = kv ? attention(g, q, layerNorm(g, kv, `${key}.norm2`), `${key}.cross_attn`, cfg.tHeads) : attention(g, q, q, `${key}.self_attn`, cfg.tHeads);
    let y = add(g, x, layerScale(g, a, `${key}.gamma_1`, ls));
    y = add(g, y, layerScale(g, feedForward(g, layerNorm(g, y, `${key}.${ffNorm}`), key, cfg), `${key}.gamma_2`, ls));
    return cfg.tNormOut ? groupNormTokens(g, y, `${key}.norm_out`) : y;
  }
  // Post-norm form: the cross layer then uses norm1/norm2 as the self layer does.
  const a = kv ? attention(g, x, kv, `${key}.cross_attn`, cfg.tHeads) : attention(g, x, x, `${key}.self_attn`, cfg.tHeads);
  const y = layerNorm(g, add(g, x, layerScale(g, a, `${key}.gamma_1`, ls)), `${key}.norm1`);
  return layerNorm(g, add(g, y, layerScale(g, feedForward(g, y, key, cfg), `${key}.gamma_2`, ls)), `${key}.norm2`);
}

/** A float32 vector constant computed as PyTorch rounds it. */
function f32(values: number[]): Float32Array {
  return Float32Array.from(values, (v) => Math.fround(v));
}

/** create_2d_sin_embedding(C, Fr, T1) flattened as the tokens: [1, T1*Fr, C]. */
function embedding2d(g: Graph, c: number, fr: number, t1: number, maxPeriod: number): string {
  const half = c / 2;
  // div_term = exp(arange(0, half, 2) * -(log(max_period) / half)), in float32.
  const step = Math.fround(-(Math.log(maxPeriod) / half));
  const div = g.constant([1, half / 2], f32(Array.from({ length: half / 2 }, (_, i) => Math.exp(Math.fround(2 * i * step)))));
  const axis = (len: number): string => {
    // [len, half]: channel 2j = sin(pos * div_j), 2j + 1 = cos(pos * div_j).
    const phase = g.op1('Mul', [g.constant([len, 1], f32(Array.from({ length: len }, (_, i) => i))), div]);
    const both = g.op1('Concat', [g.op1('Unsqueeze', [g.op1('Sin', [phase]), g.ints([2])]), g.op1('Unsqueeze', [g.op1('Cos', [phase]), g.ints([2])])], { axis: int(2) });
    return g.op1('Reshape', [both, g.ints([len, half])]);
  };
  const width = g.op1('Expand', [g.op1('Reshape', [axis(t1), g.ints([t1, 1, half])]), g.ints([t1, fr, half])]);
  const height = g.op1('Expand', [g.op1('Reshape', [axis(fr), g.ints([1, fr, half])]), g.ints([t1, fr, half])]);
  return g.op1('Reshape', [g.op1('Concat', [width, height], { axis: int(2) }), g.ints([1, t1 * fr, c])]);
}

/** create_sin_embedding(T2, C) as [1, T2, C]: cos(pos / max_period^(j / (C/2 - 1))) then the sines. */
function embedding1d(g: Graph, c: number, t2: number, maxPeriod: number): string {
  const half = c / 2;
  const denom = g.constant([1, half], f32(Array.from({ length: half }, (_, j) => Math.pow(maxPeriod, Math.fround(j / (half - 1))))));
  const phase = g.op1('Div', [g.constant([t2, 1], f32(Array.from({ length: t2 }, (_, i) => i))), denom]);
  return g.op1('Unsqueeze', [g.op1('Concat', [g.op1('Cos', [phase]), g.op1('Sin', [phase])], { axis: int(1) }), g.ints([0])]);
}

/** CrossTransformerEncoder.forward: x [B, C, Fr, T1], xt [B, C, T2] -> the same shapes. */
export function crossTransformer(g: Graph, x: Value, xt: Value, cfg: HtdemucsConfig): [Value, Value] {
  const [b, c, fr, t1] = x.s as [number, number, number, number];
  const t2 = xt.s[2]!;
  const key = 'crosstransformer';
  let tokens = reshape(g, transpose(g, x, [0, 3, 2, 1]), [b, t1 * fr, c]);
  let tokensT = transpose(g, xt, [0, 2, 1]);
  if (cfg.tNormIn) {
    tokens = layerNorm(g, tokens, `${key}.norm_in`);
    tokensT = layerNorm(g, tokensT, `${key}.norm_in_t`);
  }
  const w = g.scalar(cfg.tWeightPosEmbed);
  tokens = { v: g.op1('Add', [tokens.v, g.op1('Mul', [embedding2d(g, c, fr, t1, cfg.tMaxPeriod), w])]), s: tokens.s };
  tokensT = { v: g.op1('Add', [tokensT.v, g.op1('Mul', [embedding1d(g, c, t2, cfg.tMaxPeriod), w])]), s: tokensT.s };
  const classic = cfg.tCrossFirst ? 1 : 0;
  for (let i = 0; i < cfg.tLayers; i++) {
    if (i % 2 === classic) {
      tokens = encoderLayer(g, tokens, null, `${key}.layers.${i}`, cfg);
      tokensT = encoderLayer(g, tokensT, null, `${key}.layers_t.${i}`, cfg);
    } else {
      const old = tokens;
      tokens = encoderLayer(g, tokens, tokensT, `${key}.layers.${i}`, cfg);
      tokensT = encoderLayer(g, tokensT, old, `${key}.layers_t.${i}`, cfg);
    }
  }
  const xOut = transpose(g, reshape(g, tokens, [b, t1, fr, c]), [0, 3, 2, 1]);
  return [xOut, transpose(g, tokensT, [0, 2, 1])];
}
