/**
 * The chunk workers of one enhancement run: worker threads started by the run's engine thread, each building the
 * chunked stages per chunk (parallel-worker.ts). Started for the run and terminated when it ends, fails or is
 * aborted: a run holds its cores for minutes, so a few milliseconds of start-up per thread are nothing, and no
 * stage state or model outlives the run.
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { AudioData } from '../../media/audio.js';
import type { EnhancePlan, StageContext } from '../../engines/enhance/chain.js';
import type { ChunkJob } from '../../engines/enhance/parallel.js';

/** What every chunk worker is started with: the chunked part of the plan and the stages' context, as data. */
export interface ChunkWorkerInit {
  plan: EnhancePlan;
  stages: Omit<StageContext, 'signal' | 'separationEngines'>;
  blockFrames: number;
}
export interface ChunkRequest {
  id: number;
  input: AudioData;
}
/** A chunk's output, with the engines and notes its stages were built with (the run reports the first chunk's). */
export type ChunkReply = { id: number; ok: true; output: AudioData; engines: string[]; notes: Record<string, string> } | { id: number; ok: false; error: string };

/**
 * Threads for one run: ENHANCE_THREADS when set, else every core the process may use (availableParallelism), at
 * least one. More threads than chunks are never started.
 */
export function chunkThreads(configured: number | undefined): number {
  return Math.max(1, configured ?? availableParallelism());
}

export class ChunkWorkers {
  private readonly workers: Worker[] = [];
  private readonly idle: Worker[] = [];
  private readonly waiting: Array<(w: Worker) => void> = [];
  private readonly calls = new Map<number, { worker: Worker; resolve: (a: AudioData) => void; reject: (e: unknown) => void }>();
  private failure: unknown = null;
  private nextId = 0;
  /** The engines and notes of the first chunk built: the run names them without building the stages itself. */
  built: { engines: string[]; notes: Record<string, string> } | null = null;
  private readonly onAbort = () => this.fail(this.signal.reason ?? new Error('aborted'));

  constructor(count: number, init: ChunkWorkerInit, private readonly signal: AbortSignal) {
    const fromSource = import.meta.url.endsWith('.ts');
    const entry = fileURLToPath(new URL(fromSource ? './parallel-worker-source.mjs' : './parallel-worker.js', import.meta.url));
    for (let i = 0; i < count; i++) {
      const w = new Worker(entry, { workerData: init });
      w.on('message', (reply: ChunkReply) => this.answer(w, reply));
      w.on('error', (err) => this.fail(err));
      w.on('exit', (code) => {
        if (this.failure === null && this.workers.includes(w)) this.fail(new Error(`a chunk worker exited (code ${code})`));
      });
      this.workers.push(w);
      this.idle.push(w);
    }
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Runs one chunk on the next free thread; its input buffers are handed over (transferred), not copied. */
  async run(job: ChunkJob): Promise<AudioData> {
    if (this.failure !== null) throw this.failure;
    const w = this.idle.pop() ?? (await new Promise<Worker>((resolve) => this.waiting.push(resolve)));
    if (this.failure !== null) throw this.failure;
    const id = this.nextId++;
    return new Promise<AudioData>((resolve, reject) => {
      this.calls.set(id, { worker: w, resolve, reject });
      const req: ChunkRequest = { id, input: job.input };
      w.postMessage(req, job.input.channels.map((c) => c.buffer as ArrayBuffer));
    });
  }

  private answer(w: Worker, reply: ChunkReply): void {
    const call = this.calls.get(reply.id);
    if (!call) return;
    this.calls.delete(reply.id);
    const next = this.waiting.shift();
    if (next) next(w);
    else this.idle.push(w);
    if (reply.ok) {
      this.built ??= { engines: reply.engines, notes: reply.notes };
      call.resolve(reply.output);
    }
    else call.reject(new Error(`enhancement chunk failed: ${reply.error}`));
  }

  private fail(err: unknown): void {
    if (this.failure !== null) return;
    this.failure = err;
    for (const call of this.calls.values()) call.reject(err);
    this.calls.clear();
    // Runs waiting for a thread are woken to see the failure.
    for (const wake of this.waiting.splice(0)) wake(this.workers[0]!);
    void this.close();
  }

  async close(): Promise<void> {
    this.signal.removeEventListener('abort', this.onAbort);
    const all = this.workers.splice(0);
    await Promise.all(all.map((w) => w.terminate()));
  }
}
