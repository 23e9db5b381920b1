import { createHash } from 'node:crypto';
import { PostgresAdapter, SqliteAdapter, sql, type Kysely } from 'kysely';

/** The two databases the SQL adapters run on; what differs between them is kept to this file and the migrations. */
export type SqlDialect = 'sqlite' | 'postgres';

/**
 * Which database a Kysely instance (or a transaction of it) talks to, read from its dialect
 * adapter, so that stores keep taking just the Kysely instance. Anything else is refused rather
 * than treated as one of the two.
 */
export function dialectOf<DB>(db: Kysely<DB>): SqlDialect {
  const adapter = db.getExecutor().adapter;
  if (adapter instanceof PostgresAdapter) return 'postgres';
  if (adapter instanceof SqliteAdapter) return 'sqlite';
  throw new Error(`unsupported SQL dialect (${adapter.constructor.name}): Soundry runs on SQLite or PostgreSQL`);
}

/**
 * A transaction for read-then-write work (check a row, then change it), safe against concurrent
 * writers on both databases.
 *
 * SQLite: Kysely begins with a plain (deferred) BEGIN. In one process that is already serial (one
 * connection behind a mutex), but processes sharing the file in WAL mode would each read, and the
 * later writer would fail with SQLITE_BUSY_SNAPSHOT instead of waiting. BEGIN IMMEDIATE takes the
 * write lock first (waiting up to busy_timeout), so what is read is still true when written.
 *
 * Postgres: read committed is set explicitly because the locks taken inside (FOR UPDATE,
 * advisory locks) are only followed by fresh reads at that level; under a server default of
 * repeatable read, a count after waiting for a lock would still see the old snapshot.
 */
export async function writeTransaction<DB, T>(db: Kysely<DB>, work: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
  if (dialectOf(db) === 'postgres') return db.transaction().setIsolationLevel('read committed').execute(work);
  return db.connection().execute(async (conn) => {
    await sql`begin immediate`.execute(conn);
    try {
      const result = await work(conn);
      await sql`commit`.execute(conn);
      return result;
    } catch (err) {
      // After some errors SQLite has already rolled back by itself and ROLLBACK then fails;
      // the first error is the one worth reporting.
      await sql`rollback`.execute(conn).catch(() => undefined);
      throw err;
    }
  });
}

/** Arbitrary but fixed: the first half of Soundry's advisory lock ids, so that another app on the same server is unlikely to share them. */
const ADVISORY_NAMESPACE = 0x536f756e; // "Soun"

/** The second half of the advisory lock id of `scope`: a 32-bit hash, so any string names a scope. */
export function scopeKey(scope: string): number {
  return createHash('sha256').update(scope).digest().readInt32BE(0);
}

/**
 * PostgreSQL's transaction-scoped advisory lock on a scope key (scopeKey): lockScope's statement, through
 * Kysely or compiled once for a hot path (PostgresTaskCreates). The (int, int) form lives in a different key
 * space from Kysely's single-bigint migration lock; a 32-bit hash collision between two scopes only makes
 * them wait for each other.
 */
export function scopeLockQuery<DB>(db: Kysely<DB>, key: number) {
  return db.selectNoFrom(sql<unknown>`pg_advisory_xact_lock(${ADVISORY_NAMESPACE}::int, ${key}::int)`.as('locked'));
}

/**
 * Serializes transactions that share `scope` (e.g. one API key) until they end; call it first
 * inside writeTransaction. Postgres: a transaction-scoped advisory lock (released by commit or
 * rollback, no row needed). SQLite: nothing to do, BEGIN IMMEDIATE already holds the database's
 * single write lock.
 */
export async function lockScope<DB>(trx: Kysely<DB>, scope: string): Promise<void> {
  if (dialectOf(trx) !== 'postgres') return;
  await scopeLockQuery(trx, scopeKey(scope)).execute();
}
