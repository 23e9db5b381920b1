import { UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { TaskKind } from '../../domain/task.js';
import type { DeliveredJob, JobConsumer, JobHandler, KindPolicy, QueuePolicy } from '../../ports/queue.js';
import { QueueAbort, errorMessage, runDelivery, settlesWithin } from '../queue/delivery.js';
import { queueName, type JobData } from './names.js';
import { RedisSilenceWatch } from './silence-watch.js';

/** A counted failure; carries the delay our policy chose, which the worker's backoff strategy hands to BullMQ. */
class RetryLater extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
    this.name = 'RetryLater';
  }
}

export interface BullMqConsumerOptions {
  redisUrl: string;
  prefix: string;
  logger: Logger;
  /** A worker connection that does not answer a PING within this long is reported silent (RedisSilenceWatch). */
  commandTimeoutMs: number;
}

/**
 * One BullMQ Worker per kind, each with the kind's own concurrency, so long kinds never take the
 * slots of short ones. The lease is BullMQ's lock (lockDuration, renewed while the job runs);
 * a job whose worker died is moved back to wait by any worker's stalled check.
 *
 * Attempts are counted here, not by BullMQ: attempt = failed attempts (attemptsMade) + times
 * stalled (stalledCounter) + 1. A graceful hand-back moves the job back to wait with its token,
 * which changes neither counter.
 */
export class BullMqConsumer implements JobConsumer {
  private readonly workers: Worker<JobData>[] = [];
  /** Each worker's non-blocking connection, ours so the watch can ask them; BullMQ opens the blocking one beside it. */
  private readonly connections: Redis[] = [];
  private watch: RedisSilenceWatch | null = null;
  /** Running deliveries by job id, to abort on a lost lock or at the end of the grace period. */
  private readonly running = new Map<string, AbortController>();
  private stopping = false;

  constructor(
    private readonly kinds: readonly TaskKind[],
    private readonly handler: JobHandler,
    private readonly policy: QueuePolicy,
    private readonly opts: BullMqConsumerOptions,
  ) {}

  async start(): Promise<void> {
    for (const kind of this.kinds) {
      const p = this.policy[kind];
      // BullMQ requires maxRetriesPerRequest null (its commands wait out a reconnect rather than fail) and duplicates
      // these options for the worker's blocking connection. Keep-alive: the kernel notices a dead peer of an idle one.
      const connection = new Redis(this.opts.redisUrl, { maxRetriesPerRequest: null, keepAlive: 10_000 });
      this.connections.push(connection);
      const worker = new Worker<JobData>(queueName(kind), (job, token) => this.process(kind, job, token), {
        connection,
        prefix: this.opts.prefix,
        concurrency: p.concurrency,
        lockDuration: p.leaseMs,
        stalledInterval: p.leaseMs,
        // BullMQ fails a job stalled more often than this without running our handler, so the
        // task would never be marked failed: keep its limit above ours (attempts include stalls,
        // so our handler is told first) and let `exhausted` record the failure.
        maxStalledCount: p.maxAttempts + 2,
        settings: { backoffStrategy: (_made, _type, err) => (err instanceof RetryLater ? err.delayMs : p.backoff.initialMs) },
      });
      worker.on('error', (err) => this.opts.logger.warn({ err, kind }, 'queue worker error'));
      worker.on('lockRenewalFailed', (ids) => {
        for (const id of ids) this.running.get(id)?.abort(new QueueAbort('lease-lost'));
      });
      this.workers.push(worker);
    }
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
    this.watch = new RedisSilenceWatch(this.connections, {
      redisUrl: this.opts.redisUrl,
      timeoutMs: this.opts.commandTimeoutMs,
      logger: this.opts.logger,
      alsoReopen: () => this.reopenBlocking(),
    });
    this.watch.start();
  }

  notify(): void {
    // Workers block on Redis and wake when a job is added: nothing to poke.
  }

  isRunning(): boolean {
    return !this.stopping && this.workers.every((w) => w.isRunning());
  }

  /**
   * The workers' connections went dead while Redis answers new ones: their blocking ones most likely too, and BullMQ
   * would notice that only once a wait for jobs outlives its timeout (up to 11 s). Cut them as BullMQ's own interrupt
   * does: the wait fails and the worker opens the connection again. One waiting to reconnect is left to its retries,
   * as BullMQ's own reset does.
   */
  private async reopenBlocking(): Promise<void> {
    await Promise.all(
      this.workers.map(async (w) => {
        const backend = w.getBackend();
        const client = await backend.blockingClient;
        if (client?.status === 'ready') await backend.disconnectBlocking(false);
      }),
    );
  }

  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    // close() stops fetching and waits for running jobs (their locks are still renewed meanwhile).
    const closing = Promise.all(this.workers.map((w) => w.close()));
    if (!(await settlesWithin(closing, graceMs))) {
      for (const controller of this.running.values()) controller.abort(new QueueAbort('shutdown'));
    }
    await closing;
    this.watch?.stop();
    // A connection given to BullMQ is the giver's to close; nothing is left to send on it.
    for (const c of this.connections) c.disconnect();
  }

  private async process(kind: TaskKind, job: Job<JobData>, token: string | undefined): Promise<void> {
    const policy: KindPolicy = this.policy[kind];
    const delivered: DeliveredJob = {
      taskId: job.data.taskId,
      kind,
      attempt: job.attemptsMade + job.stalledCounter + 1,
      maxAttempts: policy.maxAttempts,
    };
    if (delivered.attempt > delivered.maxAttempts) {
      // Its last attempt's worker died. If recording that throws, BullMQ retries the job and we get here again.
      await this.handler.exhausted(delivered, { cause: 'lease-lost' });
      throw new UnrecoverableError(`out of attempts (${delivered.maxAttempts})`);
    }
    if (this.stopping) {
      // Fetched just as stop() began: give it back rather than start it.
      if (token) await job.moveToWait(token);
      throw new WaitingError();
    }
    const id = job.id ?? delivered.taskId;
    const controller = new AbortController();
    this.running.set(id, controller);
    let settlement;
    try {
      settlement = await runDelivery(this.handler, delivered, policy, controller.signal);
    } finally {
      this.running.delete(id);
    }
    switch (settlement.action) {
      case 'ack':
        return;
      case 'fail':
        throw new UnrecoverableError(settlement.reason);
      case 'retry':
        this.opts.logger.warn({ err: settlement.error, taskId: delivered.taskId, attempt: delivered.attempt, delayMs: settlement.delayMs }, 'job failed; retrying');
        throw new RetryLater(errorMessage(settlement.error), settlement.delayMs);
      case 'exhausted':
        await this.handler.exhausted(delivered, settlement.why);
        throw new UnrecoverableError(`out of attempts (${delivered.maxAttempts})`);
      case 'hand-back':
        // Back to the head of the wait list, as it was: neither attemptsMade nor stalledCounter moves.
        if (token) await job.moveToWait(token);
        throw new WaitingError();
      case 'lost':
        // Another worker may hold it now; any move would fail on the lock. Leave it be.
        throw new WaitingError();
    }
  }
}
