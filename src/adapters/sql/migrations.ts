import { Kysely, Migrator, sql, type CreateTableBuilder, type Migration, type MigrationProvider } from 'kysely';
import type { Database } from './schema.js';
import { dialectOf, type SqlDialect } from './dialect.js';

/**
 * An auto-numbered primary key. SQLite keeps exactly the DDL that existing databases were created
 * with (`integer primary key autoincrement`); Postgres has no AUTOINCREMENT keyword, and its
 * `integer` is 32-bit, so it gets a bigint identity column.
 */
function serialPrimaryKey(dialect: SqlDialect, column: string) {
  return <TB extends string, C extends string>(table: CreateTableBuilder<TB, C>) =>
    dialect === 'postgres'
      ? table.addColumn(column, 'bigint', (c) => c.generatedByDefaultAsIdentity().primaryKey())
      : table.addColumn(column, 'integer', (c) => c.primaryKey().autoIncrement());
}

/**
 * Migrations live in code (not files on disk) so that they travel with the bundle and need no
 * loader. A migration, once released, never changes: SQLite databases in the field have 0001 applied.
 */
const migrations = (dialect: SqlDialect): Record<string, Migration> => ({
  '0001_initial': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('accounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('balance', 'bigint', (c) => c.notNull().check(sql`balance >= 0`))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('hash', 'text', (c) => c.notNull().unique())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('rate_limit', 'double precision')
        .addColumn('concurrency', 'integer')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('tasks')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('api_key_id', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('params', 'text', (c) => c.notNull())
        .addColumn('result', 'text')
        .addColumn('error', 'text')
        .addColumn('engine', 'text')
        .addColumn('progress', 'double precision', (c) => c.notNull())
        .addColumn('charged', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('started_at', 'bigint')
        .addColumn('finished_at', 'bigint')
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('tasks_key_state').on('tasks').columns(['api_key_id', 'state']).execute();
      await db.schema.createIndex('tasks_expires').on('tasks').column('expires_at').execute();
      await db.schema
        .createTable('ledger')
        .$call(serialPrimaryKey(dialect, 'id'))
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('task_id', 'text')
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('ledger_task_reason', ['task_id', 'reason'])
        .execute();
      await db.schema.createIndex('ledger_account').on('ledger').column('account_id').execute();
      await db.schema
        .createTable('jobs')
        .$call(serialPrimaryKey(dialect, 'seq'))
        .addColumn('task_id', 'text', (c) => c.notNull().unique())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('worker_id', 'text')
        .addColumn('lease_until', 'bigint', (c) => c.notNull())
        .addColumn('available_at', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('jobs_pick').on('jobs').columns(['kind', 'state', 'seq']).execute();
    },
  },
  '0002_webhooks': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhooks')
        .addColumn('task_id', 'text', (c) => c.primaryKey())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_at', 'bigint', (c) => c.notNull())
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('webhooks_due').on('webhooks').columns(['state', 'next_at']).execute();
    },
  },
});

class InlineProvider implements MigrationProvider {
  constructor(private readonly dialect: SqlDialect) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations(this.dialect);
  }
}

/**
 * Brings the schema up to date. Safe when several processes start at once: on Postgres the
 * Migrator holds an advisory lock and runs everything in one transaction, re-reading what is
 * applied once it has the lock; on SQLite the caller runs this inside BEGIN IMMEDIATE (see
 * openSqlite), which Kysely does not do there.
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<void> {
  const migrator = new Migrator({ db, provider: new InlineProvider(dialectOf(db)) });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`database migration failed${failed ? ` at ${failed.migrationName}` : ''}: ${String(error)}`);
  }
}
