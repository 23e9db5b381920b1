/**
 * The layers of BS-RoFormer and Mel-Band RoFormer (lucidrains' design as ZFTurbo and python-audio-separator carry
 * it) as ONNX nodes over a checkpoint's tensors. Tokens are kept 2-D ([tokens, dim]) wherever a layer is a plain
 * linear map, so every nn.Linear is one Gemm reading the checkpoint's [out, in] weight with transB (no transposed
 * copy of any weight is made).
 */
import { Graph, int, ints } from '../../onnx-graph/graph.js';

/** F.normalize's eps: x / max(||x||, 1e-12). */
const NORMALIZE_EPS = 1e-12;

export class RoformerOps {
  constructor(readonly g: Graph) {}

  /** nn.Linear on [n, in] -> [n, out]. */
  linear(x: string, key: string, inDim: number, outDim: number, bias: boolean): string {
    const w = this.g.weight(`${key}.weight`, [outDim, inDim]);
    const inputs = bias ? [x, w, this.g.weight(`${key}.bias`, [outDim])] : [x, w];
    return this.g.op1('Gemm', inputs, { transB: int(1) });
  }

  /** RMSNorm: F.normalize(x, dim=-1) * sqrt(dim) * gamma, over the last axis. */
  rmsNorm(x: string, key: string, dim: number): string {
    const g = this.g;
    const norm = g.op1('ReduceL2', [x, g.ints([-1])], { keepdims: int(1) });
    const unit = g.op1('Div', [x, g.op1('Max', [norm, g.scalar(NORMALIZE_EPS)])]);
    return g.op1('Mul', [g.op1('Mul', [unit, g.scalar(Math.sqrt(dim))]), g.weight(`${key}.gamma`, [dim])]);
  }

  /**
   * nn.GELU() (the exact, erf form), written as x * (1 + erf(x / sqrt 2)) * 0.5: the node pattern onnxruntime fuses
   * into one Gelu kernel (the feed-forwards' hidden activations are the largest tensors of the network).
   */
  gelu(x: string): string {
    const g = this.g;
    const erf = g.op1('Erf', [g.op1('Div', [x, g.scalar(Math.SQRT2)])]);
    return g.op1('Mul', [g.op1('Mul', [x, g.op1('Add', [erf, g.scalar(1)])]), g.scalar(0.5)]);
  }

  reshape(x: string, shape: number[]): string {
    return this.g.op1('Reshape', [x, this.g.ints(shape)]);
  }

  transpose(x: string, perm: number[]): string {
    return this.g.op1('Transpose', [x], { perm: ints(perm) });
  }

  /**
   * cos and sin of rotary-embedding-torch's angles for positions 0..n-1 of the sequence axis of `x` (axis `seqAxis`),
   * [n, dimHead]: position * freqs (the checkpoint's `rotary_embed.freqs`, float32 as the reference multiplies them),
   * each angle repeated for the pair it rotates.
   */
  rotaryTables(x: string, seqAxis: number, freqsKey: string, dimHead: number): { cos: string; sin: string } {
    const g = this.g;
    const n = g.op1('Shape', [x], { start: int(seqAxis), end: int(seqAxis + 1) });
    const nScalar = g.op1('Squeeze', [n, g.ints([0])]);
    const pos = g.op1('Cast', [g.op1('Range', [g.constant([], [0], 'int64'), nScalar, g.constant([], [1], 'int64')])], { to: int(1) });
    const freqs = g.weight(freqsKey, [dimHead / 2]);
    // [d/2] -> [d/2, 2] -> [d]: repeat_interleave(2).
    const pairs = g.op1('Expand', [g.op1('Unsqueeze', [freqs, g.ints([1])]), g.ints([dimHead / 2, 2])]);
    const perDim = this.reshape(pairs, [1, dimHead]);
    const angles = g.op1('Mul', [g.op1('Unsqueeze', [pos, g.ints([1])]), perDim]);
    return { cos: g.op1('Cos', [angles]), sin: g.op1('Sin', [angles]) };
  }

  /** rotate_half's matrix: (x0, x1) -> (-x1, x0) for every pair, as x @ R. */
  rotateHalfMatrix(dimHead: number): string {
    const r = new Float32Array(dimHead * dimHead);
    for (let p = 0; p < dimHead / 2; p++) {
      // out[2p] = -x[2p+1]; out[2p+1] = x[2p]. R[row=in, col=out].
      r[(2 * p + 1) * dimHead + 2 * p] = -1;
      r[2 * p * dimHead + 2 * p + 1] = 1;
    }
    return this.g.constant([dimHead, dimHead], r);
  }
}

export interface AttentionShape {
  /** Sequences (batch of the attention) and their length are read from the input at run time. */
  dim: number;
  heads: number;
  dimHead: number;
  /** Sequences per attention block: the score tensor of a block is groups*heads*n*n floats, so memory is bounded. */
  group?: number;
}

export interface Rotary {
  cos: string;
  sin: string;
  rot: string;
}

/**
 * One transformer (the reference's `Transformer`) over x [B, n, dim]: per layer, gated rotary attention and a GELU
 * feed-forward, each pre-normed and residual; then the transformer's own output norm when the checkpoint has one
 * (Mel-Band RoFormer; BS-RoFormer builds its transformers with norm_output=False).
 * `batch` is B when it is known when the graph is built (time transformers: the number of bands), for grouping.
 */
export function transformer(ops: RoformerOps, x: string, key: string, depth: number, s: AttentionShape, rotary: Rotary, batch?: number): string {
  const g = ops.g;
  const { dim } = s;
  for (let l = 0; l < depth; l++) {
    const attnKey = `${key}.layers.${l}.0`;
    x = g.op1('Add', [attention(ops, x, attnKey, s, rotary, batch), x]);
    const ffKey = `${key}.layers.${l}.1.net`;
    const flat = ops.reshape(ops.rmsNorm(x, `${ffKey}.0`, dim), [-1, dim]);
    const hiddenDim = g.tensor(`${ffKey}.1.weight`).shape[0]!;
    const h = ops.gelu(ops.linear(flat, `${ffKey}.1`, dim, hiddenDim, true));
    const y = ops.linear(h, `${ffKey}.4`, hiddenDim, dim, true);
    x = g.op1('Add', [g.op1('Reshape', [y, g.op1('Shape', [x])]), x]);
  }
  return g.has(`${key}.norm.gamma`) ? ops.rmsNorm(x, `${key}.norm`, dim) : x;
}

function attention(ops: RoformerOps, x: string, key: string, s: AttentionShape, rotary: Rotary, batch?: number): string {
  const g = ops.g;
  const { dim, heads, dimHead } = s;
  const inner = heads * dimHead;
  const xShape = g.op1('Shape', [x]);
  const flat = ops.reshape(ops.rmsNorm(x, `${key}.norm`, dim), [-1, dim]);
  const qkv = ops.linear(flat, `${key}.to_qkv`, dim, 3 * inner, false);
  // "b n (qkv h d) -> qkv b h n d"
  const bn3hd = g.op1('Reshape', [qkv, g.op1('Concat', [g.op1('Slice', [xShape, g.ints([0]), g.ints([2])]), g.ints([3, heads, dimHead])], { axis: int(0) })]);
  const [q0, k0, v] = g.op('Split', [ops.transpose(bn3hd, [2, 0, 3, 1, 4])], { axis: int(0), num_outputs: int(3) }, 3).map((t) => g.op1('Squeeze', [t, g.ints([0])]));
  const rotate = (t: string) => g.op1('Add', [g.op1('Mul', [t, rotary.cos]), g.op1('Mul', [g.op1('MatMul', [t, rotary.rot]), rotary.sin])]);
  const q = rotate(q0!);
  const k = rotate(k0!);
  const scale = g.scalar(1 / Math.sqrt(dimHead));
  const attend = (qq: string, kk: string, vv: string) => {
    const scores = g.op1('Mul', [g.op1('MatMul', [qq, ops.transpose(kk, [0, 1, 3, 2])]), scale]);
    return g.op1('MatMul', [g.op1('Softmax', [scores], { axis: int(-1) }), vv]);
  };
  let out: string;
  const group = s.group ?? 0;
  if (batch && group > 0 && batch > group) {
    // Blocks of sequences one after another: onnxruntime runs the nodes in order, so only one block's scores live.
    const sizes: number[] = [];
    for (let b = 0; b < batch; b += group) sizes.push(Math.min(group, batch - b));
    const split = (t: string) => g.op('Split', [t, g.ints(sizes)], { axis: int(0) }, sizes.length);
    const [qs, ks, vs] = [split(q), split(k), split(v!)];
    out = g.op1('Concat', sizes.map((_, i) => attend(qs[i]!, ks[i]!, vs[i]!)), { axis: int(0) });
  } else {
    out = attend(q, k, v!);
  }
  // out * sigmoid(to_gates(x)) per head: gates "b n h -> b h n 1".
  const gates = g.op1('Sigmoid', [ops.linear(flat, `${key}.to_gates`, dim, heads, true)]);
  const bnh = g.op1('Reshape', [gates, g.op1('Concat', [g.op1('Slice', [xShape, g.ints([0]), g.ints([2])]), g.ints([heads])], { axis: int(0) })]);
  const gated = g.op1('Mul', [out, g.op1('Unsqueeze', [ops.transpose(bnh, [0, 2, 1]), g.ints([3])])]);
  // "b h n d -> b n (h d)", then to_out.
  const merged = ops.reshape(ops.transpose(gated, [0, 2, 1, 3]), [-1, inner]);
  const y = ops.linear(merged, `${key}.to_out.0`, inner, dim, false);
  return g.op1('Reshape', [y, xShape]);
}
