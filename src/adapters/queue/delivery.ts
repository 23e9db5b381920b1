import type { DeliveredJob, ExhaustedCause, JobHandler, JobResult, KindPolicy } from '../../ports/queue.js';

/**
 * What the adapters share: how one delivery's outcome becomes a decision about the job. Each
 * adapter applies the decision with its own storage (a guarded UPDATE, a BullMQ move).
 */

/** The reason an adapter aborts a running delivery. */
export class QueueAbort extends Error {
  constructor(readonly why: 'shutdown' | 'lease-lost') {
    super(why === 'shutdown' ? 'the consumer is shutting down' : 'the lease on this job was lost');
  }
}

export type Settlement =
  | { action: 'ack' }
  | { action: 'fail'; reason: string }
  /** Counted attempt; deliver again after delayMs. */
  | { action: 'retry'; delayMs: number; error: unknown }
  | { action: 'exhausted'; why: ExhaustedCause }
  /** Shutdown: give it back as it was, the attempt not spent. */
  | { action: 'hand-back' }
  /** The lease went to someone else meanwhile: touch nothing. */
  | { action: 'lost' };

/** Delay before the retry that follows failed attempt `attempt` (1-based). */
export function backoffDelay(policy: KindPolicy, attempt: number): number {
  return Math.min(policy.backoff.maxMs, policy.backoff.initialMs * 2 ** Math.max(0, attempt - 1));
}

/** Runs the handler on one delivery and decides what becomes of the job. Never throws. */
export async function runDelivery(handler: JobHandler, job: DeliveredJob, policy: KindPolicy, signal: AbortSignal): Promise<Settlement> {
  let result: JobResult;
  try {
    result = await handler.run(job, signal);
  } catch (error) {
    result = { status: 'retry', error };
  }
  const abort: unknown = signal.aborted ? signal.reason : undefined;
  // Whatever the handler says, a lost lease means the job is no longer ours to settle: its new
  // consumer sees the task's recorded state (the task store's completion is idempotent).
  if (abort instanceof QueueAbort && abort.why === 'lease-lost') return { action: 'lost' };
  if (result.status === 'done') return { action: 'ack' };
  if (result.status === 'failed') return { action: 'fail', reason: result.reason };
  // Interrupted by our own shutdown: not the job's fault, so the attempt is not spent.
  if (abort instanceof QueueAbort && abort.why === 'shutdown') return { action: 'hand-back' };
  if (job.attempt >= job.maxAttempts) return { action: 'exhausted', why: { cause: 'error', error: result.error } };
  return { action: 'retry', delayMs: backoffDelay(policy, job.attempt), error: result.error };
}

/** Resolves true when `work` settles within ms, false when the time ran out first (work goes on). */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    const settled = work.then(
      () => true,
      () => true,
    );
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
