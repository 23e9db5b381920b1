/**
 * Checkpoint files as the authors publish them: torch.save (ZIP or legacy) and safetensors, told apart by their first
 * bytes rather than their names (`.th`, `.ckpt`, `.pt`, `.pth` are all torch.save). Plus the two helpers graph builders
 * need: a state dict under a prefix, and a small tensor's values.
 */
import { open } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { readSafetensors } from './safetensors.js';
import { readTorchCheckpoint } from './torch.js';
import type { Checkpoint, TensorRef } from './types.js';

export { readSafetensors } from './safetensors.js';
export { readTorchCheckpoint } from './torch.js';
export { DTYPE_BYTES, Opaque, isTensorRef, type Checkpoint, type CheckpointDType, type PlainValue, type TensorRef } from './types.js';

/** Values a graph needs as numbers (mel-band indices, a window): larger tensors stay in the file. */
export const MAX_TENSOR_DATA_ELEMENTS = 1 << 24;

export async function readCheckpoint(path: string): Promise<Checkpoint> {
  const file = resolve(path);
  const head = Buffer.alloc(512);
  let bytesRead: number;
  const fh = await open(file, 'r');
  try {
    ({ bytesRead } = await fh.read(head, 0, head.length, 0));
  } finally {
    await fh.close();
  }
  // 'PK\x03\x04': torch.save's ZIP. PROTO 2+ then LONG1 (or, from protocol 4, a FRAME before it): the legacy
  // torch.save's magic number.
  if (bytesRead >= 4 && head.readUInt32LE(0) === 0x04034b50) return readTorchCheckpoint(file);
  if (bytesRead >= 3 && head[0] === 0x80 && head[1]! >= 2 && head[1]! <= 5 && (head[2] === 0x8a || head[2] === 0x95)) return readTorchCheckpoint(file);
  if (bytesRead >= 262 && head.toString('latin1', 257, 262) === 'ustar') {
    throw new Error(`${basename(file)} is a tar-format torch.save file (PyTorch before 0.4), which is not supported: load and save it again with a current torch`);
  }
  return readSafetensors(file);
}

/**
 * The tensors whose key starts with `prefix`, keyed without it (`model.` for a Lightning module's wrapped network).
 * An empty result is refused: a wrong prefix would otherwise surface later as a missing weight.
 */
export function stateDict(ckpt: Checkpoint, prefix = ''): Map<string, TensorRef> {
  const out = new Map<string, TensorRef>();
  for (const [key, ref] of ckpt.tensors) {
    if (key.startsWith(prefix)) out.set(key.slice(prefix.length), { ...ref, key: key.slice(prefix.length) });
  }
  if (out.size === 0) throw new Error(`${basename(ckpt.file)} has no tensors${prefix ? ` under '${prefix}'` : ''}`);
  return out;
}

/** A small tensor's elements as float32 (fp16/bf16 widened, float64 and integers rounded to the nearest float32). */
export async function readTensorData(ref: TensorRef, maxElements = MAX_TENSOR_DATA_ELEMENTS): Promise<Float32Array> {
  const n = ref.shape.reduce((a, b) => a * b, 1);
  if (n > maxElements) throw new Error(`${basename(ref.file)}: tensor '${ref.key}' has ${n} elements, more than ${maxElements} to read as values`);
  const buf = Buffer.alloc(ref.byteLength);
  const fh = await open(ref.file, 'r');
  try {
    const { bytesRead } = await fh.read(buf, 0, ref.byteLength, ref.offset);
    if (bytesRead !== ref.byteLength) throw new Error(`${basename(ref.file)}: tensor '${ref.key}' lies past the end of the file (truncated?)`);
  } finally {
    await fh.close();
  }
  const out = new Float32Array(n);
  switch (ref.dtype) {
    case 'float32': for (let i = 0; i < n; i++) out[i] = buf.readFloatLE(i * 4); break;
    case 'float64': for (let i = 0; i < n; i++) out[i] = buf.readDoubleLE(i * 8); break;
    case 'float16': for (let i = 0; i < n; i++) out[i] = halfToFloat(buf.readUInt16LE(i * 2)); break;
    // bfloat16 is the top half of a float32.
    case 'bfloat16': {
      const word = Buffer.alloc(4);
      for (let i = 0; i < n; i++) {
        word.writeUInt32LE(buf.readUInt16LE(i * 2) << 16 >>> 0, 0);
        out[i] = word.readFloatLE(0);
      }
      break;
    }
    case 'int64': for (let i = 0; i < n; i++) out[i] = Number(buf.readBigInt64LE(i * 8)); break;
    case 'int32': for (let i = 0; i < n; i++) out[i] = buf.readInt32LE(i * 4); break;
    case 'int16': for (let i = 0; i < n; i++) out[i] = buf.readInt16LE(i * 2); break;
    case 'int8': for (let i = 0; i < n; i++) out[i] = buf.readInt8(i); break;
    case 'uint8': for (let i = 0; i < n; i++) out[i] = buf[i]!; break;
    case 'bool': for (let i = 0; i < n; i++) out[i] = buf[i] ? 1 : 0; break;
  }
  return out;
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}
