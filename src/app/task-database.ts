import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { SqlTaskStore, type SqlTaskStoreOptions } from '../adapters/sql/task-store.js';
import { SqlJobQueue, type SqlJobQueueOptions } from '../adapters/sql/queue.js';
import { BullMqJobQueue } from '../adapters/bullmq/queue.js';
import { SqliteReadConnection } from '../adapters/sqlite/read-connection.js';
import { PostgresPollReads } from '../adapters/postgres/poll-reads.js';
import { SqliteTaskCreates } from '../adapters/sqlite/task-creates.js';
import { PostgresTaskCreates } from '../adapters/postgres/task-creates.js';
import type { Database } from '../adapters/sql/schema.js';
import type { JobQueue } from '../ports/queue.js';

/**
 * Part of the composition root: the task store and the queue. The queue is BullMQ on Redis when
 * REDIS_URL is set (the job is added after the task row), else the SQL queue in the task database (the
 * job row is written in the task's own transaction). The hot statements skip Kysely: on SQLite (`sqlite`:
 * the connection under Kysely) polls read through a second, read-only connection, and creates are written
 * a batch at a time as prepared statements (bench/results/http.md); on PostgreSQL (`pgPool`: the pool
 * under Kysely) polls and creates run as named prepared statements on the pool (bench/results/scaleout.md).
 * With BullMQ a poll's queue position is read from Redis, so only the task row's read is wired there, and
 * creates write no job row (the service enqueues after the commit).
 */
export function taskStoreAndQueue(
  config: Config,
  db: Kysely<Database>,
  raw: { sqlite: BetterSqlite3.Database | null; pgPool: pg.Pool | null },
  logger: Logger,
  onCharged: SqlTaskStoreOptions['onCharged'],
): { tasks: SqlTaskStore; queue: JobQueue; storeEnqueues: boolean; close(): void } {
  const reads = pollReads(config, db, raw);
  if (config.REDIS_URL) {
    const tasks = new SqlTaskStore(db, { onCharged, readQueried: reads?.task, ...creates(db, raw, null) });
    const queue = new BullMqJobQueue({ redisUrl: config.REDIS_URL, prefix: config.QUEUE_PREFIX, logger, tasks, commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_SECONDS * 1000 });
    return { tasks, queue, storeEnqueues: false, close: reads?.close ?? noop };
  }
  const queue = new SqlJobQueue(db, { pollIntervalMs: config.POLL_INTERVAL_MS, logger, readPosition: reads?.jobPosition });
  // Date.now: the queue's clock (SqlJobQueue is given no other), so the job rows are due as enqueueWithin would write them.
  const tasks = new SqlTaskStore(db, { alsoEnqueue: queue.enqueueWithin, onCharged, readQueried: reads?.task, ...creates(db, raw, Date.now) });
  return { tasks, queue, storeEnqueues: true, close: reads?.close ?? noop };
}

const noop = () => undefined;

/** The creates off Kysely on whichever database this is; `jobClock` set when each writes its job row (SQL queue). */
function creates(
  db: Kysely<Database>,
  { sqlite, pgPool }: { sqlite: BetterSqlite3.Database | null; pgPool: pg.Pool | null },
  jobClock: (() => number) | null,
): Pick<SqlTaskStoreOptions, 'createBatch' | 'createOne'> {
  if (sqlite) return { createBatch: new SqliteTaskCreates(db, sqlite, jobClock).writeBatch };
  if (pgPool) return { createOne: new PostgresTaskCreates(db, pgPool, jobClock).createOne };
  return {};
}

/** The poll's two reads off Kysely, on whichever database this is; `close` ends what they opened. */
interface PollReads {
  task: NonNullable<SqlTaskStoreOptions['readQueried']>;
  jobPosition: NonNullable<SqlJobQueueOptions['readPosition']>;
  close(): void;
}

function pollReads(config: Config, db: Kysely<Database>, { sqlite, pgPool }: { sqlite: BetterSqlite3.Database | null; pgPool: pg.Pool | null }): PollReads | null {
  if (sqlite) {
    const reads = new SqliteReadConnection(config.DB_PATH);
    return { task: (id) => reads.queried(id), jobPosition: (taskId) => reads.jobPosition(taskId), close: () => reads.close() };
  }
  if (pgPool) {
    const reads = new PostgresPollReads(db, pgPool);
    // The pool is Kysely's: db.destroy() ends it.
    return { task: reads.queried, jobPosition: reads.jobPosition, close: noop };
  }
  return null;
}
