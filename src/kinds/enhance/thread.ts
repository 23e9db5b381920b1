import type { AudioData } from '../../media/audio.js';
import { decodeStream, StreamEncoder, type PcmFormat } from '../../media/ffmpeg-stream.js';
import { TaskFailure } from '../../domain/errors.js';
import { overLimitMessage } from '../decoded-length.js';
import type { EngineContext } from '../../ports/engines.js';
import { runAnalysis, runChain } from '../../engines/enhance/stage.js';
import { LoudnessMeter } from '../../engines/enhance/loudness.js';
import { aimedNormalize, LimiterAimPass, type LoudnessAim } from '../../engines/enhance/loudness-aim.js';
import { DecayStats, type DenoiserPreference, type DenoiserProblems } from '../../engines/enhance/engine-choice.js';
import { onnxDenoiserAvailable } from '../../engines/enhance/onnx-denoise.js';
import { deepFilterAvailable } from '../../engines/enhance/deepfilter-stage.js';
import { learnedDereverbWouldRun, type DereverbPreference } from '../../engines/enhance/learned-dereverb.js';
import type { SeparationEngine } from '../../engines/separation/engine.js';
import { SpectrumAnalysis } from '../../engines/enhance/eq.js';
import { MusicDetector } from '../../engines/enhance/music-detect.js';
import { EnergyStats, NoiseFloorAnalysis } from '../../engines/enhance/detect.js';
import { HumDetector } from '../../engines/enhance/detect-hum.js';
import { loadFftProvider } from '../../media/dsp/fft.js';
import { buildStages, planEnhancement, type EnhanceFlag, type InputStats } from '../../engines/enhance/chain.js';
import { createSeparationEngine } from '../../engines/separation/select.js';
import type { ThreadEnv } from '../threads.js';
import { AutoPuller } from '../../models/auto-pull.js';
import { pullEnhanceModels, type EnhancePullOutcome } from './models.js';
import type { ModelEntry } from '../../models/catalog.js';
import { SpillFile } from '../../engines/enhance/parallel-spill.js';
import { chunkThreads } from './parallel-pool.js';
import { runPlannedChain, type PlannedChainOptions, type PlannedChainResult } from './parallel.js';
import { join } from 'node:path';

/** True-peak ceiling before MP3 coding, so the decoded file stays at most -1 dBTP. */
export const MP3_CEILING_DBTP = -1.6;

export interface EnhanceThreadInput {
  inputPath: string;
  outPath: string;
  format: 'mp3' | 'wav' | 'flac';
  /** WAV sample format (the input's depth); 16-bit when absent. */
  pcm?: PcmFormat;
  sampleRate: number;
  channels: number;
  totalFrames: number;
  flags: EnhanceFlag[];
  modelsDir: string;
  ffmpeg: string;
  targetLufs: number;
  /** ENHANCE_DENOISER; auto when absent. */
  denoiser?: DenoiserPreference;
  /** ENHANCE_DEREVERB and ENHANCE_DEREVERB_CPU_MAX_SECONDS; auto and no length limit when absent. */
  dereverb?: DereverbPreference;
  dereverbCpuMaxSeconds?: number;
  /** True-peak ceiling of the limiter, dBTP (podcasts aim it under their own ceiling); see MP3_CEILING_DBTP. */
  ceilingDbtp?: number;
  /** Every pass stops with a failure naming `maxSeconds` once the decoder yields more than this many frames. */
  maxFrames?: number;
  maxSeconds?: number;
}

export interface EnhanceThreadOutput {
  stages: string[];
  engines: string[];
  reasons: Record<string, string>;
  outputSeconds: number;
  /** Frames decoded in the last pass, over the sample rate: the billable length, whatever the header said. */
  inputSeconds: number;
  /** Threads the chain ran on (1: sequential in the engine thread; more: chunk workers, parallel.ts). */
  threads: number;
}

/** Blocks the passes stream in, seconds. */
const BLOCK_SECONDS = 5;

/** How a run uses the machine: ENHANCE_THREADS, and what tests and benchmarks set. */
export interface EnhanceRunOptions {
  /** Chunk worker threads (ENHANCE_THREADS); unset: every core the process may use. 1: the chain in this thread. */
  threads?: number;
  /** Chunk length in seconds (tests use short ones to have seams in a few seconds of audio). */
  chunkSeconds?: number;
  /** Filled with the wall time of each stage run in this thread, by name (bench/enhance-long.ts). */
  profile?: Map<string, number>;
}

/**
 * Runs in an engine thread. Streamed passes over the input, never holding it whole:
 * 1) analysis of the input (spectrum for autoeq, statistics for autoid), when needed;
 * 2) the chain, once: on chunk worker threads for long files (parallel.ts), into the encoder, or, when normalize
 *    follows, metered and spilled to disk (parallel-spill.ts);
 * 3) when peak limiting eats loudness, a dry run over the spill that tries several compensations at once (loudness-aim.ts);
 * 4) the spill through the normalizing gain, into the encoder.
 */
/** What the thread's environment adds: the catalog the models are verified against, and the ONNX providers. */
export interface EnhanceModels {
  catalog?: readonly ModelEntry[];
  executionProviders?: readonly string[];
  /** Denoisers whose automatic download failed, and why (the choice passes them over and says so). */
  denoiserProblems?: DenoiserProblems;
  /** Why the learned dereverberation model's automatic download failed (dereverb then runs WPE and says so). */
  dereverbProblem?: string;
}

export async function runEnhance(
  job: EnhanceThreadInput, ctx: EngineContext, separationEngines: readonly SeparationEngine[] = [], env: EnhanceModels = {}, run: EnhanceRunOptions = {},
): Promise<EnhanceThreadOutput> {
  const flags = new Set(job.flags);
  const decode = () => decodeStream(job.inputPath, { ffmpeg: job.ffmpeg, sampleRate: job.sampleRate, channels: job.channels, blockFrames: job.sampleRate * BLOCK_SECONDS, signal: ctx.signal });
  // Each pass is checked on its own: what the decoder yields is the length, not what a header claims.
  async function* source(): AsyncGenerator<AudioData> {
    let seen = 0;
    for await (const block of decode()) {
      seen += block.channels[0]?.length ?? 0;
      if (job.maxFrames !== undefined && seen > job.maxFrames) throw new TaskFailure(overLimitMessage(job.maxSeconds ?? Math.round(job.maxFrames / job.sampleRate)));
      yield block;
    }
  }
  const phase = (from: number, to: number) => ({ signal: ctx.signal, onProgress: (f: number) => ctx.onProgress(from + (to - from) * f) });
  const needsSpectrum = flags.has('autoeq') || flags.has('studio_sound') || flags.has('autoid');
  let stats: InputStats | null = null;
  let spectrum: Float64Array | null = null;
  let t60: number | null = null;
  // auto runs DTLN only on input its reverberation estimate calls dry, so the T60 is measured whenever DTLN is usable
  // and the plan denoises without dereverberation (that rules DTLN out unmeasured). Found from outside: it was measured
  // only with GTCRN installed too, so a server with DTLN alone (GTCRN's download failed) never ran DTLN.
  const models = { modelsDir: job.modelsDir, memo: new Map(), ...(env.catalog ? { catalog: env.catalog } : {}) };
  const planned = planEnhancement(flags, null).stages;
  const needsDecay = (job.denoiser ?? 'auto') === 'auto' && planned.includes('denoise') && !planned.includes('dereverb')
    && !env.denoiserProblems?.dtln && onnxDenoiserAvailable(models, 'dtln')
    // auto runs DeepFilterNet3 whatever the decay when it is usable, so the estimate would be measured for nothing.
    && (!!env.denoiserProblems?.deepfilternet3 || !deepFilterAvailable(models));
  if (needsSpectrum) {
    const spec = new SpectrumAnalysis(job.sampleRate);
    const meter = new LoudnessMeter(job.sampleRate, job.channels);
    const energy = new EnergyStats(job.sampleRate);
    const decay = new DecayStats(job.sampleRate);
    // Music presence only steers autoid (keep_music semantics), so only autoid pays for its FFT.
    const music = flags.has('autoid') ? new MusicDetector(job.sampleRate) : null;
    // autoid listens for a noise floor, hum and clipping before it plans (detect.ts, detect-hum.ts).
    const fft = flags.has('autoid') ? await loadFftProvider() : null;
    const noise = fft ? new NoiseFloorAnalysis(job.sampleRate, fft) : null;
    const hum = fft ? new HumDetector(job.sampleRate, fft) : null;
    await runAnalysis([spec, meter, energy, decay, ...(music ? [music] : []), ...(noise ? [noise] : []), ...(hum ? [hum] : [])], source(), ctx);
    t60 = decay.result();
    spectrum = spec.result();
    stats = {
      loudness: meter.result(), ...energy.result(), spectrum, t60, ...(music ? { musicShare: music.result().musicShare } : {}),
      ...(noise ? { noise: noise.result(), targetLufs: job.targetLufs } : {}), ...(hum ? { hum: hum.result() } : {}),
    };
    ctx.onProgress(0.1);
  } else if (needsDecay) {
    // The decay estimate alone: one more decode and 20 ms frame levels, about 2% of DTLN's time (measured on a 17 s
    // file: 36 ms against 1.9 s), where the full analysis above adds an FFT per frame that nothing here would use.
    const decay = new DecayStats(job.sampleRate);
    await runAnalysis([decay], source(), ctx);
    t60 = decay.result();
    ctx.onProgress(0.1);
  }
  const plan = planEnhancement(flags, stats);
  const stageCtx = {
    sampleRate: job.sampleRate, channels: job.channels, modelsDir: job.modelsDir, spectrum, ...env,
    denoiser: job.denoiser ?? 'auto', t60, separationEngines, signal: ctx.signal, tmpDir: ctx.tmpDir,
    ...(job.dereverb ? { dereverb: job.dereverb } : {}),
    ...(job.dereverbCpuMaxSeconds !== undefined ? { dereverbCpuMaxSeconds: job.dereverbCpuMaxSeconds, inputSeconds: job.totalFrames / job.sampleRate } : {}),
  };
  const chainOpts: PlannedChainOptions = {
    threads: chunkThreads(run.threads), totalFrames: job.totalFrames, neuralSeparation: separationEngines.length > 0,
    learnedDereverb: plan.stages.includes('dereverb') && !plan.echo && learnedDereverbWouldRun(models, {
      channels: job.channels, preference: job.dereverb ?? 'auto', ...(env.executionProviders ? { executionProviders: env.executionProviders } : {}),
      ...(job.dereverbCpuMaxSeconds !== undefined ? { inputSeconds: job.totalFrames / job.sampleRate, cpuMaxSeconds: job.dereverbCpuMaxSeconds } : {}),
    }),
    blockFrames: BLOCK_SECONDS * job.sampleRate, ...(run.chunkSeconds ? { chunkSeconds: run.chunkSeconds } : {}), ...(run.profile ? { profile: run.profile } : {}),
  };
  // MP3 as LAME VBR V2: constant-bitrate LAME takes 0.3-0.5 dB off the level normalize just set.
  const encoder = new StreamEncoder(job.outPath, {
    ffmpeg: job.ffmpeg, format: job.format, sampleRate: job.sampleRate, channels: job.channels, signal: ctx.signal,
    mp3Vbr: 2, ...(job.pcm ? { pcm: job.pcm } : {}),
  });
  const nameEngines = (notes: Record<string, string>) => {
    for (const [stage, why] of Object.entries(notes)) if (plan.reasons[stage]) plan.reasons[stage] += `; engine: ${why}`;
  };
  const done = (engines: string[], inputFrames: number, outputFrames: number, threads: number): EnhanceThreadOutput => ({
    stages: [...plan.stages], engines, reasons: plan.reasons, outputSeconds: outputFrames / job.sampleRate, inputSeconds: inputFrames / job.sampleRate, threads,
  });
  let spill: SpillFile | null = null;
  try {
    if (!plan.stages.includes('normalize')) {
      const r = await runPlannedChain(plan, stageCtx, source(), (b) => encoder.write(b), phase(0.1, 1), chainOpts);
      nameEngines(r.notes);
      await encoder.end();
      return done(r.engines, r.inputFrames, r.outputFrames, r.threads);
    }
    // normalize needs the loudness of what the chain gives before its first sample. The chain runs once: its output
    // is metered and spilled to disk (parallel-spill.ts), and the loudness passes read the spill back, where they
    // ran the whole chain again (two or three times the denoiser's and WPE's work on every long file).
    const meter = new LoudnessMeter(job.sampleRate, job.channels);
    let read: () => AsyncIterable<AudioData> = source;
    let measured = stats?.loudness ?? null;
    let first: PlannedChainResult | null = null;
    if (plan.stages.some((s) => s !== 'normalize')) {
      const file = await SpillFile.create(join(ctx.tmpDir, 'enhance-chain.f32'));
      spill = file;
      first = await runPlannedChain(plan, stageCtx, source(), async (b) => {
        meter.push(b);
        await file.write(b);
      }, phase(0.1, 0.85), chainOpts);
      measured = meter.result();
      read = () => file.read(chainOpts.blockFrames);
    } else if (!measured) {
      await runAnalysis([meter], source(), ctx);
      measured = meter.result();
    }
    const named = first ?? { ...(await buildStages(plan, stageCtx)), threads: 1 };
    nameEngines(named.notes);
    // MP3 coding overshoots sample peaks (measured up to +0.4 dB at 8 kHz): a lower ceiling keeps the
    // decoded file under -1 dBTP.
    const opts = { targetLufs: job.targetLufs, ceilingDbtp: job.ceilingDbtp ?? (job.format === 'mp3' ? MP3_CEILING_DBTP : -1) };
    let aim: LoudnessAim | null = null;
    if (aimedNormalize(measured, null, job.sampleRate, job.channels, opts).limiting) {
      // Peak limiting takes loudness away; one dry run feeds limited normalizes at several compensations and picks
      // the one that lands on the target.
      const pass = new LimiterAimPass(measured, job.sampleRate, job.channels, opts);
      await runAnalysis([pass], read(), ctx);
      aim = pass.result();
      if (aim.capped) plan.reasons.normalize += `; the true-peak ceiling allows ${aim.expectedLufs.toFixed(1)} LUFS at most`;
      ctx.onProgress(0.92);
    }
    const normalize = aimedNormalize(measured, aim, job.sampleRate, job.channels, opts);
    const last = await runChain([normalize], read(), (b) => encoder.write(b), phase(aim ? 0.92 : 0.85, 1), { totalFrames: spill?.length ?? job.totalFrames });
    await encoder.end();
    // Billed for what the decoder yielded: the chain's pass when there was one (the spill is its output).
    return done(named.engines, first?.inputFrames ?? last.inputFrames, last.outputFrames, named.threads);
  } catch (err) {
    encoder.abort();
    throw err;
  } finally {
    await spill?.remove();
  }
}

/**
 * Thread entry. remove_background_audio / keep_music use an installed neural vocal model (SEPARATION_ENGINE)
 * when there is one; the enhancement chain's built-in speech separator otherwise (not the song DSP engine).
 */
export function enhanceThread(env: ThreadEnv) {
  // One per thread: a failed download is not retried by every task for a while.
  const puller = new AutoPuller();
  return async (job: EnhanceThreadInput, ctx: EngineContext): Promise<EnhanceThreadOutput> => {
    let pulled: EnhancePullOutcome = { notes: {}, denoisers: {} };
    let runCtx = ctx;
    if (env.autoPull) {
      // The download, when there is one, takes the first tenth of the task's progress.
      pulled = await pullEnhanceModels(puller, job.flags, job.denoiser ?? 'auto', {
        modelsDir: job.modelsDir, signal: ctx.signal, onProgress: (f) => ctx.onProgress(0.1 * f),
        ...(env.catalog ? { catalog: env.catalog } : {}), ...(env.modelsBaseUrl ? { baseUrl: env.modelsBaseUrl } : {}),
        dereverb: {
          preference: job.dereverb ?? 'auto', inputSeconds: job.totalFrames / job.sampleRate,
          cpuMaxSeconds: job.dereverbCpuMaxSeconds ?? Infinity, ...(env.executionProviders ? { executionProviders: env.executionProviders } : {}),
        },
      });
      runCtx = { ...ctx, onProgress: (f) => ctx.onProgress(0.1 + 0.9 * f) };
    }
    const vocal = createSeparationEngine({
      modelsDir: env.modelsDir, choice: env.separationEngine,
      ...(env.catalog ? { catalog: env.catalog } : {}), ...(env.executionProviders ? { executionProviders: env.executionProviders } : {}),
    }).pick(350);
    const models: EnhanceModels = {
      ...(env.catalog ? { catalog: env.catalog } : {}), ...(env.executionProviders ? { executionProviders: env.executionProviders } : {}),
      denoiserProblems: pulled.denoisers, ...(pulled.dereverbProblem ? { dereverbProblem: pulled.dereverbProblem } : {}),
    };
    const out = await runEnhance(job, runCtx, vocal.id === 'builtin-dsp' ? [] : [vocal], models, env.enhanceThreads ? { threads: env.enhanceThreads } : {});
    for (const [stage, why] of Object.entries(pulled.notes)) if (out.reasons[stage]) out.reasons[stage] += `; ${why}`;
    return out;
  };
}
