import { decodeStream, StreamEncoder } from '../../media/ffmpeg-stream.js';
import type { EngineContext } from '../../ports/engines.js';
import { runAnalysis, runChain } from '../../engines/enhance/stage.js';
import { LoudnessMeter, NormalizeStage } from '../../engines/enhance/loudness.js';
import { SpectrumAnalysis } from '../../engines/enhance/eq.js';
import { buildStages, EnergyStats, planEnhancement, type EnhanceFlag, type InputStats } from '../../engines/enhance/chain.js';

export interface EnhanceThreadInput {
  inputPath: string;
  outPath: string;
  format: 'mp3' | 'wav' | 'flac';
  sampleRate: number;
  channels: number;
  totalFrames: number;
  flags: EnhanceFlag[];
  modelsDir: string;
  ffmpeg: string;
  targetLufs: number;
}

export interface EnhanceThreadOutput {
  stages: string[];
  engines: string[];
  reasons: Record<string, string>;
  outputSeconds: number;
}

/**
 * Runs in an engine thread. Up to four streamed passes over the input, never holding it whole:
 * 1) analysis of the input (spectrum for autoeq, statistics for autoid), when needed;
 * 2) the chain up to loudness, measured (only when normalize follows other stages);
 * 3) when peak limiting eats loudness, a dry run to re-aim the gain;
 * 4) the chain with the normalizing gain, into the encoder.
 */
export async function runEnhance(job: EnhanceThreadInput, ctx: EngineContext): Promise<EnhanceThreadOutput> {
  const flags = new Set(job.flags);
  const source = () => decodeStream(job.inputPath, { ffmpeg: job.ffmpeg, sampleRate: job.sampleRate, channels: job.channels, blockFrames: job.sampleRate * 5, signal: ctx.signal });
  const phase = (from: number, to: number) => ({ signal: ctx.signal, onProgress: (f: number) => ctx.onProgress(from + (to - from) * f) });
  const needsSpectrum = flags.has('autoeq') || flags.has('studio_sound') || flags.has('autoid');
  let stats: InputStats | null = null;
  let spectrum: Float64Array | null = null;
  if (needsSpectrum) {
    const spec = new SpectrumAnalysis(job.sampleRate);
    const meter = new LoudnessMeter(job.sampleRate, job.channels);
    const energy = new EnergyStats(job.sampleRate);
    await runAnalysis([spec, meter, energy], source(), ctx);
    spectrum = spec.result();
    stats = { loudness: meter.result(), ...energy.result(), spectrum };
    ctx.onProgress(0.1);
  }
  const plan = planEnhancement(flags, stats);
  const stageCtx = { sampleRate: job.sampleRate, channels: job.channels, modelsDir: job.modelsDir, spectrum };
  let measured = null;
  if (plan.stages.includes('normalize')) {
    const meter = new LoudnessMeter(job.sampleRate, job.channels);
    const pre = await buildStages(plan, stageCtx);
    if (pre.stages.length === 0 && stats) measured = stats.loudness;
    else {
      await runChain(pre.stages, source(), async (b) => meter.push(b), phase(0.1, 0.5), { totalFrames: job.totalFrames });
      measured = meter.result();
    }
  }
  const { stages, engines } = await buildStages(plan, stageCtx);
  if (measured) {
    let normalize = new NormalizeStage(measured, job.sampleRate, job.channels, { targetLufs: job.targetLufs });
    if (normalize.limiting) {
      // Peak limiting takes loudness away (speech over noise can need 5 dB of it); measure what the
      // limited chain really gives and aim the gain again so the result lands on the target.
      const check = new LoudnessMeter(job.sampleRate, job.channels);
      const dry = await buildStages(plan, stageCtx);
      await runChain([...dry.stages, normalize], source(), async (b) => check.push(b), phase(0.5, 0.7), { totalFrames: job.totalFrames });
      const shortfall = job.targetLufs - check.result().integratedLufs;
      if (Number.isFinite(shortfall) && Math.abs(shortfall) > 0.3) {
        normalize = new NormalizeStage({ ...measured, integratedLufs: measured.integratedLufs - shortfall }, job.sampleRate, job.channels, { targetLufs: job.targetLufs });
      }
    }
    stages.push(normalize);
  }
  const encoder = new StreamEncoder(job.outPath, { ffmpeg: job.ffmpeg, format: job.format, sampleRate: job.sampleRate, channels: job.channels, signal: ctx.signal });
  try {
    const { outputFrames } = await runChain(stages, source(), (b) => encoder.write(b), phase(measured ? 0.7 : 0.1, 1), { totalFrames: job.totalFrames });
    await encoder.end();
    return { stages: [...plan.stages], engines, reasons: plan.reasons, outputSeconds: outputFrames / job.sampleRate };
  } catch (err) {
    encoder.abort();
    throw err;
  }
}
