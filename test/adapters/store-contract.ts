/**
 * The adapter contract of the SQL task and account stores: the same tests for every database
 * they run on (in the spirit of BullMQ's adapter conformance tests). A backend test file
 * (store-sqlite.test.ts, store-postgres.test.ts) only says how to make and open a database.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe } from 'vitest';
import type { SqlDialect } from '../../src/adapters/sql/dialect.js';
import type { Database } from '../../src/adapters/sql/schema.js';
import { SqlAccountStore } from '../../src/adapters/sql/account-store.js';
import { SqlTaskStore } from '../../src/adapters/sql/task-store.js';
import { SqliteReadConnection } from '../../src/adapters/sqlite/read-connection.js';
import { SqliteTaskCreates } from '../../src/adapters/sqlite/task-creates.js';
import { openSqliteHandles } from '../../src/adapters/sqlite/database.js';
import type { NewTask } from '../../src/ports/task-store.js';
import { hashApiKey } from '../../src/services/auth.js';
import { taskStoreContract } from './contract/task-store.js';
import { accountStoreContract } from './contract/account-store.js';
import { concurrencyContract } from './contract/concurrency.js';

export interface StoreBackend {
  dialect: SqlDialect;
  /** A new, empty database: a file path or a postgres:// URL. */
  createDatabase(): Promise<string>;
  /** Opens (and migrates) it as Soundry does. */
  open(location: string): Promise<Kysely<Database>>;
  /** Removes every database this backend made. */
  cleanup(): Promise<void>;
  /**
   * SQLite as the server composes it: get() reads through a second, read-only connection, and creates
   * are written by SqliteTaskCreates (prepared statements on the connection under Kysely).
   */
  hotPaths?: boolean;
}

/** What each test gets: one migrated database per backend file, emptied before every test. */
export interface StoreFixture {
  backend: StoreBackend;
  location: string;
  db: Kysely<Database>;
  tasks: SqlTaskStore;
  accounts: SqlAccountStore;
  /** An account with `credits` and one enabled key on it. */
  seed(opts?: { credits?: number }): Promise<{ accountId: string; keyId: string }>;
  /** A task to create; ids are fresh, times are now unless given. */
  task(owner: { accountId: string; keyId: string }, over?: Partial<NewTask>): NewTask;
}

export function defineStoreContract(backend: StoreBackend): void {
  describe(`SQL stores on ${backend.dialect}${backend.hotPaths ? ', hot paths off Kysely' : ''}`, () => {
    let fx: StoreFixture | undefined;
    let reads: SqliteReadConnection | undefined;
    const use = (): StoreFixture => {
      if (!fx) throw new Error('the store fixture is not set up (beforeAll failed?)');
      return fx;
    };

    beforeAll(async () => {
      const location = await backend.createDatabase();
      const handles = backend.hotPaths ? await openSqliteHandles(location) : null;
      const db = handles ? handles.db : await backend.open(location);
      const accounts = new SqlAccountStore(db);
      if (handles) reads = new SqliteReadConnection(location);
      const readRow = reads ? (id: string) => reads!.task(id) : undefined;
      const createBatch = handles ? new SqliteTaskCreates(db, handles.raw, null).writeBatch : undefined;
      fx = {
        backend,
        location,
        db,
        tasks: new SqlTaskStore(db, { readRow, createBatch }),
        accounts,
        async seed(opts = {}) {
          const accountId = `acct_${randomUUID()}`;
          const keyId = `key_${randomUUID()}`;
          await accounts.createAccount(accountId, opts.credits ?? 100);
          await accounts.createKey({ id: keyId, accountId, hash: hashApiKey(keyId), prefix: keyId.slice(0, 11), enabled: true, rateLimit: null, concurrency: null });
          return { accountId, keyId };
        },
        task(owner, over = {}) {
          const now = Date.now();
          return { id: randomUUID(), kind: 'tts', accountId: owner.accountId, apiKeyId: owner.keyId, params: {}, createdAt: now, expiresAt: now + 3_600_000, ...over };
        },
      };
    });

    beforeEach(async () => {
      const { db } = use();
      // Children before parents (api_keys references accounts).
      for (const table of ['jobs', 'ledger', 'tasks', 'api_keys', 'accounts'] as const) await db.deleteFrom(table).execute();
    });

    afterAll(async () => {
      reads?.close();
      await fx?.db.destroy();
      await backend.cleanup();
    });

    taskStoreContract(use);
    accountStoreContract(use);
    concurrencyContract(use);
  });
}
