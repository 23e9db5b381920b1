/**
 * Soundry's DeepFilterNet3 path (src/engines/enhance/deepfilter-core.ts) on a reference-harness dfn3 case
 * (harness/cases/dfn3.py): the seeded-random-weight export packed as the published DeepFilterNet3_onnx.tar.gz, the
 * input, DeepFilterNet's own enhance() outputs and libdf's features for the padded input.
 *
 * Compared: libdf's ERB feature, unit-norm complex feature (and at full size its analysis spectrum), recomputed by
 * Soundry's feature code; enhance() with its defaults, with atten_lim_db and with the post-filter, recomputed by
 * enhanceDf on the archive's three graphs.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { z } from 'zod';
import { loadFftProvider, type RealFft } from '../../../src/media/dsp/fft.js';
import { concatSamples } from '../../../src/media/audio.js';
import { DfStream, enhanceDf, type DfConfig, type DfSessions } from '../../../src/engines/enhance/deepfilter-core.js';
import { parseDfConfig } from '../../../src/engines/enhance/deepfilter-config.js';
import { DfAnalysis, ErbFeature, UnitNormFeature, erbWidths, normAlpha, vorbisWindow } from '../../../src/engines/enhance/deepfilter-features.js';
import { memberByBaseName, readTarGz } from '../../../src/models/tar.js';
import { channels, compareOutput, goldenTensor, readGolden, type Float32Tensor, type OutputError } from './golden.js';

const dfn3CaseSchema = z.object({
  family: z.literal('dfn3'),
  archive: z.string().min(1),
  sample_rate: z.literal(48000),
  frames: z.number().int().positive(),
  atten_lim_db: z.number().positive(),
  size: z.enum(['small', 'full']),
});

export type Dfn3Case = z.infer<typeof dfn3CaseSchema>;

export async function readDfn3Case(dir: string): Promise<Dfn3Case> {
  const path = join(dir, 'case.json');
  const parsed = dfn3CaseSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
  if (!parsed.success) throw new Error(`${path}: ${parsed.error.message}`);
  return parsed.data;
}

export interface Dfn3Model {
  cfg: DfConfig;
  sessions: DfSessions;
  release(): Promise<void>;
}

/** Opens the case's archive as Soundry would: members found by base name, graphs loaded from memory. */
export async function openDfn3Archive(path: string, threads = 1): Promise<Dfn3Model> {
  const members = readTarGz(await readFile(path), { maxUnpackedBytes: 256 << 20, maxEntries: 64, maxMemberBytes: 128 << 20 });
  const cfg = parseDfConfig(Buffer.from(memberByBaseName(members, 'config.ini').data).toString('utf8'));
  const options: ort.InferenceSession.SessionOptions = { intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' };
  const open = (name: string) => ort.InferenceSession.create(memberByBaseName(members, name).data, options);
  const [enc, erbDec, dfDec] = await Promise.all([open('enc.onnx'), open('erb_dec.onnx'), open('df_dec.onnx')]);
  return { cfg, sessions: { enc, erbDec, dfDec }, release: async () => { await Promise.all([enc.release(), erbDec.release(), dfDec.release()]); } };
}

export interface Features {
  spec: Float32Array;
  erb: Float32Array;
  cplx: Float32Array;
  frames: number;
}

/** libdf's df_features as enhance() calls it: the input padded with fft_size zeros, analysed hop by hop. */
export function dfFeatures(input: Float32Array, cfg: DfConfig, fft: RealFft): Features {
  const padded = new Float32Array(input.length + cfg.fftSize);
  padded.set(input);
  const frames = Math.floor(padded.length / cfg.hopSize);
  const window = vorbisWindow(cfg.fftSize);
  const alpha = normAlpha(cfg.sampleRate, cfg.hopSize, cfg.normTau);
  const analysis = new DfAnalysis(fft, window, cfg.hopSize);
  const erbFeat = new ErbFeature(erbWidths(cfg.sampleRate, cfg.fftSize, cfg.nbErb, cfg.minNbErbFreqs), alpha);
  const cplxFeat = new UnitNormFeature(cfg.nbDf, alpha);
  const bins = cfg.fftSize / 2 + 1;
  const out: Features = { spec: new Float32Array(frames * bins * 2), erb: new Float32Array(frames * cfg.nbErb), cplx: new Float32Array(frames * cfg.nbDf * 2), frames };
  const re = new Float32Array(cfg.nbDf);
  const im = new Float32Array(cfg.nbDf);
  for (let t = 0; t < frames; t++) {
    const s = analysis.frame(padded.subarray(t * cfg.hopSize, (t + 1) * cfg.hopSize));
    for (let k = 0; k < bins; k++) {
      out.spec[(t * bins + k) * 2] = s.re[k]!;
      out.spec[(t * bins + k) * 2 + 1] = s.im[k]!;
    }
    erbFeat.frame(s, out.erb.subarray(t * cfg.nbErb, (t + 1) * cfg.nbErb));
    cplxFeat.frame(s, re, im);
    for (let k = 0; k < cfg.nbDf; k++) {
      out.cplx[(t * cfg.nbDf + k) * 2] = re[k]!;
      out.cplx[(t * cfg.nbDf + k) * 2 + 1] = im[k]!;
    }
  }
  return out;
}

function flat(name: string, got: Float32Array, ref: Float32Tensor): OutputError {
  return compareOutput(name, [got], [ref.data]);
}

export interface CompareOptions {
  threads?: number;
}

export async function compareCase(dir: string, opts: CompareOptions = {}): Promise<OutputError[]> {
  const c = await readDfn3Case(dir);
  const golden = await readGolden(dir);
  const [input] = channels(goldenTensor(golden, 'input', dir));
  if (!input) throw new Error(`${dir}: no input channel`);
  const model = await openDfn3Archive(join(dir, c.archive), opts.threads ?? 1);
  const fft = (await loadFftProvider()).create(model.cfg.fftSize);
  try {
    const f = dfFeatures(input, model.cfg, fft);
    if (f.frames !== c.frames) throw new Error(`${dir}: ${f.frames} frames, the reference had ${c.frames}`);
    const errors = [flat('feat_erb (libdf erb + erb_norm)', f.erb, goldenTensor(golden, 'net.feat_erb', dir)), flat('feat_spec (libdf unit_norm)', f.cplx, goldenTensor(golden, 'net.feat_spec', dir))];
    if (golden.has('net.spec')) errors.push(flat('spec (libdf analysis)', f.spec, goldenTensor(golden, 'net.spec', dir)));
    const runs: [string, Parameters<typeof enhanceDf>[3]][] = [
      ['enhanced', {}],
      [`enhanced_atten${c.atten_lim_db}`, { attenLimDb: c.atten_lim_db }],
      ['enhanced_pf', { postFilter: true }],
    ];
    for (const [name, o] of runs) {
      const got = await enhanceDf(input, model.cfg, model.sessions, { ...o, fft });
      errors.push(compareOutput(name, [got], channels(goldenTensor(golden, `output.${name}`, dir))));
    }
    return errors;
  } finally {
    fft.dispose();
    await model.release();
  }
}

/** The stream's output for `x` pushed in pieces of `piece` samples, then flushed. */
export function streamed(stream: DfStream, x: Float32Array, piece: number): Promise<Float32Array> {
  return (async () => {
    const parts: Float32Array[] = [];
    for (let i = 0; i < x.length; i += piece) parts.push(await stream.push(x.subarray(i, i + piece)));
    parts.push(await stream.flush());
    return concatSamples(parts);
  })();
}

/**
 * Seam error and speed on a generated case (normally the full-size one in harness/out/dfn3): the case's input tiled
 * to `seconds`, enhanced in one pass (enhanceDf) and streamed in windows of `windowFrames` with each context length;
 * prints rel = max |windowed - whole| / max |whole| and the real-time factors (one ONNX Runtime thread).
 *
 *   node --import tsx -e "import('./test/engines/reference/dfn3.ts').then((m) => m.measure('harness/out/dfn3'))"
 */
export async function measure(dir: string, seconds = 60, windowFrames = 1000, contexts: number[] = [0, 50, 100, 200, 400]): Promise<void> {
  const c = await readDfn3Case(dir);
  const [input] = channels(goldenTensor(await readGolden(dir), 'input', dir));
  if (!input) throw new Error(`${dir}: no input channel`);
  const n = Math.round(seconds * c.sample_rate);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i += input.length) x.set(input.subarray(0, Math.min(input.length, n - i)), i);
  const model = await openDfn3Archive(join(dir, c.archive), 1);
  const fft = (await loadFftProvider()).create(model.cfg.fftSize);
  try {
    // CPU seconds beside wall: the machine is shared, and CPU time per audio second is what load changes least.
    const cpu = (from: NodeJS.CpuUsage) => {
      const d = process.cpuUsage(from);
      return ((d.user + d.system) / 1e6 / seconds).toFixed(3);
    };
    let t0 = performance.now();
    let c0 = process.cpuUsage();
    const whole = await enhanceDf(x, model.cfg, model.sessions, { fft });
    console.log(`${c.size} ${seconds} s whole signal: RTF ${((performance.now() - t0) / 1000 / seconds).toFixed(3)}, CPU s per audio s ${cpu(c0)}`);
    for (const ctx of contexts) {
      t0 = performance.now();
      c0 = process.cpuUsage();
      const got = await streamed(new DfStream(model.cfg, model.sessions, fft, { windowFrames, contextFrames: ctx }), x, c.sample_rate);
      const rtf = (performance.now() - t0) / 1000 / seconds;
      const used = cpu(c0);
      const e = compareOutput('windowed', [got], [whole]);
      console.log(`${c.size} windows ${windowFrames} frames, context ${ctx}: seam max abs ${e.maxAbs.toExponential(2)}, rel ${e.rel.toExponential(2)}, RTF ${rtf.toFixed(3)}, CPU s per audio s ${used}`);
    }
  } finally {
    fft.dispose();
    await model.release();
  }
}
