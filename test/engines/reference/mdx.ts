/**
 * Soundry's MDX stage (src/engines/separation/onnx/mdx.ts) on a reference-harness MDX case (harness/cases/mdx.py):
 * the same seeded-random-weight ONNX model and mixture that python-audio-separator's MDXSeparator.separate() ran.
 *
 * What each side defines, and so what is compared:
 * - primary (vocals): Soundry's stage returns compensate x the network's stem, as UVR does; audio-separator since its
 *   change #203 returns the stem unscaled. Soundry's primary is compared with compensate x audio-separator's.
 * - secondary (instrumental): both define it as mixture - compensate x stem (Soundry: the mixture minus its primary,
 *   as routes.ts composes it), so it is compared as is.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { loadFftProvider } from '../../../src/media/dsp/fft.js';
import { MdxStage } from '../../../src/engines/separation/onnx/mdx.js';
import type { MdxPreset } from '../../../src/engines/separation/onnx/presets.js';
import type { Stereo } from '../../../src/engines/separation/onnx/overlap-add.js';
import { openSeparationSession } from '../../../src/engines/separation/onnx/session.js';
import { channels, compareOutput, goldenTensor, readGolden, type OutputError } from './golden.js';

const mdxCaseSchema = z.object({
  family: z.literal('mdx'),
  weights: z.string().min(1),
  sample_rate: z.literal(44100),
  n_fft: z.number().int().positive(),
  hop: z.number().int().positive(),
  dim_f: z.number().int().positive(),
  dim_t: z.number().int().positive(),
  compensate: z.number().positive(),
  overlap: z.number().min(0).max(0.999),
  denoise: z.boolean(),
  primary: z.enum(['vocals', 'instrumental']),
  secondary: z.enum(['vocals', 'instrumental']),
});

export type MdxCase = z.infer<typeof mdxCaseSchema>;

export async function readMdxCase(dir: string): Promise<MdxCase> {
  const path = join(dir, 'case.json');
  const parsed = mdxCaseSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
  if (!parsed.success) throw new Error(`${path}: ${parsed.error.message}`);
  return parsed.data;
}

export interface CompareOptions {
  /** ONNX Runtime intra-op threads (default: all cores). */
  threads?: number;
  /** Samples per push, as a decoder would feed the stream (default: 1 s). */
  piece?: number;
}

export async function compareCase(dir: string, opts: CompareOptions = {}): Promise<OutputError[]> {
  const c = await readMdxCase(dir);
  const golden = await readGolden(dir);
  const mix = channels(goldenTensor(golden, 'input', dir));
  if (mix.length !== 2) throw new Error(`${dir}: MDX input must be stereo, has ${mix.length} channels`);
  const preset: MdxPreset = {
    family: 'mdx', name: `reference-${c.weights}`, file: c.weights,
    nFft: c.n_fft, hop: c.hop, dimF: c.dim_f, dimT: c.dim_t, compensate: c.compensate, primary: c.primary,
  };
  const session = await openSeparationSession(join(dir, c.weights), opts.threads);
  try {
    const fft = await loadFftProvider();
    const stage = new MdxStage(session, preset, fft.create(c.n_fft), { overlap: c.overlap, denoise: c.denoise });
    const n = mix[0]!.length;
    const primary: Stereo = [new Float32Array(n), new Float32Array(n)];
    let at = 0;
    const take = (outs: Record<string, Stereo>[]) => {
      for (const out of outs) {
        const part = out[c.primary]!;
        primary[0].set(part[0], at);
        primary[1].set(part[1], at);
        at += part[0].length;
      }
    };
    const piece = opts.piece ?? c.sample_rate;
    for (let i = 0; i < n; i += piece) take(await stage.push([mix[0]!.subarray(i, i + piece), mix[1]!.subarray(i, i + piece)]));
    take(await stage.end());
    if (at !== n) throw new Error(`${dir}: Soundry's MDX stage returned ${at} samples for ${n}`);
    const secondary = mix.map((m, ch) => m.map((v, i) => v - primary[ch]![i]!));
    return [
      compareOutput(`${c.primary} (Soundry = compensate x audio-separator)`, primary, channels(goldenTensor(golden, `output.${c.primary}`, dir)), c.compensate),
      compareOutput(c.secondary, secondary, channels(goldenTensor(golden, `output.${c.secondary}`, dir))),
    ];
  } finally {
    await session.release();
  }
}
