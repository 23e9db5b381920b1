/**
 * A graph under construction whose weights are the tensors of an authors' checkpoint. `weight(key)` adds an external
 * initializer pointing at the tensor's bytes in the checkpoint file (fp16 and bf16 go through a Cast, which
 * onnxruntime folds once at session start), so the graph file itself holds only the architecture and is a few
 * hundred kB however large the model. The graph must be written into the folder that holds the checkpoint, since
 * external data paths are relative to the graph and may not leave its folder.
 */
import { basename } from 'node:path';
import type { Checkpoint, CheckpointDType, TensorRef } from '../../models/checkpoint/types.js';
import { buildOnnxModel, type AttrValue, type NodeSpec, type OnnxDType, type TensorSpec, type ValueSpec } from './model.js';

const ONNX_OF: Partial<Record<CheckpointDType, OnnxDType>> = {
  float32: 'float', float16: 'float16', bfloat16: 'bfloat16', float64: 'double', int64: 'int64', int32: 'int32', int8: 'int8', uint8: 'uint8', bool: 'bool',
};

export const ints = (xs: readonly number[]): AttrValue => ({ ints: [...xs] });
export const int = (i: number): AttrValue => ({ i });
export const float = (f: number): AttrValue => ({ f });

export class Graph {
  readonly nodes: NodeSpec[] = [];
  readonly initializers: TensorSpec[] = [];
  private readonly inputs: ValueSpec[] = [];
  private readonly outputs: ValueSpec[] = [];
  private readonly weights = new Map<string, string>();
  private count = 0;

  /** `checkpoint` is null for a graph built from constants only. */
  constructor(private readonly checkpoint: Checkpoint | null, private readonly opset = 18) {}

  fresh(prefix: string): string {
    return `${prefix.replace(/[^A-Za-z0-9_]/g, '_')}_${this.count++}`;
  }

  input(name: string, shape: Array<number | string>, elemType: OnnxDType = 'float'): string {
    this.inputs.push({ name, elemType, shape });
    return name;
  }

  /** Names the value `from` as a graph output. */
  output(from: string, name: string, shape: Array<number | string>, elemType: OnnxDType = 'float'): void {
    this.nodes.push({ opType: 'Identity', inputs: [from], outputs: [name] });
    this.outputs.push({ name, elemType, shape });
  }

  /** The tensor `key` of the checkpoint; the file and the key are named when it is missing or its shape is not `shape`. */
  tensor(key: string, shape?: readonly number[]): TensorRef {
    const ref = this.checkpoint?.tensors.get(key);
    if (!ref) throw new Error(`${this.fileName()}: no tensor '${key}' (not the architecture its configuration describes)`);
    if (shape && (shape.length !== ref.shape.length || shape.some((d, i) => d !== ref.shape[i]))) {
      throw new Error(`${this.fileName()}: tensor '${key}' has shape [${ref.shape.join(', ')}], expected [${shape.join(', ')}]`);
    }
    return ref;
  }

  has(key: string): boolean {
    return this.checkpoint?.tensors.has(key) ?? false;
  }

  /** A float32 value holding the checkpoint tensor `key` (added once, however often it is asked for). */
  weight(key: string, shape?: readonly number[]): string {
    const known = this.weights.get(key);
    if (known) return known;
    const ref = this.tensor(key, shape);
    const dataType = ONNX_OF[ref.dtype];
    if (!dataType) throw new Error(`${this.fileName()}: tensor '${key}' has type ${ref.dtype}, which no layer takes`);
    const name = this.fresh(`w_${key}`);
    this.initializers.push({ name, dataType, dims: [...ref.shape], external: { location: basename(ref.file), offset: ref.offset, length: ref.byteLength } });
    const value = dataType === 'float' ? name : this.op1('Cast', [name], { to: int(1) });
    this.weights.set(key, value);
    return value;
  }

  /** A constant that is not a weight (shapes, axes, scalars, tables computed here). */
  constant(dims: number[], values: ArrayLike<number> | readonly bigint[], dataType: 'float' | 'double' | 'int64' | 'int32' | 'bool' = 'float'): string {
    const name = this.fresh('c');
    this.initializers.push({ name, dataType, dims, values });
    return name;
  }

  /** An int64 vector constant (shapes, axes, starts and ends). */
  ints(values: readonly number[]): string {
    return this.constant([values.length], values, 'int64');
  }

  scalar(value: number): string {
    return this.constant([], [value]);
  }

  op(opType: string, inputs: string[], attributes?: Record<string, AttrValue>, nOutputs = 1): string[] {
    const outputs = Array.from({ length: nOutputs }, () => this.fresh(opType.toLowerCase()));
    this.nodes.push({ opType, inputs, outputs, ...(attributes ? { attributes } : {}) });
    return outputs;
  }

  op1(opType: string, inputs: string[], attributes?: Record<string, AttrValue>): string {
    return this.op(opType, inputs, attributes)[0]!;
  }

  toBytes(name: string): Buffer {
    return buildOnnxModel({ name, inputs: this.inputs, outputs: this.outputs, nodes: this.nodes, initializers: this.initializers, opset: this.opset, irVersion: 9 });
  }

  private fileName(): string {
    return this.checkpoint ? basename(this.checkpoint.file) : 'graph';
  }
}
