import { openPostgres, openPostgresHandles } from '../../src/adapters/postgres/database.js';
import { PostgresPollReads } from '../../src/adapters/postgres/poll-reads.js';
import { PostgresTaskCreates } from '../../src/adapters/postgres/task-creates.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { defineStoreContract } from './store-contract.js';

/**
 * The store contract on PostgreSQL (127.0.0.1:5432, or TEST_PG_URL), each database a
 * throwaway one. Fails, never skips, when the server is not there.
 */
function postgresBackend() {
  const made: TestDatabase[] = [];
  return {
    dialect: 'postgres' as const,
    async createDatabase() {
      const created = await createTestDatabase();
      made.push(created);
      return created.url;
    },
    open: (url: string) => openPostgres(url),
    cleanup: async () => void (await Promise.all(made.map((d) => d.drop()))),
  };
}

defineStoreContract(postgresBackend());
// As the server composes it (with BullMQ: no job row in the create): get() and creates as named prepared
// statements on the pool under Kysely; same contract.
defineStoreContract({
  ...postgresBackend(),
  async openHotPaths(url: string) {
    const { db, pool } = await openPostgresHandles(url);
    return { db, options: { readQueried: new PostgresPollReads(db, pool).queried, createOne: new PostgresTaskCreates(db, pool, null).createOne }, close: () => undefined };
  },
});
