import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../../src/adapters/sqlite/database.js';
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
defineStoreContract({ ...sqliteBackend(), hotPaths: true });
