/**
 * Reading a reference-harness case folder (harness/generate.py: case.json + golden.safetensors + the weights in the
 * authors' format) and measuring Soundry's outputs against it. Shared by every family's comparison module
 * (test/engines/reference/<family>.ts) and by scripts/reference-check.ts, so all report the same figures:
 * per output, max |soundry - ref| and rel = max |soundry - ref| / max |ref|.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { readSafetensors } from '../../../src/models/checkpoint/safetensors.js';

/** The bar: every output within 1e-4 of the reference, relative to the reference's peak. */
export const REL_TOLERANCE = 1e-4;

export interface OutputError {
  name: string;
  maxAbs: number;
  rel: number;
}

export interface Float32Tensor {
  shape: number[];
  data: Float32Array;
}

/** Every case.json names its family; the rest is the family's own configuration, parsed by its module. */
export const caseBaseSchema = z.object({ family: z.string().min(1) }).loose();

export async function readCaseJson(dir: string): Promise<z.infer<typeof caseBaseSchema>> {
  const path = join(dir, 'case.json');
  const parsed = caseBaseSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
  if (!parsed.success) throw new Error(`${path}: ${parsed.error.message}`);
  return parsed.data;
}

/** golden.safetensors as float32 tensors by name (`input`, `output.<stem>`, `net.<name>`). */
export async function readGolden(dir: string): Promise<Map<string, Float32Tensor>> {
  const path = join(dir, 'golden.safetensors');
  const ckpt = await readSafetensors(path);
  const bytes = await readFile(path);
  const out = new Map<string, Float32Tensor>();
  for (const [key, t] of ckpt.tensors) {
    if (t.dtype !== 'float32') throw new Error(`${path}: tensor ${key} is ${t.dtype}, goldens are float32`);
    // Copy out of the file buffer: its offsets need not be 4-byte aligned for a Float32Array view.
    const data = new Float32Array(t.byteLength / 4);
    new Uint8Array(data.buffer).set(bytes.subarray(t.offset, t.offset + t.byteLength));
    out.set(key, { shape: [...t.shape], data });
  }
  return out;
}

export function goldenTensor(golden: Map<string, Float32Tensor>, name: string, dir: string): Float32Tensor {
  const t = golden.get(name);
  if (!t) throw new Error(`${dir}/golden.safetensors has no tensor '${name}' (has ${[...golden.keys()].join(', ')})`);
  return t;
}

/** Channels [C, N] of a golden tensor as C arrays of N samples (views, no copy). */
export function channels(t: Float32Tensor): Float32Array[] {
  if (t.shape.length !== 2) throw new Error(`expected [channels, samples], got [${t.shape.join(', ')}]`);
  const [c, n] = t.shape as [number, number];
  return Array.from({ length: c }, (_, i) => t.data.subarray(i * n, (i + 1) * n));
}

/**
 * max |got - ref| and that over max |ref|, over all channels. `scale` multiplies the reference first, for outputs
 * two pipelines define with a known, documented factor between them (MDX's `compensate`).
 */
export function compareOutput(name: string, got: ArrayLike<number>[], ref: ArrayLike<number>[], scale = 1): OutputError {
  if (got.length !== ref.length) throw new Error(`${name}: ${got.length} channels, reference has ${ref.length}`);
  let maxAbs = 0;
  let peak = 0;
  for (let c = 0; c < ref.length; c++) {
    const g = got[c]!;
    const r = ref[c]!;
    if (g.length !== r.length) throw new Error(`${name}: channel ${c} has ${g.length} samples, reference has ${r.length}`);
    for (let i = 0; i < r.length; i++) {
      const rv = scale * r[i]!;
      const d = Math.abs(g[i]! - rv);
      // NaN must fail the comparison, not vanish in Math.max.
      maxAbs = Number.isNaN(d) ? Number.POSITIVE_INFINITY : Math.max(maxAbs, d);
      peak = Math.max(peak, Math.abs(rv));
    }
  }
  return { name, maxAbs, rel: peak > 0 ? maxAbs / peak : maxAbs === 0 ? 0 : Number.POSITIVE_INFINITY };
}
