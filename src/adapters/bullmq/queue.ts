import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { TASK_KINDS, type TaskKind } from '../../domain/task.js';
import type { JobConsumer, JobHandler, JobPayload, JobQueue, QueuePolicy } from '../../ports/queue.js';
import type { TaskStore } from '../../ports/task-store.js';
import { BullMqConsumer } from './consumer.js';
import { queueName, type JobData } from './names.js';
import { redisAddress } from './silence-watch.js';

export interface BullMqJobQueueOptions {
  redisUrl: string;
  /** BullMQ key prefix: every key is <prefix>:soundry-<kind>:... */
  prefix: string;
  logger: Logger;
  /** Where a consumer looks, when it starts and every recoverEveryMs, for unfinished tasks whose job was lost. */
  tasks: Pick<TaskStore, 'listUnfinished'>;
  /** Default 60 s. */
  recoverEveryMs?: number;
  /**
   * A command with no answer from Redis within this long: a producer command fails and its connection is opened
   * again; a worker connection is reported silent (RedisSilenceWatch). Default 3 s (REDIS_COMMAND_TIMEOUT_SECONDS).
   */
  commandTimeoutMs?: number;
}

/**
 * BullMQ has its own attempt counter and gives a job up when it reaches `attempts`; the consumer
 * counts attempts itself (stalls included, see BullMqConsumer) and gives up first. This ceiling
 * only has to stay above any MAX_ATTEMPTS (at most 20) so BullMQ keeps retrying.
 */
const BULLMQ_ATTEMPTS_CEILING = 100;
const RECOVERY_PAGE = 500;

/** commandTimeoutMs when not given: REDIS_COMMAND_TIMEOUT_SECONDS' default. */
const DEFAULT_COMMAND_TIMEOUT_MS = 3000;

/**
 * Durable queue on Redis (the scale-out profile): one BullMQ queue per kind. The task database
 * stays the record of every task; the queue only holds live work, so finished jobs are removed.
 */
export class BullMqJobQueue implements JobQueue {
  /** Producer and read-only queries; workers open their own blocking connections. */
  private readonly redis: Redis;
  private readonly queues: ReadonlyMap<TaskKind, Queue<JobData>>;
  private readonly commandTimeoutMs: number;

  constructor(private readonly opts: BullMqJobQueueOptions) {
    this.commandTimeoutMs = opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    // Few retries: a task create should fail fast (503, the task not created) while Redis is down. A command with
    // no answer fails after commandTimeoutMs, and the connection is then opened again (stale()): found from outside,
    // a Redis that went silent without closing the connection (a failover, a cut on the way) left the API refusing
    // creates and /healthz failing after Redis was back, until a restart. Keep-alive lets the kernel notice a dead
    // peer of an idle connection.
    this.redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1, commandTimeout: this.commandTimeoutMs, keepAlive: 10_000 });
    this.redis.on('error', (err) => opts.logger.warn({ err }, 'redis connection error'));
    this.queues = new Map(
      TASK_KINDS.map((kind) => {
        const q = new Queue<JobData>(queueName(kind), { connection: this.redis, prefix: opts.prefix });
        // An 'error' event nobody listens to would crash the process; a failed add already rejects.
        q.on('error', (err) => opts.logger.warn({ err, kind }, 'queue error'));
        return [kind, q] as const;
      }),
    );
  }

  async ping(): Promise<void> {
    const answer = await this.redis.ping().catch((err: unknown) => this.stale(err));
    if (answer !== 'PONG') throw new Error(`Redis answered ${answer}`);
  }

  /** A command timed out: the connection may be dead without knowing it. Reconnect, then fail the command as it did. */
  private stale(err: unknown): never {
    if (err instanceof Error && err.message === 'Command timed out') {
      this.opts.logger.warn(`no answer from Redis at ${redisAddress(this.opts.redisUrl)} within ${this.commandTimeoutMs} ms: opening the connection again`);
      this.redis.disconnect(true);
    }
    throw err;
  }

  private queue(kind: TaskKind): Queue<JobData> {
    const q = this.queues.get(kind);
    if (!q) throw new Error(`no queue for kind ${kind}`);
    return q;
  }

  async enqueue(job: JobPayload): Promise<void> {
    await this.queue(job.kind).add(job.kind, { taskId: job.taskId, kind: job.kind }, this.jobOptions(job.taskId)).catch((err: unknown) => this.stale(err));
  }

  private jobOptions(taskId: string) {
    return {
      jobId: taskId,
      attempts: BULLMQ_ATTEMPTS_CEILING,
      // The consumer's backoff strategy decides the delay (the kind's policy).
      backoff: { type: 'soundry' },
      removeOnComplete: true,
      removeOnFail: true,
    };
  }

  async consume(kinds: readonly TaskKind[], handler: JobHandler, policy: QueuePolicy): Promise<JobConsumer> {
    await this.recover(kinds);
    const consumer = new BullMqConsumer(kinds, handler, policy, { ...this.opts, commandTimeoutMs: this.commandTimeoutMs });
    await consumer.start();
    // Redis can lose its data while workers run, too (a restart without persistence, a failover): found from outside,
    // the tasks queued before such a restart stayed waiting, holding their credits, until a worker was restarted.
    let looking = false;
    const timer = setInterval(() => {
      if (looking) return;
      looking = true;
      this.recover(kinds)
        .catch((err: unknown) => this.opts.logger.warn({ err }, 'looking for tasks whose job was lost failed'))
        .finally(() => (looking = false));
    }, this.opts.recoverEveryMs ?? 60_000);
    timer.unref();
    return {
      notify: () => consumer.notify(),
      isRunning: () => consumer.isRunning(),
      stop: (graceMs) => {
        clearInterval(timer);
        return consumer.stop(graceMs);
      },
    };
  }

  /**
   * The task row is written before its job is added; a crash between the two (or a Redis that
   * lost its data) leaves an unfinished task no worker would ever see. Re-add those: the job id
   * is the task id, so a job that exists is left as it is. (A task that was running when its job
   * was lost may run a second time; it is charged once, and a finished one is skipped.)
   */
  private async recover(kinds: readonly TaskKind[]): Promise<void> {
    let after: string | null = null;
    let recovered = 0;
    for (;;) {
      const page = await this.opts.tasks.listUnfinished(kinds, after, RECOVERY_PAGE);
      if (page.length === 0) break;
      after = page[page.length - 1]!.taskId;
      const exists = this.redis.multi();
      for (const t of page) exists.exists(this.queue(t.kind).toKey(t.taskId));
      const found = (await exists.exec()) ?? [];
      const missing = page.filter((_, i) => found[i]?.[1] === 0);
      for (const t of missing) await this.enqueue(t);
      recovered += missing.length;
    }
    if (recovered > 0) this.opts.logger.warn({ recovered }, 'unfinished tasks without a job were queued again');
  }

  /** Read in one MULTI so the job cannot move between lists while we look. */
  async position(job: JobPayload): Promise<number | null> {
    const q = this.queue(job.kind);
    const wait = q.toKey('wait');
    const [waitIndex, waitLength, activeIndex, delayedRank] = numbers(
      await this.redis.multi().lpos(wait, job.taskId).llen(wait).lpos(q.toKey('active'), job.taskId).zrank(q.toKey('delayed'), job.taskId).exec(),
    );
    if (activeIndex != null) return 0;
    // New jobs are pushed on the left and taken from the right: the rightmost is next.
    if (waitIndex != null) return (waitLength ?? 0) - waitIndex;
    // Waiting for a retry: behind every job that is ready now.
    if (delayedRank != null) return (waitLength ?? 0) + delayedRank + 1;
    return null;
  }

  async depth(): Promise<Partial<Record<TaskKind, number>>> {
    const multi = this.redis.multi();
    for (const kind of TASK_KINDS) {
      const q = this.queue(kind);
      multi.llen(q.toKey('wait')).zcard(q.toKey('delayed'));
    }
    const counts = numbers(await multi.exec());
    return Object.fromEntries(TASK_KINDS.map((kind, i) => [kind, (counts[2 * i] ?? 0) + (counts[2 * i + 1] ?? 0)]));
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await this.redis.quit();
  }
}

/** A MULTI's replies as numbers (null where Redis answered nil); a failed command throws. */
function numbers(replies: [Error | null, unknown][] | null): (number | null)[] {
  if (!replies) throw new Error('redis transaction was aborted');
  return replies.map(([err, value]) => {
    if (err) throw err;
    return typeof value === 'number' ? value : null;
  });
}
