import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WriteBatcher, unitsInTransaction } from '../../src/adapters/sql/write-batch.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { openSqlite } from '../../src/adapters/sqlite/database.js';

/** Group commit on a real SQLite file; `observer` is a second connection, as another process would be. */
let dir: string;
let db: Kysely<Database>;
let observer: Kysely<Database>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-batch-'));
  db = await openSqlite(join(dir, 'soundry.db'));
  observer = await openSqlite(join(dir, 'soundry.db'));
  await sql`create table items (name text primary key)`.execute(db);
});
afterAll(async () => {
  await observer.destroy();
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
});

const committed = async (prefix: string) =>
  Number((await sql<{ n: number }>`select count(*) as n from items where name like ${`${prefix}%`}`.execute(observer)).rows[0]!.n);

describe('WriteBatcher', () => {
  it('writes what arrives meanwhile in one transaction, each unit seeing the earlier ones', async () => {
    const seen: Array<{ before: number; committedElsewhere: number }> = [];
    const batcher = new WriteBatcher(unitsInTransaction(db, async (trx: Kysely<Database>, name: string) => {
      const before = Number((await sql<{ n: number }>`select count(*) as n from items where name like 'a%'`.execute(trx)).rows[0]!.n);
      seen.push({ before, committedElsewhere: await committed('a') });
      await sql`insert into items (name) values (${name})`.execute(trx);
      return before;
    }));
    // Ten units in one turn of the event loop (as ten requests read in one turn): one transaction.
    const first = Array.from({ length: 10 }, (_, i) => batcher.run(`a${i}`));
    // One more arriving while that transaction is being written goes into the next one.
    await new Promise<void>((resolve) => setImmediate(resolve));
    const late = batcher.run('a10');
    expect(await Promise.all([...first, late])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(seen[9]).toEqual({ before: 9, committedElsewhere: 0 });
    expect(seen[10]).toEqual({ before: 10, committedElsewhere: 10 });
    expect(await committed('a')).toBe(11);
  });

  it('a failing unit fails alone: the rest of its batch is written once', async () => {
    const batcher = new WriteBatcher(unitsInTransaction(db, async (trx: Kysely<Database>, name: string) => {
      await sql`insert into items (name) values (${name})`.execute(trx);
      return name;
    }));
    await batcher.run('b-taken');
    const outcomes = await Promise.allSettled(['b0', 'b1', 'b-taken', 'b2'].map((n) => batcher.run(n)));
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(await committed('b')).toBe(4);
  });
});
