/**
 * Soundry's WPE core (src/engines/enhance/dereverb.ts `wpeOffline`) on a reference-harness WPE case
 * (harness/cases/wpe.py): the STFT of a seeded reverberant signal and what nara_wpe's offline `wpe` made of it for
 * several (taps, delay, iterations). Run with nara's own regularisation (power floor 1e-10 x the bin's peak, no
 * diagonal loading), which is how the comparison isolates the algorithm from Soundry's default regularisation.
 * Compared per configuration: real and imaginary parts over every frame and bin, relative to the output's peak.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { wpeOffline } from '../../../src/engines/enhance/dereverb.js';
import { compareOutput, goldenTensor, readGolden, type Float32Tensor, type OutputError } from './golden.js';

const wpeCaseSchema = z.object({
  family: z.literal('wpe'),
  configs: z.array(z.object({ taps: z.number().int().positive(), delay: z.number().int().nonnegative(), iterations: z.number().int().positive(), output: z.string().min(1) })).min(1),
  frames: z.number().int().positive(),
  bins: z.number().int().positive(),
});

/** A [2, frames, bins] tensor (real, imaginary) as frame-major rows of float64. */
function spectrum(t: Float32Tensor, frames: number, bins: number): { re: Float64Array[]; im: Float64Array[] } {
  if (t.shape.join(',') !== `2,${frames},${bins}`) throw new Error(`expected [2, ${frames}, ${bins}], got [${t.shape.join(', ')}]`);
  const row = (part: number, f: number) => Float64Array.from(t.data.subarray((part * frames + f) * bins, (part * frames + f + 1) * bins));
  return { re: Array.from({ length: frames }, (_, f) => row(0, f)), im: Array.from({ length: frames }, (_, f) => row(1, f)) };
}

export async function compareCase(dir: string): Promise<OutputError[]> {
  const path = join(dir, 'case.json');
  const parsed = wpeCaseSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
  if (!parsed.success) throw new Error(`${path}: ${parsed.error.message}`);
  const { configs, frames, bins } = parsed.data;
  const golden = await readGolden(dir);
  const y = spectrum(goldenTensor(golden, 'input', dir), frames, bins);
  return configs.map(({ taps, delay, iterations, output }) => {
    const ref = spectrum(goldenTensor(golden, `output.${output}`, dir), frames, bins);
    const got = wpeOffline(y.re, y.im, { taps, delay, iterations, powerFloor: 'max', loading: 0 });
    const flat = (rows: Float64Array[]) => {
      const out = new Float64Array(frames * bins);
      rows.forEach((r, f) => out.set(r, f * bins));
      return out;
    };
    return compareOutput(output, [flat(got.re), flat(got.im)], [flat(ref.re), flat(ref.im)]);
  });
}
