/**
 * Soundry's BSS Eval SDR (src/media/bsseval.ts) against museval itself (harness/cases/bsseval.py): per scenario, the
 * per-window SDR and the per-source track medians (TrackStore). A window must be NaN exactly where museval's is; the
 * values are compared in dB. Used by bsseval.test.ts on the committed small golden and by scripts/reference-check.ts
 * on the full-size one (harness/out/bsseval).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { readSafetensors } from '../../../src/models/checkpoint/safetensors.js';
import { BssEvalError, bssEvalSdr, trackMedian, type SourceAudio } from '../../../src/media/bsseval.js';
import { bssEvalImages } from '../../../src/media/bsseval-images.js';
import { readCaseJson, type OutputError } from './golden.js';

const scenarioSchema = z.object({
  name: z.string(),
  call: z.enum(['evaluate', 'bss_eval']),
  rate: z.number().int().positive(),
  window: z.number().int().positive(),
  hop: z.number().int().positive(),
  filters_len: z.number().int().positive(),
  sources: z.array(z.string()).min(1),
  windows: z.number().int().positive(),
  nan_windows: z.array(z.number().int().nonnegative()),
});

export const bssevalCaseSchema = z.object({
  family: z.literal('bsseval'),
  museval: z.string(),
  int16_scale: z.number().positive(),
  scenarios: z.array(scenarioSchema).min(1),
  errors: z.array(z.object({ name: z.string(), silent: z.enum(['est', 'ref']), message: z.string() })),
});
export type BssevalCase = z.infer<typeof bssevalCaseSchema>;

interface Tensor { shape: number[]; data: Float64Array }

export async function readBssevalCase(dir: string): Promise<BssevalCase> {
  const raw = await readCaseJson(dir);
  const parsed = bssevalCaseSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`${dir}/case.json: ${parsed.error.message}`);
  return parsed.data;
}

/** golden.safetensors: int16 audio (scaled by 1/int16_scale) and float64 metrics, all as float64. */
export async function readBssevalGolden(dir: string, int16Scale: number): Promise<Map<string, Tensor>> {
  const path = join(dir, 'golden.safetensors');
  const ckpt = await readSafetensors(path);
  const bytes = await readFile(path);
  const out = new Map<string, Tensor>();
  for (const [key, t] of ckpt.tensors) {
    // Copy out of the file buffer: its offsets need not be aligned for a typed view.
    const raw = new Uint8Array(t.byteLength);
    raw.set(bytes.subarray(t.offset, t.offset + t.byteLength));
    let data: Float64Array;
    if (t.dtype === 'int16') data = Float64Array.from(new Int16Array(raw.buffer), (v) => v / int16Scale);
    else if (t.dtype === 'float64') data = new Float64Array(raw.buffer);
    else throw new Error(`${path}: tensor ${key} is ${t.dtype}; this case stores int16 audio and float64 metrics`);
    out.set(key, { shape: [...t.shape], data });
  }
  return out;
}

function tensor(g: Map<string, Tensor>, name: string): Tensor {
  const t = g.get(name);
  if (!t) throw new Error(`golden.safetensors has no tensor '${name}'`);
  return t;
}

/** [nsrc, nsampl, nchan] (museval's layout) as sources of channel arrays. */
export function sourcesOf(t: Tensor): SourceAudio[] {
  const [nsrc, n, nchan] = t.shape as [number, number, number];
  return Array.from({ length: nsrc }, (_, j) =>
    Array.from({ length: nchan }, (_, c) => {
      const ch = new Float64Array(n);
      for (let i = 0; i < n; i++) ch[i] = t.data[(j * n + i) * nchan + c]!;
      return ch;
    }));
}

/** max |got - ref| in dB over both arrays; a NaN in one but not the other (or a differing infinity) is Infinity. */
function compareDb(name: string, got: ArrayLike<number>, ref: ArrayLike<number>): OutputError {
  if (got.length !== ref.length) throw new Error(`${name}: ${got.length} values, museval has ${ref.length}`);
  let maxAbs = 0;
  let peak = 0;
  for (let i = 0; i < ref.length; i++) {
    const r = ref[i]!;
    const g = got[i]!;
    if (Number.isNaN(r) || Number.isNaN(g) || !Number.isFinite(r) || !Number.isFinite(g)) {
      if (!Object.is(r, g)) maxAbs = Infinity;
      continue;
    }
    maxAbs = Math.max(maxAbs, Math.abs(g - r));
    peak = Math.max(peak, Math.abs(r));
  }
  return { name, maxAbs, rel: peak > 0 ? maxAbs / peak : maxAbs === 0 ? 0 : Infinity };
}

/**
 * Per scenario: `<name>.sdr` (every window of every source) and `<name>.median_sdr` (per source); with the full
 * decomposition (src/media/bsseval-images.ts, for scenarios whose normal equations have at most `allMetricsUpTo`
 * unknowns: sources x channels x filter taps) also `<name>.images.{sdr,isr,sir,sar}` and their medians.
 */
export async function compareCase(dir: string, opts: { allMetricsUpTo?: number } = {}): Promise<OutputError[]> {
  const c = await readBssevalCase(dir);
  const g = await readBssevalGolden(dir, c.int16_scale);
  const out: OutputError[] = [];
  for (const s of c.scenarios) {
    {
      // Both calls give the same SDR: `evaluate` only fits the estimates' length first, which bssEvalSdr also does.
      const refs = sourcesOf(tensor(g, `${s.name}.reference`));
      const ests = sourcesOf(tensor(g, `${s.name}.estimate`));
      const got = bssEvalSdr(refs, ests, { window: s.window, hop: s.hop });
      const want = tensor(g, `${s.name}.sdr`);
      const flat = new Float64Array(want.data.length);
      got.sdr.forEach((row, j) => flat.set(row, j * got.windows));
      out.push(compareDb(`${s.name}.sdr`, flat, want.data));
      out.push(compareDb(`${s.name}.median_sdr`, got.sdr.map((row) => trackMedian(row)), tensor(g, `${s.name}.median_sdr`).data));
      if (refs.length * refs[0]!.length * s.filters_len > (opts.allMetricsUpTo ?? Infinity)) continue;
      const images = bssEvalImages(refs, ests, { window: s.window, hop: s.hop, filtersLen: s.filters_len });
      for (const k of ['sdr', 'isr', 'sir', 'sar'] as const) {
        const rows = images[k];
        const flatK = new Float64Array(rows.length * images.windows);
        rows.forEach((row, j) => flatK.set(row, j * images.windows));
        out.push(compareDb(`${s.name}.images.${k}`, flatK, tensor(g, `${s.name}.${k}`).data));
        out.push(compareDb(`${s.name}.images.median_${k}`, rows.map((row) => trackMedian(row)), tensor(g, `${s.name}.median_${k}`).data));
      }
    }
  }
  return out;
}

/** museval's refusals (a wholly silent estimate or reference): what Soundry's implementation says for the same. */
export function refusal(silent: 'est' | 'ref'): string | null {
  const n = 4000;
  const src = (k: number): SourceAudio => [0, 1].map((ch) => Float64Array.from({ length: n }, (_, i) => Math.sin(0.01 * (i + 1) * (k + 1) + ch)));
  const refs = [src(0), src(1)];
  const ests = [src(1), src(0)];
  const zero: SourceAudio = [new Float64Array(n), new Float64Array(n)];
  if (silent === 'est') ests[1] = zero;
  else refs[1] = zero;
  try {
    bssEvalSdr(refs, ests, { window: 1000, hop: 1000 });
    return null;
  } catch (err) {
    if (err instanceof BssEvalError) return err.message;
    throw err;
  }
}
