import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMqJobQueue } from '../../src/adapters/bullmq/queue.js';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { SqlTaskStore } from '../../src/adapters/sql/task-store.js';
import { redisTestPrefix, TEST_REDIS_URL } from '../helpers/redis-test-prefix.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Found from outside: Redis that went silent without closing the API's connection (a failover, a cut on the way that
 * sends no reset) left creates answering 503 and /healthz failing long after Redis was back, until a restart: the
 * dead connection was never given up. Real Redis behind a TCP hop whose open connections go silent for good.
 */
let proxy: TcpProxy;
let dir: string;
let db: Kysely<Database>;
let queue: BullMqJobQueue;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const target = new URL(TEST_REDIS_URL);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
  const test = await redisTestPrefix('silent');
  cleanup = test.cleanup;
  dir = await mkdtemp(join(tmpdir(), 'soundry-silent-redis-'));
  db = await openSqlite(join(dir, 'soundry.db'));
  queue = new BullMqJobQueue({ redisUrl: proxy.url, prefix: `${test.prefix}bull`, logger: pino({ level: 'silent' }), tasks: new SqlTaskStore(db) });
});
afterAll(async () => {
  await queue?.close();
  await db?.destroy();
  await proxy?.close();
  await cleanup?.();
  await rm(dir, { recursive: true, force: true });
});

describe('BullMQ producer connection', () => {
  it('gives up a connection that went silent and answers again once Redis does', async () => {
    await queue.ping();
    proxy.blackhole();
    await expect(queue.ping()).rejects.toThrow('Command timed out');
    // The next connection goes through (Redis itself never stopped): within a few seconds the queue answers again.
    const until = Date.now() + 15_000;
    let answered = false;
    while (!answered && Date.now() < until) {
      answered = await queue.ping().then(() => true, () => false);
      if (!answered) await new Promise((r) => setTimeout(r, 200));
    }
    expect(answered).toBe(true);
    await queue.enqueue({ taskId: 'silent-redis-task', kind: 'tts' });
  }, 60_000);
});
