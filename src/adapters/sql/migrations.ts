import { Kysely, Migrator, sql, type CreateTableBuilder, type Migration, type MigrationProvider } from 'kysely';
import type { Database } from './schema.js';
import { dialectOf, type SqlDialect } from './dialect.js';
import { createAccountHolds } from './holds.js';

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
 * Exported for the tests that build a database as an earlier release left it.
 */
export const migrations = (dialect: SqlDialect): Record<string, Migration> => ({
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
  '0003_key_unfinished': {
    async up(db: Kysely<any>) {
      await createKeyUnfinished(db, dialect);
      // Only the limit check read tasks by (key, state), and it reads key_unfinished now. The index cost every
      // create a write of one more page (a random one: the keys interleave) and every state change an update.
      await db.schema.dropIndex('tasks_key_state').execute();
    },
  },
  '0004_holds': {
    async up(db: Kysely<any>) {
      await createAccountHolds(db, dialect);
    },
  },
});

/** What "unfinished" means to the limit of unfinished tasks per key (createWithinLimit). */
const UNFINISHED = sql.raw(`('queued', 'running')`);

/** key_unfinished counted from the task rows; run once the triggers hold every other writer off (0003). */
async function backfillKeyUnfinished(db: Kysely<any>): Promise<void> {
  await sql`insert into key_unfinished (api_key_id, n)
    select api_key_id, count(*) from tasks where state in ${UNFINISHED} group by api_key_id`.execute(db);
}

/**
 * key_unfinished: each key's count of unfinished tasks, kept by triggers on tasks, so that a create's limit
 * check is one primary-key read instead of a walk of the key's unfinished rows through tasks_key_state (it
 * grew with the backlog: 25 us per create at 271 waiting tasks). Triggers rather than application code so
 * that every writer keeps it exact: the store's methods, other versions of Soundry during a rolling
 * upgrade, the CLI, raw SQL. The same four row triggers on both databases, each with a WHEN clause so that
 * a change that keeps a task (un)finished under the same key costs nothing:
 * - insert of an unfinished task: +1 for its key;
 * - update of state or api_key_id: -1 for the old key if the old row was unfinished, +1 for the new key if
 *   the new row is, unless neither unfinished-ness nor the key changed (a key change moves the count);
 * - delete of an unfinished task: -1.
 * A key's row stays when it drops to 0: deleting it would race a concurrent +1 on PostgreSQL for nothing,
 * and there is one small row per key that ever had a task.
 * What bypasses row triggers: PostgreSQL's TRUNCATE (handled below: it empties the counts too) and
 * session_replication_role = replica (pg_restore --disable-triggers, logical replication targets); SQLite's
 * INSERT OR REPLACE over an existing task without recursive_triggers (nothing in Soundry writes tasks so).
 * After such a load, backfillKeyUnfinished over an emptied key_unfinished restores it.
 */
async function createKeyUnfinished(db: Kysely<any>, dialect: SqlDialect): Promise<void> {
  await db.schema
    .createTable('key_unfinished')
    .addColumn('api_key_id', 'text', (c) => c.primaryKey())
    .addColumn('n', 'integer', (c) => c.notNull())
    // SQLite: the key is the table's own b-tree, so a count is one lookup (a rowid table would add its autoindex).
    .$call((t) => (dialect === 'sqlite' ? t.modifyEnd(sql`without rowid`) : t))
    .execute();
  const enter = sql`insert into key_unfinished (api_key_id, n) values (new.api_key_id, 1)
    on conflict (api_key_id) do update set n = key_unfinished.n + 1`;
  const leave = sql`update key_unfinished set n = n - 1 where api_key_id = old.api_key_id`;
  const triggers = [
    { name: 'tasks_unfinished_insert', on: sql`after insert`, when: sql`new.state in ${UNFINISHED}`, body: enter, fn: 'enter' },
    {
      name: 'tasks_unfinished_leave',
      on: sql`after update of state, api_key_id`,
      when: sql`old.state in ${UNFINISHED} and (new.state not in ${UNFINISHED} or new.api_key_id <> old.api_key_id)`,
      body: leave,
      fn: 'leave',
    },
    {
      name: 'tasks_unfinished_enter',
      on: sql`after update of state, api_key_id`,
      when: sql`new.state in ${UNFINISHED} and (old.state not in ${UNFINISHED} or new.api_key_id <> old.api_key_id)`,
      body: enter,
      fn: 'enter',
    },
    { name: 'tasks_unfinished_delete', on: sql`after delete`, when: sql`old.state in ${UNFINISHED}`, body: leave, fn: 'leave' },
  ] as const;
  if (dialect === 'postgres') {
    // Taken by CREATE TRIGGER anyway; first, so that no write to tasks (another node still running) slips
    // between the triggers and the backfill: it waits for the writes under way and holds off new ones until commit.
    await sql`lock table tasks in share row exclusive mode`.execute(db);
    for (const [fn, body] of [['enter', enter], ['leave', leave]] as const) {
      await sql`create function ${sql.raw(`key_unfinished_${fn}`)}() returns trigger language plpgsql as $$
        begin ${body}; return null; end $$`.execute(db);
    }
    for (const t of triggers) {
      await sql`create trigger ${sql.raw(t.name)} ${t.on} on tasks for each row when (${t.when})
        execute function ${sql.raw(`key_unfinished_${t.fn}`)}()`.execute(db);
    }
    // TRUNCATE fires no row triggers; a statement trigger empties the counts with it.
    await sql`create function key_unfinished_truncate() returns trigger language plpgsql as $$
      begin truncate key_unfinished; return null; end $$`.execute(db);
    await sql`create trigger tasks_unfinished_truncate after truncate on tasks for each statement execute function key_unfinished_truncate()`.execute(db);
  } else {
    // The caller's BEGIN IMMEDIATE (openSqlite) keeps every other writer out until the backfill commits.
    for (const t of triggers) await sql`create trigger ${sql.raw(t.name)} ${t.on} on tasks when ${t.when} begin ${t.body}; end`.execute(db);
  }
  await backfillKeyUnfinished(db);
}

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
