/**
 * safetensors reader: an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and byte
 * range, then the raw buffers. Only the header is read; tensors stay in the file as byte ranges. The header is
 * untrusted: its size is bounded, every range must lie inside the file and match its dtype and shape, and a bad file
 * fails with a message naming it.
 */
import { open } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { z } from 'zod';
import { DTYPE_BYTES, type Checkpoint, type CheckpointDType, type TensorRef } from './types.js';

/** Real headers are tens of kB (the 53-stem RoFormer's is under 1 MB); anything larger is not a model file. */
const MAX_HEADER_BYTES = 16 * 1024 * 1024;

const DTYPES: Readonly<Record<string, CheckpointDType>> = {
  F32: 'float32', F16: 'float16', BF16: 'bfloat16', F64: 'float64', I64: 'int64', I32: 'int32', I16: 'int16', I8: 'int8', U8: 'uint8', BOOL: 'bool',
};

const entrySchema = z.object({
  dtype: z.string(),
  shape: z.array(z.number().int().nonnegative()).max(16),
  data_offsets: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
});

export async function readSafetensors(path: string): Promise<Checkpoint> {
  const file = resolve(path);
  const name = basename(file);
  const fail = (why: string): never => {
    throw new Error(`${name} is not a valid safetensors file: ${why}`);
  };
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    if (size < 8) fail('shorter than its header');
    const lenBuf = Buffer.alloc(8);
    await fh.read(lenBuf, 0, 8, 0);
    const headerLength = lenBuf.readBigUInt64LE(0);
    if (headerLength > BigInt(Math.min(MAX_HEADER_BYTES, size - 8))) fail(`header length ${headerLength} does not fit the file`);
    const n = Number(headerLength);
    const headerBuf = Buffer.alloc(n);
    await fh.read(headerBuf, 0, n, 8);
    let header: unknown;
    try {
      header = JSON.parse(headerBuf.toString('utf8'));
    } catch {
      return fail('its header is not JSON');
    }
    if (typeof header !== 'object' || header === null || Array.isArray(header)) return fail('its header is not an object');
    const dataStart = 8 + n;
    const tensors = new Map<string, TensorRef>();
    let meta: Record<string, string> = {};
    for (const [key, raw] of Object.entries(header)) {
      if (key === '__metadata__') {
        const parsed = z.record(z.string(), z.string()).safeParse(raw);
        if (!parsed.success) fail('__metadata__ is not a map of strings');
        meta = parsed.data!;
        continue;
      }
      const parsed = entrySchema.safeParse(raw);
      if (!parsed.success) return fail(`tensor '${key}' has a malformed entry`);
      const { dtype: code, shape, data_offsets: [begin, end] } = parsed.data;
      const dtype = DTYPES[code];
      if (!dtype) return fail(`tensor '${key}' has unsupported dtype ${code}`);
      const elements = shape.reduce((a, b) => a * b, 1);
      if (end < begin || end - begin !== elements * DTYPE_BYTES[dtype]) fail(`tensor '${key}' has ${end - begin} bytes for shape [${shape.join(', ')}] of ${code}`);
      if (dataStart + end > size) fail(`tensor '${key}' lies past the end of the file (truncated download?)`);
      tensors.set(key, { key, dtype, shape, file, offset: dataStart + begin, byteLength: end - begin });
    }
    return { file, format: 'safetensors', tensors, meta };
  } finally {
    await fh.close();
  }
}
