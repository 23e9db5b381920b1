import { isNetworkError } from '../network-errors.js';

/**
 * Whether a failed statement failed because the database could not be reached or was restarting (a failover, a
 * restart, a network cut), rather than because of the statement: worth waiting for and trying again, not a fault of
 * the task. The worker's runner waits such failures out around its task records (src/jobs/runner.ts).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (isNetworkError(err)) return true;
  for (let e: unknown = err, depth = 0; e && depth < 4; depth++) {
    if (e instanceof AggregateError && e.errors.some((inner) => isDatabaseUnavailable(inner))) return true;
    if (typeof e !== 'object') return false;
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (PG_UNAVAILABLE.test(code) || SQLITE_BUSY.has(code))) return true;
    if (typeof message === 'string' && PG_CONNECTION_MESSAGES.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** PostgreSQL: class 08 (connection exception), 57P01-57P03 (shutting down, crash, cannot connect now), 53300 (too many connections). */
const PG_UNAVAILABLE = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;
/** SQLite: another connection held the lock past busy_timeout. */
const SQLITE_BUSY: ReadonlySet<string> = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY']);
/** node-postgres and its pool say these without a code. */
const PG_CONNECTION_MESSAGES = /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Connection terminated unexpectedly|Client was closed and is not queryable|Query read timeout)/;
