import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { openPostgresHandles } from '../../src/adapters/postgres/database.js';
import { PostgresPollReads } from '../../src/adapters/postgres/poll-reads.js';
import { SqlJobQueue } from '../../src/adapters/sql/queue.js';
import { positionQuery } from '../../src/adapters/sql/queue-rows.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { SqlTaskStore, queriedByIdQuery } from '../../src/adapters/sql/task-store.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/**
 * The poll's reads as named prepared statements on PostgreSQL (PostgresPollReads) against the same reads
 * through Kysely: the very same rows, value for value and type for type (int8 as numbers, JSON as text,
 * nulls), since toRecord and positionOf would hide a number that came back as a string.
 */
describe('PostgreSQL poll reads off Kysely', () => {
  let database: TestDatabase;
  let db: Kysely<Database>;
  let pool: pg.Pool;
  let reads: PostgresPollReads;

  beforeAll(async () => {
    database = await createTestDatabase();
    // One connection: every statement below runs on the connection where the named ones were prepared.
    ({ db, pool } = await openPostgresHandles(database.url, { poolSize: 1 }));
    reads = new PostgresPollReads(db, pool);
  });

  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  const newTask = (kind: 'tts' | 'enhance' = 'tts') => {
    const now = 1_763_900_000_123;
    return { id: randomUUID(), kind, accountId: 'acct', apiKeyId: 'key', params: { text: 'Grüße 🎧', n: 2 ** 52 }, createdAt: now, expiresAt: now + 86_400_000 };
  };

  it('reads a task row (all but its params) exactly as Kysely does, unfinished and finished', async () => {
    const tasks = new SqlTaskStore(db);
    const waiting = newTask();
    const done = newTask();
    await tasks.create(waiting);
    await tasks.create(done);
    await db
      .updateTable('tasks')
      .set({ state: 'success', result: JSON.stringify({ file: 'x.mp3' }), engine: 'builtin', progress: 1, charged: 2 ** 40, started_at: 1_763_900_000_500, finished_at: 1_763_900_001_000 })
      .where('id', '=', done.id)
      .execute();
    for (const id of [waiting.id, done.id]) {
      const viaKysely = await queriedByIdQuery(db, id).executeTakeFirst();
      expect(viaKysely).toBeDefined();
      expect(await reads.queried(id)).toStrictEqual(viaKysely);
    }
    const row = await reads.queried(done.id);
    expect(typeof row?.charged).toBe('number');
    expect(typeof row?.created_at).toBe('number');
    expect(row?.charged).toBe(2 ** 40);
    expect(await reads.queried('no-such-task')).toBeUndefined();
    // Through the store: the same record either way.
    expect(await new SqlTaskStore(db, { readQueried: reads.queried }).getForQuery(done.id)).toStrictEqual(await tasks.getForQuery(done.id));
  });

  it('reads a job position exactly as Kysely does', async () => {
    const queue = new SqlJobQueue(db, { pollIntervalMs: 60_000, logger: pino({ level: 'silent' }) });
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of ids) await queue.enqueue({ taskId: id, kind: 'enhance' });
    await db.updateTable('jobs').set({ state: 'active' }).where('task_id', '=', ids[0]!).execute();
    for (const id of [...ids, 'no-such-task']) {
      expect(await reads.jobPosition(id)).toStrictEqual(await positionQuery(db, id).executeTakeFirst());
    }
    const hot = new SqlJobQueue(db, { pollIntervalMs: 60_000, logger: pino({ level: 'silent' }), readPosition: reads.jobPosition });
    expect(await Promise.all(ids.map((taskId) => hot.position({ taskId, kind: 'enhance' })))).toEqual([0, 1, 2]);
    expect(await hot.position({ taskId: 'no-such-task', kind: 'enhance' })).toBeNull();
  });

  it('keeps working on a connection that prepared it after a migration adds a column to tasks', async () => {
    const tasks = new SqlTaskStore(db);
    const before = newTask();
    await tasks.create(before);
    expect(await reads.queried(before.id)).toBeDefined(); // prepared on the pool's one connection
    // A later release's migration, run by another node while this one keeps its connections.
    await pool.query('alter table tasks add column later_column text');
    expect(await reads.queried(before.id)).toStrictEqual(await queriedByIdQuery(db, before.id).executeTakeFirst());
  });
});
