import type { Kysely } from 'kysely';
import type { Config } from '../config/config.js';
import { openPostgres, type PostgresOptions } from '../adapters/postgres/database.js';
import type BetterSqlite3 from 'better-sqlite3';
import { openSqlite, openSqliteHandles } from '../adapters/sqlite/database.js';
import type { Database } from '../adapters/sql/schema.js';

/**
 * The one choice of database, shared by the server's container and the admin CLI so that both
 * always open the same one: Postgres when DATABASE_URL is set, else SQLite under DATA_DIR.
 */
export async function openDatabase(
  config: Pick<Config, 'DATABASE_URL' | 'DB_PATH'>,
  postgres: PostgresOptions = {},
): Promise<Kysely<Database>> {
  return config.DATABASE_URL ? openPostgres(config.DATABASE_URL, postgres) : openSqlite(config.DB_PATH);
}

/**
 * The server's database, as openDatabase chooses it, plus on SQLite the connection under Kysely: the
 * SQLite adapter's synchronous hot statements run on it (SqliteTaskCreates).
 */
export async function openServerDatabase(
  config: Pick<Config, 'DATABASE_URL' | 'DB_PATH'>,
  postgres: PostgresOptions = {},
): Promise<{ db: Kysely<Database>; sqlite: BetterSqlite3.Database | null }> {
  if (config.DATABASE_URL) return { db: await openPostgres(config.DATABASE_URL, postgres), sqlite: null };
  const { db, raw } = await openSqliteHandles(config.DB_PATH);
  return { db, sqlite: raw };
}
