import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite, openSqliteHandles } from '../../src/adapters/sqlite/database.js';
import { SqliteReadConnection } from '../../src/adapters/sqlite/read-connection.js';
import { SqliteTaskCreates } from '../../src/adapters/sqlite/task-creates.js';
import { defineStoreContract } from './store-contract.js';

/** The store contract on SQLite files (WAL), as the embedded profile runs. */
function sqliteBackend() {
  const dir = mkdtemp(join(tmpdir(), 'soundry-store-'));
  return {
    dialect: 'sqlite' as const,
    createDatabase: async () => join(await dir, `${randomUUID()}.db`),
    open: openSqlite,
    cleanup: async () => rm(await dir, { recursive: true, force: true }),
  };
}

defineStoreContract(sqliteBackend());
// As the server composes it: gets through the read-only connection, creates as prepared statements; same contract.
defineStoreContract({
  ...sqliteBackend(),
  async openHotPaths(location: string) {
    const { db, raw } = await openSqliteHandles(location);
    const reads = new SqliteReadConnection(location);
    return { db, options: { readQueried: (id) => reads.queried(id), createBatch: new SqliteTaskCreates(db, raw, null).writeBatch }, close: () => reads.close() };
  },
});
