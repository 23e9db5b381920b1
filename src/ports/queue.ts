import type { TaskKind } from '../domain/task.js';

export interface JobPayload {
  taskId: string;
  kind: TaskKind;
}

/** One delivery of a job to a consumer. */
export interface DeliveredJob extends JobPayload {
  /**
   * 1 on the first delivery; one more after each retryable failure or lost lease (the consumer
   * died). A graceful hand-back on shutdown does not count.
   */
  attempt: number;
  maxAttempts: number;
}

/** What the handler reports for one delivery; a thrown error counts as `retry`. */
export type JobResult =
  | { status: 'done' }
  /** Final: retrying cannot help. The handler has already recorded why. */
  | { status: 'failed'; reason: string }
  /** Transient: deliver again after a backoff, counting this attempt. */
  | { status: 'retry'; error: unknown };

/** Why a job ran out of attempts: its last attempt failed, or its last consumer lost the lease (died). */
export type ExhaustedCause = { cause: 'error'; error: unknown } | { cause: 'lease-lost' };

export interface JobHandler {
  /**
   * Runs one delivery. `signal` aborts when the lease is lost (another consumer may get the job)
   * or when the consumer stops and the grace period is over (the job is handed back).
   */
  run(job: DeliveredJob, signal: AbortSignal): Promise<JobResult>;
  /**
   * The job has no attempts left: called instead of a retry after a failure on the last attempt,
   * or instead of `run` when the last attempt's consumer died. The job is removed once this
   * returns; if it throws, the job is kept and offered again later.
   */
  exhausted(job: DeliveredJob, why: ExhaustedCause): Promise<void>;
}

/** How one kind is consumed. Each kind has its own slots, so long kinds never take every slot. */
export interface KindPolicy {
  /** Jobs of this kind one consumer runs at once. */
  concurrency: number;
  /** Counted deliveries (see DeliveredJob.attempt) before the job is given up. */
  maxAttempts: number;
  /** A job whose consumer stops renewing its lease for this long is delivered again. */
  leaseMs: number;
  /** Delay before the retry that follows failed attempt n: initialMs * 2^(n-1), at most maxMs. */
  backoff: { initialMs: number; maxMs: number };
}

/** One policy per kind; the table lives in the worker composition (src/app/queue-policy.ts). */
export type QueuePolicy = Readonly<Record<TaskKind, KindPolicy>>;

export interface JobConsumer {
  /** Wakes an idle consumer now (a job was just enqueued nearby); a no-op where delivery is pushed. */
  notify(): void;
  /** False once stopping, or when its delivery loops died. */
  isRunning(): boolean;
  /**
   * Stops taking jobs, lets running ones finish within graceMs, then aborts the rest and hands
   * them back to the queue without spending one of their attempts.
   */
  stop(graceMs: number): Promise<void>;
}

/**
 * Durable work queue: enqueue on the API side, consume on the worker side. Leases, attempts,
 * backoff and the recovery of jobs whose consumer died are the adapter's business (SQL, BullMQ).
 */
export interface JobQueue {
  /** Throws when the queue's backend cannot be reached (for /healthz). */
  ping(): Promise<void>;
  /** Idempotent: enqueueing a task that already has a job changes nothing. */
  enqueue(job: JobPayload): Promise<void>;
  consume(kinds: readonly TaskKind[], handler: JobHandler, policy: QueuePolicy): Promise<JobConsumer>;
  /** 1-based position among waiting jobs of its kind; 0 while it is being processed; null when unknown. */
  position(job: JobPayload): Promise<number | null>;
  /** Jobs waiting (including those waiting for a retry), per kind. */
  depth(): Promise<Partial<Record<TaskKind, number>>>;
  /** Releases connections; stop consumers first. */
  close(): Promise<void>;
}

