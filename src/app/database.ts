import type { Kysely } from 'kysely';
import type { Config } from '../config/config.js';
import type pg from 'pg';
import { openPostgres, openPostgresHandles, type PostgresOptions } from '../adapters/postgres/database.js';
import type BetterSqlite3 from 'better-sqlite3';
import { openSqlite, openSqliteHandles } from '../adapters/sqlite/database.js';
import { CheckpointThread } from '../adapters/sqlite/checkpoint-thread.js';
import type { Database } from '../adapters/sql/schema.js';
import { dirname } from 'node:path';
import { ensureDirectory } from './directories.js';

/**
 * The one choice of database, shared by the server's container and the admin CLI so that both
 * always open the same one: Postgres when DATABASE_URL is set, else SQLite under DATA_DIR.
 */
export async function openDatabase(
  config: Pick<Config, 'DATABASE_URL' | 'DB_PATH'>,
  postgres: PostgresOptions = {},
): Promise<Kysely<Database>> {
  if (config.DATABASE_URL) return openPostgres(config.DATABASE_URL, postgres);
  await ensureDirectory(dirname(config.DB_PATH), 'DATA_DIR');
  return openSqlite(config.DB_PATH);
}

/**
 * The server's database, as openDatabase chooses it, plus what its hot statements run on beside Kysely:
 * on SQLite the connection under Kysely (SqliteTaskCreates) and its checkpoints moved to a thread of their
 * own (CheckpointThread; close it before the database); on PostgreSQL the pool under Kysely
 * (PostgresPollReads), which db.destroy() ends.
 */
export async function openServerDatabase(
  config: Pick<Config, 'DATABASE_URL' | 'DB_PATH'>,
  postgres: PostgresOptions = {},
  onCheckpointError: (message: string) => void = () => undefined,
): Promise<{ db: Kysely<Database>; sqlite: BetterSqlite3.Database | null; pgPool: pg.Pool | null; checkpoints: CheckpointThread | null }> {
  if (config.DATABASE_URL) {
    const { db, pool } = await openPostgresHandles(config.DATABASE_URL, postgres);
    return { db, sqlite: null, pgPool: pool, checkpoints: null };
  }
  const { db, raw } = await openSqliteHandles(config.DB_PATH);
  raw.pragma('wal_autocheckpoint = 0');
  // A WAL that a burst made large is cut back to this when it starts again, instead of keeping its largest size.
  raw.pragma(`journal_size_limit = ${WAL_KEEP_BYTES}`);
  const checkpoints = new CheckpointThread(config.DB_PATH, {
    intervalMs: CHECKPOINT_INTERVAL_MS,
    fallback: () => raw.pragma('wal_checkpoint(PASSIVE)'),
    onError: onCheckpointError,
    // Kysely's one connection is every write of this process (SqliteTaskCreates runs inside it too): held, nothing writes.
    holdWrites: (work) => db.connection().execute(() => work()),
  });
  return { db, sqlite: raw, pgPool: null, checkpoints };
}

/**
 * Often enough that the WAL starts again after a few MB under a create-heavy load: 10,000 creates/s append about
 * 70 MB/s of pages (each commit rewrites the same hot pages), so 200 ms leaves the WAL file at about 14 MB.
 */
const CHECKPOINT_INTERVAL_MS = 200;

/** The WAL file's size kept when it starts again (journal_size_limit). */
const WAL_KEEP_BYTES = 64 * 1024 * 1024;
