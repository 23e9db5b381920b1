/**
 * Soundry's learned dereverberation stage (src/engines/enhance/learned-dereverb.ts) on a reference-harness case
 * (harness/cases/dereverb_roformer.py): the same .ckpt and yaml that python-audio-separator's RoformerLoader and
 * MDXCSeparator.demix ran, the stage fed in pieces as the chain streams. Compared: the dry stem of a stereo 44.1 kHz
 * input (`output.noreverb`), and of a mono input (`net.mono_noreverb`: the mean of the reference's two channels of the
 * duplicated mono input). The stage loads the model the way the chain does (createLearnedDereverbStage).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { AudioData } from '../../../src/media/audio.js';
import { createLearnedDereverbStage } from '../../../src/engines/enhance/learned-dereverb.js';
import { processWhole } from '../../../src/engines/enhance/stage.js';
import { channels, compareOutput, goldenTensor, readGolden, type OutputError } from './golden.js';

const dereverbCaseSchema = z.object({
  family: z.literal('dereverb'),
  weights: z.string().min(1),
  config: z.string().min(1),
  dry_stem: z.string().min(1),
  sample_rate: z.number().int().positive(),
});

export async function compareCase(dir: string, opts: { piece?: number } = {}): Promise<OutputError[]> {
  const path = join(dir, 'case.json');
  const parsed = dereverbCaseSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
  if (!parsed.success) throw new Error(`${path}: ${parsed.error.message}`);
  const c = parsed.data;
  const golden = await readGolden(dir);
  const meta = { engine: 'roformer-dereverb' as const, architecture: 'mel_band_roformer' as const, sampleRate: c.sample_rate, dryStem: c.dry_stem, checkpointFile: c.weights, configFile: c.config };
  const run = async (input: Float32Array[]): Promise<AudioData> => {
    const stage = await createLearnedDereverbStage({ sampleRate: c.sample_rate, channels: input.length, dir, meta, threads: 1 });
    return processWhole([stage], { sampleRate: c.sample_rate, channels: input }, opts.piece ?? 1500);
  };
  const stereo = await run(channels(goldenTensor(golden, 'input', dir)));
  const mono = await run(channels(goldenTensor(golden, 'net.mono_input', dir)));
  return [
    compareOutput(`stereo ${c.dry_stem}`, stereo.channels, channels(goldenTensor(golden, `output.${c.dry_stem}`, dir))),
    compareOutput(`mono ${c.dry_stem}`, mono.channels, channels(goldenTensor(golden, 'net.mono_noreverb', dir))),
  ];
}
