import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from './schema.js';
import type { JobConsumer, JobHandler, JobPayload, JobQueue, QueuePolicy } from '../../ports/queue.js';
import type { TaskKind } from '../../domain/task.js';
import { JobRows, insertJob, positionOf, type JobPosition } from './queue-rows.js';
import { SqlJobConsumer } from './queue-consumer.js';

export interface SqlJobQueueOptions {
  pollIntervalMs: number;
  logger: Logger;
  now?: () => number;
  /**
   * A read of a job's state and the queued jobs ahead of it off Kysely, for position(): synchronous on
   * SQLite (SqliteReadConnection), a promise on PostgreSQL (PostgresPollReads).
   */
  readPosition?: (taskId: string) => JobPosition | undefined | Promise<JobPosition | undefined>;
}

/**
 * Durable queue in the task database (the embedded profile, or Postgres without Redis). Jobs
 * are rows with leases; consumers poll, and `notify()` wakes them when a job was just added.
 */
export class SqlJobQueue implements JobQueue {
  private readonly rows: JobRows;
  /** Consumers in this process, woken by a local enqueue. */
  private readonly consumers = new Set<SqlJobConsumer>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly opts: SqlJobQueueOptions,
  ) {
    this.rows = new JobRows(db, opts.now ?? Date.now);
  }

  async ping(): Promise<void> {
    await this.rows.depth();
  }

  /**
   * Writes the job inside the caller's transaction: the SQL task store calls it from create(),
   * so a task row never exists without its job, nor a job without its task. Only the SQL
   * composition wires it; the port knows nothing of transactions.
   */
  readonly enqueueWithin = async (trx: Kysely<Database>, job: JobPayload): Promise<void> => {
    await insertJob(trx, job, (this.opts.now ?? Date.now)());
  };

  async enqueue(job: JobPayload): Promise<void> {
    await insertJob(this.db, job, (this.opts.now ?? Date.now)());
    for (const c of this.consumers) c.notify();
  }

  async consume(kinds: readonly TaskKind[], handler: JobHandler, policy: QueuePolicy): Promise<JobConsumer> {
    const consumer = new SqlJobConsumer(this.rows, kinds, handler, policy, this.opts);
    consumer.start();
    this.consumers.add(consumer);
    return {
      notify: () => consumer.notify(),
      isRunning: () => consumer.isRunning(),
      stop: async (graceMs) => {
        await consumer.stop(graceMs);
        this.consumers.delete(consumer);
      },
    };
  }

  position(job: JobPayload): Promise<number | null> {
    if (this.opts.readPosition) {
      const read = this.opts.readPosition(job.taskId);
      return read instanceof Promise ? read.then(positionOf) : Promise.resolve(positionOf(read));
    }
    return this.rows.position(job.taskId);
  }

  depth(): Promise<Partial<Record<TaskKind, number>>> {
    return this.rows.depth();
  }

  /** The database belongs to the container, which closes it. */
  async close(): Promise<void> {}
}
