/**
 * ONNX building blocks for HTDemucs' convolutional branches (demucs hdemucs.py HEncLayer / HDecLayer, demucs.py
 * DConv and LayerScale), each reading its weights from the checkpoint by the PyTorch module's state-dict keys.
 * Values carry their static shape: every segment has the same length, so all shapes are known when the graph is
 * built and reshapes need no runtime shape arithmetic.
 */
import { type Graph, int, ints } from '../../onnx-graph/graph.js';

export interface Value {
  v: string;
  s: number[];
}

export const numel = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);

export function reshape(g: Graph, x: Value, shape: number[]): Value {
  if (numel(shape) !== numel(x.s)) throw new Error(`reshape [${x.s.join(', ')}] -> [${shape.join(', ')}]`);
  return { v: g.op1('Reshape', [x.v, g.ints(shape)]), s: shape };
}

export function transpose(g: Graph, x: Value, perm: number[]): Value {
  return { v: g.op1('Transpose', [x.v], { perm: ints(perm) }), s: perm.map((p) => x.s[p]!) };
}

export function binary(g: Graph, op: 'Add' | 'Mul' | 'Sub' | 'Div', a: Value, b: string): Value {
  return { v: g.op1(op, [a.v, b]), s: a.s };
}

export function add(g: Graph, a: Value, b: Value): Value {
  return { v: g.op1('Add', [a.v, b.v]), s: a.s };
}

/** Slice of one axis, [start, end). */
export function slice(g: Graph, x: Value, axis: number, start: number, end: number): Value {
  const s = [...x.s];
  s[axis] = end - start;
  return { v: g.op1('Slice', [x.v, g.ints([start]), g.ints([end]), g.ints([axis])]), s };
}

/**
 * torch F.gelu (exact, erf form), written as x * (1 + erf(x / sqrt 2)) * 0.5: the node pattern onnxruntime fuses
 * into one Gelu kernel.
 */
export function gelu(g: Graph, x: Value): Value {
  const erf = g.op1('Erf', [g.op1('Div', [x.v, g.scalar(Math.SQRT2)])]);
  return { v: g.op1('Mul', [g.op1('Mul', [x.v, g.op1('Add', [erf, g.scalar(1)])]), g.scalar(0.5)]), s: x.s };
}

/** torch F.glu along the channel axis: first half * sigmoid(second half). */
export function glu(g: Graph, x: Value): Value {
  const [a, b] = g.op('Split', [x.v, g.ints([x.s[1]! / 2, x.s[1]! / 2])], { axis: int(1) }, 2);
  const s = [...x.s];
  s[1] = x.s[1]! / 2;
  return { v: g.op1('Mul', [a!, g.op1('Sigmoid', [b!])]), s };
}

/** A per-channel vector [C] shaped to broadcast over [N, C, ...rest] (rank `rank`). */
function perChannel(g: Graph, key: string, c: number, rank: number): string {
  return g.op1('Reshape', [g.weight(key, [c]), g.ints([c, ...Array<number>(rank - 2).fill(1)])]);
}

/**
 * (x - mean) / sqrt(var + eps) over the last axis, with the statistics in float64. PyTorch's reductions are
 * accurate to about 1e-7 over millions of values; onnxruntime's float32 ReduceSumSquare over the small case's
 * 36,864 spectrogram values was 1.4e-4 off (PyTorch: 4e-8), which alone put the frequency branch 1e-3 off the
 * reference. Rows here reach 2.75M values (the input spectrogram) and 8.3M (the time branch's DConv norms), so every
 * norm takes its statistics in float64; the normalised values stay float32, as in PyTorch.
 */
export function normalise(g: Graph, x: Value, eps: number): string {
  const { mean, variance } = moments(g, x, [-1]);
  const std = g.op1('Cast', [g.op1('Sqrt', [g.op1('Add', [variance, g.constant([], [eps], 'double')])])], { to: int(1) });
  return g.op1('Div', [g.op1('Sub', [x.v, g.op1('Cast', [mean], { to: int(1) })]), std]);
}

/**
 * Mean and variance (biased, or unbiased given the count) of x over `axes` (kept as size-1 dims), in float64, in one
 * pass over a single float64 copy: E[x^2] - E[x]^2 loses nothing in float64 at these ranges, and a centred float64
 * copy would double the memory this costs.
 */
export function moments(g: Graph, x: Value, axes: number[], unbiased = false): { mean: string; variance: string } {
  const ax = g.ints(axes);
  const count = axes.reduce((n, a) => n * x.s[a < 0 ? x.s.length + a : a]!, 1);
  const xd = g.op1('Cast', [x.v], { to: int(11) });
  const mean = g.op1('ReduceMean', [xd, ax], { keepdims: int(1) });
  const meanSquare = g.op1('Div', [g.op1('ReduceSumSquare', [xd, ax], { keepdims: int(1) }), g.constant([], [count], 'double')]);
  const biased = g.op1('Sub', [meanSquare, g.op1('Mul', [mean, mean])]);
  const variance = unbiased ? g.op1('Mul', [biased, g.constant([], [count / (count - 1)], 'double')]) : biased;
  return { mean, variance };
}

/**
 * nn.GroupNorm(groups, C) on [N, C, ...]: each sample's channel groups normalised over the group's channels and
 * positions (biased variance, eps 1e-5), then the per-channel affine.
 */
export function groupNorm(g: Graph, x: Value, key: string, groups: number, eps = 1e-5): Value {
  const [n, c] = x.s as [number, number];
  const grouped = reshape(g, x, [n, groups, numel(x.s) / (n * groups)]);
  const back = reshape(g, { v: normalise(g, grouped, eps), s: grouped.s }, x.s);
  const scaled = g.op1('Mul', [back.v, perChannel(g, `${key}.weight`, c, x.s.length)]);
  return { v: g.op1('Add', [scaled, perChannel(g, `${key}.bias`, c, x.s.length)]), s: x.s };
}

export interface ConvSpec {
  /** Kernel per spatial axis. */
  kernel: number[];
  stride?: number[];
  /** Symmetric padding per spatial axis. */
  pad?: number[];
  dilation?: number[];
}

/** nn.Conv1d / nn.Conv2d with bias; weight [out, in, ...kernel]. */
export function conv(g: Graph, x: Value, key: string, out: number, spec: ConvSpec): Value {
  const rank = spec.kernel.length;
  const stride = spec.stride ?? Array<number>(rank).fill(1);
  const pad = spec.pad ?? Array<number>(rank).fill(0);
  const dilation = spec.dilation ?? Array<number>(rank).fill(1);
  const w = g.weight(`${key}.weight`, [out, x.s[1]!, ...spec.kernel]);
  const b = g.weight(`${key}.bias`, [out]);
  const spatial = x.s.slice(2).map((len, i) => Math.floor((len + 2 * pad[i]! - dilation[i]! * (spec.kernel[i]! - 1) - 1) / stride[i]!) + 1);
  const v = g.op1('Conv', [x.v, w, b], { kernel_shape: ints(spec.kernel), strides: ints(stride), pads: ints([...pad, ...pad]), dilations: ints(dilation) });
  return { v, s: [x.s[0]!, out, ...spatial] };
}

/** nn.ConvTranspose1d / 2d with bias, no padding; weight [in, out, ...kernel]. */
export function convTranspose(g: Graph, x: Value, key: string, out: number, kernel: number[], stride: number[]): Value {
  const w = g.weight(`${key}.weight`, [x.s[1]!, out, ...kernel]);
  const b = g.weight(`${key}.bias`, [out]);
  const spatial = x.s.slice(2).map((len, i) => (len - 1) * stride[i]! + kernel[i]!);
  const v = g.op1('ConvTranspose', [x.v, w, b], { kernel_shape: ints(kernel), strides: ints(stride) });
  return { v, s: [x.s[0]!, out, ...spatial] };
}

/**
 * DConv: `depth` residual branches, each conv(k=3, dilation 2^d) -> GroupNorm(1) -> GELU -> 1x1 conv to 2C ->
 * GroupNorm(1) -> GLU -> LayerScale, added to the input. x is [N, C, T].
 */
export function dconv(g: Graph, x: Value, key: string, depth: number, compress: number): Value {
  const c = x.s[1]!;
  const hidden = Math.trunc(c / compress);
  let y = x;
  for (let d = 0; d < depth; d++) {
    const p = `${key}.layers.${d}`;
    const dil = 2 ** d;
    let h = conv(g, y, `${p}.0`, hidden, { kernel: [3], pad: [dil], dilation: [dil] });
    h = gelu(g, groupNorm(g, h, `${p}.1`, 1));
    h = glu(g, groupNorm(g, conv(g, h, `${p}.3`, 2 * c, { kernel: [1] }), `${p}.4`, 1));
    h = { v: g.op1('Mul', [h.v, perChannel(g, `${p}.6.scale`, c, 3)]), s: h.s };
    y = add(g, y, h);
  }
  return y;
}

/** DConv over a frequency layer's [B, C, Fr, T]: every frequency row is a batch item of the 1-D branch. */
function dconvFreq(g: Graph, y: Value, key: string, depth: number, compress: number): Value {
  const [b, c, fr, t] = y.s as [number, number, number, number];
  const rows = reshape(g, transpose(g, y, [0, 2, 1, 3]), [b * fr, c, t]);
  const out = dconv(g, rows, key, depth, compress);
  return transpose(g, reshape(g, out, [b, fr, c, t]), [0, 2, 1, 3]);
}

export interface LayerSpec {
  key: string;
  freq: boolean;
  chout: number;
  kernel: number;
  stride: number;
  norm: boolean;
  normGroups: number;
  rewrite: boolean;
  /** Context of the 1x1 rewrite conv (kernel 1 + 2 * context). */
  context: number;
  dconv: boolean;
  dconvDepth: number;
  dconvComp: number;
}

function maybeNorm(g: Graph, x: Value, key: string, spec: LayerSpec): Value {
  return spec.norm ? groupNorm(g, x, key, spec.normGroups) : x;
}

/** HEncLayer: strided conv (kernel along frequency or time), norm, GELU, DConv, 1x1 rewrite + norm + GLU. */
export function encoderLayer(g: Graph, x: Value, spec: LayerSpec): Value {
  const pad = Math.trunc(spec.kernel / 4);
  let y: Value;
  if (spec.freq) {
    y = conv(g, x, `${spec.key}.conv`, spec.chout, { kernel: [spec.kernel, 1], stride: [spec.stride, 1], pad: [pad, 0] });
  } else {
    const le = x.s[2]!;
    if (le % spec.stride !== 0) {
      // HEncLayer pads the time axis on the right up to a multiple of the stride.
      const extra = spec.stride - (le % spec.stride);
      x = { v: g.op1('Pad', [x.v, g.ints([0, 0, 0, 0, 0, extra])], { mode: { s: 'constant' } }), s: [x.s[0]!, x.s[1]!, le + extra] };
    }
    y = conv(g, x, `${spec.key}.conv`, spec.chout, { kernel: [spec.kernel], stride: [spec.stride], pad: [pad] });
  }
  y = gelu(g, maybeNorm(g, y, `${spec.key}.norm1`, spec));
  if (spec.dconv) y = spec.freq ? dconvFreq(g, y, `${spec.key}.dconv`, spec.dconvDepth, spec.dconvComp) : dconv(g, y, `${spec.key}.dconv`, spec.dconvDepth, spec.dconvComp);
  if (!spec.rewrite) return y;
  const k = 1 + 2 * spec.context;
  const rw = spec.freq
    ? conv(g, y, `${spec.key}.rewrite`, 2 * spec.chout, { kernel: [k, k], pad: [spec.context, spec.context] })
    : conv(g, y, `${spec.key}.rewrite`, 2 * spec.chout, { kernel: [k], pad: [spec.context] });
  return glu(g, maybeNorm(g, rw, `${spec.key}.norm2`, spec));
}

/**
 * HDecLayer: add the skip, 1x1 rewrite (context 1: a 3x3 conv on frequency layers) + norm + GLU, DConv, transposed
 * conv + norm, trimmed by the encoder's padding (frequency) or to the encoder's input length (time), GELU unless
 * it is the last layer. `length`: the time length to trim to.
 */
export function decoderLayer(g: Graph, x: Value, skip: Value, spec: LayerSpec & { last: boolean; length: number }): Value {
  const chin = x.s[1]!;
  let y = add(g, x, skip);
  if (spec.rewrite) {
    const k = 1 + 2 * spec.context;
    const rw = spec.freq
      ? conv(g, y, `${spec.key}.rewrite`, 2 * chin, { kernel: [k, k], pad: [spec.context, spec.context] })
      : conv(g, y, `${spec.key}.rewrite`, 2 * chin, { kernel: [k], pad: [spec.context] });
    y = glu(g, maybeNorm(g, rw, `${spec.key}.norm1`, spec));
  }
  if (spec.dconv) y = spec.freq ? dconvFreq(g, y, `${spec.key}.dconv`, spec.dconvDepth, spec.dconvComp) : dconv(g, y, `${spec.key}.dconv`, spec.dconvDepth, spec.dconvComp);
  const pad = Math.trunc(spec.kernel / 4);
  let z: Value;
  if (spec.freq) {
    z = maybeNorm(g, convTranspose(g, y, `${spec.key}.conv_tr`, spec.chout, [spec.kernel, 1], [spec.stride, 1]), `${spec.key}.norm2`, spec);
    if (pad > 0) z = slice(g, z, 2, pad, z.s[2]! - pad);
  } else {
    z = maybeNorm(g, convTranspose(g, y, `${spec.key}.conv_tr`, spec.chout, [spec.kernel], [spec.stride]), `${spec.key}.norm2`, spec);
    z = slice(g, z, 2, pad, pad + spec.length);
  }
  return spec.last ? z : gelu(g, z);
}
