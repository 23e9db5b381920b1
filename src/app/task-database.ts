import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { SqlTaskStore, type SqlTaskStoreOptions } from '../adapters/sql/task-store.js';
import { SqlJobQueue } from '../adapters/sql/queue.js';
import { BullMqJobQueue } from '../adapters/bullmq/queue.js';
import { SqliteReadConnection } from '../adapters/sqlite/read-connection.js';
import { SqliteTaskCreates } from '../adapters/sqlite/task-creates.js';
import type { Database } from '../adapters/sql/schema.js';
import type { JobQueue } from '../ports/queue.js';

/**
 * Part of the composition root: the task store and the queue. The queue is BullMQ on Redis when
 * REDIS_URL is set (the job is added after the task row), else the SQL queue in the task database (the
 * job row is written in the task's own transaction). On SQLite (`sqlite`: the connection under Kysely)
 * the hot statements skip Kysely: polls read through a second, read-only connection, and creates are
 * written a batch at a time as prepared statements (bench/results/http.md).
 */
export function taskStoreAndQueue(
  config: Config,
  db: Kysely<Database>,
  sqlite: BetterSqlite3.Database | null,
  logger: Logger,
  onCharged: SqlTaskStoreOptions['onCharged'],
): { tasks: SqlTaskStore; queue: JobQueue; storeEnqueues: boolean; close(): void } {
  const reads = sqlite ? new SqliteReadConnection(config.DB_PATH) : null;
  const readRow = reads ? (id: string) => reads.task(id) : undefined;
  const close = () => reads?.close();
  if (config.REDIS_URL) {
    const createBatch = sqlite ? new SqliteTaskCreates(db, sqlite, null).writeBatch : undefined;
    const tasks = new SqlTaskStore(db, { onCharged, readRow, createBatch });
    return { tasks, queue: new BullMqJobQueue({ redisUrl: config.REDIS_URL, prefix: config.QUEUE_PREFIX, logger, tasks }), storeEnqueues: false, close };
  }
  const readPosition = reads ? (taskId: string) => reads.jobPosition(taskId) : undefined;
  const queue = new SqlJobQueue(db, { pollIntervalMs: config.POLL_INTERVAL_MS, logger, readPosition });
  const createBatch = sqlite ? new SqliteTaskCreates(db, sqlite, Date.now).writeBatch : undefined;
  return { tasks: new SqlTaskStore(db, { alsoEnqueue: queue.enqueueWithin, onCharged, readRow, createBatch }), queue, storeEnqueues: true, close };
}
