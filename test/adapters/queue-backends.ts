import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import { openPostgres, openPostgresHandles } from '../../src/adapters/postgres/database.js';
import { PostgresPollReads } from '../../src/adapters/postgres/poll-reads.js';
import { SqlJobQueue } from '../../src/adapters/sql/queue.js';
import { SqliteReadConnection } from '../../src/adapters/sqlite/read-connection.js';
import { SqlTaskStore } from '../../src/adapters/sql/task-store.js';
import { BullMqJobQueue } from '../../src/adapters/bullmq/queue.js';
import type { JobQueue } from '../../src/ports/queue.js';
import { createTestDatabase } from '../helpers/postgres.js';

/**
 * How the queue tests (and the child process that plays a consumer that dies) open a queue on
 * a given backend. Every open() is a separate set of connections, as another process would have.
 */

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const logger = pino({ level: process.env.QUEUE_TEST_LOG ?? 'silent' });

export interface OpenedQueue {
  queue: JobQueue;
  close(): Promise<void>;
}

/** Settings a child process needs to open the same backend (passed through its environment). */
export type BackendEnv = Record<string, string>;

export async function openFromEnv(env: BackendEnv): Promise<OpenedQueue> {
  const pollIntervalMs = Number(env.QUEUE_POLL_MS ?? 50);
  switch (env.QUEUE_BACKEND) {
    case 'sqlite': {
      const db = await openSqlite(env.QUEUE_SQLITE_PATH!);
      // QUEUE_SQLITE_READS: positions read through the read-only connection, as the server composes it.
      const reads = env.QUEUE_SQLITE_READS ? new SqliteReadConnection(env.QUEUE_SQLITE_PATH!) : null;
      const readPosition = reads ? (taskId: string) => reads.jobPosition(taskId) : undefined;
      const queue = new SqlJobQueue(db, { pollIntervalMs, logger, readPosition });
      return {
        queue,
        async close() {
          reads?.close();
          await db.destroy();
        },
      };
    }
    case 'pg': {
      const { db, pool } = await openPostgresHandles(env.QUEUE_PG_URL!, { poolSize: 4 });
      // QUEUE_PG_READS: positions read as a named prepared statement on the pool, as the server composes it.
      const readPosition = env.QUEUE_PG_READS ? new PostgresPollReads(db, pool).jobPosition : undefined;
      const queue = new SqlJobQueue(db, { pollIntervalMs, logger, readPosition });
      return { queue, close: () => db.destroy() };
    }
    case 'bullmq': {
      // The task store is where the BullMQ adapter looks for tasks whose job was lost.
      const db = await openSqlite(env.QUEUE_SQLITE_PATH!);
      const queue = new BullMqJobQueue({
        redisUrl: env.QUEUE_REDIS_URL!, prefix: env.QUEUE_PREFIX!, logger, tasks: new SqlTaskStore(db),
        ...(env.QUEUE_RECOVER_EVERY_MS ? { recoverEveryMs: Number(env.QUEUE_RECOVER_EVERY_MS) } : {}),
      });
      return {
        queue,
        async close() {
          await queue.close();
          await db.destroy();
        },
      };
    }
    default:
      throw new Error(`unknown QUEUE_BACKEND ${env.QUEUE_BACKEND}`);
  }
}

/** A fresh SQLite file (its own temp directory). */
export async function freshSqlite(): Promise<{ env: BackendEnv; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'soundry-queue-'));
  const path = join(dir, 'soundry.db');
  await (await openSqlite(path)).destroy(); // migrate once, before competing openers
  return { env: { QUEUE_BACKEND: 'sqlite', QUEUE_SQLITE_PATH: path }, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** A fresh SQLite file whose queue positions are read through the read-only connection. */
export async function freshSqliteReads(): Promise<{ env: BackendEnv; cleanup(): Promise<void> }> {
  const fresh = await freshSqlite();
  return { ...fresh, env: { ...fresh.env, QUEUE_SQLITE_READS: '1' } };
}

/** A random key prefix on the shared Redis (other suites use it too: never flush it), and a task database. */
export async function freshBullMq(): Promise<{ env: BackendEnv; cleanup(): Promise<void> }> {
  const sqlite = await freshSqlite();
  const prefix = `soundry-test-${randomUUID().slice(0, 8)}`;
  return {
    env: { QUEUE_BACKEND: 'bullmq', QUEUE_REDIS_URL: REDIS_URL, QUEUE_PREFIX: prefix, QUEUE_SQLITE_PATH: sqlite.env.QUEUE_SQLITE_PATH! },
    async cleanup() {
      const { Redis } = await import('ioredis');
      const redis = new Redis(REDIS_URL);
      try {
        for (;;) {
          const keys: string[] = [];
          const stream = redis.scanStream({ match: `${prefix}:*`, count: 1000 });
          for await (const batch of stream) keys.push(...(batch as string[]));
          if (keys.length === 0) break;
          await redis.del(...keys);
        }
      } finally {
        redis.disconnect();
      }
      await sqlite.cleanup();
    },
  };
}

/** A database of its own on the local PostgreSQL, with Soundry's schema (the same migrations as production). */
export async function freshPg(): Promise<{ env: BackendEnv; cleanup(): Promise<void> }> {
  const database = await createTestDatabase();
  await (await openPostgres(database.url)).destroy(); // migrate once, before competing openers
  return { env: { QUEUE_BACKEND: 'pg', QUEUE_PG_URL: database.url }, cleanup: database.drop };
}

/** A database of its own on the local PostgreSQL whose queue positions are read off Kysely (PostgresPollReads). */
export async function freshPgReads(): Promise<{ env: BackendEnv; cleanup(): Promise<void> }> {
  const fresh = await freshPg();
  return { ...fresh, env: { ...fresh.env, QUEUE_PG_READS: '1' } };
}
