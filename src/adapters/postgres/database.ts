import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import type { Database } from '../sql/schema.js';
import { migrateToLatest } from '../sql/migrations.js';

export interface PostgresOptions {
  /** Connections in this process's pool. */
  poolSize?: number;
  /** Shown in pg_stat_activity, to tell Soundry's connections (API, worker, CLI) apart. */
  applicationName?: string;
  /**
   * A pooled connection failed while idle (server restart, network cut). The pool drops it and
   * the next query opens another; without a listener Node would end the process on the error.
   */
  onIdleError?: (err: Error) => void;
  /** A new connection not up within this many ms fails; unset or 0: no limit. */
  connectTimeoutMs?: number;
  /** A statement with no answer within this many ms fails ('Query read timeout'); unset or 0: no limit. */
  queryTimeoutMs?: number;
}

/**
 * int8 to a JS number. Money and epoch milliseconds are bigint columns, and count(*) is int8:
 * pg returns them as strings by default. Past 2^53 a number would silently round, so that
 * throws instead: no value Soundry stores gets near it.
 */
function parseInt8(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value ${text} does not fit a JS number`);
  return n;
}

/**
 * Per pool, not pg.types.setTypeParser: that would change every pg user in the process
 * (module-level state), this only changes Soundry's own connections.
 */
const int8AsNumber: pg.CustomTypesConfig = {
  getTypeParser: (id, format) => (id === pg.types.builtins.INT8 && format !== 'binary' ? parseInt8 : pg.types.getTypeParser(id, format)),
};

/** Opens a pool on `url` and brings the schema up to date (safe with several nodes starting at once). */
export async function openPostgres(url: string, opts: PostgresOptions = {}): Promise<Kysely<Database>> {
  return (await openPostgresHandles(url, opts)).db;
}

/**
 * openPostgres, plus the pool under Kysely, for statements that run on it directly (PostgresPollReads).
 * The pool belongs to Kysely: db.destroy() ends it.
 */
export async function openPostgresHandles(url: string, opts: PostgresOptions = {}): Promise<{ db: Kysely<Database>; pool: pg.Pool }> {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolSize ?? 10,
    application_name: opts.applicationName ?? 'soundry',
    types: int8AsNumber,
    // Found from outside: with PostgreSQL gone silent (no reset: a failover, a cut on the way), creates and polls hung
    // for ever and a worker's tasks stayed running for 10 minutes after it was back. Timeouts turn that into errors
    // the API answers 503 and workers wait out; keep-alive lets the kernel notice a dead peer of an idle connection.
    ...(opts.connectTimeoutMs ? { connectionTimeoutMillis: opts.connectTimeoutMs } : {}),
    ...(opts.queryTimeoutMs ? { query_timeout: opts.queryTimeoutMs } : {}),
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  pool.on('error', opts.onIdleError ?? (() => {}));
  // A connection that drops while checked out (a query running: the pool takes its own listener off then) emits
  // 'error' as well as failing the query. With no listener that 'error' ended the process: found by cutting the
  // network under a worker recording a result (test/jobs/runner-outage.test.ts). The query's caller gets the
  // error through its promise, and the pool discards the broken client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    if (opts.queryTimeoutMs) dropWhenSilent(client);
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  try {
    await migrateToLatest(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return { db, pool };
}

/**
 * A statement that got no answer within query_timeout fails, but node-postgres keeps waiting on its connection, which
 * the pool then lends again: every later statement on it timed out too, until the peer answered or the kernel gave
 * up (minutes). The connection is cut instead (as node-postgres itself does for a pipelined query), so the pool
 * drops it and opens a new one. The query's caller still gets 'Query read timeout'.
 */
function dropWhenSilent(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const cut = () => (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const result = query(...args);
    if (result instanceof Promise) result.catch((err: unknown) => err instanceof Error && err.message === 'Query read timeout' && cut());
    return result;
  };
}
