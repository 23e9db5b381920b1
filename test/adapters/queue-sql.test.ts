import { describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import { SqlJobQueue } from '../../src/adapters/sql/queue.js';
import { SqlTaskStore } from '../../src/adapters/sql/task-store.js';
import { candidatesByIndexQuery } from '../../src/adapters/sql/queue-rows.js';
import { compileOnce } from '../../src/adapters/sql/compiled-once.js';
import { CompiledQuery, sql } from 'kysely';
import { freshSqlite, freshSqliteReads, logger } from './queue-backends.js';
import { newId, policyOf, queueContract, recorder, until } from './queue-contract.js';

queueContract('SQL queue on SQLite', freshSqlite);
queueContract('SQL queue on SQLite, positions on the read connection', freshSqliteReads);

describe('SQL queue on the task database', () => {
  it('writes the task and its job in one transaction: both or neither', async () => {
    const { env, cleanup } = await freshSqlite();
    const db = await openSqlite(env.QUEUE_SQLITE_PATH!);
    try {
      const queue = new SqlJobQueue(db, { pollIntervalMs: 50, logger });
      const task = (id: string) => ({ id, kind: 'tts' as const, accountId: 'a', apiKeyId: 'k', params: {}, createdAt: Date.now(), expiresAt: Date.now() + 60_000 });
      const ok = newId();
      await new SqlTaskStore(db, { alsoEnqueue: queue.enqueueWithin }).create(task(ok));
      expect(await queue.position({ taskId: ok, kind: 'tts' })).toBe(1);

      const broken = newId();
      const failing = new SqlTaskStore(db, {
        async alsoEnqueue(trx, job) {
          await queue.enqueueWithin(trx, job);
          throw new Error('disk full');
        },
      });
      await expect(failing.create(task(broken))).rejects.toThrow('disk full');
      expect(await db.selectFrom('tasks').select('id').where('id', '=', broken).executeTakeFirst()).toBeUndefined();
      expect(await queue.position({ taskId: broken, kind: 'tts' })).toBeNull();
    } finally {
      await db.destroy();
      await cleanup();
    }
  });

  it('notify() wakes an idle consumer at once, whatever the poll interval', async () => {
    const { env, cleanup } = await freshSqlite();
    const [dbApi, dbWorker] = [await openSqlite(env.QUEUE_SQLITE_PATH!), await openSqlite(env.QUEUE_SQLITE_PATH!)];
    try {
      const api = new SqlJobQueue(dbApi, { pollIntervalMs: 60_000, logger });
      const worker = new SqlJobQueue(dbWorker, { pollIntervalMs: 60_000, logger });
      const r = recorder();
      const consumer = await worker.consume(['tts'], r.handler, policyOf());
      await new Promise((res) => setTimeout(res, 100)); // it has polled once and sleeps now
      const started = Date.now();
      await api.enqueue({ taskId: newId(), kind: 'tts' });
      consumer.notify();
      await until('delivered', () => r.runs.length === 1, 2000);
      expect(Date.now() - started).toBeLessThan(1000);
      await consumer.stop(1000);
    } finally {
      await dbApi.destroy();
      await dbWorker.destroy();
      await cleanup();
    }
  });
});

describe('SQL queue claims on SQLite', () => {
  it('reads one index position per kind and state, never the whole backlog: no sort, every arm on jobs_pick', async () => {
    const { env, cleanup } = await freshSqlite();
    const db = await openSqlite(env.QUEUE_SQLITE_PATH!);
    try {
      // A backlog of one kind while a claim asks for that kind and others: the old single OR query sorted it all.
      const now = Date.now();
      await db.insertInto('jobs').values(Array.from({ length: 2000 }, (_, i) => ({ task_id: `t${i}`, kind: 'tts', state: 'queued', attempts: 0, worker_id: null, lease_until: 0, available_at: now, created_at: now }))).execute();
      await sql`analyze`.execute(db);
      const compiled = compileOnce(candidatesByIndexQuery(db, ['tts', 'separation', 'enhance']));
      const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${compiled.sql}`, compiled.bind({ now })));
      const details = plan.rows.map((r) => r.detail);
      expect(details.filter((d) => d.startsWith('SEARCH jobs USING INDEX jobs_pick (kind=? AND state=?)'))).toHaveLength(6);
      expect(details.filter((d) => /TEMP B-TREE|SCAN jobs/.test(d))).toEqual([]);
      const rows = await db.executeQuery<{ task_id: string }>(CompiledQuery.raw(compiled.sql, compiled.bind({ now })));
      expect(rows.rows.map((r) => r.task_id)).toEqual(['t0']);
    } finally {
      await db.destroy();
      await cleanup();
    }
  });
});
