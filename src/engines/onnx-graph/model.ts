/**
 * Writes ONNX models from TypeScript: the subset of onnx.proto a graph of nodes and initializers needs, with the
 * official field numbers, so onnxruntime reads the result as it is. Initializers are inline or external (a byte
 * range of another file beside the model), which is how the separation engines run the authors' own checkpoints in
 * place. The test suite's stand-in models are built with the same encoder.
 */
import protobuf from 'protobufjs';

const ONNX_SUBSET_PROTO = `
syntax = "proto2";
package onnx;

message AttributeProto {
  enum AttributeType {
    UNDEFINED = 0; FLOAT = 1; INT = 2; STRING = 3; TENSOR = 4; GRAPH = 5;
    FLOATS = 6; INTS = 7; STRINGS = 8; TENSORS = 9; GRAPHS = 10;
  }
  optional string name = 1;
  optional string ref_attr_name = 21;
  optional string doc_string = 13;
  optional AttributeType type = 20;
  optional float f = 2;
  optional int64 i = 3;
  optional bytes s = 4;
  optional TensorProto t = 5;
  optional GraphProto g = 6;
  repeated float floats = 7;
  repeated int64 ints = 8;
  repeated bytes strings = 9;
  repeated TensorProto tensors = 10;
  repeated GraphProto graphs = 11;
}

message ValueInfoProto {
  optional string name = 1;
  optional TypeProto type = 2;
  optional string doc_string = 3;
}

message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  optional string name = 3;
  optional string op_type = 4;
  optional string domain = 7;
  repeated AttributeProto attribute = 5;
  optional string doc_string = 6;
}

message ModelProto {
  optional int64 ir_version = 1;
  repeated OperatorSetIdProto opset_import = 8;
  optional string producer_name = 2;
  optional string producer_version = 3;
  optional string domain = 4;
  optional int64 model_version = 5;
  optional string doc_string = 6;
  optional GraphProto graph = 7;
}

message GraphProto {
  repeated NodeProto node = 1;
  optional string name = 2;
  repeated TensorProto initializer = 5;
  optional string doc_string = 10;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
  repeated ValueInfoProto value_info = 13;
}

message TensorProto {
  repeated int64 dims = 1;
  optional int32 data_type = 2;
  repeated float float_data = 4;
  repeated int32 int32_data = 5;
  repeated bytes string_data = 6;
  repeated int64 int64_data = 7;
  optional string name = 8;
  optional string doc_string = 12;
  optional bytes raw_data = 9;
  repeated double double_data = 10;
  repeated uint64 uint64_data = 11;
  repeated StringStringEntryProto external_data = 13;
  optional int32 data_location = 14;
}

message StringStringEntryProto {
  optional string key = 1;
  optional string value = 2;
}

message TensorShapeProto {
  message Dimension {
    oneof value {
      int64 dim_value = 1;
      string dim_param = 2;
    }
    optional string denotation = 3;
  }
  repeated Dimension dim = 1;
}

message TypeProto {
  message Tensor {
    optional int32 elem_type = 1;
    optional TensorShapeProto shape = 2;
  }
  oneof value {
    Tensor tensor_type = 1;
  }
  optional string denotation = 6;
}

message OperatorSetIdProto {
  optional string domain = 1;
  optional int64 version = 2;
}
`;

/** TensorProto.DataType values (onnx.proto). */
export const ONNX_DTYPE = { float: 1, uint8: 2, int8: 3, int16: 5, int32: 6, int64: 7, bool: 9, float16: 10, double: 11, bfloat16: 16 } as const;
export type OnnxDType = keyof typeof ONNX_DTYPE;

/** An initializer: its values inline, or (`external`) a byte range of another file in the model's folder. */
export type TensorSpec = InlineTensorSpec | ExternalTensorSpec;

export interface InlineTensorSpec {
  name: string;
  dataType: OnnxDType;
  dims: number[];
  values: ArrayLike<number> | readonly bigint[] | BigInt64Array;
}

export interface ExternalTensorSpec {
  name: string;
  dataType: OnnxDType;
  dims: number[];
  /** `location` is relative to the model file's folder (onnxruntime refuses paths that leave it). */
  external: { location: string; offset: number; length: number };
}

export interface ValueSpec {
  name: string;
  elemType: OnnxDType;
  /** A number is a fixed size, a string a symbolic (dynamic) dimension. */
  shape: Array<number | string>;
}

export type AttrValue =
  | { f: number }
  | { i: number }
  | { s: string }
  | { floats: number[] }
  | { ints: number[] }
  | { t: TensorSpec }
  /** A subgraph (If branches): it reads outer values by name and declares only its outputs. */
  | { g: SubgraphSpec };

export interface SubgraphSpec {
  name: string;
  outputs: ValueSpec[];
  nodes: NodeSpec[];
  initializers?: TensorSpec[];
}

export interface NodeSpec {
  opType: string;
  inputs: string[];
  outputs: string[];
  name?: string;
  domain?: string;
  attributes?: Record<string, AttrValue>;
}

export interface GraphSpec {
  name?: string;
  inputs: ValueSpec[];
  outputs: ValueSpec[];
  nodes: NodeSpec[];
  initializers?: TensorSpec[];
  opset?: number;
  irVersion?: number;
  producer?: string;
}

/** Little-endian raw bytes, which is what raw_data holds for every numeric type. */
function rawBytes(t: InlineTensorSpec): Uint8Array {
  const n = t.values.length;
  switch (t.dataType) {
    case 'float':
      return new Uint8Array(Float32Array.from(t.values as ArrayLike<number>).buffer);
    case 'double':
      return new Uint8Array(Float64Array.from(t.values as ArrayLike<number>).buffer);
    case 'int32':
      return new Uint8Array(Int32Array.from(t.values as ArrayLike<number>).buffer);
    case 'int64': {
      const out = new BigInt64Array(n);
      for (let k = 0; k < n; k++) out[k] = BigInt((t.values as ArrayLike<number | bigint>)[k]!);
      return new Uint8Array(out.buffer);
    }
    case 'uint8':
    case 'bool':
      return Uint8Array.from(t.values as ArrayLike<number>);
    case 'int8':
      return new Uint8Array(Int8Array.from(t.values as ArrayLike<number>).buffer);
    case 'int16':
      return new Uint8Array(Int16Array.from(t.values as ArrayLike<number>).buffer);
    case 'float16':
    case 'bfloat16':
      throw new Error(`inline ${t.dataType} initializers are not supported (${t.name}); point at the file's bytes instead`);
  }
}

function tensorMessage(t: TensorSpec) {
  if ('external' in t) {
    const { location, offset, length } = t.external;
    return {
      name: t.name,
      dims: t.dims,
      dataType: ONNX_DTYPE[t.dataType],
      dataLocation: 1,
      externalData: [
        { key: 'location', value: location },
        { key: 'offset', value: String(offset) },
        { key: 'length', value: String(length) },
      ],
    };
  }
  return { name: t.name, dims: t.dims, dataType: ONNX_DTYPE[t.dataType], rawData: rawBytes(t) };
}

function valueInfo(v: ValueSpec) {
  return {
    name: v.name,
    type: {
      tensorType: {
        elemType: ONNX_DTYPE[v.elemType],
        shape: { dim: v.shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, v: AttrValue): Record<string, unknown> {
  if ('g' in v) return { name, type: 5, g: graphMessage({ ...v.g, inputs: [] }, `${v.g.name}_`) };
  if ('f' in v) return { name, type: 1, f: v.f };
  if ('i' in v) return { name, type: 2, i: v.i };
  if ('s' in v) return { name, type: 3, s: new TextEncoder().encode(v.s) };
  if ('t' in v) return { name, type: 4, t: tensorMessage(v.t) };
  if ('floats' in v) return { name, type: 6, floats: v.floats };
  return { name, type: 7, ints: v.ints };
}

/** `nodePrefix` keeps a subgraph's default node names apart from the outer graph's. */
function graphMessage(spec: Omit<GraphSpec, 'opset' | 'irVersion' | 'producer'>, nodePrefix = ''): Record<string, unknown> {
  return {
    name: spec.name ?? 'graph',
    node: spec.nodes.map((n, k) => ({
      name: n.name ?? `${nodePrefix}${n.opType}_${k}`,
      opType: n.opType,
      domain: n.domain ?? '',
      input: n.inputs,
      output: n.outputs,
      attribute: Object.entries(n.attributes ?? {}).map(([name, v]) => attribute(name, v)),
    })),
    initializer: (spec.initializers ?? []).map(tensorMessage),
    input: spec.inputs.map(valueInfo),
    output: spec.outputs.map(valueInfo),
  };
}

/** Serializes a graph of nodes + initializers to ONNX ModelProto bytes. */
export function buildOnnxModel(spec: GraphSpec): Buffer {
  const root = protobuf.parse(ONNX_SUBSET_PROTO, { keepCase: false }).root;
  const Model = root.lookupType('onnx.ModelProto');
  const message = {
    irVersion: spec.irVersion ?? 8,
    producerName: spec.producer ?? 'soundry',
    opsetImport: [{ domain: '', version: spec.opset ?? 17 }],
    graph: graphMessage(spec),
  };
  const err = Model.verify(message);
  if (err) throw new Error(`invalid ONNX model spec: ${err}`);
  return Buffer.from(Model.encode(Model.fromObject(message)).finish());
}
