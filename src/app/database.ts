import type { Kysely } from 'kysely';
import type { Config } from '../config/config.js';
import { openPostgres, type PostgresOptions } from '../adapters/postgres/database.js';
import { openSqlite } from '../adapters/sqlite/database.js';
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
