/**
 * One run of the planned chain (every stage before `normalize`) over the input: on chunk worker threads when the
 * file is long enough and the machine has cores to spare, in this thread otherwise. Both give the same length and,
 * within the seam bound the tests measure, the same samples (src/engines/enhance/parallel.ts says how).
 */
import type { AudioData } from '../../media/audio.js';
import type { EngineContext } from '../../ports/engines.js';
import { buildStages, type EnhancePlan, type StageContext } from '../../engines/enhance/chain.js';
import { chunkedStream, chunkGeometry, splitPlan } from '../../engines/enhance/parallel.js';
import { runChain, TimedStage, type AudioStage } from '../../engines/enhance/stage.js';
import { ChunkWorkers } from './parallel-pool.js';

export interface PlannedChainOptions {
  /** Threads for the chunked stages (chunkThreads); 1 runs the chain in this thread. */
  threads: number;
  /** Input length in frames (progress, and whether chunking pays). */
  totalFrames: number;
  /** A neural vocal model separates: `separate` and what follows run once, on the joined stream. */
  neuralSeparation: boolean;
  /** The learned dereverberation model will run (learnedDereverbWouldRun): `dereverb` and what follows run once too. */
  learnedDereverb?: boolean;
  /** Chunk length (tests use short ones); default chunkGeometry's. */
  chunkSeconds?: number;
  blockFrames: number;
  /** Per-stage wall time of the stages run in this thread, by stage name (bench/enhance-long.ts). */
  profile?: Map<string, number>;
}

export interface PlannedChainResult {
  inputFrames: number;
  outputFrames: number;
  engines: string[];
  notes: Record<string, string>;
  /** Threads the chunked stages ran on (1: the sequential chain). */
  threads: number;
}

type ChainCtx = Pick<EngineContext, 'signal' | 'onProgress'>;

export async function runPlannedChain(
  plan: EnhancePlan,
  stageCtx: StageContext,
  source: AsyncIterable<AudioData>,
  sink: (b: AudioData) => Promise<void>,
  ctx: ChainCtx,
  opts: PlannedChainOptions,
): Promise<PlannedChainResult> {
  const geometry = chunkGeometry(stageCtx.sampleRate, stageCtx.channels, opts.chunkSeconds);
  const chains = Math.ceil(opts.totalFrames / geometry.frames);
  const threads = Math.min(opts.threads, chains);
  const { chunked, joined } = splitPlan({ ...plan, stages: plan.stages.filter((s) => s !== 'normalize') }, opts.neuralSeparation, opts.learnedDereverb);
  const timed = (stages: AudioStage[]) => (opts.profile ? stages.map((s) => new TimedStage(s, opts.profile!)) : stages);
  // Sequential: one thread asked for, a file shorter than two chunks (a thread's start-up and the lead-in would
  // cost more than they save), or nothing that can run in chunks.
  if (threads < 2 || chunked.stages.length === 0) {
    const built = await buildStages(plan, stageCtx);
    const r = await runChain(timed(built.stages), source, sink, ctx, { totalFrames: opts.totalFrames });
    return { ...r, engines: built.engines, notes: built.notes, threads: 1 };
  }
  // The chunked stages are named by the first chunk's build (ChunkWorkers.built): building them here only to name them
  // loaded every model once more in this thread (DeepFilterNet3: 0.6 GB held idle for the whole run).
  const rest = await buildStages({ ...joined, stages: [...joined.stages, ...(plan.stages.includes('normalize') ? ['normalize' as const] : [])] }, stageCtx);
  const { signal: _signal, separationEngines: _engines, ...data } = stageCtx;
  const workers = new ChunkWorkers(threads, { plan: chunked, stages: data, blockFrames: opts.blockFrames }, ctx.signal);
  try {
    const started = performance.now();
    const stream = chunkedStream(source, (job) => workers.run(job), { geometry, inFlight: threads + 1, blockFrames: opts.blockFrames });
    const r = await runChain(timed(rest.stages), stream, sink, ctx, { totalFrames: opts.totalFrames });
    opts.profile?.set(`chunked (${chunked.stages.join('+')}) on ${threads} threads, wall`, performance.now() - started);
    const named = workers.built ?? { engines: [], notes: {} };
    return { ...r, engines: [...named.engines, ...rest.engines], notes: { ...named.notes, ...rest.notes }, threads };
  } finally {
    await workers.close();
  }
}
