/**
 * The checkpoint case (harness/cases/checkpoints.py): files torch.save and safetensors wrote themselves, read back by
 * Soundry's checkpoint reader. Every tensor must have the key, dtype and shape torch listed, and its values, read
 * through the byte range the reader gave, must equal torch's (as float32); the files torch must not be read from
 * (a transposed tensor) must be refused, naming the file. One row per file.
 */
import { basename, join } from 'node:path';
import { z } from 'zod';
import { readCheckpoint, readTensorData } from '../../../src/models/checkpoint/index.js';
import { compareOutput, goldenTensor, readCaseJson, readGolden, type OutputError } from './golden.js';

const tensorSchema = z.object({ key: z.string(), dtype: z.string(), shape: z.array(z.number().int().nonnegative()) });

export const checkpointCaseSchema = z.object({
  family: z.literal('checkpoints'),
  files: z.record(z.string(), z.object({ format: z.string(), tensors: z.array(tensorSchema) }).loose()),
  refused: z.array(z.object({ file: z.string(), message: z.string() })),
});

export type CheckpointCase = z.infer<typeof checkpointCaseSchema>;

export async function readCheckpointCase(dir: string): Promise<CheckpointCase> {
  return checkpointCaseSchema.parse(await readCaseJson(dir));
}

export async function compareCase(dir: string): Promise<OutputError[]> {
  const spec = await readCheckpointCase(dir);
  const golden = await readGolden(dir);
  const rows: OutputError[] = [];
  for (const [file, expected] of Object.entries(spec.files)) {
    const ckpt = await readCheckpoint(join(dir, file));
    if (ckpt.format !== expected.format) throw new Error(`${file}: read as ${ckpt.format}, written as ${expected.format}`);
    // A state dict keeps its order; a safetensors header has none (the writer sorts by dtype and size).
    const order = <T extends { key: string }>(list: T[]): T[] => (ckpt.format === 'safetensors' ? list.sort((a, b) => a.key.localeCompare(b.key)) : list);
    const got = order([...ckpt.tensors.values()].map((t) => ({ key: t.key, dtype: t.dtype, shape: [...t.shape] })));
    const want = order(expected.tensors.map((t) => ({ key: t.key, dtype: t.dtype, shape: t.shape })));
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${file}: tensors ${JSON.stringify(got)}, torch wrote ${JSON.stringify(want)}`);
    const values: Float32Array[] = [];
    const refs: Float32Array[] = [];
    for (const ref of ckpt.tensors.values()) {
      values.push(await readTensorData(ref));
      refs.push(goldenTensor(golden, `output.${file}:${ref.key}`, dir).data);
    }
    const flat = (parts: Float32Array[]) => Float32Array.from(parts.flatMap((p) => [...p]));
    rows.push(compareOutput(file, [flat(values)], [flat(refs)]));
  }
  for (const { file, message } of spec.refused) {
    const outcome = await readCheckpoint(join(dir, file)).then(
      () => 'it was read',
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    if (!outcome.startsWith(basename(file)) || !outcome.includes(message)) throw new Error(`${file} should be refused with '${message}': ${outcome}`);
    rows.push({ name: `${file} (refused)`, maxAbs: 0, rel: 0 });
  }
  return rows;
}
