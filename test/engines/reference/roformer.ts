/**
 * Soundry's RoFormer stage (src/engines/separation/onnx/roformer.ts) on a reference-harness RoFormer case
 * (harness/cases/roformer_bs.py, roformer_mel.py): the same checkpoint (torch.save state dict, and its safetensors
 * copy), YAML and mixture that python-audio-separator's own RoformerLoader and MDXCSeparator.demix ran.
 *
 * Compared: every stem of the whole demix (the mixture fed in 1 s pieces, as a decoder streams it), and one network
 * pass on the first chunk (`net.chunk_out`: model(x) of the reference, i.e. STFT, network, mask, iSTFT). For a Mel
 * model, the band layout computed here against the reference's freq_indices / num_bands_per_freq buffers.
 *
 * The graph is written beside the checkpoint; the small committed cases are copied to a temporary folder first so
 * the fixture folder stays as committed.
 */
import { copyFile, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { loadFftProvider } from '../../../src/media/dsp/fft.js';
import { melBands } from '../../../src/engines/separation/onnx/roformer-bands.js';
import { roformerBands } from '../../../src/engines/separation/onnx/roformer-graph.js';
import { loadRoformer } from '../../../src/engines/separation/onnx/roformer.js';
import { chunkStarts, type Stereo } from '../../../src/engines/separation/onnx/roformer-chunks.js';
import { channels, compareOutput, goldenTensor, readGolden, type OutputError } from './golden.js';

const roformerCaseSchema = z.object({
  family: z.literal('roformer'),
  arch: z.enum(['bs_roformer', 'mel_band_roformer']),
  weights: z.string().min(1),
  weights_safetensors: z.string().min(1),
  config: z.string().min(1),
  sources: z.array(z.string().min(1)).min(1),
  sample_rate: z.number().int().positive(),
  chunk_size: z.number().int().positive(),
  num_overlap: z.number().int().positive(),
  /** Mel cases: the reference's band buffers at a real configuration, stored as net.real_bands.*. */
  real_bands: z.object({ sample_rate: z.number().int().positive(), n_fft: z.number().int().positive(), num_bands: z.number().int().positive() }).optional(),
});

export type RoformerCase = z.infer<typeof roformerCaseSchema>;

export async function readRoformerCase(dir: string): Promise<RoformerCase> {
  const path = join(dir, 'case.json');
  const parsed = roformerCaseSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
  if (!parsed.success) throw new Error(`${path}: ${parsed.error.message}`);
  return parsed.data;
}

export interface CompareOptions {
  threads?: number;
  /** Samples per push (default 1 s). */
  piece?: number;
  /** Which weights file to load: the torch.save .ckpt as released (default) or its safetensors copy. */
  format?: 'ckpt' | 'safetensors';
  /** Called with load and run figures (graph build, session create, seconds per chunk). */
  report?: (figures: Record<string, number>) => void;
  /**
   * Only these output heads, as the engine asks for them (a multi-instrument model's `heads`): each given name is
   * compared with the reference's stem of that head's index (`sources[index]`).
   */
  heads?: ReadonlyArray<{ name: string; index: number }>;
  /** Receives Soundry's demixed stems, by the names the stage gave them. */
  stems?: (stems: Record<string, Stereo>) => void;
}

/** Files below this are copied to a scratch folder for the graph; larger (full-size, git-ignored) are used in place. */
const COPY_BELOW_BYTES = 64 << 20;

export async function compareCase(dir: string, opts: CompareOptions = {}): Promise<OutputError[]> {
  const c = await readRoformerCase(dir);
  const golden = await readGolden(dir);
  const weights = opts.format === 'safetensors' ? c.weights_safetensors : c.weights;
  let work = dir;
  if ((await stat(join(dir, weights))).size < COPY_BELOW_BYTES) {
    work = await mkdtemp(join(tmpdir(), 'soundry-roformer-'));
    for (const f of [weights, c.config]) await copyFile(join(dir, f), join(work, f));
  }
  const model = await loadRoformer(work, weights, c.config, { threads: opts.threads, ...(opts.heads ? { heads: opts.heads } : {}) });
  try {
    const results: OutputError[] = [];
    const cfg = model.config;
    if (cfg.chunk !== c.chunk_size) throw new Error(`${dir}: Soundry's chunk is ${cfg.chunk}, the reference's ${c.chunk_size}`);
    if (cfg.arch === 'mel_band_roformer') {
      const bands = roformerBands(cfg);
      results.push(compareOutput('freq_indices', [Float32Array.from(bands.freqIndices)], [goldenTensor(golden, 'net.freq_indices', dir).data]));
      const perFreq = Float32Array.from({ length: bands.bandsPerEntry.length / cfg.channels }, (_, f) => bands.bandsPerEntry[f * cfg.channels]!);
      results.push(compareOutput('num_bands_per_freq', [perFreq], [goldenTensor(golden, 'net.num_bands_per_freq', dir).data]));
    }
    if (c.real_bands) {
      const { sample_rate, n_fft, num_bands } = c.real_bands;
      const real = melBands(sample_rate, n_fft, num_bands, 2);
      const name = `mel bands at sr ${sample_rate}, n_fft ${n_fft}, ${num_bands} bands`;
      results.push(compareOutput(`${name}: freq_indices`, [Float32Array.from(real.freqIndices)], [goldenTensor(golden, 'net.real_bands.freq_indices', dir).data]));
      const perFreq = Float32Array.from({ length: real.bandsPerEntry.length / 2 }, (_, f) => real.bandsPerEntry[f * 2]!);
      results.push(compareOutput(`${name}: num_bands_per_freq`, [perFreq], [goldenTensor(golden, 'net.real_bands.num_bands_per_freq', dir).data]));
    }
    const fft = (await loadFftProvider()).create(cfg.nFft);
    const stage = model.createStage(fft);

    // One network pass: the reference's model(chunk) is [stems?, channels, samples].
    const chunkIn = channels(goldenTensor(golden, 'net.chunk_in', dir)) as Stereo;
    const started = performance.now();
    const one = await stage.runChunk(chunkIn);
    const chunkSeconds = (performance.now() - started) / 1000;
    const ref = goldenTensor(golden, 'net.chunk_out', dir);
    const n = ref.shape[ref.shape.length - 1]!;
    cfg.outputs.forEach((name, j) => {
      const k = opts.heads ? opts.heads[j]!.index : j;
      const refStem = ref.shape.length === 3 ? ref.data.subarray(k * 2 * n, (k + 1) * 2 * n) : ref.data;
      results.push(compareOutput(`net ${name} (one chunk)`, one[name]!, [refStem.subarray(0, n), refStem.subarray(n, 2 * n)]));
    });

    const mix = channels(goldenTensor(golden, 'input', dir));
    const total = mix[0]!.length;
    const got: Record<string, Stereo> = Object.fromEntries(model.sources.map((s) => [s, [new Float32Array(total), new Float32Array(total)]]));
    let at = 0;
    const take = (outs: Array<Record<string, Stereo>>) => {
      for (const out of outs) {
        const len = out[model.sources[0]!]![0].length;
        for (const s of model.sources) for (let ch = 0; ch < 2; ch++) got[s]![ch]!.set(out[s]![ch]!, at);
        at += len;
      }
    };
    const piece = opts.piece ?? c.sample_rate;
    const t0 = performance.now();
    for (let i = 0; i < total; i += piece) take(await stage.push([mix[0]!.subarray(i, i + piece), mix[1]!.subarray(i, i + piece)]));
    take(await stage.end());
    const demixSeconds = (performance.now() - t0) / 1000;
    if (at !== total) throw new Error(`${dir}: Soundry's RoFormer stage returned ${at} samples for ${total}`);
    const named = opts.heads ? opts.heads.map((h) => ({ name: h.name, ref: c.sources[h.index]! })) : c.sources.map((s) => ({ name: s, ref: s }));
    for (const { name, ref } of named) {
      if (!got[name]) throw new Error(`${dir}: Soundry's stage gave no stem '${name}' (it gave ${model.sources.join(', ')})`);
      results.push(compareOutput(name === ref ? name : `${name} (head ${ref})`, got[name], channels(goldenTensor(golden, `output.${ref}`, dir))));
    }
    opts.stems?.(got);
    const chunks = chunkStarts(total, cfg.chunk, Math.floor(cfg.chunk / cfg.overlap)).length;
    opts.report?.({ graphMs: model.timings.graphMs, sessionMs: model.timings.sessionMs, chunkSeconds, demixSeconds, chunks });
    return results;
  } finally {
    await model.session.release();
    if (work !== dir) await rm(work, { recursive: true, force: true });
  }
}
