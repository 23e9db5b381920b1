import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Migration } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/adapters/postgres/database.js';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
import type { SqlDialect } from '../../src/adapters/sql/dialect.js';
import { migrations } from '../../src/adapters/sql/migrations.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { SqlTaskStore, newRow } from '../../src/adapters/sql/task-store.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/** A database as the release before 0003_key_unfinished left it: its tables, and no counts yet. */
async function migrateUpTo0002(db: Kysely<Database>, dialect: SqlDialect): Promise<void> {
  const all = migrations(dialect);
  const before: Record<string, Migration> = { '0001_initial': all['0001_initial']!, '0002_webhooks': all['0002_webhooks']! };
  const { error } = await new Migrator({ db, provider: { getMigrations: async () => before } }).migrateToLatest();
  if (error) throw error;
}

/** Tasks per key and state, written before the triggers exist: only migration 0003's backfill can count them. */
const EXISTING: Record<string, Partial<Record<'queued' | 'running' | 'success' | 'failed', number>>> = {
  key_busy: { queued: 5, running: 3, success: 4, failed: 2 },
  key_one: { queued: 1, success: 1 },
  key_done: { success: 3, failed: 1 },
};

/** The tables as that release had them: no holds yet (0004). */
type Database0002 = Omit<Database, 'tasks'> & { tasks: Omit<Database['tasks'], 'hold'> };

async function writeExisting(db: Kysely<Database0002>): Promise<void> {
  for (const [apiKeyId, states] of Object.entries(EXISTING)) {
    for (const [state, n] of Object.entries(states)) {
      for (let i = 0; i < n; i++) {
        // The row as that release wrote it: the hold column came with 0004.
        const { hold: _hold, ...row } = newRow({ id: randomUUID(), kind: 'tts', accountId: 'acct_old', apiKeyId, params: {}, createdAt: 1, expiresAt: Date.now() + 3_600_000 });
        await db.insertInto('tasks').values({ ...row, state }).execute();
      }
    }
  }
}

const backends: Array<{ dialect: SqlDialect; make(): Promise<{ old: Kysely<Database>; open(): Promise<Kysely<Database>> }> }> = [];
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
});

backends.push({
  dialect: 'sqlite',
  async make() {
    const dir = await mkdtemp(join(tmpdir(), 'soundry-key-unfinished-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, 'old.db');
    return { old: new Kysely<Database>({ dialect: new SqliteDialect({ database: new BetterSqlite3(path) }) }), open: () => openSqlite(path) };
  },
});
backends.push({
  dialect: 'postgres',
  async make() {
    const database: TestDatabase = await createTestDatabase();
    cleanups.push(() => database.drop());
    return { old: new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url, max: 1 }) }) }), open: () => openPostgres(database.url) };
  },
});

describe.each(backends)('migration 0003_key_unfinished on $dialect', ({ dialect, make }) => {
  it('counts the unfinished tasks an existing database already holds, and the triggers carry on from there', async () => {
    const { old, open } = await make();
    await migrateUpTo0002(old, dialect);
    // The account those tasks bill: a create checks its funds (0004).
    await old.insertInto('accounts').values({ id: 'acct_old', status: 'active', balance: 1_000, created_at: 1 }).execute();
    // The same connection, typed as that release's tables.
    await writeExisting(old as unknown as Kysely<Database0002>);
    await old.destroy();

    const db = await open();
    try {
      const kept = await db.selectFrom('key_unfinished').select(['api_key_id', 'n']).orderBy('api_key_id').execute();
      // A key with only finished tasks gets no row: it reads as 0 all the same.
      expect(kept).toEqual([
        { api_key_id: 'key_busy', n: 8 },
        { api_key_id: 'key_one', n: 1 },
      ]);
      const tasks = new SqlTaskStore(db);
      expect(await tasks.countUnfinishedForKey('key_done', 10)).toBe(0);
      const task = (apiKeyId: string) => ({ id: randomUUID(), kind: 'tts' as const, accountId: 'acct_old', apiKeyId, params: {}, createdAt: 2, expiresAt: Date.now() + 3_600_000 });
      // The limit reads the backfilled count.
      expect(await tasks.createWithinLimit(task('key_busy'), 8)).toEqual({ created: false, reason: 'unfinished_limit' });
      const made = await tasks.createWithinLimit(task('key_busy'), 9);
      if (!made.created) throw new Error('expected a create under a limit of 9');
      const running = await db.selectFrom('tasks').select('id').where('api_key_id', '=', 'key_busy').where('state', '=', 'running').execute();
      await tasks.completeFailure(running[0]!.id, 'boom', 3);
      expect((await tasks.createWithinLimit(task('key_done'), 1)).created).toBe(true);
      expect(await tasks.countUnfinishedForKey('key_busy', 100)).toBe(8);
      expect(await tasks.countUnfinishedForKey('key_done', 100)).toBe(1);
    } finally {
      await db.destroy();
    }
  });
});
