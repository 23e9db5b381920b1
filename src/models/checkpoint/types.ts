/**
 * What a model checkpoint reader gives the graph builders: every tensor as a typed byte range of the file it lives in
 * (never its data), so a graph's initializers can point at the authors' own file (ONNX external data) and a 1.4 GB
 * checkpoint is never held in memory; and the non-tensor part (a demucs package's `args`/`kwargs`, a safetensors
 * header's metadata) as plain values.
 */
export type CheckpointDType = 'float32' | 'float16' | 'bfloat16' | 'float64' | 'int64' | 'int32' | 'int16' | 'int8' | 'uint8' | 'bool';

export const DTYPE_BYTES: Readonly<Record<CheckpointDType, number>> = {
  float32: 4, float16: 2, bfloat16: 2, float64: 8, int64: 8, int32: 4, int16: 2, int8: 1, uint8: 1, bool: 1,
};

export interface TensorRef {
  /** The tensor's dotted name in the state dict (`encoder.0.conv.weight`). */
  readonly key: string;
  readonly dtype: CheckpointDType;
  readonly shape: readonly number[];
  /** Absolute path of the file holding the bytes. */
  readonly file: string;
  /** Byte offset of the first element in `file`; the elements are contiguous, row-major, little-endian. */
  readonly offset: number;
  readonly byteLength: number;
}

/**
 * An object of some class a pickle asked to create (an omegaconf DictConfig in demucs' `training_args`, a numpy array
 * in a Lightning callback) that the unpickler kept inert instead of refusing the file: only its class name is known,
 * and nothing can be done with it. Frozen, so it cannot be mistaken for (or turned into) a plain object.
 */
export class Opaque {
  constructor(readonly type: string) {
    Object.freeze(this);
  }
}

/**
 * A value of a checkpoint's non-tensor part: what a restricted unpickler or a JSON header can hold. A pickled
 * `fractions.Fraction` becomes a number, a class stored as data (demucs' `klass`) its dotted name; an object of any
 * other class is an Opaque marker, and a call of anything else the unpickler refuses (see pickle.ts).
 */
export type PlainValue = null | boolean | number | bigint | string | PlainValue[] | { readonly [key: string]: PlainValue } | TensorRef | Opaque;

export interface Checkpoint {
  readonly file: string;
  /** torch-legacy: torch.save(..., _use_new_zipfile_serialization=False), the format before PyTorch 1.6. */
  readonly format: 'torch-zip' | 'torch-legacy' | 'safetensors';
  /** The state dict: every tensor by its dotted key. */
  readonly tensors: ReadonlyMap<string, TensorRef>;
  /**
   * Everything else: for a torch file the unpickled root object with each tensor replaced by its TensorRef; for
   * safetensors the header's `__metadata__` (string values).
   */
  readonly meta: PlainValue;
}

export function isTensorRef(v: unknown): v is TensorRef {
  // Readers make TensorRefs as ordinary objects, and the unpickler makes a pickled dict prototype-less: so a dict in a
  // checkpoint that spells these fields (with some other file's path) is never taken for a tensor.
  return typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype && 'dtype' in v && 'offset' in v && 'byteLength' in v && 'file' in v;
}
