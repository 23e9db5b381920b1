import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { TaskKind } from '../../domain/task.js';
import type { DeliveredJob, ExhaustedCause, JobConsumer, JobHandler, QueuePolicy } from '../../ports/queue.js';
import { QueueAbort, backoffDelay, runDelivery, settlesWithin, type Settlement } from '../queue/delivery.js';
import type { ClaimedRow, JobRows } from './queue-rows.js';

interface Delivery {
  controller: AbortController;
  /** Settles (never rejects) once the job has been run and its row updated. */
  done: Promise<void>;
}

/**
 * Polls the jobs table for the kinds it consumes, each kind with its own slots: a claim only
 * asks for kinds that have a free slot, so long jobs filling their kind's slots never keep a
 * short kind waiting. A lease is held with heartbeats while the job runs.
 */
export class SqlJobConsumer implements JobConsumer {
  private readonly deliveries = new Map<string, Delivery>();
  private readonly busy = new Map<TaskKind, number>();
  private stopping = false;
  private alive = true;
  private loop: Promise<void> = Promise.resolve();
  /** Set while idle; a wake-up that comes while busy is remembered in `woken` so it is not lost. */
  private wake: (() => void) | null = null;
  private woken = false;

  constructor(
    private readonly rows: JobRows,
    private readonly kinds: readonly TaskKind[],
    private readonly handler: JobHandler,
    private readonly policy: QueuePolicy,
    private readonly opts: { pollIntervalMs: number; logger: Logger },
  ) {}

  start(): void {
    this.loop = this.dispatch().catch((err) => {
      this.alive = false;
      this.opts.logger.error({ err }, 'queue consumer stopped unexpectedly');
    });
  }

  notify(): void {
    this.woken = true;
    this.wake?.();
  }

  isRunning(): boolean {
    return this.alive && !this.stopping;
  }

  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.notify();
    await this.loop;
    const all = Promise.all([...this.deliveries.values()].map((d) => d.done));
    if (!(await settlesWithin(all, graceMs))) {
      for (const d of this.deliveries.values()) d.controller.abort(new QueueAbort('shutdown'));
    }
    await all;
  }

  private async dispatch(): Promise<void> {
    while (!this.stopping) {
      this.woken = false;
      const free = this.kinds.filter((k) => (this.busy.get(k) ?? 0) < this.policy[k].concurrency);
      let row: ClaimedRow | null = null;
      if (free.length > 0) {
        try {
          row = await this.rows.claim(free, randomUUID(), (k) => this.policy[k].leaseMs);
        } catch (err) {
          this.opts.logger.error({ err }, 'claiming a job failed');
        }
      }
      if (row && this.stopping) {
        // Claimed while stop() began: give it straight back rather than start it.
        await this.rows.handBack(row).catch((err) => this.opts.logger.warn({ err, taskId: row?.taskId }, 'handing a job back failed'));
        break;
      } else if (row) {
        this.begin(row);
        continue;
      }
      if (!this.woken && !this.stopping) await this.idle();
    }
  }

  private idle(): Promise<void> {
    return new Promise<void>((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(finish, this.opts.pollIntervalMs);
      this.wake = finish;
    });
  }

  private begin(row: ClaimedRow): void {
    const controller = new AbortController();
    this.busy.set(row.kind, (this.busy.get(row.kind) ?? 0) + 1);
    const done = this.deliver(row, controller)
      .catch((err) => this.opts.logger.error({ err, taskId: row.taskId }, 'settling a job failed; its lease will expire and it is delivered again'))
      .finally(() => {
        this.busy.set(row.kind, (this.busy.get(row.kind) ?? 1) - 1);
        this.deliveries.delete(row.token);
        this.notify(); // a slot is free
      });
    this.deliveries.set(row.token, { controller, done });
  }

  private async deliver(row: ClaimedRow, controller: AbortController): Promise<void> {
    const policy = this.policy[row.kind];
    const job: DeliveredJob = { taskId: row.taskId, kind: row.kind, attempt: row.attempt, maxAttempts: policy.maxAttempts };
    // Claimed again after its consumer died on the last attempt: nothing left to try.
    if (job.attempt > job.maxAttempts) return this.exhaust(row, job, { cause: 'lease-lost' });
    const heartbeat = setInterval(() => {
      this.rows.heartbeat(row, policy.leaseMs).then(
        (mine) => mine || controller.abort(new QueueAbort('lease-lost')),
        (err) => this.opts.logger.warn({ err, taskId: row.taskId }, 'lease heartbeat failed'),
      );
    }, policy.leaseMs / 3);
    let settlement: Settlement;
    try {
      settlement = await runDelivery(this.handler, job, policy, controller.signal);
    } finally {
      clearInterval(heartbeat);
    }
    switch (settlement.action) {
      case 'ack':
      case 'fail':
        return this.rows.remove(row);
      case 'retry':
        this.opts.logger.warn({ err: settlement.error, taskId: row.taskId, attempt: job.attempt, delayMs: settlement.delayMs }, 'job failed; retrying');
        return this.rows.retryLater(row, settlement.delayMs);
      case 'exhausted':
        return this.exhaust(row, job, settlement.why);
      case 'hand-back':
        return this.rows.handBack(row);
      case 'lost':
        return;
    }
  }

  private async exhaust(row: ClaimedRow, job: DeliveredJob, why: ExhaustedCause): Promise<void> {
    try {
      await this.handler.exhausted(job, why);
    } catch (err) {
      // Keep the job: it comes back (again past its last attempt) and the handler gets another go.
      this.opts.logger.error({ err, taskId: row.taskId }, 'recording a job out of attempts failed');
      return this.rows.retryLater(row, backoffDelay(this.policy[row.kind], job.attempt));
    }
    await this.rows.remove(row);
  }
}
