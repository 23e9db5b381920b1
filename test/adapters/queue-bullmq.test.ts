import { describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import { SqlTaskStore } from '../../src/adapters/sql/task-store.js';
import { freshBullMq, openFromEnv } from './queue-backends.js';
import { newId, policyOf, queueContract, recorder, sleep, until } from './queue-contract.js';

queueContract('BullMQ on Redis', freshBullMq);

describe('BullMQ queue and the task store', () => {
  it('a consumer starting re-enqueues unfinished tasks that have no job (a crash between the two writes)', async () => {
    const { env, cleanup } = await freshBullMq();
    const db = await openSqlite(env.QUEUE_SQLITE_PATH!);
    const opened = await openFromEnv(env);
    try {
      const tasks = new SqlTaskStore(db);
      const task = (id: string) => ({ id, kind: 'tts' as const, accountId: 'a', apiKeyId: 'k', params: {}, createdAt: Date.now(), expiresAt: Date.now() + 60_000 });
      const [orphan, queued, finished] = [newId(), newId(), newId()];
      for (const id of [orphan, queued, finished]) await tasks.create(task(id));
      await tasks.completeFailure(finished, 'done before', Date.now());
      // Only `queued` got its job; `orphan` lost it; `finished` needs none.
      await opened.queue.enqueue({ taskId: queued, kind: 'tts' });
      expect(await opened.queue.position({ taskId: orphan, kind: 'tts' })).toBeNull();

      const r = recorder();
      const consumer = await opened.queue.consume(['tts'], r.handler, policyOf());
      await until('both delivered', () => r.runs.length === 2);
      await sleep(300);
      expect(r.runs.map((x) => x.taskId).sort()).toEqual([orphan, queued].sort());
      await consumer.stop(1000);
    } finally {
      await opened.close();
      await db.destroy();
      await cleanup();
    }
  });

  it('a running consumer finds, every so often, unfinished tasks whose job Redis lost (a restart without persistence)', async () => {
    const { env, cleanup } = await freshBullMq();
    const db = await openSqlite(env.QUEUE_SQLITE_PATH!);
    const opened = await openFromEnv({ ...env, QUEUE_RECOVER_EVERY_MS: '200' });
    try {
      const tasks = new SqlTaskStore(db);
      const r = recorder();
      const consumer = await opened.queue.consume(['tts'], r.handler, policyOf());
      // Written after the consumer started, with no job: as after Redis came back empty.
      const lost = newId();
      await tasks.create({ id: lost, kind: 'tts', accountId: 'a', apiKeyId: 'k', params: {}, createdAt: Date.now(), expiresAt: Date.now() + 60_000 });
      await until('the lost task delivered', () => r.runs.length === 1, 5000);
      expect(r.runs[0]!.taskId).toBe(lost);
      await consumer.stop(1000);
    } finally {
      await opened.close();
      await db.destroy();
      await cleanup();
    }
  });
});
