import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { openPostgresHandles } from '../../src/adapters/postgres/database.js';
import { PostgresTaskCreates } from '../../src/adapters/postgres/task-creates.js';
import { lockScope, writeTransaction } from '../../src/adapters/sql/dialect.js';
import { SqlJobQueue } from '../../src/adapters/sql/queue.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { SqlTaskStore, createScope, insertTaskQuery, newRow } from '../../src/adapters/sql/task-store.js';
import type { NewTask } from '../../src/ports/task-store.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/**
 * Creates on PostgreSQL off Kysely (PostgresTaskCreates) against the same create through Kysely: the same
 * rows (task, webhook, job due at the queue's clock), the same advisory lock per key, and a failed create
 * that leaves nothing behind, nor a connection in a broken transaction.
 */
describe('PostgreSQL task creates off Kysely', () => {
  let database: TestDatabase;
  let db: Kysely<Database>;
  let pool: pg.Pool;
  const clock = () => 1_763_900_000_777;

  beforeAll(async () => {
    database = await createTestDatabase();
    ({ db, pool } = await openPostgresHandles(database.url, { poolSize: 2 }));
    // The account the tasks bill: a create checks its funds.
    await db.insertInto('accounts').values({ id: 'acct', status: 'active', balance: 1_000_000, created_at: 1 }).execute();
  });

  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  const newTask = (apiKeyId: string, over: Partial<NewTask> = {}): NewTask => {
    const now = 1_763_900_000_123;
    return { id: randomUUID(), kind: 'enhance', accountId: 'acct', apiKeyId, params: { text: 'Grüße 🎧', n: 2 ** 52 }, createdAt: now, expiresAt: now + 86_400_000, ...over };
  };

  const rowsOf = async (taskId: string) => ({
    task: await db.selectFrom('tasks').selectAll().where('id', '=', taskId).executeTakeFirst(),
    webhook: await db.selectFrom('webhooks').selectAll().where('task_id', '=', taskId).executeTakeFirst(),
    job: await db.selectFrom('jobs').select(['kind', 'state', 'attempts', 'worker_id', 'lease_until', 'available_at', 'created_at']).where('task_id', '=', taskId).executeTakeFirst(),
  });

  it('writes the same task, webhook and job rows as the Kysely path, the job due at the queue clock', async () => {
    const queue = new SqlJobQueue(db, { pollIntervalMs: 60_000, logger: pino({ level: 'silent' }), now: clock });
    const viaKysely = new SqlTaskStore(db, { alsoEnqueue: queue.enqueueWithin });
    const hot = new SqlTaskStore(db, { alsoEnqueue: queue.enqueueWithin, createOne: new PostgresTaskCreates(db, pool, clock).createOne });
    const key = `key_${randomUUID()}`;
    const a = newTask(key, { callbackUrl: 'https://example.test/hook' });
    const b = newTask(key, { callbackUrl: 'https://example.test/hook' });
    const made = [await viaKysely.createWithinLimit(a, 5), await hot.createWithinLimit(b, 5)];
    expect(made.map((m) => m.created)).toEqual([true, true]);
    const [ra, rb] = [await rowsOf(a.id), await rowsOf(b.id)];
    expect(rb.task).toStrictEqual({ ...ra.task, id: b.id });
    expect(rb.webhook).toStrictEqual({ ...ra.webhook, task_id: b.id });
    expect(rb.job).toStrictEqual(ra.job);
    expect(rb.job?.available_at).toBe(clock());
    if (!made[1]!.created) throw new Error('unreachable');
    expect(made[1]!.task).toStrictEqual(await hot.get(b.id));
  });

  it('writes no job row without a job clock (BullMQ enqueues after the commit)', async () => {
    const t = newTask(`key_${randomUUID()}`);
    expect((await new PostgresTaskCreates(db, pool, null).createOne(t, 5)).created).toBe(true);
    const rows = await rowsOf(t.id);
    expect(rows.task?.id).toBe(t.id);
    expect(rows.job).toBeUndefined();
    expect(rows.webhook).toBeUndefined();
  });

  it('waits for the lock a Kysely create of the same key holds, then counts what it inserted', async () => {
    const creates = new PostgresTaskCreates(db, pool, clock);
    const key = `key_${randomUUID()}`;
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked = (): void => undefined;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const other = writeTransaction(db, async (trx) => {
      await lockScope(trx, createScope(key));
      locked();
      await held;
      await insertTaskQuery(trx, newRow(newTask(key))).execute();
    });
    await lockTaken;
    let settled = false;
    const waiting = creates.createOne(newTask(key), 1).finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    release();
    await other;
    // Limit 1, and the other transaction's task committed while this one waited: refused.
    expect(await waiting).toEqual({ created: false, reason: 'unfinished_limit' });
    expect((await creates.createOne(newTask(`key_${randomUUID()}`), 1)).created).toBe(true);
  });

  it('a failed create leaves no row behind and its connection out of the pool', async () => {
    const creates = new PostgresTaskCreates(db, pool, clock);
    const key = `key_${randomUUID()}`;
    const first = newTask(key);
    await creates.createOne(first, 5);
    const released: Array<Error | undefined> = [];
    const onRelease = (err: Error | undefined) => released.push(err);
    pool.on('release', onRelease);
    try {
      // The same id again: the task insert fails on the primary key after the count, mid-transaction.
      await expect(creates.createOne({ ...first, callbackUrl: 'https://example.test/hook' }, 5)).rejects.toThrow(/duplicate key/);
    } finally {
      pool.off('release', onRelease);
    }
    expect(released).toEqual([expect.any(Error)]);
    expect((await rowsOf(first.id)).webhook).toBeUndefined();
    // The pool goes on with fresh connections, their statements prepared again.
    const results = await Promise.all([1, 2, 3].map(() => creates.createOne(newTask(key), 5)));
    expect(results.map((r) => r.created)).toEqual([true, true, true]);
    expect(await new SqlTaskStore(db).countUnfinishedForKey(key, 10)).toBe(4);
  });
});
