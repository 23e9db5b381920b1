import { mkdtemp, rm, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { TaskFailure } from '../domain/errors.js';
import type { TaskKind } from '../domain/task.js';
import type { JobQueue, ReservedJob } from '../ports/queue.js';
import type { TaskStore } from '../ports/task-store.js';
import type { Metrics } from '../services/metrics.js';
import type { TaskHandler } from './handler.js';

export interface RunnerOptions {
  concurrency: number;
  leaseMs: number;
  maxAttempts: number;
  pollIntervalMs: number;
  tmpDir: string;
}

/**
 * The one run-task flow every kind shares: reserve a job, hold its lease with heartbeats, run the
 * kind's handler, then record success (and charge, once) or failure. A job whose worker died is
 * delivered again when its lease runs out, up to maxAttempts.
 */
export class JobRunner {
  readonly workerId = `worker_${randomUUID().slice(0, 8)}`;
  private readonly running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  private slots: Promise<void>[] = [];
  private stopping = false;
  private wake: (() => void) | null = null;

  constructor(
    private readonly deps: { queue: JobQueue; tasks: TaskStore; handlers: ReadonlyMap<TaskKind, TaskHandler>; metrics: Metrics; logger: Logger },
    private readonly opts: RunnerOptions,
  ) {}

  get kinds(): TaskKind[] {
    return [...this.deps.handlers.keys()];
  }

  isAlive(): boolean {
    return !this.stopping && this.slots.length === this.opts.concurrency;
  }

  async start(): Promise<void> {
    await mkdir(this.opts.tmpDir, { recursive: true });
    this.slots = Array.from({ length: this.opts.concurrency }, () => this.loop());
  }

  /** Lets a freshly created task start without waiting for the next poll. */
  notify(): void {
    this.wake?.();
  }

  /** Stops taking jobs, lets running ones finish within graceMs, then hands the rest back to the queue. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.notify();
    const all = Promise.all([...this.running.values()].map((r) => r.done));
    const timedOut = await Promise.race([all.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (timedOut) for (const r of this.running.values()) r.abort.abort(new Error('shutting down'));
    await Promise.all(this.slots);
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let job: ReservedJob | null = null;
      try {
        job = await this.deps.queue.reserve(this.kinds, this.workerId, this.opts.leaseMs);
      } catch (err) {
        this.deps.logger.error({ err }, 'reserve failed');
      }
      if (!job) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.opts.pollIntervalMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        continue;
      }
      const abort = new AbortController();
      const done = this.runJob(job, abort).catch((err) => this.deps.logger.error({ err, taskId: job?.taskId }, 'job crashed'));
      this.running.set(job.taskId, { abort, done });
      await done;
      this.running.delete(job.taskId);
    }
  }

  private async runJob(job: ReservedJob, abort: AbortController): Promise<void> {
    const { queue, tasks, metrics, logger } = this.deps;
    const log = logger.child({ taskId: job.taskId, kind: job.kind, attempt: job.attempt });
    const task = await tasks.get(job.taskId);
    if (!task || task.state === 'success' || task.state === 'failed') {
      await queue.ack(job.taskId);
      return;
    }
    const handler = this.deps.handlers.get(job.kind);
    if (!handler || job.attempt > this.opts.maxAttempts) {
      const why = handler ? `Processing failed after ${this.opts.maxAttempts} attempts` : 'No worker for this task kind';
      await tasks.completeFailure(task.id, why, Date.now());
      await queue.ack(job.taskId);
      metrics.tasksFinished.inc({ kind: job.kind, status: 'failed' });
      return;
    }
    await tasks.markRunning(task.id, Date.now());
    const heartbeat = setInterval(() => {
      queue.heartbeat(task.id, this.workerId, this.opts.leaseMs).then(
        (mine) => mine || abort.abort(new Error('lease lost')),
        (err) => log.warn({ err }, 'heartbeat failed'),
      );
    }, Math.max(500, this.opts.leaseMs / 3));
    let lastProgress = 0;
    const onProgress = (fraction: number) => {
      const now = Date.now();
      if (now - lastProgress < 500 && fraction < 1) return; // progress is for humans: twice a second is plenty
      lastProgress = now;
      tasks.setProgress(task.id, fraction, now).catch((err) => log.warn({ err }, 'progress update failed'));
    };
    const tmpDir = await mkdtemp(join(this.opts.tmpDir, `${task.id}-`));
    const started = performance.now();
    try {
      const outcome = await handler.run({ task, attempt: job.attempt, tmpDir, signal: abort.signal, onProgress });
      const seconds = (performance.now() - started) / 1000;
      await tasks.completeSuccess(task.id, outcome, Date.now());
      await queue.ack(task.id);
      metrics.taskDuration.observe({ kind: job.kind, status: 'success' }, seconds);
      metrics.tasksFinished.inc({ kind: job.kind, status: 'success' });
      if (outcome.audioSeconds > 0) metrics.realTimeFactor.observe({ engine: outcome.engine }, seconds / outcome.audioSeconds);
      log.info({ seconds, engine: outcome.engine }, 'task succeeded');
    } catch (err) {
      const seconds = (performance.now() - started) / 1000;
      if (err instanceof TaskFailure && !err.retryable) {
        await tasks.completeFailure(task.id, err.message, Date.now());
        await queue.ack(task.id);
        metrics.taskDuration.observe({ kind: job.kind, status: 'failed' }, seconds);
        metrics.tasksFinished.inc({ kind: job.kind, status: 'failed' });
        log.info({ reason: err.message }, 'task failed');
      } else if (this.stopping || job.attempt < this.opts.maxAttempts) {
        // Shutting down or transient: hand it back (another worker or the next start takes it).
        log.warn({ err }, 'task interrupted; returned to the queue');
        await queue.release(task.id, this.workerId, this.stopping ? 0 : 1000 * job.attempt);
      } else {
        log.error({ err }, 'task failed on its last attempt');
        // A transient failure that never passed still says what it was ("the language model service could
        // not be reached"); only unexpected errors stay generic.
        await tasks.completeFailure(task.id, err instanceof TaskFailure ? err.message : 'Processing failed because of an internal error', Date.now());
        await queue.ack(task.id);
        metrics.tasksFinished.inc({ kind: job.kind, status: 'failed' });
      }
    } finally {
      clearInterval(heartbeat);
      await rm(tmpDir, { recursive: true, force: true });
    }
  }
}
