import { mkdtemp, rm, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { DISK_FULL_REASON, isDiskFull, TaskFailure } from '../domain/errors.js';
import { isFinished, type TaskKind } from '../domain/task.js';
import type { DeliveredJob, ExhaustedCause, JobConsumer, JobHandler, JobQueue, JobResult, QueuePolicy } from '../ports/queue.js';
import type { Funds, TaskStore } from '../ports/task-store.js';
import type { BlobStore } from '../ports/blob-store.js';
import type { TaskMetrics } from '../ports/metrics.js';
import type { TaskHandler } from './handler.js';
import { throughOutage } from './outage.js';

export interface RunnerOptions {
  /** The kinds this worker takes (WORKER_KINDS); those without a handler are left to other workers. */
  kinds: readonly TaskKind[];
  /** Per-kind slots, attempts, backoff and lease (src/app/queue-policy.ts). */
  policy: QueuePolicy;
  tmpDir: string;
  /**
   * How long a task record's write (or the task's first read) waits for a database that cannot be reached, trying
   * again with backoff, before the attempt fails as before (STORE_OUTAGE_SECONDS). 0: not at all.
   */
  storeOutageMs?: number;
}

/**
 * The one run-task flow every kind shares, handed to the queue as its job handler: load the
 * task, run the kind's handler, then record success (and charge, once) or failure. Leases,
 * attempts, backoff and redelivery after a crash are the queue adapter's business.
 */
export class JobRunner implements JobHandler {
  private consumer: JobConsumer | null = null;
  private stopping: Promise<void> | null = null;

  constructor(
    private readonly deps: {
      queue: JobQueue;
      tasks: TaskStore;
      handlers: ReadonlyMap<TaskKind, TaskHandler>;
      metrics: TaskMetrics;
      logger: Logger;
      /** Whether a store failure was the database being unreachable (the adapter's knowledge: isDatabaseUnavailable). */
      storeUnavailable?: (err: unknown) => boolean;
      /** Where results are written: a result whose task was deleted while it ran is removed (tasks/<id>/). */
      blobs?: Pick<BlobStore, 'deletePrefix'>;
    },
    private readonly opts: RunnerOptions,
  ) {}

  get kinds(): TaskKind[] {
    return this.opts.kinds.filter((k) => this.deps.handlers.has(k));
  }

  isAlive(): boolean {
    return !this.stopping && this.consumer !== null && this.consumer.isRunning();
  }

  /** Stopping (a drain): no new jobs, running ones finishing or being handed back. */
  isStopping(): boolean {
    return this.stopping !== null;
  }

  async start(): Promise<void> {
    await mkdir(this.opts.tmpDir, { recursive: true });
    this.consumer = await this.deps.queue.consume(this.kinds, this, this.opts.policy);
  }

  /** Lets a freshly created task start without waiting for the next poll. */
  notify(): void {
    this.consumer?.notify();
  }

  /** Stops taking jobs, lets running ones finish within graceMs, then hands the rest back to the queue. Once: later calls wait for the first. */
  stop(graceMs: number): Promise<void> {
    this.stopping ??= this.consumer?.stop(graceMs) ?? Promise.resolve();
    return this.stopping;
  }

  async run(job: DeliveredJob, signal: AbortSignal): Promise<JobResult> {
    const { tasks, metrics, logger } = this.deps;
    const log = logger.child({ taskId: job.taskId, kind: job.kind, attempt: job.attempt });
    const stored = <T>(what: string, op: () => Promise<T>) => this.untilStored(what, op, signal, log);
    const task = await stored('reading the task', () => tasks.get(job.taskId));
    // Gone (expired and reaped) or already finished by an earlier delivery: nothing to do.
    if (!task || isFinished(task.state)) return { status: 'done' };
    const handler = this.deps.handlers.get(job.kind);
    if (!handler) {
      const reason = 'No worker for this task kind';
      await stored('recording the failure', () => tasks.completeFailure(task.id, reason, Date.now()));
      metrics.tasksFinished.inc({ kind: job.kind, status: 'failed' });
      return { status: 'failed', reason };
    }
    await stored('marking the task running', () => tasks.markRunning(task.id, Date.now()));
    // Which node holds which task (and on which delivery): what an operator needs after a node dies.
    log.info('task started');
    let lastProgress = 0;
    const onProgress = (fraction: number) => {
      const now = Date.now();
      if (now - lastProgress < 500 && fraction < 1) return; // progress is for humans: twice a second is plenty
      lastProgress = now;
      tasks.setProgress(task.id, fraction, now).catch((err) => log.warn({ err }, 'progress update failed'));
    };
    const started = performance.now();
    let tmpDir: string | null = null;
    try {
      // Inside the try: on a full disk even this fails, and must fail the task like any later write.
      tmpDir = await mkdtemp(join(this.opts.tmpDir, `${task.id}-`));
      const reserve = async (price: number, what: string) => {
        const held = await tasks.reserve(task.id, price);
        if (!held.reserved) throw new TaskFailure(insufficientMessage(price, what, held.funds));
      };
      const outcome = await handler.run({ task, attempt: job.attempt, tmpDir, signal, onProgress, reserve, log });
      const seconds = (performance.now() - started) / 1000;
      // The work is done: a database restarting now must not cost the attempt and the work with it.
      const recorded = await stored('recording the result', () => tasks.completeSuccess(task.id, outcome, Date.now()));
      if (!recorded && (await stored('reading the task', () => tasks.get(task.id))) === null) {
        // Deleted while it ran: nobody can ask for the files it wrote, and no sweep would ever find them.
        await this.deps.blobs?.deletePrefix(`tasks/${task.id}/`);
        log.info({ seconds }, 'task was deleted while it ran: its result files were removed, nothing was charged');
        return { status: 'done' };
      }
      metrics.taskDuration.observe({ kind: job.kind, status: 'success' }, seconds);
      metrics.tasksFinished.inc({ kind: job.kind, status: 'success' });
      if (outcome.audioSeconds > 0) metrics.realTimeFactor.observe({ engine: outcome.engine }, seconds / outcome.audioSeconds);
      log.info({ seconds, engine: outcome.engine }, 'task succeeded');
      return { status: 'done' };
    } catch (err) {
      // A full disk is not transient in any useful sense: retrying would hold the task "waiting" until
      // someone frees space. Fail it now, with a reason that says so (failed tasks are not charged).
      const diskFull = isDiskFull(err) && !signal.aborted;
      if (diskFull || (err instanceof TaskFailure && !err.retryable)) {
        const reason = diskFull ? DISK_FULL_REASON : (err as TaskFailure).message;
        // What this attempt wrote goes first: it frees the space the failure itself is recorded with.
        if (diskFull && tmpDir) await rm(tmpDir, { recursive: true, force: true });
        const seconds = (performance.now() - started) / 1000;
        await stored('recording the failure', () => tasks.completeFailure(task.id, reason, Date.now()));
        metrics.taskDuration.observe({ kind: job.kind, status: 'failed' }, seconds);
        metrics.tasksFinished.inc({ kind: job.kind, status: 'failed' });
        if (diskFull) log.error({ err }, 'task failed: no space left on the disk');
        else log.info({ reason }, 'task failed');
        return { status: 'failed', reason };
      }
      // Transient, or interrupted (shutdown, lost lease): the queue retries, hands back or gives up.
      log.warn({ err }, 'task attempt did not finish');
      return { status: 'retry', error: err };
    } finally {
      if (tmpDir) await rm(tmpDir, { recursive: true, force: true });
    }
  }

  /**
   * A task record's read or write that waits out a database outage (a restart, a failover, a network cut): tried
   * again after 0.5, 1, 2, 4, then every 5 s, until it passes, the delivery is aborted (shutdown, lost lease) or
   * storeOutageMs is spent. Before, every failure of the store failed the attempt: with three attempts and their
   * backoff, an outage of a few seconds failed the tasks in flight, and finished work was thrown away.
   */
  private untilStored<T>(what: string, op: () => Promise<T>, signal: AbortSignal, log: Logger): Promise<T> {
    const unavailable = this.deps.storeUnavailable;
    if (!unavailable) return op();
    const deadline = Date.now() + (this.opts.storeOutageMs ?? 0);
    return throughOutage(op, { unavailable, deadline, abandon: () => signal.aborted, log, what: `the task database (${what})`, signal });
  }

  /** No attempts left: record the failure (nothing is charged) so the task does not wait forever. */
  async exhausted(job: DeliveredJob, why: ExhaustedCause): Promise<void> {
    const { tasks, metrics, logger } = this.deps;
    // A transient failure that never passed still says what it was ("the language model service could
    // not be reached"); only unexpected errors stay generic.
    const reason =
      why.cause === 'lease-lost'
        ? `Processing failed after ${job.maxAttempts} attempts`
        : isDiskFull(why.error)
          ? DISK_FULL_REASON
          : why.error instanceof TaskFailure
            ? why.error.message
            : 'Processing failed because of an internal error';
    logger.error({ taskId: job.taskId, kind: job.kind, attempt: job.attempt, err: why.cause === 'error' ? why.error : undefined }, 'task out of attempts');
    if (await tasks.completeFailure(job.taskId, reason, Date.now())) metrics.tasksFinished.inc({ kind: job.kind, status: 'failed' });
  }
}

/** Why a task whose price became known was not run: what it costs, and what the account had for it. */
function insufficientMessage(price: number, what: string, funds: Funds): string {
  const available = Math.max(0, funds.balance - funds.held);
  const held = funds.held > 0 ? ` (balance ${funds.balance}, of which ${funds.held} held by its other unfinished tasks)` : '';
  return `Insufficient credits: ${what} cost ${price} credits and the account has ${available} available${held}; nothing was charged`;
}
